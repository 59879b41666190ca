"""`python -m critique.cli ...`: the same as `critique ...`."""

from critique.cli import main_exit

main_exit()
