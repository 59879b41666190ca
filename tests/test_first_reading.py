"""A first reading of a study's logs, made cheap without changing a number: the offline stages' totals the writer
keeps in the manifest are what the tables count of calls.jsonl, and stand for it only while it is as it was; the
cluster bootstrap's draws are made once per number of users; a log's fields are decoded alone as json.loads reads
them; the statistics' helper starts only when a table tests something. Nothing here is timed
(bench/bench_tables.py times it)."""

import json
import math
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from critique.analysis import synthetic
from critique.analysis.reading import consistency, read, tally
from critique.analysis.stats import core as stats
from critique.analysis.study import intervals
from critique.analysis.reading.jsonl import scan
from critique.base import offline_totals, rundir
from critique.cli import main


def counted(path, totals, model="fake/model"):
    """What analysis.reading.read counts of a plain run: from the manifest's ``totals``, or (None) from its calls."""
    return read.count(str(path), True, False, False, False, model, None, totals)


def run(out):
    return main(["run", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", "6", "--k", "3", "--critic",
                 "noisy:0.5", "--on-mismatch", "recritique", "--out", str(out), "--quiet"])


def test_the_totals_a_run_writes_are_what_the_tables_count_of_its_calls(home, fake_llm, monkeypatch):
    monkeypatch.setenv("FAKE_LLM_CRITIC_WRONG", "1,2,3,4")  # every first critique asserts another label: recritiques
    out = home / "run"
    assert run(out) == 0
    totals = rundir.read_manifest(out)[offline_totals.FIELD]
    assert totals["calls_bytes"] == (out / rundir.CALLS).stat().st_size
    assert [found["stage"] for found in totals["stages"]] == ["critique", "recritique", "summary"]
    assert consistency.offline(str(out), totals) is not None  # the tables take them: calls.jsonl is unchanged
    from_manifest, from_calls = counted(out, totals), counted(out, None)
    assert from_manifest == from_calls  # a writer that counts otherwise than the reader fails here
    assert from_calls[1]["recritique"][tally.RECORDS] == 6 and from_calls[1]["summary"][tally.TOKENS] > 0
    assert run(out) == 0  # resumed with nothing left to do: the calls read again give the same totals
    assert rundir.read_manifest(out)[offline_totals.FIELD] == totals


def test_a_run_resumed_over_an_unreadable_call_line_writes_no_totals(home, fake_llm, capsys):
    out = home / "run"
    assert run(out) == 0
    lines = (out / rundir.CALLS).read_bytes().split(b"\n")
    at = next(i for i, line in enumerate(lines) if b'"stage": "critique"' in line)
    lines[at] = lines[at][:lines[at].index(b'"stage": "critique"') + 21]  # cut after its stage
    (out / rundir.CALLS).write_bytes(b"\n".join(lines))
    assert run(out) == 0
    assert offline_totals.FIELD not in rundir.read_manifest(out)  # the tables read the calls, and say so
    capsys.readouterr()
    main(["tables", str(out), "--format", "json"])
    assert f"{out / rundir.CALLS}:{at + 1}: unreadable line skipped" in capsys.readouterr().err


def calls_of(seed: int) -> list[dict]:
    """Call records of every kind the totals must count as the reader does: other stages, errors (None, "" and a
    message), repeated answered requests, another model, token counts that do not count (None, negative, NaN, a
    bool), floats, reasoning tokens."""
    rng = random.Random(seed)
    found = []
    for i in range(80):
        stage = rng.choice(["critique", "critique", "recritique", "summary", "test", "train_predict"])
        tokens = [rng.choice([0, 7, 250, 3.5, -1, None, math.nan, True]) for _ in range(3)]
        record = synthetic.call(stage, None, f"i{i % 25}", None, tokens[0], tokens[1], rng.choice(["m", "m", "o"]),
                                prompt="q", error=rng.choice([None, None, "", "timed out"]), prompt_tokens=tokens[2],
                                request_hash=f"h{rng.randrange(60)}")
        found.append(record)
    return found


def test_the_totals_of_any_calls_are_what_the_reader_counts_of_them(tmp_path):
    for seed in range(30):
        path = synthetic.write_run(tmp_path / f"run{seed}", synthetic.manifest("m", "mcr"), calls_of(seed))
        totals = rundir.read_manifest(path)[offline_totals.FIELD]
        assert consistency.offline(str(path), totals) is not None
        for model in ("m", "o"):  # the calls name both: the run is left out either way, saying why
            assert counted(path, totals, model) == counted(path, None, model)
        without = [r for r in calls_of(seed) if r["model"] == "m"]
        path = synthetic.write_run(tmp_path / f"one{seed}", synthetic.manifest("m", "mcr"), without)
        totals = rundir.read_manifest(path)[offline_totals.FIELD]
        assert counted(path, totals, "m") == counted(path, None, "m") and not counted(path, None, "m")[3]


