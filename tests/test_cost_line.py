"""The cost line (critique.base.cost): one shape for every command that makes LLM calls, said on stderr
before the first call."""

from __future__ import annotations

import re
from pathlib import Path

from critique.base.cost import PREFIX, cost_line
from critique.cli import main

from test_critic_modes import run

LINE = re.compile(r"critique: cost: (at most )?(\d+) calls \((.*)\); those already in (.*) are not made again")


def test_the_cost_line_says_the_calls_what_they_are_and_which_logs_answer():
    assert cost_line(7, "2 critiques + 5 answers", Path("runs/a")) == (
        "critique: cost: at most 7 calls (2 critiques + 5 answers); those already in runs/a/calls.jsonl are not "
        "made again")
    assert cost_line(3, "deletions", Path("runs/b"), Path("runs/a"), exact=True) == (
        "critique: cost: 3 calls (deletions); those already in runs/b/calls.jsonl or runs/a/calls.jsonl are not "
        "made again")
    assert cost_line(0, "in all") == "critique: cost: at most 0 calls (in all)"  # no log named: no tail


def said(err: str, out: Path) -> int:
    """The one cost line of ``err``: the shared shape, naming the run directory's log; its count."""
    (line,) = [x for x in err.splitlines() if x.startswith(PREFIX) and not x.startswith(f"{PREFIX}dollars: ")]
    bound, calls, parts, logs = LINE.fullmatch(line).groups()
    assert bound and logs == str(out / "calls.jsonl")
    assert line == cost_line(int(calls), parts, out)
    return int(calls)


def test_run_and_verify_say_their_cost_in_the_same_shape(home, fake_llm, capsys):
    source = home / "self"
    assert run(source, "--critic", "self", "--no-cache") == 0
    assert said(capsys.readouterr().err, source) == len(fake_llm.CALLS)
    fake_llm.CALLS.clear()
    assert main(["verify", str(source), "--verifier", "reorder", "--quiet"]) == 0
    assert said(capsys.readouterr().err, home / "self__verify-reorder") == len(fake_llm.CALLS) == 6


def test_a_finished_run_announces_no_call_and_a_resumed_one_only_what_is_left(home, fake_llm, capsys):
    out = home / "done"
    assert run(out, "--no-cache") == 0
    capsys.readouterr()
    made = len(fake_llm.CALLS)
    assert run(out, "--no-cache") == 0
    assert said(capsys.readouterr().err, out) == 0 and len(fake_llm.CALLS) == made


def test_the_memory_methods_calls_to_learn_are_counted_with_their_bound(home, fake_llm, capsys):
    out = home / "field"
    assert run(out, "--strategies", "zero_shot,ace,dc,dc:online", "--train-budget", "3000", "--no-cache") == 0
    err = capsys.readouterr().err
    (line,) = [x for x in err.splitlines() if x.startswith("critique: cost: at most")]
    budget = "each pool stops at its share of --train-budget 3,000 tokens"
    for name, per in (("ace", "8 per train item and epoch, 1 epoch"), ("dc", "2 per train item (generate, curate)"),
                      ("dc:online", "1 per test item (curate)")):
        assert f"calls of {name} to learn (at most {per}; {budget})" in line
    assert said(err, out) >= len(fake_llm.CALLS) > 0  # a bound: no call is made that it did not count
    fake_llm.CALLS.clear()
    assert run(out, "--strategies", "zero_shot,ace,dc,dc:online", "--train-budget", "3000", "--no-cache") == 0
    assert said(capsys.readouterr().err, out) == 0 and fake_llm.CALLS == []  # logged: none left to count
