"""The table `critique run` prints when it ends: Table 1's cells of its one run directory, read and computed
as `critique tables` reads and computes them (analysis.reading.load, analysis.study.cells: rates per user, then the mean
over users on preference data; tokens per answered question), so the two never disagree. `from_records`
gives the same cells of prediction records a caller already holds (an ablation's summary)."""

from __future__ import annotations

from pathlib import Path

from critique.analysis.reading import logs, tally
from critique.analysis.study import answers, cells
from critique.analysis.reading.load import load
from critique.analysis.reading.read import PREDICTION_FIELDS
from critique.analysis.study.tabular import strategy_order
from critique.base.vocab import STRATEGIES, ZERO_SHOT

COLUMNS = ("strategy", "n", "accuracy", "macro_f1", "timeout_rate", "overflow_rate", "parse_fail_rate", "errors",
           "tokens_per_question")


def rows(run_dir: Path, found_logs=None) -> list[dict]:
    """One row per strategy of the run's test stage (COLUMNS; with `answers`: its row of analysis.study.answers, None
    without a gold label), in the study's order."""
    found = cells.from_logs(found_logs or load([str(run_dir)], workers=1))
    tokens = {r["strategy"]: r["tokens_per_question"] for r in found.tokens}
    by_strategy = {r["strategy"]: r for r in found.accuracy}
    answered = {r["strategy"]: r for r in answers.rows(found)}
    return [{**{c: by_strategy[s].get(c) for c in COLUMNS}, "tokens_per_question": tokens.get(s),
             "macro_f1": (answered.get(s) or {}).get("macro_f1"), "answers": answered.get(s)}
            for s in strategy_order(by_strategy)]


def from_records(predictions: list[dict]) -> list[dict]:
    """Table 1's cells per test strategy (COLUMNS but macro_f1, and the timeouts counted) of one run's
    prediction records, counted as the tables count them (analysis.reading.tally: the latest record of each item)."""
    items = tally.latest_per_item([tuple(p.get(f) for f in PREDICTION_FIELDS) for p in predictions])
    return cells.strategy_cells(tally.predictions(items))


def _shown(value, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def print_table(run_dir: Path) -> None:
    """Print the run's table (its dataset, model and test items first)."""
    manifest = logs.manifest(run_dir)
    print(f"\n{manifest['dataset']['name']} x {manifest['config']['model']}  (test items: "
          f"{manifest['dataset']['n_test']}; rates per user, then their mean, on preference data)\n")
    print("| strategy | n | accuracy % | macro-F1 % | timeouts % | context overflows % | parse failures % | "
          "errors | tokens/question |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    found = load([str(run_dir)], workers=1)
    table = rows(run_dir, found)
    for r in table:
        print(f"| {r['strategy']} | {r['n']} | {_shown(r['accuracy'])} | {_shown(r['macro_f1'])} "
              f"| {_shown(r['timeout_rate'])} | {_shown(r['overflow_rate'])} | {_shown(r['parse_fail_rate'])} "
              f"| {r['errors']} | {_shown(r['tokens_per_question'])} |")
    print()
    one_answer = answers.warnings([r["answers"] for r in table if r["answers"]], where=False)
    for line in one_answer:
        print(f"critique: warning: {line}")
    if one_answer:
        print()
    if len(table) > 1 and any(r["strategy"] == ZERO_SHOT for r in table):
        for line in against_zero_shot(found):
            print(line)
        print()


def zero_shot_pairs(found) -> list[dict]:
    """Each strategy's paired row against zero_shot on the items both answered (analysis.stats.inference.paired, as
    `critique tables --inference` computes it), in the study's order."""
    from critique.analysis.reading import frames
    from critique.analysis.stats import inference
    from critique.analysis.study import items

    tests = items.test_rows(frames.Logs(found.runs).outcomes())
    pairs = [(s, ZERO_SHOT) for s in STRATEGIES if s != ZERO_SHOT]
    return inference.records(inference.paired(tests, pairs=pairs))


def against_zero_shot(found) -> list[str]:
    """One line per strategy: its paired difference from zero_shot on the items both answered, with the
    discordant items, the exact McNemar p and the difference that test would find at 80% power."""
    lines = []
    for r in zero_shot_pairs(found):
        p = "no discordant item" if r["p_mcnemar"] is None else f"exact McNemar p = {r['p_mcnemar']:.2g}"
        lines.append(f"{r['strategy']} vs zero_shot on the same {r['n']} items: {r['diff']:+.1f} points "
                     f"({r['discordant_wins']} right only under {r['strategy']}, {r['discordant_losses']} only under "
                     f"zero_shot; {p}); {_detectable(r)}")
    if len(lines) > 1:
        lines.append(f"(each p alone; over the {len(lines)} comparisons, Holm's: `critique tables --inference`)")
    return lines


def _detectable(row: dict) -> str:
    """What a paired row's test could have seen: its minimum detectable effect
    (analysis.stats.core.detectable_effect)."""
    from critique.analysis.stats.core import POWER

    if row["mde"] is not None:
        return f"it had {POWER:.0%} power for a difference of {row['mde']:.1f} points or more"
    if row["discordant_wins"] + row["discordant_losses"] == 0:
        return "the smallest detectable difference is undefined without a discordant item"
    return f"too few discordant items for any difference to reach {POWER:.0%} power"
