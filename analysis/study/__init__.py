"""The study's tables: the per-cell numbers every table is built from (``cells``, from run directories or from CSV
numbers, ``csv_input``), what a table is made of (``tabular``), Table 1's intervals (``intervals``), what each
strategy answered (``answers``), the (model, dataset) points and Table 2 with the headline claims (``points``,
``claims``), every table of the study (``tables``), the item-level tables (``items``), the table `critique run`
prints (``run_table``), the settings that differ from their default (``defaults``), and the results as markdown or
JSON (``render``) or one HTML page (``report``)."""
