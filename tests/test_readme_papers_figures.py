"""docs/results.md's figures of the memory papers' experiments on the model that learns (admission at write time,
offline and on a stream, past outcomes against procedures, revocable priors, dose-response: logs-memory/) are what
`critique tables` prints from the shipped logs today, with the study's admit-all runs (logs/) beside the admitting
ones, and the shipped streams resume with no call."""

from __future__ import annotations

import pytest

from shipped import LOGS, MEMORY, QWEN, results


@pytest.fixture
def tables(memory_tables) -> dict:
    return memory_tables


def _p(value) -> str:
    return "-" if value is None else f"{value:.3g}"


def _points(value) -> str:
    return "-" if value is None else f"{value:+.1f}"


def _tenth(value) -> str:
    return "-" if value is None else f"{value:.1f}"


def _arm_rows(tables, key: str, arms: list[str], n: int) -> dict[str, dict]:
    """A probe table's Qwen rows by arm: exactly ``arms``, each on ``n`` items with no error."""
    rows = {r["arm"]: r for r in tables[key] if r["model"] == QWEN}
    assert set(rows) == set(arms)
    assert all(r["n"] == n and r["errors"] == 0 for r in rows.values())
    return rows


def _wins(r: dict, baseline: str) -> str:
    return "-" if r["arm"] == baseline else f"{r['wins']} / {r['losses']}"


def _admission_line(r: dict) -> str:
    """An admission table row as docs/results.md writes it (offline or on a stream: the same columns)."""
    return (f"| {r['dataset']} | {r['critiques']} | {r['rejected']} | {r['rejected_share']:.1f} | "
            f"{r['accuracy']:.1f} | {r['admit_all']:.1f} | {_points(r['vs_admit_all'])} | {r['wins']} / "
            f"{r['losses']} | {_p(r['p'])} | {_tenth(r['mde'])} |")


def test_the_admission_rows(tables):
    rows = [r for r in tables["admission"] if r["model"] == QWEN and r["probe"] is None]
    assert {r["dataset"] for r in rows} == {"mcr-gen", "pref-gen"}
    for r in rows:
        assert r["twin"] == str(LOGS / f"{r['dataset']}__local_qwen2.5-coder-0.5b")  # the study's admit-all run
        line = _admission_line(r)
        assert line in results(), line


def test_the_shipped_runs_are_complete(tmp_path, capsys):
    import shutil

    from critique.cli import main

    shutil.copytree(MEMORY, tmp_path / "memory")
    assert main(["study", str(tmp_path / "memory" / "admission-qwen.toml"), "--dry-run"]) == 0
    assert "2 complete, 0 to run" in capsys.readouterr().out


STREAM = MEMORY / "mcr-gen__local_qwen2.5-coder-0.5b__admission-instruction__stream-gold"
STREAM_TWIN = MEMORY / "mcr-gen__local_qwen2.5-coder-0.5b__stream-gold"


def test_the_stream_admission_row(tables):
    (r,) = [r for r in tables["admission"] if r["model"] == QWEN and r["probe"] == "stream"]
    assert r["twin"] == str(STREAM_TWIN)
    line = _admission_line(r)
    assert line in results(), line


def test_what_the_stream_admission_sentences_say(tables):
    from critique.base import rundir

    streams = [r for r in tables["stream"] if r["model"].startswith(QWEN)]  # labelled by the settings they differ in
    (admitting,) = [r for r in streams if "admission=instruction" in r["model"]]
    (twin,) = [r for r in streams if "admission=all" in r["model"] and r["dataset"] == "mcr-gen" and (
        r["feedback"], r["start"], r["demote"]) == ("gold", "train", None)]  # the admit-all arm of mcr-gen's arms
    said = results()
    assert (admitting["written"], admitting["notes_end"]) == (0, 1)  # "its memory never grows past that one note"
    assert f"while its twin's last step retrieves from {twin['notes_end']}" in said
    assert (f"a step's prompt is {admitting['prompt_tokens']:,.0f} tokens on the admitting stream against "
            f"{twin['prompt_tokens']:,.0f} on its twin") in said
    (kept,) = rundir.read_jsonl(STREAM / rundir.MEMORY / rundir.NOTES)
    assert kept["step"] is None and "should" in kept["entry"]["critique"]["local_reason"]  # a train note
    calls = [c for run in (STREAM, STREAM_TWIN) for c in rundir.read_jsonl(run / rundir.CALLS)]
    assert f"{sum(not c['cached'] for c in calls)} new calls in all" in said


