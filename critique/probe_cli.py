"""`critique probe`, `critique ablate` and `critique study`."""

from __future__ import annotations

import argparse
from pathlib import Path

from critique.strategies import PARTS


class _Capture:
    """Stands in for the subparsers object, to read the options `critique run` declares."""

    def add_parser(self, name, **kwargs):
        self.parser = argparse.ArgumentParser(add_help=False)
        return self.parser


# Options of `critique run` that a probe or an ablation does not take (it sets them itself).
_NOT_SHARED = {"strategies", "k", "parts", "out", "help"}


def _common(p: argparse.ArgumentParser, out_help: str) -> None:
    """The options of `critique run` (model, data, decoding, limits, cache...), kept in step with it."""
    from critique import run_cli

    capture = _Capture()
    run_cli.register(capture)
    for action in capture.parser._actions:
        if action.dest not in _NOT_SHARED:
            p._add_action(action)
    p.add_argument("--out", help=out_help)
    p.add_argument("--reuse", action="append", metavar="DIR",
                   help="run directory (or folder of them) whose answered requests are reused; repeatable")


def register(sub) -> None:
    probe = sub.add_parser("probe", help="suggestibility and consistency probes (one run directory each)")
    kinds = probe.add_subparsers(dest="probe", required=True)
    s = kinds.add_parser("suggestibility", help="answers with a truthful vs a lying critique in context")
    _common(s, "run directory (default runs/<dataset>__<model>__suggestibility[-<attribution>])")
    s.add_argument("--attribution", default="none",
                   help="who the critique is said to come from: none (default), user, self, other:MODEL")
    s.set_defaults(func=probe_main)
    c = kinds.add_parser("consistency", help="the zero-shot predictions of a split, asked N times")
    _common(c, "run directory (default runs/<dataset>__<model>__consistency-<N>[-train])")
    c.add_argument("--repeats", type=int, default=5, help="times each item is asked (default 5, at least 2)")
    c.add_argument("--split", choices=["test", "train"], default="test")
    c.set_defaults(func=probe_main)

    ablate = sub.add_parser("ablate", help="K, train-size and critique-parts ablations (one run directory per value)")
    kinds = ablate.add_subparsers(dest="ablation", required=True)
    out_help = "parent folder of the run directories (default runs/); each is <dataset>__<model>__<ablation>-<value>"
    k = kinds.add_parser("k", help="EP_CRIT with K retrieved examples")
    _common(k, out_help)
    k.add_argument("--values", default="1,3,5,10", help="comma-separated K values (default 1,3,5,10)")
    k.add_argument("--parts", choices=PARTS, default="full")
    k.set_defaults(func=ablate_main, k=5)
    t = kinds.add_parser("train-size", help="EP_CRIT and EP+SEM_CRIT on nested fractions of train")
    _common(t, out_help)
    t.add_argument("--fractions", dest="values", default="0.25,0.5,0.75,1.0",
                   help="comma-separated fractions of train in (0, 1] (default 0.25,0.5,0.75,1.0)")
    t.add_argument("--k", type=int, default=5)
    t.add_argument("--parts", choices=PARTS, default="full")
    t.set_defaults(func=ablate_main)
    p = kinds.add_parser("parts", help="EP_CRIT with only local_reason, only global_reason, or both")
    _common(p, out_help)
    p.add_argument("--values", default="local,global,full", help="comma-separated parts (default local,global,full)")
    p.add_argument("--k", type=int, default=5)
    p.set_defaults(func=ablate_main, parts="full")

    study = sub.add_parser("study", help="a grid of models x datasets (runs, probes, ablations) from a TOML file")
    study.add_argument("file", help="the study file (see examples/study.toml)")
    study.add_argument("--jobs", type=int, help="cells run at once (default: the file's jobs, else 4)")
    study.add_argument("--backend", choices=["threading", "loky", "dask", "ray"],
                       help="joblib backend (default: the file's backend, else threading)")
    study.add_argument("--scheduler", help="address of a dask scheduler or ray cluster (with --backend dask|ray)")
    study.add_argument("--out", help="parent folder of the run directories (default: the file's out)")
    study.add_argument("--dry-run", action="store_true", help="list the cells and their state, call nothing")
    study.set_defaults(func=study_main)


def _config(args, strategies: str):
    from critique.run_cli import config_from_args

    merged = argparse.Namespace(**vars(args))
    merged.strategies, merged.k, merged.parts = strategies, getattr(args, "k", 5), getattr(args, "parts", "full")
    return config_from_args(merged)


def probe_main(args) -> int:
    from critique import ablations, probes
    from critique.cli import UserError
    from critique.datasets.registry import resolve

    config = _config(args, "zero_shot")
    if args.probe == "suggestibility":
        try:
            probe = probes.suggestibility_probe(probes.parse_attribution(args.attribution))
        except ValueError as exc:
            raise UserError(str(exc)) from None
    else:
        if args.repeats < 2:
            raise UserError(f"--repeats must be at least 2, not {args.repeats}")
        probe = probes.consistency_probe(args.repeats, args.split)
    config = probes.probe_config(config, probe)
    out = Path(args.out) if args.out else Path("runs") / ablations.run_name(config, probes.probe_suffix(probe))
    reuse = None
    if probe["name"] == "suggestibility":  # consistency always asks the model
        checksum = resolve(config.dataset, config.data_dir).checksum
        reuse = ablations.matching_calls(ablations.default_places(config, out.parent, args.reuse), config.model,
                                         checksum, exclude=out)
    outcome, _ = ablations.execute_run(config, out, probe=probe, reuse=reuse, work=probes.work_for(probe),
                                       progress=not args.quiet)
    probes.print_summary(out)
    print(f"{outcome.calls_made} LLM calls made; run directory: {out}")
    return 0


def ablate_main(args) -> int:
    from critique import ablations
    from critique.cli import UserError

    name = ablations.CLI_NAMES[args.ablation]
    try:
        values = ablations.parse_values(name, args.values)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    base = _config(args, ",".join(ablations.STRATEGIES[name]))
    parent = Path(args.out) if args.out else Path("runs")
    outcomes = ablations.sweep(base, name, values, parent, reuse_places=args.reuse, progress=not args.quiet)
    ablations.print_summary([o.out for o in outcomes])
    print(f"{sum(o.calls_made for o in outcomes)} LLM calls made; run directories under {parent}")
    return 0


def study_main(args) -> int:
    from critique import study

    return study.main(args)
