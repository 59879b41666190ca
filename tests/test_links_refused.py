"""A run directory holds only the files critique wrote: a symbolic link planted in place of one of them (to a
file outside the folder), a FIFO or a device is refused in one line, and nothing is written, cut or
truncated through it."""

import os

import pytest

from critique.base import rundir
from critique.base.errors import RunError
from critique.cli import main

OUTSIDE = '{"kept": 1}\n{"cut by a resume'


def run(home, *extra):
    return main(["run", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", "3", "--k", "2",
                 "--strategies", "zero_shot,EP_CRIT", "--out", str(home / "run"), "--quiet", *extra])


def _outside(tmp_path):
    target = tmp_path / "elsewhere.jsonl"
    target.write_text(OUTSIDE, encoding="utf-8")
    return target


def test_a_resume_never_writes_through_a_linked_predictions_file(home, fake_llm, capsys):
    assert run(home) == 0
    target = _outside(home)
    predictions = home / "run" / rundir.PREDICTIONS
    predictions.unlink()
    predictions.symlink_to(target)
    capsys.readouterr()
    assert run(home) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "a symbolic link" in err and rundir.PREDICTIONS in err, err
    assert target.read_text(encoding="utf-8") == OUTSIDE  # not cut, nothing appended


def test_a_linked_lock_file_is_refused_before_the_lock_truncates_it(home, fake_llm, capsys):
    target = _outside(home)
    (home / "run").mkdir()
    (home / "run" / rundir.LOCK).symlink_to(target)
    assert run(home) == 2
    assert "a symbolic link" in capsys.readouterr().err
    assert target.read_text(encoding="utf-8") == OUTSIDE


def test_append_and_repair_refuse_a_link_and_leave_its_target_alone(tmp_path):
    target = _outside(tmp_path)
    link = tmp_path / "calls.jsonl"
    link.symlink_to(target)
    with pytest.raises(RunError, match="a symbolic link"):
        rundir.repair_tail(link)
    with pytest.raises(RunError, match="a symbolic link"):
        rundir.append_jsonl(link, {"a": 1})
    with pytest.raises(RunError, match="a symbolic link"):
        rundir.read_jsonl(link)
    assert target.read_text(encoding="utf-8") == OUTSIDE


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "predictions.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(RunError, match="not a regular file"):
        rundir.read_jsonl(fifo)
    with pytest.raises(RunError, match="not a regular file"):
        rundir.repair_tail(fifo)


def test_a_link_planted_as_the_temporary_file_of_a_replace_is_removed_not_written_through(tmp_path):
    target = _outside(tmp_path)
    (tmp_path / ".manifest.json.tmp").symlink_to(target)
    (tmp_path / ".table.md.tmp").symlink_to(target)
    rundir.write_json_atomic(tmp_path / "manifest.json", {"a": 1})
    rundir.write_text_chunks_atomic(tmp_path / "table.md", ["| a |\n"])
    assert target.read_text(encoding="utf-8") == OUTSIDE
    assert (tmp_path / "table.md").read_text(encoding="utf-8") == "| a |\n"
    assert not (tmp_path / "manifest.json").is_symlink()
