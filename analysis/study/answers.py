"""What each strategy answered on the test split, beside its accuracy: a model that gives one answer to
everything has the accuracy of that label's share of the test set, and only its answers show it.

Per (model, dataset, strategy) of plain runs' test predictions, from their confusion counts (analysis.study.cells'
`confusion`, from analysis.reading.tally's ANSWERS: records per (gold label, answer given); an answer that counts
wrong whatever it says, a timeout, a parse failure, an error, a prompt that did not fit, is no answer, see
tally.given):

- the answer distribution: each label's share (%) of the answers given, and the top answer with its count
  and share (ties: the first label in sorted order);
- macro-F1 (%): the unweighted mean, over the labels of the answer space that the cell holds as a gold label or
  gives as an answer, of each label's F1 = 2 TP / (2 TP + FP + FN) (sklearn.metrics.f1_score(average="macro",
  labels=those labels)): a label a limited test split never asks and the model never gives is left out, not
  counted 0 (with 150 labels and 100 test items, a third of the labels would otherwise pull it down);
- per-class accuracy (%): per gold label, the share of its questions answered right (its recall).

Macro-F1 and per-class accuracy are, like every rate of the tables, computed per user and then averaged over
users on preference data; the distribution is pooled over users.
"""

from __future__ import annotations

from critique.analysis.study.cells import mean, name_key
from critique.analysis.study.tabular import TITLES, Table, records, skip, sort_strategies

ONE_ANSWER_SHARE = 90.0  # % of a strategy's answers one label takes at which it is said to give one answer to all
COLUMNS = ["model", "dataset", "strategy", "n", "answered", "top_answer", "top_count", "top_share", "macro_f1",
           "distribution", "per_class", "commonest_error"]


def confusion(users) -> dict:
    """(gold, answer) -> records, pooled over the confusion counts ``users``."""
    pooled: dict = {}
    for counts in users:
        for pair, n in counts.items():
            pooled[pair] = pooled.get(pair, 0) + n
    return pooled


def labels(space: list, counts: dict) -> list:
    """The labels macro-F1 averages over: those given as gold or answer in ``counts``, in the answer space's order
    (in sorted order where the manifest names no space)."""
    seen = {label for pair in counts for label in pair if label is not None}
    return [label for label in space if label in seen] or sorted(seen, key=name_key)


def f1(counts: dict, label) -> float:
    """One label's F1 (%) of confusion counts: 2 TP / (2 TP + FP + FN); 0 when the label was neither."""
    tp = counts.get((label, label), 0)
    fp = sum(n for (gold, answer), n in counts.items() if answer == label and gold != label)
    fn = sum(n for (gold, answer), n in counts.items() if gold == label and answer != label)
    return 200.0 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0


def macro_f1(counts: dict, space: list) -> float | None:
    """The unweighted mean of the per-label F1 (%) over `labels`; None without a label."""
    return mean(f1(counts, label) for label in labels(space, counts))


def per_class(counts: dict) -> dict:
    """Gold label -> the share (%) of its records answered with it (recall)."""
    totals: dict = {}
    for (gold, _), n in counts.items():
        totals[gold] = totals.get(gold, 0) + n
    return {gold: 100.0 * counts.get((gold, gold), 0) / total for gold, total in totals.items()}


def distribution(counts: dict) -> dict:
    """Answer -> its share (%) of the answers given, most given first (ties: sorted order)."""
    given: dict = {}
    for (_, answer), n in counts.items():
        if answer is not None:
            given[answer] = given.get(answer, 0) + n
    total = sum(given.values())
    ordered = sorted(sorted(given, key=name_key), key=lambda answer: -given[answer])
    return {answer: 100.0 * given[answer] / total for answer in ordered}


def commonest_error(counts: dict) -> list | None:
    """[gold, answer, records] of the most frequent wrong answer given (ties: sorted order); None without one."""
    wrong = sorted(((gold, answer) for gold, answer in counts if answer is not None and answer != gold),
                   key=lambda pair: (-counts[pair], name_key(pair[0]), name_key(pair[1])))
    return [*wrong[0], counts[wrong[0]]] if wrong else None


def _over_users(per_user: list[dict]) -> dict:
    """Gold label -> the mean over the users who have that label of their per-class accuracy."""
    found: dict = {}
    for mine in per_user:
        for gold, share in mine.items():
            found.setdefault(gold, []).append(share)
    return {gold: mean(found[gold]) for gold in sorted(found, key=name_key)}


def cell(users: dict, space: list) -> dict:
    """One cell's answers (COLUMNS but its key) from its confusion counts per user (user -> counts)."""
    pooled = confusion(users.values())
    shares = distribution(pooled)
    answered = sum(n for (_, answer), n in pooled.items() if answer is not None)
    top = next(iter(shares), None)
    return {"n": sum(pooled.values()), "answered": answered, "top_answer": top,
            "top_count": sum(n for (_, answer), n in pooled.items() if answer == top) if top is not None else 0,
            "top_share": shares.get(top),
            "macro_f1": mean(f for f in (macro_f1(mine, space) for mine in users.values() if mine) if f is not None),
            "distribution": shares, "per_class": _over_users([per_class(mine) for mine in users.values()]),
            "commonest_error": commonest_error(pooled), "space": list(space)}


def rows(cells) -> list[dict]:
    """One row (COLUMNS) per test cell of `cells` (analysis.study.cells.Cells: its confusion counts) that has a gold
    label, in the study's order."""
    found = [{**{k: c[k] for k in ("model", "dataset", "strategy")}, **cell(c["users"], c["space"])}
             for c in cells.confusion]
    return sort_strategies([row for row in found if row["n"]], ["model", "dataset"])


