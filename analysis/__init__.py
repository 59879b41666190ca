"""The study's tables from run directories (or from per-cell CSV numbers).

Reads logs only: imports `critique.base` and nothing else from `critique`, and never
litellm, torch or sentence-transformers. Entry points: `critique tables`,
`critique report` (see `critique.analysis.cli`), or `python -m critique.analysis`.
"""
