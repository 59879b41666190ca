"""`critique deinflate RUN --verifier V --control random:S --mode doubt|drop`: demote the entries a verifier
flagged, re-run EP_CRIT and EP+SEM_CRIT, against as many entries demoted at random (critique.experiments.deinflate;
the table: critique.analysis.memory.deinflate)."""

from __future__ import annotations

import sys
from pathlib import Path

from critique.cli.options import add_rerun_options, rerun_source, verifier_option, verify_run_dir


def register(sub) -> None:
    p = sub.add_parser("deinflate", help="demote the memory entries a verifier flagged and re-run EP strategies, "
                                         "against random demotion (one run directory per arm)")
    p.add_argument("run", metavar="RUN_DIR", help="the run directory whose memory is de-inflated")
    p.add_argument("--verifier", required=True, help="the verifier whose flags are used: reorder, sample:N, "
                                                     "judge:MODEL (its verify run must exist: critique verify)")
    p.add_argument("--control", default="random:5", help="random:S: the same number of entries demoted at random, "
                                                         "seeds 0..S-1 (default random:5)")
    p.add_argument("--mode", default="doubt", help="doubt (default): flagged verdicts shown as doubtful in EP "
                                                   "prompts; drop: flagged entries removed from memory")
    p.add_argument("--verify-run", help="the verify run (default RUN_DIR__verify-<verifier>)")
    p.add_argument("--out", help="folder of the arms' run directories (default: RUN_DIR's folder)")
    add_rerun_options(p)
    p.set_defaults(func=main)


def main(args) -> int:
    import asyncio

    from critique.base.cost import print_cost
    from critique.engine.cost_estimate import dollars
    from critique.base.errors import UserError
    from critique.datasets.registry import resolve
    from critique.engine.scores import report_errors
    from critique.experiments import deinflate, reuse, verify
    from critique.runner import execute_run

    verifier = verifier_option(args)
    try:
        seeds = deinflate.parse_control(args.control)
        mode = deinflate.check_mode(args.mode)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    source, config, manifest = rerun_source(args, lambda c: deinflate.arm_config(c, Path(args.run)))
    checked = Path(args.verify_run) if args.verify_run else verify_run_dir(source, verifier)
    flagged, done, errors = deinflate.flagged_ids(checked, manifest["run_id"])
    if errors:
        print(f"critique: warning: {errors} checks of {checked} ended in an error and count as not flagged; rerun "
              "critique verify to retry them", file=sys.stderr)
    every = sorted(verify.entries_of(source))
    n = len(flagged)
    parent = Path(args.out) if args.out else source.parent
    arm = deinflate.arm_dir(parent, source, mode, verifier, n, None)
    arms = [(arm, deinflate.arm_probe(mode, deinflate.VERIFIER, verifier, None, n, source, manifest["run_id"], checked,
                                      arm), flagged)]
    for s in range(seeds):
        arm = deinflate.arm_dir(parent, source, mode, None, n, s)
        arms.append((arm, deinflate.arm_probe(mode, deinflate.RANDOM, None, s, n, source, manifest["run_id"], None,
                                              arm), deinflate.random_ids(every, n, s, config.seed)))
    print(f"critique: {verifier} flagged {n} of {done} checked entries ({len(every)} in memory); {len(arms)} arms "
          f"({mode}): the flagged entries, and {n} at random x {seeds} seeds", file=sys.stderr)
    bound = len(arms) * len(config.strategies) * int(manifest["dataset"].get("n_test") or 0)
    print_cost(bound, f"in all: {len(config.strategies)} strategies x {manifest['dataset'].get('n_test')} test "
                      f"questions x {len(arms)} arms; each arm says before it starts how many it makes: a prompt "
                      "without a demoted entry is the source run's request, no call")
    checksum = resolve(config.dataset, config.data_dir).checksum
    pool = reuse.matching_calls([source], config.model, checksum)
    source_hashes = set(pool)
    total = {"calls": 0}
    outcomes = []

    def say_cost(out: Path):
        def opened(run, memory) -> None:
            todo, new = deinflate.cost(run, memory, source_hashes)
            total["calls"] += new
            print_cost(new, f"{todo} test prompts still to answer; those that retrieve no demoted entry are "
                            f"{source.name}'s own requests, answered from its log", out, dollars=dollars(run, new))
        return opened

    with asyncio.Runner() as runner:
        for out, probe, demoted in arms:
            setup, work = deinflate.arm_steps(source, demoted, say_cost(out))
            outcome, logged = execute_run(config, out, probe=probe, reuse=pool, work=work, setup=setup,
                                          progress=not args.quiet, runner=runner.run)
            pool.update({k: v for k, v in logged.items() if k not in pool})
            outcomes.append(outcome)
    from critique.analysis.memory import deinflate as table

    print(table.text([out for out, _, _ in arms]))
    print(f"{sum(o.calls_made for o in outcomes)} LLM calls made; run directories: "
          + ", ".join(str(out) for out, _, _ in arms))
    return report_errors([out for out, _, _ in arms])
