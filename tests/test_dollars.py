"""Dollars: prices from litellm's own price table (or --price), each call's cost in its record, the cost line's
estimate, and --max-cost stopping a run or a whole study cleanly before the call that could pass the cap."""

from __future__ import annotations

import json
import re

import pytest

from critique.base import rundir
from critique.cli import main
from critique.llm.price import PER_MILLION, Price, price_of

from test_critic_modes import run


def calls(out) -> list[dict]:
    return rundir.read_jsonl(out / rundir.CALLS)


def dollars_line(err: str) -> str:
    (line,) = [x for x in err.splitlines() if x.startswith("critique: cost: dollars: ")]
    return line


def test_prices_come_from_litellms_table_or_the_user():
    import litellm

    info = litellm.get_model_info("openai/gpt-4o-mini")  # the local copy of litellm's price table
    price = price_of("openai/gpt-4o-mini")
    assert price == Price(info["input_cost_per_token"] * PER_MILLION, info["output_cost_per_token"] * PER_MILLION,
                          "litellm")
    assert price.cost(1_000_000, 0) == pytest.approx(price.input)
    assert price_of("local/smollm2") == Price(0.0, 0.0, "embedded")
    assert price_of("fake/model") is None
    assert price_of("fake/model", "0.5,2") == Price(0.5, 2.0, "--price")


@pytest.mark.parametrize("price", ["1", "1,2,3", "a,b", "-1,2", "nan,1"])
def test_a_bad_price_is_refused_naming_the_option(home, capsys, price):
    assert run(home / "r", f"--price={price}", "--no-cache") == 2
    assert "--price must be IN,OUT" in capsys.readouterr().err


def test_every_call_keeps_its_cost_and_the_cost_line_says_dollars(home, fake_llm, capsys):
    out = home / "priced"
    assert run(out, "--price", "1,2", "--no-cache") == 0
    line = dollars_line(capsys.readouterr().err)
    assert line.startswith("critique: cost: dollars: at most $") and "$1/$2 per million" in line
    assert "likely" not in line  # nothing logged yet to estimate from
    logged = calls(out)
    assert logged and all(c["cost_usd"] == pytest.approx((c["prompt_tokens"] + 2 * c["completion_tokens"]) / 1e6)
                          for c in logged)
    manifest = json.loads((out / rundir.MANIFEST).read_text())
    assert manifest["price"] == {"input_per_million": 1.0, "output_per_million": 2.0, "source": "--price"}
    upper = float(line.split("at most $")[1].split(" ")[0].replace(",", ""))
    assert upper >= sum(c["cost_usd"] for c in logged)  # the bound bounds what the calls cost


def test_a_model_without_a_price_says_so(home, fake_llm, capsys):
    assert run(home / "unpriced", "--no-cache") == 0
    assert "no known price for fake/model" in dollars_line(capsys.readouterr().err)
    assert all(c["cost_usd"] is None for c in calls(home / "unpriced"))
    assert run(home / "capped", "--max-cost", "1", "--no-cache") == 2
    assert "--max-cost needs a price" in capsys.readouterr().err


