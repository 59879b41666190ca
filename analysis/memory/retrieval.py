"""Whether retrieval brought the right label at all: per strategy of the audit (analysis.memory.audit), the share
of the labeled test prompts with memory that retrieved an entry labeled with the question's gold label, and the
accuracy of those prompts and of the others. With a few labels nearly every prompt retrieves the gold label by
chance; with many (BANKING77's 77, CLINC150's 150) a wrong answer is often one that memory could not have made
right: this tells retrieval failures from failures to use what was retrieved."""

from __future__ import annotations


def share(part, whole) -> float | None:
    """part / whole, None over nothing (the audit's one definition of a share)."""
    return part / whole if whole else None


def count_gold_retrieved(stats: dict, gold: str, labels: list, ok: bool) -> None:
    """Count one labeled prompt with memory by whether an entry it retrieved carries the question's gold label
    (an entry's ``label``: the label its critic was shown); a prompt whose entries carry no label is not judged."""
    labels = [label for label in labels if label is not None]
    if not labels:
        return
    hit = gold in labels
    stats["label_judged"] += 1
    stats["gold_retrieved"] += hit
    stats["correct_gold_retrieved" if hit else "correct_gold_not_retrieved"] += bool(ok)


def gold_retrieved_shares(v: dict) -> dict:
    """The share of the judged prompts that retrieved the gold label, and the accuracy with it and without it."""
    missed = v["label_judged"] - v["gold_retrieved"]
    return {"gold_retrieved_share": share(v["gold_retrieved"], v["label_judged"]),
            "accuracy_gold_retrieved": share(v["correct_gold_retrieved"], v["gold_retrieved"]),
            "accuracy_gold_not_retrieved": share(v["correct_gold_not_retrieved"], missed)}
