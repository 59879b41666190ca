"""`critique credit RUN`: credit per memory entry by deletion (critique.experiments.credit.deletion); --report prints
the tier table of a credit run already made (critique.analysis.memory.credit, no call)."""

from __future__ import annotations

import sys
from pathlib import Path

HELP = "credit per memory entry: answer each prompt with each retrieved entry left out (one call per entry)"


def register(sub) -> None:
    from critique.base.vocab import EP_CRIT
    from critique.experiments.credit.deletion import ON, STRATEGIES
    from critique.experiments.credit.prune import SEEDS

    p = sub.add_parser("credit", help=HELP, description=HELP)
    p.add_argument("run", metavar="RUN", help="the run directory whose memory is credited")
    p.add_argument("--strategy", default=EP_CRIT,
                   help=f"whose prompts: {', '.join(STRATEGIES)}, or a field method whose prompts show notes (ace, "
                        "ace:nolabel, dc, expel, dspy:knn, dspy:mipro, dspy:gepa, dspy:simba; --on test or test-half) "
                        "(default %(default)s)")
    p.add_argument("--on", choices=ON, default="test",
                   help="test: the run's test prompts (selection on the test set); train: leave-one-out over train "
                        "questions (never reads the test predictions); test-half: one seeded half of test "
                        "(default %(default)s)")
    p.add_argument("--cite", action="store_true", help="the answers also say which examples they used")
    p.add_argument("--null", type=int, default=0, metavar="N",
                   help="null control: re-ask N identical full prompts of the model itself (never cached)")
    p.add_argument("--out", help="the credit run directory (default RUN__credit-<STRATEGY>-<on>[-cite])")
    p.add_argument("--prune", metavar="RULES",
                   help="then remove entries by credit and score EP_CRIT and EP+SEM_CRIT on held-out questions: "
                        "comma-separated toxic, lowest:N, estimate:N (the N lowest by credit learned from the logs, "
                        "fitted on the other half of the entries), random:N (needs --on train or test-half); every "
                        "rule but random is matched by as many entries removed at random")
    p.add_argument("--seeds", type=int, default=SEEDS, help="seeds of the random removals (default %(default)s)")
    p.add_argument("--prune-out", dest="prune_out", help="the pruning run directory (default <credit run>__prune)")
    p.add_argument("--report", action="store_true", help="print the tier table of the credit run (and the pruning "
                                                         "table when there is one); no call")
    p.add_argument("--format", choices=("markdown", "json"), default="markdown")
    p.add_argument("--concurrency", type=int, default=None, help="calls in flight (default: the run's)")
    p.add_argument("--data-dir", dest="data_dir", default=None, help="where built datasets live (default: the run's)")
    p.add_argument("--cache-dir", dest="cache_dir", default=None, help="response and embedding cache")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the shared response cache")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=main)


def report(out: Path, source: Path, fmt: str, prune: Path | None = None) -> None:
    import json

    from critique.analysis.memory import credit as analysis
    from critique.base import rundir

    summary = analysis.summary(out, source)
    pruned = prune is not None and rundir.is_run_dir(prune)
    if fmt == "json":
        if pruned:
            summary["pruning"] = analysis.prune_rows(prune)
        print(json.dumps(summary, indent=2, sort_keys=True, default=str))
    else:
        print(analysis.markdown(summary))
        if pruned:
            print(analysis.prune_markdown(prune))


def main(args) -> int:
    from critique.base.errors import UserError
    from critique.experiments.credit import deletion as credit

    if args.concurrency is not None and args.concurrency < 1:
        raise UserError(f"--concurrency must be at least 1, not {args.concurrency}")
    source = Path(args.run)
    out = Path(args.out) if args.out else credit.default_out(source, args.strategy, args.on, args.cite)
    prune_out = Path(args.prune_out) if args.prune_out else out.parent / f"{out.name}__prune"
    rules = None
    if args.prune:
        from critique.experiments.credit import prune as credit_prune

        try:
            rules = credit_prune.checked_rules(args.prune, args.strategy, args.on, args.seeds)
        except ValueError as exc:
            raise UserError(f"--prune: {exc}") from None
    if args.report:
        try:
            report(out, source, args.format, prune_out)
        except ValueError as exc:
            raise UserError(str(exc)) from None
        return 0
    if rules is not None and (why := credit_prune.no_held_out(source, args.on)):
        raise UserError(f"--prune: {why}")  # before the credit run's calls, not after them
    changes = {k: getattr(args, k) for k in ("concurrency", "data_dir", "cache_dir") if getattr(args, k) is not None}
    if args.no_cache:
        changes["use_cache"] = False
    state = credit.execute(source, args.strategy, args.on, cite=args.cite, null=args.null, out=out,
                           progress=not args.quiet, **changes)
    requested, made = state["counter"]["requested"], state["outcome"].calls_made
    print(f"{requested} calls requested ({made} sent to the model, {requested - made} not sent to the model); "
          f"cost said: {state['cost']}; credit run directory: {out}")
    if requested != state["cost"]:
        print(f"critique: warning: {requested} calls requested, not the {state['cost']} said", file=sys.stderr)
    if rules is not None:
        from critique.experiments.credit import prune as credit_prune

        pruned = credit_prune.execute(source, out, args.strategy, args.on, rules, args.seeds, out=prune_out,
                                      progress=not args.quiet, **changes)
        requested, made = pruned["counter"]["requested"], pruned["outcome"].calls_made
        print(f"prune: {requested} calls requested ({made} sent to the model); cost said: {pruned['cost']}; "
              f"run directory: {prune_out}")
    report(out, source, args.format, prune_out if rules is not None else None)
    return 0
