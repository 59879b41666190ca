"""docs/results.md's shipped comparison of the field's methods (logs-methods/: the embedded model, every method at one
train budget) holds the figures that `critique tables logs-methods --format json` computes: its table is rebuilt
here from the methods table and found in docs/results.md, so a change to the logs or the analysis that moves one fails
until docs/results.md says the new one."""

from dataclasses import dataclass

import pytest

from critique.analysis.study.render import cell
from critique.base import rundir
from shipped import RESULTS, ROOT, command_json, results

BUDGET = 30000
FIELD = ("ace", "ace:nolabel", "dc", "expel", "dspy:knn", "dspy:mipro", "dspy:gepa", "dspy:simba")


@dataclass(frozen=True)
class Comparison:
    """One model's shipped comparison in logs-methods/: on which datasets, and which methods its table lists."""
    model: str
    datasets: tuple[str, ...]
    methods: tuple[str, ...]


SMOLLM2 = Comparison("local/smollm2", ("mcr-gen", "pref-gen", "control-pos"), ("EP+SEM_CRIT", *FIELD))
QWEN = Comparison("local/qwen2.5-coder-0.5b", ("control-pos",),
                  ("EP+SEM_CRIT", "EP_CRIT:budget", "SEM_CRIT:budget", "EP+SEM_CRIT:budget", *FIELD))


def _rows(rows: list[dict], dataset: str, method: str, model: str = SMOLLM2.model) -> dict:
    """The method's row against each strategy it is compared with (its own figures are the same in each)."""
    found = [r for r in rows if r["dataset"] == dataset and r["method"] == method and r["model"] == model]
    assert found and len({r["accuracy"] for r in found}) == 1, (dataset, method)
    return {r["against"]: r for r in found}


def _against(rows: dict, other: str) -> str:
    r = rows.get(other)
    if r is None or r["diff"] is None:
        return "-"
    return (f"{cell('diff', r['diff'])} ({r['wins']}/{r['losses']}, p {cell('p_holm', r.get('p_holm'))}, "
            f"mde {cell('mde', r['mde'])})")