def test_the_totals_stand_for_the_calls_only_while_calls_jsonl_is_as_they_were_written(tmp_path):
    calls = [synthetic.call("critique", None, f"i{i}", None, 10 + i) for i in range(5)]
    path = synthetic.write_run(tmp_path / "run", synthetic.manifest("m", "mcr"), calls)
    totals = rundir.read_manifest(path)[offline_totals.FIELD]
    with (path / rundir.CALLS).open("a", encoding="utf-8") as handle:  # a line the writer did not count
        handle.write(json.dumps(synthetic.call("summary", None, None, None, 99)) + "\n")
    assert consistency.offline(str(path), totals) is None
    assert counted(path, totals, "m")[1]["summary"][tally.TOKENS] == 99  # read from calls.jsonl
    (path / rundir.CALLS).unlink()
    assert consistency.offline(str(path), totals) is None  # absent: 0 bytes, not the size written
    for bad in (None, [], {**totals, "calls_bytes": "0"}, {**totals, "stages": [{"stage": "critique"}]},
                {**totals, "repeated": -1}, {**totals, "stages": totals["stages"] * 2},
                {**totals, "stages": [{**totals["stages"][0], "stage": "test"}]}):
        assert consistency.offline(str(path), bad) is None
    assert consistency.offline(str(tmp_path / "none"), {**totals, "calls_bytes": 0}) is not None


def test_the_tables_of_runs_with_totals_are_those_read_from_the_calls(tmp_path, capsys):
    runs = synthetic.generate_study(tmp_path / "study", models=2, users=3, n_single=12, per_user=4)
    main(["tables", str(tmp_path / "study"), "--format", "json"])
    with_totals = capsys.readouterr()
    for path in runs:  # as older logs: no totals in the manifest
        manifest = rundir.read_manifest(path)
        del manifest[offline_totals.FIELD]
        (path / rundir.MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    main(["tables", str(tmp_path / "study"), "--format", "json"])
    assert capsys.readouterr() == with_totals


def reference_bootstrap(rates, resamples=intervals.RESAMPLES, seed=intervals.SEED):
    """The cluster bootstrap as first written: the users drawn anew for every cell."""
    draw = random.Random(seed)
    means = sorted(math.fsum(draw.choices(rates, k=len(rates))) / len(rates) for _ in range(resamples))
    return intervals._percentile(means, 0.025), intervals._percentile(means, 0.975)


def test_the_bootstrap_draws_made_once_give_what_drawing_anew_gives():
    rng = random.Random(3)
    for n in (2, 3, 10, 10, 17, 3):  # a number of users met again reuses its draws
        rates = [100.0 * rng.randint(0, 25) / rng.choice([25, 7, 3]) for _ in range(n)]
        assert intervals.cluster_bootstrap(rates) == reference_bootstrap(rates)
    assert intervals.cluster_bootstrap([1.0, 2.0], 50, 7) == reference_bootstrap([1.0, 2.0], 50, 7)
    assert intervals.cluster_bootstrap([40.0]) == reference_bootstrap([40.0])


NAMES = ["stage", "user", "correct", "tokens", "gold", "answer"]
VALUES = st.recursive(st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70) | st.floats(allow_nan=False,
                      allow_infinity=False) | st.text(max_size=8),
                      lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(NAMES), inner,
                                                                                   max_size=3), max_leaves=6)


@settings(max_examples=150, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.dictionaries(st.sampled_from(NAMES), VALUES, max_size=6), min_size=1, max_size=6),
       st.booleans())
def test_the_fields_decoded_alone_are_what_json_loads_reads(tmp_path_factory, records, ascii_only):
    path = tmp_path_factory.mktemp("log") / "log.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=ascii_only) + "\n" for r in records), encoding="utf-8")
    fields = ("stage", "correct", "tokens", "missing", "answer")
    assert scan(path, fields) == scan(path, fields, exact=True)


def test_an_experiments_fields_are_read_by_their_names_as_json_loads_reads_them(tmp_path):
    records = [{"stage": "probe", "correct": True, "delivered": None},
               {"stage": "probe", "correct": False, "experiment": {"suggestibility": {"delivered": True}}},
               {"stage": "probe", "experiment": {"consistency": {"delivered": False, "correct": None}}},
               {"stage": "probe", "experiment": {}}, {"stage": "test", "experiment": "not one"}]
    path = tmp_path / "predictions.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    fields = ("stage", "correct", "delivered")
    assert scan(path, fields) == scan(path, fields, exact=True) == [
        ("probe", True, None), ("probe", False, True), ("probe", None, False), ("probe", None, None),
        ("test", None, None)]
    assert scan(path, ("delivered",)) == scan(path, ("delivered",), exact=True)


def tables_started_helper(monkeypatch, capsys, runs) -> list:
    started = []
    monkeypatch.setattr(stats, "start_helper", lambda ahead=None: started.append(ahead))
    main(["tables", *map(str, runs), "--format", "json"])
    capsys.readouterr()
    return started


def test_the_statistics_helper_starts_only_when_a_table_tests_something(tmp_path, monkeypatch, capsys):
    ablation = synthetic.manifest("m", "mcr", ablation={"name": "k", "value": 1})
    predictions = [synthetic.prediction("test", "EP_CRIT", f"i{i}", i % 2 == 0) for i in range(4)]
    alone = synthetic.write_run(tmp_path / "ablation", ablation, [], synthetic.in_run(ablation, predictions))
    assert tables_started_helper(monkeypatch, capsys, [alone]) == []  # no plain run: no paired test, no Spearman
    plain = synthetic.manifest("m", "mcr")
    predictions = [synthetic.prediction("test", s, f"i{i}", i % 2 == 0) for s in ("zero_shot", "EP_CRIT")
                   for i in range(4)]
    both = synthetic.write_run(tmp_path / "plain", plain, [], synthetic.in_run(plain, predictions))
    assert tables_started_helper(monkeypatch, capsys, [alone, both]) == [None]
