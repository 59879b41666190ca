"""`critique ablate k|train-size|parts|gate`: one run directory per value."""

from __future__ import annotations

from pathlib import Path

from critique.base.config import RunConfig
from critique.base.vocab import ABLATION_VALUES as DEFAULT_VALUES, PARTS
from critique.cli.probe import add_experiment_options
from critique.cli.options import config_from_args


def register(sub) -> None:
    listed = lambda name: ",".join(str(v) for v in DEFAULT_VALUES[name])  # noqa: E731
    ablate = sub.add_parser("ablate", help="K, train-size, critique-parts and retrieval-gate ablations (one run "
                                           "directory per value)")
    kinds = ablate.add_subparsers(dest="ablation", required=True)
    out_help = "parent folder of the run directories (default runs/); each is <dataset>__<model>__<ablation>-<value>"
    k = kinds.add_parser("k", help="EP_CRIT with K retrieved examples")
    add_experiment_options(k, out_help)
    k.add_argument("--values", default=listed("k"), help="comma-separated K values (default %(default)s)")
    k.add_argument("--parts", choices=PARTS, default=RunConfig.parts)
    k.set_defaults(func=main, k=RunConfig.k)
    t = kinds.add_parser("train-size", help="EP_CRIT and EP+SEM_CRIT on nested fractions of train")
    add_experiment_options(t, out_help)
    t.add_argument("--fractions", dest="values", default=listed("train_size"),
                   help="comma-separated fractions of train in (0, 1] (default %(default)s)")
    t.add_argument("--k", type=int, default=RunConfig.k)
    t.add_argument("--parts", choices=PARTS, default=RunConfig.parts)
    t.set_defaults(func=main)
    p = kinds.add_parser("parts", help="EP_CRIT with only local_reason, only global_reason, or both")
    add_experiment_options(p, out_help)
    p.add_argument("--values", default=listed("parts"), help="comma-separated parts (default %(default)s)")
    p.add_argument("--k", type=int, default=RunConfig.k)
    p.set_defaults(func=main, parts=RunConfig.parts)
    g = kinds.add_parser("gate", help="zero_shot and EP_CRIT with only the retrieved entries whose similarity to the "
                                      "question is at least T (--retrieval, --inject-budget apply too)")
    add_experiment_options(g, out_help)
    chosen = g.add_mutually_exclusive_group()
    chosen.add_argument("--values", default=listed("gate"),
                        help="comma-separated thresholds T in [-1, 1] (default %(default)s)")
    chosen.add_argument("--quantiles", help="comma-separated quantiles in (0, 1): the thresholds are these quantiles "
                                            "of each train question's similarity to its nearest other train "
                                            "question (the train split alone; recorded in each run's manifest)")
    g.add_argument("--propose", action="store_true", help="with --quantiles: print the thresholds chosen from the "
                                                          "train split, and run nothing")
    g.add_argument("--k", type=int, default=RunConfig.k)
    g.add_argument("--parts", choices=PARTS, default=RunConfig.parts)
    g.set_defaults(func=main)


def main(args) -> int:
    from critique.experiments import ablations
    from critique.base.errors import UserError

    name = ablations.CLI_NAMES[args.ablation]
    if getattr(args, "gate", None) is not None and name == "gate":
        raise UserError("critique ablate gate sets the gate itself: give the thresholds with --values, not --gate")
    base = config_from_args(args, strategies=list(ablations.STRATEGIES[name]), k=args.k, parts=args.parts)
    values, chosen = _values(args, name, base)
    if getattr(args, "propose", False):
        return 0
    parent = Path(args.out) if args.out else Path("runs")
    outcomes = ablations.sweep(base, name, values, parent, reuse_places=args.reuse, progress=not args.quiet,
                               chosen=chosen)
    ablations.print_summary([o.out for o in outcomes])
    print(f"{sum(o.calls_made for o in outcomes)} LLM calls made; run directories under {parent}")
    from critique.engine.scores import report_errors

    return report_errors([o.out for o in outcomes])


def _values(args, name: str, base) -> tuple[list, dict]:
    """The sweep's values and how each was chosen: as given (--values), or gate thresholds from the train split
    (--quantiles, printed)."""
    from critique.base.errors import UserError
    from critique.experiments import ablations, gate_choice

    quantiles = getattr(args, "quantiles", None)
    if getattr(args, "propose", False) and not quantiles:
        raise UserError("--propose goes with --quantiles (the thresholds it proposes are those quantiles)")
    try:
        if not quantiles:
            return ablations.parse_values(name, args.values), {}
        choices = ablations.gate_from_train(base, _numbers(quantiles))
    except ValueError as exc:
        raise UserError(str(exc)) from None
    print(gate_choice.describe(choices))
    return [c["value"] for c in choices], {c["value"]: c["chosen"] for c in choices}


def _numbers(text: str) -> list[float]:
    try:
        numbers = [float(q) for q in text.split(",") if q.strip()]
    except ValueError:
        raise ValueError(f"ablation gate: quantiles must be numbers in (0, 1), not {text!r}") from None
    from critique.experiments.gate_choice import check_quantiles

    return check_quantiles(numbers)
