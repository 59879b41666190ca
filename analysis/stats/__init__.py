"""The study's statistics, apart from any table: the paired-difference summary, the sign test, Spearman
correlation, Wilson intervals, Holm's adjustment and the power of a paired test, with scipy in a helper process
(``core``), and the item-level tests on a frame of predictions: paired tests per cell, a pooled logit model, the
spread across repeats (``inference``)."""
