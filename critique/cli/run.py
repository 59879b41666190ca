"""`critique run`: one dataset against one model, all strategies, then the accuracy table.

Exit status 1 when some prediction ended in an error (a failed call): its accuracy is not the
model's, and running the command again retries those calls."""

from __future__ import annotations

from pathlib import Path

from critique.analysis import mlflow_log
from critique.cli.options import add_run_options, config_from_args


def register(sub) -> None:
    p = sub.add_parser("run", help="train stage + test stage for one dataset and one model")
    add_run_options(p)
    mlflow_log.add_option(p)
    p.set_defaults(func=main)


def main(args) -> int:
    from critique.analysis.study.run_table import print_table
    from critique.engine.scores import report_errors
    from critique.runner import default_out, execute_run

    config = config_from_args(args)
    out = Path(args.out) if args.out else default_out(config)
    outcome, _ = execute_run(config, out, progress=not args.quiet, setup=say_cost)
    print_table(out)
    print(f"{outcome.calls_made} LLM calls made; run directory: {out}")
    if args.mlflow is not None:
        mlflow_log.log_and_say([out], args.mlflow)
    return report_errors([out])


def say_cost(run) -> None:
    """The run's cost in calls, on stderr before its first call: what is still to do (a resumed run's logged
    work is not redone; the response cache may answer some of it). An upper bound: every critique and summary
    of the train stages the strategies need is counted (those already logged are not asked again), and each
    memory method's calls to learn as its own ``learning_calls`` bounds them."""
    from critique.base.cost import print_cost
    from critique.base.vocab import CRITIQUE, RECRITIQUE, SUMMARY, TRAIN
    from critique.engine.cost_estimate import dollars
    from critique.engine.run_directory import pkey
    from critique.engine.methods import needed_stages

    train, test = run.dataset.train, run.dataset.test
    stages = needed_stages(run.config)
    logged = [r for r in run.logged.values() if not r.get("error")]
    initial = sum(pkey("train_predict", None, item.user, item.id) not in run.predictions
                  for item in train) if TRAIN in stages else 0
    critiqued = {(r.get("user"), r.get("item_id")) for r in logged if r.get("stage") == CRITIQUE}
    critiques = sum((item.user, item.id) not in critiqued for item in train) if CRITIQUE in stages else 0
    answers = sum(pkey("test", name, item.user, item.id) not in run.predictions
                  for name in run.config.strategies for item in test)
    summarised = {r.get("user") for r in logged if r.get("stage") == SUMMARY}
    pools = len({item.user for item in train} - summarised) if SUMMARY in stages else 0
    more = f" + up to {critiques} recritiques" if run.config.on_mismatch == RECRITIQUE and critiques else ""
    learning, said = _learning(run)
    calls = initial + critiques + pools + answers + learning
    print_cost(calls, f"{initial} initial answers + {critiques} critiques{more} + {pools} summar"
                      f"{'y' if pools == 1 else 'ies'} + {answers} test answers{said}; more summaries when a pool's "
                      f"critiques are summarised in chunks", run.out, dollars=dollars(run, calls))


def _learning(run) -> tuple[int, str]:
    """(calls the run's memory methods may still make to learn, what the cost line says of them): each method's own
    bound (critique.engine.methods.learning_calls)."""
    from critique.engine.methods import learning_calls, method

    counted = [(name, *learning_calls(method(name), run)) for name in run.config.strategies]
    counted = [(name, calls, per) for name, calls, per in counted if per]
    said = "".join(f" + {calls} calls of {name} to learn ({per})" for name, calls, per in counted)
    if any(per.startswith("about") for _, _, per in counted):  # an estimate the method may pass: the sum is none
        said += "; a method's count said about is its estimate, not a bound"
    return sum(calls for _, calls, _ in counted), said
