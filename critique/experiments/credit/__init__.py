"""Credit by deletion (docs/memory.md section 3): the deletion test (``deletion``), a field method's notes
(``method``), a stream's notes (``stream``), what it reads of the source run (``source``), and pruning by credit
(``prune``)."""