def methods_table(rows: list[dict], comparison: Comparison = SMOLLM2) -> str:
    """docs/results.md's comparison: per dataset and method, accuracy, its timeouts, what its memory holds, offline
    tokens and where the budget stopped it, tokens per test question, break-even against EP_LABEL, and the paired
    tests (Holm) against EP+SEM_CRIT and zero_shot."""
    lines = ["| dataset | method | accuracy % | timeouts | memory | offline tokens | stopped "
             "| prompt + completion tokens / question | break-even "
             "| vs EP+SEM_CRIT: points (wins/losses, p Holm, mde) | vs zero_shot |",
             "|---" * 11 + "|"]
    for dataset in comparison.datasets:
        for method in comparison.methods:
            by = _rows(rows, dataset, method, comparison.model)
            r = next(iter(by.values()))
            if method != "EP+SEM_CRIT":  # the budget, or each of pref-gen's 10 users' equal share of it
                assert r["train_budget"] == (BUDGET // 10 if dataset == "pref-gen" else BUDGET), r
            lines.append(f"| {dataset} | {method} | {cell('accuracy', r['accuracy'])} | "
                         f"{cell('timeouts', r['timeouts'])} | {cell('memory', r['memory'])} | "
                         f"{cell('offline_tokens', r['offline_tokens'])} | {cell('stopped', r['stopped'])} | "
                         f"{cell('total_tokens_per_question', r['total_tokens_per_question'])} | "
                         f"{cell('break_even', r['break_even'])} | {_against(by, 'EP+SEM_CRIT')} | "
                         f"{_against(by, 'zero_shot')} |")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def methods_rows(tmp_path_factory) -> list[dict]:
    """`critique tables logs-methods --format json`: the methods table docs/results.md quotes."""
    return command_json(tmp_path_factory.mktemp("methods"), ["tables", str(ROOT / "logs-methods")])["methods"]


@pytest.mark.parametrize("comparison", [SMOLLM2, QWEN], ids=["smollm2", "qwen"])
def test_the_methods_table(methods_rows, comparison):
    assert methods_table(methods_rows, comparison) in RESULTS.read_text(encoding="utf-8")


# ---- the field's methods on the model that learns (logs-methods/control-pos-qwen.toml) --------------------------
QWEN_RUN = ROOT / "logs-methods" / "control-pos__local_qwen2.5-coder-0.5b__train-budget-30000"
LABELS = ("dspy:knn",)  # the one field method whose memory is the labelled train items


def _accuracy(strategy: str) -> float:
    right = [p["correct"] is True for p in rundir.read_jsonl(QWEN_RUN / rundir.PREDICTIONS)
             if p["stage"] == "test" and p["strategy"] == strategy]
    return 100 * sum(right) / len(right)


def _memories() -> dict[str, list[dict]]:
    """method -> the pools of its memory (memory/METHOD.json, as the methods table reads it)."""
    from critique.analysis.field.methods import learned

    return {method: list(document["pools"].values()) for method, document in learned(QWEN_RUN, []).items()}


def test_what_the_methods_on_the_model_that_learns_show(methods_rows):
    folded = results()
    assert (f"EP_LABEL answers {_accuracy('EP_LABEL'):.1f}% of the test questions and zero_shot "
            f"{_accuracy('zero_shot'):.1f}%") in folded
    new = sum(not c["cached"] for c in rundir.read_jsonl(QWEN_RUN / rundir.CALLS))
    assert f"unbudgeted EP+SEM_CRIT; {new} new calls)" in folded
    knn = _rows(methods_rows, "control-pos", "dspy:knn", QWEN.model)["zero_shot"]
    assert (f"answers {knn['accuracy']:.1f}% ({knn['wins']} questions won, {knn['losses']} lost against zero_shot; "
            f"p = {knn['p_holm']:.2g} after Holm)") in folded
    others = [_rows(methods_rows, "control-pos", m, QWEN.model)["zero_shot"] for m in QWEN.methods if m not in LABELS]
    low, high = min(r["accuracy"] for r in others), max(r["accuracy"] for r in others)
    assert all(r["diff"] <= 0 for r in others)  # "none above zero_shot"
    assert f"stays between {low:.1f}% and {high:.1f}%, none above zero_shot" in folded
    mdes = [r["mde"] for r in others if r["mde"] is not None]
    assert f"about {int(min(mdes))} to {round(max(mdes))} points against zero_shot" in folded


def test_what_the_methods_on_the_model_that_learns_kept():
    folded, memories = results(), _memories()
    (ace,) = [n["text"] for pool in memories["ace"] for n in pool["notes"]]
    assert f'ACE one bullet the model wrote ("{ace[:60]}' in folded
    (blank,) = [n["text"] for pool in memories["ace:nolabel"] for n in pool["notes"]]
    assert blank.startswith("[") and blank.endswith("]")
    trials = [n["id"] for pool in memories["expel"] for n in pool["notes"]]
    assert all(t.startswith("trial:") for t in trials)
    assert f"ExpeL {len(trials)} successful trials and no rule" in folded


def test_no_offline_stage_passes_the_budget_by_more_than_its_last_call():
    usage = {c["request_hash"]: (c["prompt_tokens"] or 0) + (c["completion_tokens"] or 0)
             for c in rundir.read_jsonl(QWEN_RUN / rundir.CALLS)}
    memories = _memories()
    for method, pools in memories.items():
        for pool in pools:
            if pool["offline_tokens"] > pool["train_budget"]:
                assert pool["offline_tokens"] - usage[pool["requests"][-1]] < pool["train_budget"], method
    (full,) = memories["EP_CRIT:budget"]
    assert not full["stopped"] and f"({full['offline_tokens']:,} tokens)" in results()
