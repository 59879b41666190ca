"""`critique plan`: before a run, how many paired test items a difference in accuracy needs, and what they cost.

The items are analysis.stats.core.items_needed's: the two-sided McNemar test the tables print, at 80% power and alpha
0.05, for a given discordance (the share of the items one strategy answers right and the other wrong). The
discordance is assumed (``--discordance``) or read from a pilot run directory (a `critique run --limit N`): each
strategy's against zero_shot, as `critique run` prints it. A pilot also gives the cost: its logged calls, and their
tokens at its price, per test item; a run of more items costs that much per item (`--limit N` scales the train
stage with the test items). Reads logs only: no model call.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

HELP = "how many paired test items a difference needs at 80% power, and what they would cost (reads logs only)"


def register(sub) -> None:
    parser = sub.add_parser("plan", help=HELP.replace("%", "%%"), description=HELP)  # argparse %-formats a help
    parser.add_argument("run", nargs="?", metavar="RUN_DIR",
                        help="a pilot run directory: each strategy's discordance against zero_shot, and the calls "
                             "and dollars per test item, come from its logs")
    parser.add_argument("--detect", type=float, required=True, metavar="POINTS",
                        help="the difference in accuracy (percentage points) the test should find, e.g. 10")
    parser.add_argument("--discordance", type=float, metavar="SHARE",
                        help="the share of the items (0-1] one strategy answers right and the other wrong "
                             "(needed without RUN_DIR; with it, replaces the pilot's)")
    parser.set_defaults(func=main)


@dataclass
class Pilot:
    path: Path
    test_items: int
    calls: int
    dollars: float | None  # the calls' tokens at the run's price; None without a price

    def cost(self, items: int) -> str:
        """What a run like the pilot with ``items`` test items would make and cost."""
        scale = items / self.test_items
        dollars = "dollars unknown (no price in the pilot's manifest)" if self.dollars is None \
            else f"${self.dollars * scale:,.4f}"
        return (f"about {round(self.calls * scale):,} calls, {dollars} (the pilot's {self.calls / self.test_items:.1f} "
                f"calls per test item)")


def read_pilot(run: str) -> Pilot:
    """The pilot's test items (its manifest's), its logged calls and what their tokens cost at its price."""
    from critique.analysis.reading import logs, prices

    test_items = int((logs.manifest(run).get("dataset") or {}).get("n_test") or 0)
    tokens = logs.rows(run, logs.CALLS, ("prompt_tokens", "completion_tokens"))
    dollars = prices.dollars(prices.of_run(run), sum(p or 0 for p, _ in tokens), sum(c or 0 for _, c in tokens))
    return Pilot(Path(run), test_items, len(tokens), dollars)


def _checked(args) -> None:
    from critique.base.errors import UserError

    if not 0 < args.detect <= 100:
        raise UserError(f"--detect must be a difference in (0, 100] percentage points, not {args.detect:g}")
    if args.discordance is not None and not 0 < args.discordance <= 1:
        raise UserError(f"--discordance must be a share in (0, 1], not {args.discordance:g}")
    if args.run is None and args.discordance is None:
        raise UserError("give --discordance (the share of items answered differently), or a pilot RUN_DIR")


def _line(head: str, detect: float, discordance: float, pilot: Pilot | None) -> str:
    """One answer: the items a ``detect``-point difference needs at ``discordance`` (or why there is no such
    number), and with a pilot what they would cost."""
    from critique.analysis.stats.core import items_needed

    items = items_needed(detect, discordance)
    if items is None:
        return (f"{head}: none: a {detect:g}-point difference cannot occur when only {100 * discordance:.3g}% of the "
                "items are answered differently")
    cost = f"; {pilot.cost(items)}" if pilot is not None and pilot.test_items else ""
    return f"{head}: {items:,} paired test items{cost}"


def _pilot_lines(args) -> list[str]:
    """Per strategy against zero_shot in the pilot (or once, at --discordance): the items needed and their cost."""
    from critique.analysis.reading.load import load
    from critique.analysis.study.run_table import zero_shot_pairs

    pilot = read_pilot(args.run)
    if args.discordance is not None:
        return [_line(f"at discordance {args.discordance:g}", args.detect, args.discordance, pilot)]
    lines = []
    for row in zero_shot_pairs(load([str(args.run)], workers=1)):
        discordant, head = row["discordant_wins"] + row["discordant_losses"], f"{row['strategy']} vs zero_shot"
        if not discordant:
            lines.append(f"{head}: undefined: the two answered none of the pilot's {row['n']} items differently "
                         "(give --discordance)")
            continue
        share = discordant / row["n"]
        lines.append(_line(f"{head} (discordance {share:.3g}: {discordant} of the pilot's {row['n']} items)",
                           args.detect, share, pilot))
    return lines or ["the pilot has no strategy answered beside zero_shot on the same items: give --discordance"]


def main(args) -> int:
    from critique.analysis.stats.core import ALPHA, POWER

    _checked(args)
    print(f"A {args.detect:g}-point difference in accuracy, found by the two-sided McNemar test at {POWER:.0%} power "
          f"and alpha {ALPHA:g} (Connor's normal approximation; the exact test's power there is a little lower), "
          "needs:")
    lines = _pilot_lines(args) if args.run else [
        _line(f"at discordance {args.discordance:g}", args.detect, args.discordance, None)]
    for line in lines:
        print(f"  {line}")
    return 0