def test_max_cost_stops_the_run_before_the_call_that_could_pass_it_and_a_higher_cap_resumes(home, fake_llm,
                                                                                                capsys):
    out = home / "capped"
    priced = ("--price", "1000,1000", "--max-tokens", "200", "--no-cache")  # a call: well under $1
    assert run(out, *priced, "--max-cost", "3") == 3
    err = capsys.readouterr().err
    assert "critique: stopped: --max-cost $3 reached" in err and "a higher --max-cost resumes" in err
    first = calls(out)
    assert first and sum(c["cost_usd"] for c in first) <= 3
    assert json.loads((out / rundir.MANIFEST).read_text())["status"] != "complete"
    made = len(fake_llm.CALLS)
    assert run(out, *priced, "--max-cost", "1000") == 0
    assert "likely $" in dollars_line(capsys.readouterr().err)  # from the calls logged by the first part
    assert json.loads((out / rundir.MANIFEST).read_text())["status"] == "complete"
    full = home / "uncapped"
    assert run(full, *priced) == 0
    assert len(fake_llm.CALLS) - made == len(calls(full)) * 2 - len(first)  # nothing logged was asked again
    assert {c["request_hash"] for c in calls(out)} == {c["request_hash"] for c in calls(full)}


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")  # no call left never awaited
def test_a_study_cap_holds_over_every_cell(home, fake_llm, capsys):
    """Cells in threads of one process; tests/faults/test_clusters.py has the cap over loky and dask workers."""
    study = home / "study.toml"
    study.write_text('datasets = ["mcr-gen"]\nlimit = 6\nk = 2\nstrategies = ["zero_shot", "EP_CRIT"]\nout = "out"\n'
                     'jobs = 2\nuse_cache = false\nmax_tokens = 200\n\n'
                     '[[models]]\nname = "fake/model"\nprice = "1000,1000"\n\n'
                     '[[models]]\nname = "fake/other"\nprice = "1000,1000"\n')
    assert main(["study", str(study), "--max-cost", "4"]) == 1
    out = capsys.readouterr().out
    assert "--max-cost $4 reached" in out and "spent of --max-cost $4" in out
    paid = [c for folder in (home / "out").iterdir() if folder.is_dir() for c in calls(folder) if not c["cached"]]
    assert 0 < sum(c["cost_usd"] for c in paid) <= 4
    (made,) = re.findall(r"(\d+) LLM calls made", out)  # the summary counts the calls of the stopped runs too
    assert int(made) == len(paid)


def test_table5_and_the_methods_table_show_dollars_beside_tokens(home, fake_llm, tmp_path):
    out = home / "priced"
    assert run(out, "--price", "1,2", "--strategies", "zero_shot,EP_LABEL,EP+SEM_CRIT,ace", "--no-cache") == 0
    assert main(["tables", str(out), "--format", "json", "-o", str(tmp_path / "t.json")]) == 0
    tables = json.loads((tmp_path / "t.json").read_text())
    logged = calls(out)
    offline = [c for c in logged if c["stage"] in ("train_predict", "critique", "summary") and not c["error"]]
    (costs,) = tables["table5_costs"]
    assert costs["dollars"] == pytest.approx(sum(c["cost_usd"] for c in offline))
    rows = {r["method"]: r for r in tables["methods"]}
    ace = [c for c in logged if c["strategy"] == "ace" and c["stage"] != "test"]
    assert rows["ace"]["offline_dollars"] == pytest.approx(sum(c["cost_usd"] for c in ace))
    assert rows["EP+SEM_CRIT"]["offline_dollars"] == pytest.approx(costs["dollars"])
    tests = [p for p in rundir.read_jsonl(out / rundir.PREDICTIONS) if p["stage"] == "test" and p["strategy"] == "ace"]
    per_question = sum(p["prompt_tokens"] + 2 * p["completion_tokens"] for p in tests) / 1e6 / len(tests)
    assert rows["ace"]["dollars_per_question"] == pytest.approx(per_question)


def test_a_run_without_a_price_has_no_dollars_in_the_tables(home, fake_llm, tmp_path):
    out = home / "unpriced"
    assert run(out, "--strategies", "zero_shot,EP_LABEL,EP+SEM_CRIT", "--no-cache") == 0
    assert main(["tables", str(out), "--format", "json", "-o", str(tmp_path / "t.json")]) == 0
    (costs,) = json.loads((tmp_path / "t.json").read_text())["table5_costs"]
    assert costs["dollars"] is None and costs["total"] > 0