@pytest.mark.parametrize("run", [STREAM, STREAM_TWIN], ids=["admitting", "admit-all"])
def test_the_shipped_streams_resume_with_no_call(run, tmp_path, capsys):
    import shutil

    from critique.base import rundir
    from critique.cli import main

    shutil.copytree(run, tmp_path / run.name)
    command = rundir.read_manifest(run)["command"][1:]
    command[command.index("--out") + 1] = str(tmp_path / run.name)
    if "--reuse" in command:  # the folder it was run beside (an absolute path of that machine): not needed to resume
        at = command.index("--reuse")
        del command[at:at + 2]
    assert main([*command, "--no-cache", "--quiet"]) == 0
    assert "0 LLM calls made" in capsys.readouterr().out


def test_the_conditioning_rows(tables):
    arms = ["none", "outcomes@1", "outcomes@4", "outcomes@16", "procedures@1", "procedures@4", "procedures@16"]
    for r in _arm_rows(tables, "conditioning", arms, 100).values():
        line = (f"| {r['arm']} | {r['entries']:.1f} | {r['prompt_tokens']:.0f} | {r['accuracy']:.1f} | "
                f"{_points(r.get('vs_none'))} | {_wins(r, 'none')} | {_p(r.get('p'))} | {_p(r.get('p_holm'))} | "
                f"{_tenth(r.get('mde'))} |")
        assert line in results(), line


def test_what_the_conditioning_sentences_say(tables):
    rows = {r["arm"]: r for r in tables["conditioning"] if r["model"] == QWEN}
    assert all(r.get("p_holm") is None or r["p_holm"] >= 0.05 for r in rows.values())  # "no arm differs ... Holm"
    one = rows["outcomes@1"]
    said = results()
    assert (f"one past outcome before the question ({one['vs_none']:+.1f} points, {one['wins']} items won and "
            f"{one['losses']} lost, p = {one['p']:.3g} before Holm)") in said
    assert f"up to {rows['outcomes@16']['prompt_tokens']:,.0f} prompt tokens" in said
    from critique.base import rundir

    calls = rundir.read_jsonl(MEMORY / "mcr-gen__local_qwen2.5-coder-0.5b__conditioning-1-4-16" / rundir.CALLS)
    assert f"{sum(not c['cached'] for c in calls)} new calls" in said


def test_the_priors_rows(tables):
    for r in _arm_rows(tables, "priors", ["unmarked", "prior"], 250).values():
        line = (f"| {r['arm']} | {r['accuracy']:.1f} | {r['note_right']:.1f} | {r['followed']:.1f} | "
                f"{r['followed_wrong']:.1f} | {r['acc_note_right']:.1f} | {r['acc_note_wrong']:.1f} | "
                f"{_points(r.get('vs_unmarked'))} | {_wins(r, 'unmarked')} | {_p(r.get('p'))} | "
                f"{_tenth(r.get('mde'))} |")
        assert line in results(), line


