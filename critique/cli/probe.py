"""`critique probe suggestibility|consistency|overturn`: one run directory each."""

from __future__ import annotations

from pathlib import Path

from critique.cli.options import add_run_options, config_from_args

# Options a probe or an ablation sets itself.
SET_BY_THE_COMMAND = ("--strategies", "--k", "--parts", "--out")


def add_experiment_options(p, out_help: str) -> None:
    """The options of `critique run` that a probe or an ablation takes, and --out, --reuse."""
    add_run_options(p, leave_out=SET_BY_THE_COMMAND)
    p.add_argument("--out", help=out_help)
    p.add_argument("--reuse", action="append", metavar="DIR",
                   help="run directory (or folder of them) whose answered requests are reused; repeatable")


def register(sub) -> None:
    probe = sub.add_parser("probe", help="suggestibility, consistency, overturn, conditioning, priors and dose probes "
                                         "(one run directory each)")
    kinds = probe.add_subparsers(dest="probe", required=True)
    s = kinds.add_parser("suggestibility", help="answers with a truthful vs a lying critique in context")
    add_experiment_options(s, "run directory (default runs/<dataset>__<model>__suggestibility[-<attribution>])")
    s.add_argument("--attribution", default="none",
                   help="who the critique is said to come from: none (default), user, self, other:MODEL")
    s.set_defaults(func=main)
    c = kinds.add_parser("consistency", help="the zero-shot predictions of a split, asked N times")
    add_experiment_options(c, "run directory (default runs/<dataset>__<model>__consistency-<N>[-train])")
    c.add_argument("--repeats", type=int, default=5, help="times each item is asked (default 5, at least 2)")
    c.add_argument("--split", choices=["test", "train"], default="test")
    c.set_defaults(func=main)
    o = kinds.add_parser("overturn", help="a false critique alone, then with a true one in both orders, plain and "
                                          "with provenance: how often the true note wins")
    add_experiment_options(o, "run directory (default runs/<dataset>__<model>__overturn)")
    o.set_defaults(func=main)
    d = kinds.add_parser("conditioning", help="a preamble of the agent's own past outcomes, or of the procedures its "
                                              "critiques drew, against none, at several lengths")
    add_experiment_options(d, "run directory (default runs/<dataset>__<model>__conditioning-<lengths>)")
    d.add_argument("--lengths", default="1,4,16", help="the preamble's entries, comma-separated (default 1,4,16)")
    d.set_defaults(func=main)
    r = kinds.add_parser("priors", help="EP_CRIT's notes marked as priors to drop where the question contradicts "
                                        "them, against the same notes unmarked")
    add_experiment_options(r, "run directory (default runs/<dataset>__<model>__priors)")
    r.set_defaults(func=main)
    e = kinds.add_parser("dose", help="EP_CRIT's prompt with K entries of the run's memory, and of another dataset's "
                                      "(--irrelevant), K on a log scale: where more memory stops helping")
    add_experiment_options(e, "run directory (default runs/<dataset>__<model>__dose-<values>[-vs-<dataset>])")
    e.add_argument("--values", default="1,2,4,8,16", help="the K values, comma-separated (default 1,2,4,8,16)")
    e.add_argument("--irrelevant", metavar="RUN", help="a run directory on another, single-pool dataset: its memory "
                                                      "is the control, as many entries as near as it has them")
    e.set_defaults(func=main)


def main(args) -> int:
    from critique.base.errors import UserError
    from critique.datasets.registry import resolve
    from critique.experiments import probes, reuse
    from critique.runner import execute_run, run_name

    config = config_from_args(args, strategies="zero_shot")
    if args.probe == "overturn":
        return overturn_main(args, config)
    if args.probe in ("conditioning", "priors", "dose"):
        return arms_main(args, config)
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
    out = Path(args.out) if args.out else Path("runs") / run_name(config, probes.probe_suffix(probe))
    pool = None
    if probe["name"] == "suggestibility":  # consistency always asks the model
        checksum = resolve(config.dataset, config.data_dir).checksum
        pool = reuse.matching_calls(reuse.default_places(config, out.parent, args.reuse), config.model,
                                    checksum, exclude=out)
    outcome, _ = execute_run(config, out, probe=probe, reuse=pool, work=probes.work_for(probe),
                             progress=not args.quiet)
    probes.print_summary(out)
    print(f"{outcome.calls_made} LLM calls made; run directory: {out}")
    from critique.engine.scores import report_errors

    return report_errors([out])


