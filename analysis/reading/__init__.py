"""The reader of run directories and what it counts: the one reader of a run's files (``logs``, with ``jsonl`` for
the call log's chosen fields), the runs found, checked and counted per (stage, strategy, user) (``read``, ``tally``,
``consistency``, with the counts kept between runs in ``count_cache``), what makes a run one experiment
(``run_settings``), the runs grouped into experiments (``load``), what their calls cost (``prices``), and the records
as pandas DataFrames (``frames``). Imports ``critique.base`` alone."""
