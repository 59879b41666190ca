"""docs/results.md's figures of credit that is learned on the model that learns (logs-memory/credit-qwen.toml: the
plain run, its credit by deletion on train and the memories pruned by that credit) are what `critique tables`
prints from the shipped logs today, and the study file finds its three run directories complete."""

from __future__ import annotations

import pytest

from shipped import LOGS, MEMORY, QWEN, command_json, results

PLAIN = MEMORY / "control-pos__local_qwen2.5-coder-0.5b"
CREDIT = MEMORY / f"{PLAIN.name}__credit-EP_CRIT-train"
PRUNE = MEMORY / f"{CREDIT.name}__prune"


@pytest.fixture(scope="module")
def tables(tmp_path_factory) -> dict:
    return command_json(tmp_path_factory.mktemp("credit"), ["tables", str(PLAIN), str(CREDIT)])


def _one(tables, key: str) -> dict:
    (row,) = [r for r in tables[key] if r["model"] == QWEN and r["dataset"] == "control-pos"]
    return row


def test_the_credit_row(tables):
    r = _one(tables, "credit")
    assert (r["strategy"], r["on"], r["null_asked"]) == ("EP_CRIT", "train", 0)
    line = (f"| {r['dataset']} | {r['prompts']} | {r['accuracy_full']:.1f} | {r['deletions']} | {r['decisive']} | "
            f"{r['entries']} | {r['inert']} | {r['novel-not-decisive']} | {r['load-bearing']} | {r['toxic']} | "
            f"{r['mixed']} |")
    assert line in results(), line


def test_what_the_credit_sentences_say(tables):
    r = _one(tables, "credit")
    said = results()
    assert f"{r['decisive']} of the {r['deletions']} deletions change whether the answer is right" in said
    assert (f"{r['load-bearing']} entries are load-bearing (their deletion turns a right answer wrong), {r['toxic']} "
            f"toxic (the other way), {r['mixed']} mixed") in said
    learned = _one(tables, "credit_learned")
    assert learned["rho"] <= 0 or learned["p"] >= 0.05  # "It does not rank the held-out entries' credit"
    assert f"rho = {learned['rho']:.3f} (p = {learned['p']:.3g})" in said
    bins = sorted((b for b in tables["credit_learned_calibration"] if b["model"] == QWEN), key=lambda b: b["bin"])
    assert bins[-1]["credit"] < bins[0]["credit"]  # "its calibration runs the wrong way"
    assert (f"Pruning the {learned['budget']} held-out entries of lowest estimate takes out "
            f"{learned['removed_by_estimate']:+.1f} of measured credit, against "
            f"{learned['removed_by_credit']:+.1f} for the {learned['budget']} of lowest measured credit") in said
    assert f"and {learned['removed_at_random']:+.1f} at random" in said


def test_the_learned_credit_row(tables):
    r = _one(tables, "credit_learned")
    line = (f"| {r['dataset']} | {r['fitted']} | {r['judged']} | {r['rho']:.3f} | {r['p']:.3g} | {r['mae']:.2f} | "
            f"{r['budget']} | {r['removed_by_estimate']:+.1f} | {r['removed_by_credit']:+.1f} | "
            f"{r['removed_at_random']:+.1f} |")
    assert line in results(), line


def test_the_calibration_bins(tables):
    bins = sorted((r for r in tables["credit_learned_calibration"] if r["model"] == QWEN), key=lambda r: r["bin"])
    said = ", ".join(f"{r['estimate']:+.1f} / {r['credit']:+.1f}" for r in bins)
    assert f"by quarters of the estimate, estimate / measured credit: {said}" in results(), said


def _pruned(rows: list[dict]) -> dict[str, dict[str, dict]]:
    """The pruning table's rows by rule, then strategy."""
    out: dict[str, dict[str, dict]] = {}
    for r in rows:
        out.setdefault(r["rule"], {})[r["strategy"]] = r
    return out


def _accuracy(r: dict) -> str:
    if r["seeds"] > 1:
        return f"{r['accuracy'] * 100:.1f} ({r['accuracy_min'] * 100:.1f}-{r['accuracy_max'] * 100:.1f})"
    return f"{r['accuracy'] * 100:.1f}"


