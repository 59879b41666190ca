"""`critique stream`: memory that keeps learning on a stream of the test questions (one run directory;
critique.experiments.stream.loop), and `critique memory history RUN NOTE`: every version of one note."""

from __future__ import annotations

import sys
from pathlib import Path

from critique.cli.options import add_run_options


def register(sub) -> None:
    from critique.experiments.stream import spec as stream

    p = sub.add_parser("stream", help="answer the test questions one by one, writing each episode back to memory "
                                      "with its feedback (one run directory)")
    add_run_options(p, leave_out=("--strategies", "--out"))  # the answers are EP_CRIT's: --k, --parts apply
    p.add_argument("--out", help="run directory (default runs/<dataset>__<model>__stream-<feedback>...); with --arms, "
                                 "the folder of the arms' run directories")
    p.add_argument("--reuse", action="append", metavar="DIR",
                   help="run directory (or folder of them) whose answered requests are reused; repeatable")
    p.add_argument("--feedback",
                   help="gold (the critic sees the label), noisy:R (a seeded share R of the labels flipped), self "
                        "(no label: the critic judges the answer itself), none (nothing written: frozen memory) "
                        "or delayed:D (gold feedback D steps later)")
    p.add_argument("--arms", action="store_true",
                   help="run the arms of a comparison on the same stream, one run directory each (under --out, "
                        "default runs/; the arms set --feedback, --start and --demote): "
                        + "; ".join(f"{name} (--feedback {f} --start {s}" + (f" --demote {d})" if d else ")")
                                    for name, f, s, d in stream.ARMS))
    p.add_argument("--demote", choices=stream.DEMOTE,
                   help="de-inflation: reorder (each new note is checked by the reorder verifier before it is "
                        "trusted, and marked doubtful when flagged) or random (--demote-count N new notes marked "
                        "doubtful, chosen at random: the verifier arm's budget-matched control)")
    p.add_argument("--demote-count", type=int, metavar="N",
                   help="with --demote random: how many (the number the verifier arm demoted)")
    p.add_argument("--order", type=int, default=0, metavar="SEED", help="the seed of the questions' order (default 0)")
    p.add_argument("--start", choices=stream.STARTS, default="train",
                   help="train: the study's train memory first (default); empty: no memory but the stream's")
    p.add_argument("--conflicts", choices=stream.CONFLICTS, default="append",
                   help="append (default): notes are only added; revise: labelled feedback that contradicts a note "
                        "shown for a similar question revises it, and agreement raises its confidence")
    p.add_argument("--conflict-similarity", type=float, default=stream.CONFLICT_SIMILARITY, metavar="C",
                   help="with --conflicts revise: how similar (cosine) a shown note's question must be to be "
                        "contradicted (default %(default)g)")
    p.add_argument("--disable-test", action="store_true",
                   help="verification by disabling (labelled feedback): a step answered wrong is asked again with "
                        "each note it was shown left out, and a note whose removal makes it right is disabled")
    p.add_argument("--refresh-every", type=int, metavar="N",
                   help="keep a semantic memory too: every N steps the new notes are distilled (each line naming "
                        "the notes it rests on) and merged into the advice, and the stream answers with EP+SEM_CRIT")
    p.add_argument("--rank", choices=stream.RANKS, default="similarity",
                   help="similarity: the K nearest notes (default); verdict: among the nearest "
                        f"{stream.RANK_DEPTH}K, those stored as right first, then by confidence")
    p.set_defaults(func=main)


def main(args) -> int:
    from critique.base.errors import UserError
    from critique.cli.options import config_from_args
    from critique.engine.scores import report_errors
    from critique.experiments import probes
    from critique.experiments.stream import spec as stream_spec

    if bool(args.arms) == bool(args.feedback):
        raise UserError("give --feedback F for one stream, or --arms for the arms of a comparison")
    config = probes.probe_config(config_from_args(args, strategies="zero_shot"), {"name": stream_spec.STREAM})
    if args.arms and (args.demote or args.demote_count is not None or args.disable_test or args.refresh_every):
        raise UserError("--arms sets the arms itself: give --demote, --disable-test and --refresh-every to one "
                        "stream")
    if args.arms:
        arms = stream_spec.arm_probes(args.order, args.conflicts, args.rank, args.conflict_similarity)
    else:
        arms = [(None, stream_spec.stream_probe(args.feedback, args.order, args.conflicts, args.start, args.rank,
                                                args.conflict_similarity, args.demote, args.demote_count,
                                                args.disable_test, args.refresh_every))]
    outs: list[Path] = []
    for name, probe in arms:
        if args.arms and probe.get("demote") == stream_spec.RANDOM:
            probe = {**probe, "demote_count": stream_spec.demoted(outs[-1])}  # the verifier arm's budget
        out, finished = _one(args, config, probe)
        outs.append(out)
        if not finished:  # a later arm would compare with an unfinished one (the random control's budget)
            what = f"the arm {name!r}" if name else "the stream"
            print(f"critique: {what} did not finish ({out}); rerun the same command to go on", file=sys.stderr)
            break
    from critique.analysis.memory import online

    print(online.text(outs))
    return max(report_errors(outs), 0 if finished else 1)


def _one(args, config, probe: dict) -> tuple[Path, bool]:
    """One stream's run directory, run to its end (or to a failed call); whether it ended without an error."""
    from critique.base.cost import print_cost
    from critique.engine.cost_estimate import dollars
    from critique.datasets.registry import resolve
    from critique.experiments import reuse
    from critique.experiments.stream import loop as stream, spec as stream_spec
    from critique.runner import execute_run, run_name

    name = run_name(config, stream_spec.stream_suffix(probe))
    out = (Path(args.out) / name if args.arms else Path(args.out)) if args.out else Path("runs") / name
    checksum = resolve(config.dataset, config.data_dir).checksum
    pool = reuse.matching_calls(reuse.default_places(config, out.parent, args.reuse), config.model, checksum,
                                exclude=out)

    def say_cost(run) -> None:
        calls = stream.cost(run)
        print_cost(calls, "the train stage still to do, then per question still to answer its answer, "
                   "its feedback's critique and the checks asked for (not a refresh's summaries); fewer when a "
                   "matching run or the response cache answers some", out, dollars=dollars(run, calls))

    outcome, _ = execute_run(config, out, probe=probe, reuse=pool, work=stream.stream, setup=say_cost,
                             progress=not args.quiet)
    print(f"{outcome.calls_made} LLM calls made; run directory: {out}")
    return out, outcome.errors is None
