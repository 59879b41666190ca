"""`critique verify RUN --verifier reorder|sample:N|judge:MODEL`: an answer-free check of each memory entry of a
run (one run directory; critique.experiments.verify), then the verifier's numbers against the truth
(critique.analysis.memory.echo)."""

from __future__ import annotations

import sys
from pathlib import Path

from critique.cli.options import add_rerun_options, rerun_source, verifier_option, verify_run_dir


def register(sub) -> None:
    p = sub.add_parser("verify", help="check each memory entry of a run without its label (one run directory)")
    p.add_argument("run", metavar="RUN_DIR", help="the run directory whose memory is checked")
    p.add_argument("--verifier", required=True,
                   help="reorder: the entry's question asked again with its options permuted; an answer that does "
                        "not survive is flagged. sample:N: asked N times more at temperature > 0, never from a "
                        "cache; any disagreement is flagged. judge:MODEL: another model (litellm name) says, "
                        "without the label, whether the answer is right")
    p.add_argument("--out", help="run directory (default RUN_DIR__verify-<verifier>)")
    add_rerun_options(p)
    p.set_defaults(func=main)


def main(args) -> int:
    from critique.base.cost import print_cost
    from critique.engine.cost_estimate import dollars
    from critique.engine.scores import report_errors
    from critique.experiments import verify
    from critique.runner import execute_run

    verifier = verifier_option(args)
    source, config, manifest = rerun_source(args, lambda given: verify.verifier_config(given, verifier))
    out = Path(args.out) if args.out else verify_run_dir(source, verifier)
    probe = verify.verify_probe(verifier, source, manifest["run_id"], out)
    entries = verify.entries_of(source)
    skipped: list[str] = []

    def say_cost(run) -> None:
        calls, cannot = verify.cost(run, verifier, entries)
        what = {"sample": "N per entry still to check, at temperature "
                          f"{run.config.temperature:g}, never from the response cache",
                "judge": f"one per entry still to check, to {run.config.model}"}.get(verify.kind_of(verifier),
                f"one per entry still to check whose options can be permuted; {cannot} cannot")
        print_cost(calls, what, out, dollars=dollars(run, calls))

    outcome, _ = execute_run(config, out, probe=probe, work=verify.work_for(verifier, entries, skipped),
                             setup=say_cost, progress=not args.quiet)
    if skipped:
        print(f"critique: {len(skipped)} of {len(entries)} entries not checked: their question does not list each "
              "option on a line of its own", file=sys.stderr)
    from critique.analysis.memory import echo

    print(echo.verifier_text(out))
    print(f"{outcome.calls_made} LLM calls made; run directory: {out}")
    return report_errors([out])
