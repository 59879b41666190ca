"""`critique memory list RUN_DIR`: the ids a reader passes to `critique memory history`, from a stream's notes or
a run's episodic memory; and a reader that goes away (`| head`) ends the command quietly."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from critique.cli import main

LOGS = Path(__file__).resolve().parent.parent / "logs"
STREAM = LOGS / "pref-gen__local_smollm2__stream-self"
PLAIN = LOGS / "control-pos__local_qwen2.5-coder-0.5b"


def table(text: str) -> list[list[str]]:
    return [line.split("\t") for line in text.strip().splitlines()]


def test_a_streams_notes_are_listed_as_they_stand(capsys):
    assert main(["memory", "list", str(STREAM)]) == 0
    head, *rows = table(capsys.readouterr().out)
    assert head == ["note", "versions", "status", "step", "feedback", "verdict", "truth"]
    versions: dict[str, list[dict]] = {}
    for line in (STREAM / "memory" / "notes.jsonl").read_text().splitlines():
        record = json.loads(line)
        versions.setdefault(record["note"], []).append(record)
    assert [r[0] for r in rows] == list(versions)
    for row in rows:
        last = versions[row[0]][-1]
        assert int(row[1]) == len(versions[row[0]]) and row[2] == last["status"] and row[4] == last["feedback"]
    assert main(["memory", "history", str(STREAM), rows[-1][0]]) == 0  # each id listed is one history takes


def test_a_plain_runs_episodic_entries_are_listed(capsys):
    assert main(["memory", "list", str(PLAIN)]) == 0
    head, *rows = table(capsys.readouterr().out)
    entries = [json.loads(line) for line in (PLAIN / "memory" / "episodic.jsonl").read_text().splitlines()]
    assert head[0] == "note" and [r[0] for r in rows] == [e["id"] for e in entries]


def test_a_folder_without_notes_is_one_line(tmp_path, capsys):
    assert main(["memory", "list", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip().count("\n") == 0


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX pipe")
def test_a_reader_that_goes_away_ends_the_command_without_a_traceback(tmp_path):
    note = json.loads((STREAM / "memory" / "notes.jsonl").read_text().splitlines()[0])
    (tmp_path / "memory").mkdir()
    with (tmp_path / "memory" / "notes.jsonl").open("w") as notes:  # a list far longer than a pipe holds
        for number in range(20000):
            notes.write(json.dumps({**note, "note": f"n{number:05d}", "entry": {}}) + "\n")
    with subprocess.Popen([sys.executable, "-m", "critique.cli", "memory", "list", str(tmp_path)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        proc.stdout.readline()
        proc.stdout.close()  # the reader has what it wanted: the rest of the list meets a closed pipe
        err = proc.stderr.read().decode()
        proc.wait(timeout=120)
    assert "Traceback" not in err and proc.returncode in (0, 1), err
