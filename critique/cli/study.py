"""`critique study FILE`: a grid of models x datasets (runs, probes, ablations)."""

from __future__ import annotations

from critique.analysis import mlflow_log


def register(sub) -> None:
    study = sub.add_parser("study", help="a grid of models x datasets (runs, probes, ablations) from a TOML file")
    study.add_argument("file", help="the study file (see examples/study.toml)")
    study.add_argument("--jobs", type=int, help="cells run at once (default: the file's jobs, else 4)")
    study.add_argument("--backend", choices=["threading", "loky", "dask", "ray"],
                       help="joblib backend (default: the file's backend, else threading)")
    study.add_argument("--scheduler", help="address of a dask scheduler or ray cluster (with --backend dask|ray)")
    study.add_argument("--out", help="parent folder of the run directories (default: the file's out)")
    study.add_argument("--dry-run", action="store_true", help="list the cells and their state, call nothing")
    study.add_argument("--max-cost", type=float, metavar="USD",
                       help="dollars the whole study may spend, over every cell and worker: no call that could pass "
                            "it is made, and the cells stop cleanly (default: the file's max_cost, else no cap)")
    mlflow_log.add_option(study)
    study.set_defaults(func=main)


def main(args) -> int:
    from critique.experiments.study import main as run_study

    return run_study(args)