def one_answer(row: dict) -> bool:
    """Whether the cell's top answer takes at least ONE_ANSWER_SHARE % of its answers."""
    return row["top_share"] is not None and row["top_share"] >= ONE_ANSWER_SHARE


def warning(row: dict, where: bool = True) -> str:
    """The line that says a cell gave one answer to (nearly) everything; ``where``: its model and dataset first."""
    count, n, answered, share = row["top_count"], row["n"], row["answered"], row["top_share"]
    of = f"{share:.0f}%" if answered == n else f"{share:.0f}% of the {answered} it answered"
    why = ("its accuracy is that label's share of the test set" if count == n else
           "its accuracy says little beyond that label's share of the test set")
    head = f"{row['model']} x {row['dataset']}: " if where else ""
    return f'{head}{row["strategy"]} answered "{row["top_answer"]}" to {count} of {n} test questions ({of}): {why}'


def warnings(found: list[dict], where: bool = True) -> list[str]:
    """One `warning` per cell whose top answer takes ONE_ANSWER_SHARE % or more of its answers."""
    return [warning(row, where) for row in found if one_answer(row)]


MANY_LABELS = 12  # a cell with more labels than this shows summaries, not one entry per label
SHOWN = 5  # labels a summary names


def compact(shares: dict) -> str:
    """Label -> percent as one short text: "1 100, 2 0"."""
    return ", ".join(f"{label} {share:.0f}" for label, share in shares.items()) or "-"


def answers_summary(shares: dict, space: list) -> str:
    """The answer shares of a cell with many labels: the SHOWN most given, the rest summed, and how many of the
    answer space's labels were never given."""
    shown = dict(list(shares.items())[:SHOWN])
    rest = len(shares) - len(shown)
    text = compact(shown) + (f"; the other {rest} labels {sum(shares.values()) - sum(shown.values()):.0f}"
                             if rest else "")
    never = len([label for label in space if label not in shares])
    return text + (f"; {never} of {len(space)} labels never given" if space else "")


def per_class_summary(recall: dict) -> str:
    """The per-class accuracy of a cell with many labels: over its gold labels, the mean and median, how many
    were never answered right, and the SHOWN best of those answered right at least once."""
    if not recall:
        return "-"
    values = sorted(recall.values())
    middle = len(values) // 2
    median = values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2
    right = [pair for pair in recall.items() if pair[1] > 0]
    best = dict(sorted(right, key=lambda pair: (-pair[1], name_key(pair[0])))[:SHOWN])
    return (f"{len(values)} gold labels: mean {mean(values):.0f}, median {median:.0f}, never right on "
            f"{len(values) - len(right)}" + (f"; best {compact(best)}" if best else ""))


def many(row: dict) -> bool:
    """Whether a cell has more than MANY_LABELS labels (its answer space, else the labels it holds)."""
    return len(row["space"] or set(row["distribution"]) | set(row["per_class"])) > MANY_LABELS


TABLE_COLUMNS = ["model", "dataset", "strategy", "n", "accuracy", "macro_f1", "top_answer", "top_count", "top_share",
                 "one_answer", "answered", "distribution", "per_class", "commonest_error"]
VIEW_COLUMNS = ["model", "dataset", "strategy", "n", "accuracy", "macro-F1", "top answer", "answers %",
                "per-class accuracy %", "commonest error"]
NOTE = ("answers %: each label's share of the answers given (a timeout, a parse failure, an error or a prompt that "
        "did not fit gives none); top answer: the most given and its share, marked ! at "
        f"{ONE_ANSWER_SHARE:.0f}% or more (one answer to nearly everything: the accuracy is then about that label's "
        "share of the test set); macro-F1: the unweighted mean, over the labels given as gold or as answer, of each "
        "label's F1; per-class accuracy: per gold label, the share of its questions answered right (recall); with "
        f"more than {MANY_LABELS} labels, the {SHOWN} most given answers and the rest summed, and the per-class "
        "accuracy's mean, median, labels never answered right and best labels (every label's in --format json); "
        "macro-F1 and "
        "per-class accuracy per user, then the mean over users, on preference data; commonest error: the most "
        "frequent (gold label, wrong answer) pair, written 'gold as answer (questions)'")


def with_accuracy(cells) -> list[dict]:
    """The `rows` of `cells` (analysis.study.cells.Cells) with each cell's Table 1 accuracy."""
    accuracy = {(r["model"], r["dataset"], r["strategy"]): r["accuracy"] for r in cells.accuracy}
    return [{**r, "accuracy": accuracy.get((r["model"], r["dataset"], r["strategy"])), "one_answer": one_answer(r)}
            for r in rows(cells)]


def _view(row: dict) -> dict:
    top = "-" if row["top_answer"] is None else \
        f"{row['top_answer']} ({row['top_share']:.0f}%{'!' if row['one_answer'] else ''})"
    error = row["commonest_error"]
    shares, recall = row["distribution"], row["per_class"]
    return {**{c: row[c] for c in VIEW_COLUMNS[:5]}, "macro-F1": row["macro_f1"], "top answer": top,
            "answers %": answers_summary(shares, row["space"]) if many(row) else compact(shares),
            "per-class accuracy %": per_class_summary(recall) if many(row) else compact(recall),
            "commonest error": "-" if error is None else f"{error[0]} as {error[1]} ({error[2]})"}


def table(cells) -> Table:
    """The answers table (tabular.Table "answers"): per test cell its answers beside its accuracy."""
    found = with_accuracy(cells)
    if not found:
        return skip("answers", "no test-stage answer with a gold label among the plain runs read")
    return Table("answers", TITLES["answers"], TABLE_COLUMNS, records(found, TABLE_COLUMNS), None, VIEW_COLUMNS,
                 [_view(r) for r in found], NOTE)
