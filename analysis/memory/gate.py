"""The gate table: retrieval that knows when to stay silent (docs/memory.md section 4).

Reads the run directories of `critique ablate gate` (manifest ablation {name: gate, value: T}) and,
per model x dataset x strategy x threshold T, reports from their test predictions:

- `accuracy` (%): answers right (an error, a timeout, a parse failure, a prompt that did not fit
  count wrong, as in every table);
- `arm_accuracy` (%): the memory-off arm's accuracy in the same run directory: zero_shot for EP_CRIT
  and EP_LABEL, SEM_CRIT for EP+SEM_CRIT (a gated-empty prompt is exactly that arm's prompt);
- `gain`: accuracy - arm_accuracy, in points;
- `injected_tokens`: the mean, per question, of the prediction's logged `injected_tokens` (the tokens
  its episodic examples add to the prompt: the prompt's tokens less those of the same template without
  examples, counted by the run with the model's tokenizer; 0 for a prompt the gate left empty);
- `empty` (%): the share of prompts left with no entry (`retrieved` empty: the memory-free prompt);
- `points_per_1k_tokens`: gain / injected_tokens x 1000; none when no token was injected.

For preference data each rate and mean is taken per user, then averaged over users (as every table
does). Reads logs only: no LLM call; importing this module is cheap.
"""

from __future__ import annotations

from critique.analysis.reading import logs
from critique.base import vocab
from critique.analysis.study.cells import mean, name_key, over_users, value_key
from critique.analysis.study.tabular import ERROR_NOTE, Table, flagged, records, sort_strategies

KEY = "gate"
TITLE = "Gate ablation: accuracy (%) against the episodic example tokens injected per question"
# The strategy whose prompt a gated-empty prompt is (critique.engine.performance.performance_prompt).
ARM = {vocab.EP_LABEL: vocab.ZERO_SHOT, vocab.EP_CRIT: vocab.ZERO_SHOT, vocab.EP_SEM_CRIT: vocab.SEM_CRIT}
COLUMNS = ["model", "dataset", "strategy", "gate", "accuracy", "arm", "arm_accuracy", "gain", "injected_tokens",
           "empty", "points_per_1k_tokens", "n", "errors", "flagged"]
FORMATS = {"gate": ".2f", "injected_tokens": ",.1f", "points_per_1k_tokens": ".2f"}


def _predictions(metas: list[dict], problems: list[str]) -> list[dict]:
    """The test predictions of runs of one experiment (oldest first): per item, the latest run's."""
    chosen: dict[tuple, dict] = {}
    for meta in metas:
        records_ = logs.predictions(meta["path"], (vocab.TEST,), problems)
        chosen.update({(r.get("strategy"), r.get("user"), r.get("item_id")): r for r in records_})
    return list(chosen.values())


def _per_user(records_: list[dict], value) -> float | None:
    """The mean over users of the mean of ``value(record)`` over each user's records; None when a
    record has no value (older logs)."""
    if any(value(r) is None for r in records_):
        return None
    return over_users(records_, lambda mine: mean(value(r) for r in mine))


def rows(metas: list[dict], problems: list[str]) -> list[dict]:
    """One row per model x dataset x strategy x gate among the gate ablation runs of ``metas``
    (analysis.reading.read.run_meta, oldest first)."""
    from critique.analysis.reading.read import experiment, model_label

    groups: dict[tuple, list[dict]] = {}
    for meta in metas:
        if meta["ablation"] == KEY and meta["probe"] is None:
            groups.setdefault(experiment(meta), []).append(meta)
    out = []
    for members in groups.values():
        meta = members[-1]
        by_strategy: dict[str, list[dict]] = {}
        for r in _predictions(members, problems):
            by_strategy.setdefault(r.get("strategy"), []).append(r)
        for strategy, found in by_strategy.items():
            if strategy not in ARM:
                continue
            arm = by_strategy.get(ARM[strategy], [])
            accuracy = _per_user(found, lambda r: 100.0 * (r.get("correct") is True))
            arm_accuracy = _per_user(arm, lambda r: 100.0 * (r.get("correct") is True)) if arm else None
            tokens = _per_user(found, lambda r: r.get("injected_tokens"))
            if tokens is None:
                problems.append(f"{meta['path']}: {strategy} predictions without injected_tokens (written before "
                                "it was logged): its injected tokens and points per 1,000 tokens are left empty")
            if not arm:
                problems.append(f"{meta['path']}: no {ARM[strategy]} predictions (the memory-off arm of {strategy}): "
                                "its gain is left empty")
            gain = None if arm_accuracy is None else accuracy - arm_accuracy
            out.append({"model": model_label(meta), "dataset": meta["dataset"], "strategy": strategy,
                        "gate": meta["ablation_value"], "accuracy": accuracy, "arm": ARM[strategy],
                        "arm_accuracy": arm_accuracy, "gain": gain, "injected_tokens": tokens,
                        "empty": _per_user(found, lambda r: 100.0 * (not r.get("retrieved"))),
                        "points_per_1k_tokens": gain / tokens * 1000.0 if gain is not None and tokens else None,
                        "n": len(found), "errors": sum(bool(r.get("error")) for r in found)})
    out.sort(key=lambda r: (name_key(r["model"]), name_key(r["dataset"]), value_key(r["gate"])))
    return sort_strategies(out, ["model", "dataset"]) if out else out


def table(metas: list[dict], problems: list[str]) -> Table:
    """The gate table of the runs ``metas`` (analysis.reading.read.run_meta): skipped, saying why, when
    none is a gate ablation run."""
    found = rows(metas, problems)
    if not found:
        return Table(KEY, TITLE, skipped="no ablation runs with manifest.ablation.name == 'gate' among the inputs "
                                         "(critique ablate gate)")
    found = flagged(found)
    runs = sum(m["ablation"] == KEY and m["probe"] is None for m in metas)
    note = (f"read: the test predictions of {runs} gate ablation run director{'y' if runs == 1 else 'ies'} "
            "(manifest.ablation.name == 'gate', value: the gate T); accuracy and arm_accuracy in %, the arm being "
            "the memory-off strategy of the same run directory (zero_shot; SEM_CRIT for EP+SEM_CRIT); gain = "
            "accuracy - arm_accuracy (points); injected_tokens: mean per question of the logged injected_tokens "
            "(tokens the episodic examples add to the prompt, counted by the run with the model's tokenizer; 0 "
            "when the gate left none); empty: % of prompts left with no entry (the memory-free prompt); "
            "points_per_1k_tokens = gain / injected_tokens x 1000 (none when nothing was injected); preference "
            "data: per user, then the mean over users")
    if any(r["flagged"] for r in found):
        note += "; " + ERROR_NOTE
    return Table(KEY, TITLE, COLUMNS, records(found, COLUMNS), note=note, formats=dict(FORMATS))