def test_what_the_priors_sentences_say(tables):
    from statistics import mean

    from critique.base import rundir

    rows = {r["arm"]: r for r in tables["priors"] if r["model"] == QWEN}
    said = results()
    run = MEMORY / "mcr-gen__local_qwen2.5-coder-0.5b__priors"
    predictions = [p for p in rundir.read_jsonl(run / rundir.PREDICTIONS) if p["stage"] == "probe"]
    answers = {}
    for p in predictions:
        answers.setdefault(p["item_id"], {})[p["strategy"]] = p["answer"]
    changed = sum(a["unmarked"] != a["prior"] for a in answers.values())
    assert changed == rows["prior"]["wins"] + rows["prior"]["losses"] == 0
    assert f"The marks change none of the {len(answers)} answers" in said
    calls = rundir.read_jsonl(run / rundir.CALLS)
    added = mean(c["prompt_tokens"] for c in calls if c["strategy"] == "prior") - \
        mean(c["prompt_tokens"] for c in calls if c["strategy"] == "unmarked")
    assert f"they add {added:.0f} prompt tokens a question on average" in said
    assert f"{sum(not c['cached'] for c in calls)} new calls" in said
    unmarked = rows["unmarked"]
    assert (f"it answers the nearest note's option {unmarked['followed']:.1f}% of the time, "
            f"{unmarked['followed_wrong']:.1f}% where that note is wrong") in said
    assert (f"where the nearest note is right ({unmarked['acc_note_right']:.1f}%) than where it is wrong "
            f"({unmarked['acc_note_wrong']:.1f}%)") in said


DOSE_RUN = MEMORY / "mcr-gen__local_qwen2.5-coder-0.5b__dose-1-4-16-vs-control-neg"
DOSE_ARMS = ["none", "own@1", "own@4", "own@16", "irrelevant@1", "irrelevant@4", "irrelevant@16"]


def test_the_dose_rows(tables):
    for r in _arm_rows(tables, "dose", DOSE_ARMS, 50).values():
        line = (f"| {r['arm']} | {r['shown']:.0f} | {r['prompt_tokens']:.0f} | {r['accuracy']:.1f} | "
                f"{_tenth(r['memory_only'])} | {_points(r.get('vs_none'))} | {_wins(r, 'none')} | {_p(r.get('p'))} | "
                f"{_p(r.get('p_holm'))} | {_tenth(r.get('mde'))} |")
        assert line in results(), line


def test_the_dose_run_names_its_control_by_content():
    import hashlib

    from critique.base import rundir

    probe = rundir.read_manifest(DOSE_RUN)["probe"]
    control = LOGS / "control-neg__local_qwen2.5-coder-0.5b" / "memory" / "episodic.jsonl"
    assert probe == {"name": "dose", "values": [1, 4, 16], "irrelevant_dataset": "control-neg",
                     "irrelevant_memory": hashlib.sha256(control.read_bytes()).hexdigest()}
    calls = rundir.read_jsonl(DOSE_RUN / rundir.CALLS)
    memory_arms = {c["request_hash"] for c in calls if c["strategy"] not in ("none", None) and c["stage"] == "probe"}
    assert f"{len(memory_arms)} calls for the memory arms" in results()


def test_what_the_dose_sentences_say(tables):
    from critique.base import rundir

    predictions = [p for p in rundir.read_jsonl(DOSE_RUN / rundir.PREDICTIONS) if p["stage"] == "probe"]
    ones = sum(p["answer"] == "1" for p in predictions)
    gold = sum(p["gold"] == "1" for p in predictions if p["strategy"] == "none")
    said = results()
    assert f'answers "1" to {ones} of the {len(predictions)} prompts' in said
    assert f'({gold} of the 50 gold answers are "1", hence {100 * gold / 50:.1f} in every row)' in said
    rows = [r for r in tables["dose"] if r["model"] == QWEN]
    assert {r["accuracy"] for r in rows} == {100 * gold / 50}
    assert all(r["memory_only"] is None for r in rows)  # "R7's lexical check cannot fire on mcr-gen"
    conditioning = {r["arm"]: r for r in tables["conditioning"] if r["model"] == QWEN}["outcomes@1"]
    assert f"one past outcome: {conditioning['wins'] + conditioning['losses']} discordant items of 100" in said


def test_make_reproduce_prints_the_tables_these_figures_come_from():
    from shipped import MEMORY_INPUTS, ROOT

    makefile = (ROOT / "Makefile").read_text(encoding="utf-8").splitlines()
    (line,) = [line for line in makefile if "critique tables logs-memory/" in line]
    read = [str((ROOT / path).resolve()) for path in line.split("critique tables ")[1].split()]
    assert read == [str(path.resolve()) for path in MEMORY_INPUTS]
