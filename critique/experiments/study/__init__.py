"""`critique study FILE`: a grid of models x datasets, each cell its runs, probes and ablations.

file.py reads and checks the study file, plan.py lays out its cells, execute.py runs them.
"""

from critique.experiments.study.execute import main
from critique.experiments.study.file import Cell, Model, Study, Task, check, load
from critique.experiments.study.plan import plan, task_state

__all__ = ["Cell", "Model", "Study", "Task", "check", "load", "main", "plan", "task_state"]
