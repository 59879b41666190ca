"""The base layer: errors, paths, the run's settings, the study's vocabulary, and the run
directory (its records and its one writer). It imports nothing else of critique."""