def overturn_main(args, config) -> int:
    from critique.base.cost import print_cost
    from critique.engine.cost_estimate import dollars
    from critique.datasets.registry import resolve
    from critique.engine.scores import report_errors
    from critique.experiments import overturn, probes, reuse
    from critique.runner import execute_run, run_name

    probe = overturn.overturn_probe()
    config = probes.probe_config(config, probe)
    out = Path(args.out) if args.out else Path("runs") / run_name(config, "overturn")
    checksum = resolve(config.dataset, config.data_dir).checksum
    pool = reuse.matching_calls(reuse.default_places(config, out.parent, args.reuse), config.model, checksum,
                                exclude=out)

    def say_cost(run) -> None:
        calls = overturn.cost(run)
        print_cost(calls, f"per test item still to do: its zero-shot answer, 2 critiques, "
                   f"{len(overturn.CONDITIONS)} answers; fewer when a suggestibility run of the same model and data "
                   "or the response cache already answered some", out, dollars=dollars(run, calls))

    outcome, _ = execute_run(config, out, probe=probe, reuse=pool, work=overturn.overturn, setup=say_cost,
                             progress=not args.quiet)
    from critique.analysis.memory import overturn as table

    print(table.text(out))
    print(f"{outcome.calls_made} LLM calls made; run directory: {out}")
    return report_errors([out])


def _arm_probe(args):
    """(the probe, its experiment module, its number of arms) of `critique probe conditioning|priors|dose`."""
    from critique.base.errors import UserError
    from critique.experiments import conditioning, dose, priors

    try:
        if args.probe == "priors":
            return priors.priors_probe(), priors, len(priors.ARMS)
        if args.probe == "dose":
            probe = dose.dose_probe(args.values, args.irrelevant)
            return probe, dose, len(dose.arms(probe))
        probe = conditioning.conditioning_probe(args.lengths)
        return probe, conditioning, len(conditioning.arms(probe))
    except ValueError as exc:
        option = {"dose": "--values/--irrelevant", "conditioning": "--lengths"}.get(args.probe, args.probe)
        raise UserError(f"{option}: {exc}") from None


def arms_main(args, config) -> int:
    """`critique probe conditioning`, `priors` and `dose`: the train stage, then the probe's arms on every test
    item (the calls a run of the same model and data made are answered from its log), then its table."""
    from critique.base.cost import print_cost
    from critique.datasets.registry import resolve
    from critique.engine.cost_estimate import dollars
    from critique.engine.scores import report_errors
    from critique.experiments import probes, reuse
    from critique.runner import execute_run, run_name

    probe, experiment, arms = _arm_probe(args)
    config = probes.probe_config(config, probe)
    out = Path(args.out) if args.out else Path("runs") / run_name(config, probes.probe_suffix(probe))
    checksum = resolve(config.dataset, config.data_dir).checksum
    pool = reuse.matching_calls(reuse.default_places(config, out.parent, args.reuse), config.model, checksum,
                                exclude=out)

    def say_cost(run) -> None:
        calls = experiment.cost(run)
        print_cost(calls, f"the train stage still to do, then per test item each of the {arms} arms still to "
                   "answer; fewer when a run of the same model and data or the response cache answers some", out,
                   dollars=dollars(run, calls))

    outcome, _ = execute_run(config, out, probe=probe, reuse=pool, work=probes.work_for(probe), setup=say_cost,
                             progress=not args.quiet)
    from critique.analysis.memory import conditioning, dose, priors

    print({"priors": priors, "dose": dose, "conditioning": conditioning}[args.probe].text(out))
    print(f"{outcome.calls_made} LLM calls made; run directory: {out}")
    return report_errors([out])