def test_the_pruning_rows():
    from critique.analysis.memory.credit import prune_rows

    rows = prune_rows(PRUNE)
    assert all(r["n"] == 100 and r["errors"] == 0 for r in rows)
    for rule, by in _pruned(rows).items():
        line = f"| {rule} | {by['EP_CRIT']['removed']} | {_accuracy(by['EP_CRIT'])} | {_accuracy(by['EP+SEM_CRIT'])} |"
        assert line in results(), line


def _discordant() -> dict[tuple[str, str], tuple[int, int]]:
    """(strategy, rule with its seed) -> questions won and lost against the whole memory (rule none)."""
    from critique.base import rundir

    correct: dict[str, dict[str, bool]] = {}
    for p in rundir.read_jsonl(PRUNE / rundir.PREDICTIONS):
        correct.setdefault(p["strategy"], {})[p["item_id"]] = bool(p["correct"])
    out = {}
    for label, answers in correct.items():
        strategy, _, rule = label.partition("|")
        whole = correct[f"{strategy}|none"]
        out[strategy, rule] = (sum(answers[i] and not whole[i] for i in whole),
                               sum(whole[i] and not answers[i] for i in whole))
    return out


def test_what_the_pruning_sentences_say():
    from critique.analysis.memory.credit import prune_rows

    rows = prune_rows(PRUNE)
    by = _pruned(rows)
    said = results()
    moved = [abs(r["accuracy"] - by["none"][r["strategy"]]["accuracy"]) * 100 for r in rows]
    assert max(moved) == pytest.approx(2.0)  # "No rule moves either strategy by more than two points"
    d = _discordant()
    ep, both = "EP_CRIT", "EP+SEM_CRIT"
    assert (f"removing the 10 entries of lowest measured credit wins {d[ep, 'lowest:10'][0]} questions and loses "
            f"{d[ep, 'lowest:10'][1]} on EP_CRIT ({d[both, 'lowest:10'][0]} and {d[both, 'lowest:10'][1]} on "
            f"EP+SEM_CRIT), the 10 of lowest estimate {d[ep, 'estimate:10'][0]} and {d[ep, 'estimate:10'][1]} "
            f"({d[both, 'estimate:10'][0]} and {d[both, 'estimate:10'][1]})") in said
    random = [v for (_, rule), v in d.items() if rule.startswith("random:")]
    assert (f"10 at random {min(w for w, _ in random)} to {max(w for w, _ in random)} won and "
            f"{min(lost for _, lost in random)} to {max(lost for _, lost in random)} lost") in said
    assert f"with at most {max(w + lost for w, lost in d.values())} discordant questions of 100 under any rule" in said


def test_why_the_positive_control():
    """mcr-gen's EP_CRIT answers one option to every question in the study's log: no deletion could move it."""
    from critique.base import rundir

    answers = [p["answer"] for p in rundir.read_jsonl(LOGS / "mcr-gen__local_qwen2.5-coder-0.5b" / rundir.PREDICTIONS)
               if p["stage"] == "test" and p["strategy"] == "EP_CRIT"]
    assert len(answers) == 250 and set(answers) == {"1"}
    assert 'the study\'s EP_CRIT answers "1" to every one of mcr-gen\'s 250 test questions' in results()


def test_the_new_calls_said():
    from critique.base import rundir

    said = results()
    for run, what in ((PLAIN, "the plain run"), (CREDIT, "the credit run"), (PRUNE, "the pruning run")):
        calls = rundir.read_jsonl(run / rundir.CALLS)
        assert f"{what} {sum(not c['cached'] for c in calls)} new calls" in said, what


def test_the_credit_study_is_complete(tmp_path, capsys):
    import shutil

    from critique.cli import main

    folder = tmp_path / "memory"
    folder.mkdir()
    shutil.copy(MEMORY / "credit-qwen.toml", folder)
    for run in (PLAIN, CREDIT, PRUNE):
        shutil.copytree(run, folder / run.name)
    assert main(["study", str(folder / "credit-qwen.toml"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "1 complete, 0 to run" in out and "run (complete), credit-train (complete), prune (complete)" in out
    assert main(["study", str(folder / "credit-qwen.toml")]) == 0
    assert "0 LLM calls made" in capsys.readouterr().out