def test_a_learners_cap_holds_over_its_calls_and_stops_it_cleanly(home, fake_llm):
    from critique import Learner
    from critique.llm.spend import SpendCapReached

    learner = Learner("fake/model", task="Is the statement true?", answer_space=["yes", "no"], out=home / "l",
                      progress=False, k=2, price="1000,1000", max_tokens=200, max_cost=2)
    train = [(f"Statement number {i} holds.", "yes" if i % 2 else "no") for i in range(8)]
    with pytest.raises(SpendCapReached, match=r"--max-cost \$2 reached"):
        learner.fit(train)
    logged = calls(home / "l")
    assert logged and sum(c["cost_usd"] for c in logged) <= 2


def test_dollars_are_shown_to_the_fraction_of_a_cent():
    from critique.analysis.study.render import cell

    assert cell("dollars", 0.01234) == "0.0123" and cell("offline_dollars", 1234.5) == "1,234.5000"
    assert cell("dollars_per_question", 0.000123) == "0.000123"


def _paid(out) -> float:
    return sum(c["cost_usd"] for c in calls(out) if not c["cached"])


def test_a_cap_spends_up_to_itself_with_calls_queued_behind_their_slots(home, fake_llm, capsys):
    """Calls waiting for a concurrency slot reserve nothing: the run spends until the next call could pass the cap,
    not until the queued calls' reservations add up to it."""
    out = home / "queued"
    priced = ("--price", "1000,1000", "--max-tokens", "200", "--no-cache", "--concurrency", "2")
    bound = 1000 * (200 + 400) / 1e6  # a call's bound: its reply of 200 tokens and a prompt under 400, at $1000/M
    assert run(out, *priced, "--max-cost", "3", limit=12) == 3
    spent = _paid(out)
    assert spent <= 3 and spent > 3 - 3 * bound, spent  # stopped near the cap, not at the first calls
    assert len(calls(out)) >= 6


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")  # no call left never awaited
def test_the_cap_is_the_runs_over_reruns(home, fake_llm, capsys):
    out = home / "reruns"
    priced = ("--price", "1000,1000", "--max-tokens", "200", "--no-cache")
    for _ in range(5):
        run(out, *priced, "--max-cost", "1.5")
    assert 0 < _paid(out) <= 1.5
    made = len(fake_llm.CALLS)
    assert run(out, *priced, "--max-cost", "1.5") == 3 and len(fake_llm.CALLS) == made  # nothing left to spend
    assert len(calls(out)) == made  # every call the provider answered is logged: none was cut off at the stop


def test_a_provider_that_bills_more_than_the_bound_stops_the_calls_after_it(home, fake_llm, capsys, monkeypatch):
    monkeypatch.setenv("FAKE_LLM_USAGE_FACTOR", "2000")  # each reply billed far past its --max-tokens bound
    out = home / "overshoot"
    priced = ("--price", "1000,1000", "--max-tokens", "200", "--no-cache", "--concurrency", "2")
    assert run(out, *priced, "--max-cost", "5", limit=12) == 3  # room for the bounds of 8 calls
    spent, after = 0.0, 0
    for call in calls(out):  # in the order they were answered
        after += spent > 5
        spent += call["cost_usd"]
    assert spent > 5 and after <= 1  # once the spend passed the cap, only the call then in flight was answered
    assert "--max-cost $5 " in capsys.readouterr().err


def test_a_study_rerun_counts_what_its_runs_spent_before(home, fake_llm, capsys):
    study = home / "study.toml"
    study.write_text('datasets = ["mcr-gen"]\nlimit = 6\nk = 2\nstrategies = ["zero_shot", "EP_CRIT"]\nout = "out"\n'
                     'jobs = 1\nuse_cache = false\nmax_tokens = 50\n\n'
                     '[[models]]\nname = "fake/model"\nprice = "1000,1000"\n')
    for _ in range(8):
        main(["study", str(study), "--max-cost", "0.5"])
    spent = sum(_paid(folder) for folder in (home / "out").iterdir() if folder.is_dir())
    assert 0 < spent <= 0.5
