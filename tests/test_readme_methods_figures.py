"""docs/results.md's shipped comparison of the field's methods (logs-methods/: the embedded model, every method at one
train budget) holds the figures that `critique tables logs-methods --format json` computes: its table is rebuilt
here from the methods table and found in docs/results.md, so a change to the logs or the analysis that moves one fails
until docs/results.md says the new one."""

from dataclasses import dataclass

import pytest

from critique.analysis.study.render import cell
from shipped import RESULTS, ROOT, command_json

BUDGET = 30000
FIELD = ("ace", "ace:nolabel", "dc", "expel", "dspy:knn", "dspy:mipro", "dspy:gepa", "dspy:simba")


@dataclass(frozen=True)
class Comparison:
    """One model's shipped comparison in logs-methods/: on which datasets, and which methods its table lists."""
    model: str
    datasets: tuple[str, ...]
    methods: tuple[str, ...]


SMOLLM2 = Comparison("local/smollm2", ("mcr-gen", "pref-gen", "control-pos"), ("EP+SEM_CRIT", *FIELD))


def _rows(rows: list[dict], dataset: str, method: str, model: str = SMOLLM2.model) -> dict:
    """The method's row against each strategy it is compared with (its own figures are the same in each)."""
    found = [r for r in rows if r["dataset"] == dataset and r["method"] == method and r["model"] == model]
    assert found and len({r["accuracy"] for r in found}) == 1, (dataset, method)
    return {r["against"]: r for r in found}


def _against(rows: dict, other: str) -> str:
    r = rows.get(other)
    if r is None or r["diff"] is None:
        return "-"
    return f"{cell('diff', r['diff'])} ({r['wins']}/{r['losses']}, p {cell('p_holm', r.get('p_holm'))})"


def methods_table(rows: list[dict], comparison: Comparison = SMOLLM2) -> str:
    """docs/results.md's comparison: per dataset and method, accuracy, its timeouts, what its memory holds, offline
    tokens and where the budget stopped it, tokens per test question, break-even against EP_LABEL, and the paired
    tests (Holm) against EP+SEM_CRIT and zero_shot."""
    lines = ["| dataset | method | accuracy % | timeouts | memory | offline tokens | stopped "
             "| prompt + completion tokens / question | break-even "
             "| vs EP+SEM_CRIT: points (wins/losses, p Holm) | vs zero_shot |",
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


def test_the_methods_table(methods_rows):
    assert methods_table(methods_rows) in RESULTS.read_text(encoding="utf-8")
