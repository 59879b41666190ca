"""The methods table says what a field method's memory holds and how many of its answers were cut: a memory that
is empty, the prompt's own placeholder or the program the method started from is named so (read from the logs:
where each note's text first occurs in the method's offline calls), and the test answers cut at the token limit
(timeouts, one definition: analysis.reading.tally.timed_out) stand beside its accuracy, with the losses they made."""

import json

import pytest

from critique.analysis import synthetic
from critique.analysis.field import method_memory
from critique.analysis.field.method_memory import EMPTY, LEARNED, PLACEHOLDER, STARTING
from critique.base import records, rundir
from shipped import ROOT, command_json

CONTROL = ROOT / "logs-methods" / "control-pos__local_smollm2__train-budget-30000"


@pytest.fixture(scope="module")
def control_rows(tmp_path_factory) -> dict[str, list[dict]]:
    """method -> its rows of `critique tables` on the shipped control-pos comparison."""
    tables = command_json(tmp_path_factory.mktemp("control"), ["tables", str(CONTROL)])
    found: dict[str, list[dict]] = {}
    for row in tables["methods"]:
        found.setdefault(row["method"], []).append(row)
    return found | {"table9": tables["table9"]}


def test_a_note_is_what_the_calls_show_first_of_its_text():
    stage = [("Which vault holds it?\nQuestion: a violin", '{"answer": "1"}'),
             ('Write JSON: {"content": "[the new bullet]"}', '{"content": "[the new bullet]"}'),
             ("Reflect on the answer", '{"insight": "Read the \\"origin\\" line first."}'),
             ('Playbook: Read the "origin" line first.', '{"answer": "2"}')]
    assert method_memory.origin("Which vault holds it?", stage) == STARTING  # the stage's first prompt held it
    assert method_memory.origin("[the new bullet]", stage) == PLACEHOLDER  # a later prompt, before any reply
    assert method_memory.origin('Read the "origin" line first.', stage) == LEARNED  # a reply (escaped) first
    assert method_memory.origin("a violin -> 1", stage) == LEARNED  # composed by the memory: in no call
    assert method_memory.origin("Which vault holds it?", []) == LEARNED  # no call to show otherwise
    stage.append(("Curate the playbook", '{"bullet": "[add a new strategy or insight]"}'))
    assert method_memory.origin("[add a new strategy or insight]", stage) == PLACEHOLDER  # a blank the model wrote
    assert method_memory.origin("[add a new strategy or insight]", []) == PLACEHOLDER
    assert method_memory.origin("Check [the origin] line", stage) == LEARNED  # brackets inside a sentence


def test_the_verdict_counts_the_notes_not_learned_and_the_empty_pools():
    asked = {"a": ("Task.", "x"), "b": ('{"cheatsheet": "[the new cheatsheet]"}', "[the new cheatsheet]"),
             "c": ("Task.", "Check the year.")}
    pools = {"g1": {"notes": [], "requests": ["a"]},
             "g2": {"notes": [{"text": "[the new cheatsheet]"}], "requests": ["a", "b"]},
             "g3": {"notes": [{"text": "Check the year."}, {"text": " "}], "requests": ["c"]}}
    assert method_memory.verdict({"pools": pools}, asked) == {
        "notes": 2, "memory": f"{LEARNED} (1 of 2 notes {PLACEHOLDER}; 1 of 3 pools empty)"}
    assert method_memory.verdict({"pools": {p: pools[p] for p in ("g1", "g2")}}, asked)["memory"] == \
        f"{PLACEHOLDER} (1 of 2 pools empty)"
    assert method_memory.verdict({"pools": {"g1": pools["g1"]}}, asked) == {"notes": 0, "memory": EMPTY}
    task = {"g4": {"notes": [{"text": "Task."}], "requests": ["a", "b"]}}
    assert method_memory.verdict({"pools": {**task, "g2": pools["g2"]}}, asked)["memory"] == \
        f"{PLACEHOLDER} or {STARTING}"


def test_the_fields_it_reads_are_fields_of_a_call_record():
    assert set(method_memory.CALL_FIELDS) <= {f.name for f in records.fields("call")}


def test_the_shipped_placeholders_and_unchanged_programs_say_so(control_rows):
    curator = (ROOT / "prompts" / "methods" / "ace_curator.j2").read_text(encoding="utf-8")
    memory = json.loads((CONTROL / "memory" / "ace.json").read_text(encoding="utf-8"))
    assert [n["text"] for n in memory["pools"]["all"]["notes"]] == ["[the new bullet]"]
    assert "[the new bullet]" in curator  # the curator prompt's example, copied back as the one bullet
    for method in ("ace", "dc"):
        assert {(r["notes"], r["memory"]) for r in control_rows[method]} == {(1, PLACEHOLDER)}
    task = next(c for c in rundir.read_jsonl(CONTROL / rundir.CALLS)
                if c["stage"] == "test" and c["strategy"] == "zero_shot")["messages"][0]["content"].split("\n")[0]
    for method in ("dspy:mipro", "dspy:gepa", "dspy:simba"):
        document = json.loads((CONTROL / "memory" / f"{method.replace(':', '_')}.json").read_text(encoding="utf-8"))
        assert [n["text"] for n in document["pools"]["all"]["notes"]] == [task]  # the task's own instructions
        assert {r["memory"] for r in control_rows[method]} == {STARTING}
    assert {r["memory"] for r in control_rows["dspy:knn"]} == {LEARNED}
    assert {r["memory"] for r in control_rows["EP+SEM_CRIT"]} == {None}


def test_the_shipped_timeouts_stand_beside_accuracy_and_are_the_losses(control_rows):
    finish = {c["request_hash"]: c["finish_reason"] for c in rundir.read_jsonl(CONTROL / rundir.CALLS)}
    predictions = [p for p in rundir.read_jsonl(CONTROL / rundir.PREDICTIONS) if p["stage"] == "test"]
    rates = {r["strategy"]: r for r in control_rows["table9"]}
    for method in ("ace", "ace:nolabel", "dc", "expel", "dspy:mipro", "EP+SEM_CRIT"):
        cut = sum(finish.get(p["request_hash"]) == "length" for p in predictions if p["strategy"] == method)
        for row in control_rows[method]:
            assert row["timeouts"] == cut == round(rates[method]["timeout_rate"] * rates[method]["n"] / 100)
    assert {r["timeouts"] for r in control_rows["dc"]} == {24} and {r["timeouts"] for r in control_rows["ace"]} == {6}
    for method in ("ace", "dc"):  # their -4.0 against EP+SEM_CRIT and zero_shot: every loss a reply cut short
        assert all(r["diff"] == -4.0 and r["timeout_losses"] == r["losses"] == 2 for r in control_rows[method])


def test_a_run_with_an_empty_memory_and_a_cut_answer(tmp_path):
    head = synthetic.manifest("m", "d", run_id="r")
    first = synthetic.call("ace_generate", "ace", "t0", prompt="Task. Playbook: (empty)")
    curate = synthetic.call("ace_curate", "ace", "t0", prompt='Reply {"content": "[the new bullet]"}',
                            response='{"operations": [{"content": "[the new bullet]"}]}')
    cut = synthetic.call("test", "ace", "q1", completion_tokens=512, finish_reason="length")
    predictions = [synthetic.prediction("test", s, f"q{i}", i < 2) for s in ("zero_shot", "EP_LABEL", "EP+SEM_CRIT")
                   for i in range(3)]
    predictions += [synthetic.prediction("test", "ace", "q0", True),
                    synthetic.prediction("test", "ace", "q1", False, timeout=True, request_hash=cut["request_hash"]),
                    synthetic.prediction("test", "dc", "q0", False), synthetic.prediction("test", "dc", "q1", False)]
    run = synthetic.write_run(tmp_path / "run", head, [first, curate, cut], predictions)
    stage = {"offline_calls": 2, "offline_tokens": 20, "train_budget": None, "stopped": None, "skipped": []}
    notes = [{"id": "sai-00001", "text": "[the new bullet]", "sources": ["t0"]}]
    (run / rundir.MEMORY).mkdir()
    for name, kept, asked in (("ace", notes, [first["request_hash"], curate["request_hash"]]), ("dc", [], [])):
        rundir.write_json_atomic(run / rundir.MEMORY / f"{name}.json",
                                 {"method": name, "pools": {"all": {"notes": kept, **stage, "requests": asked}}})
    rows = {(r["method"], r["against"]): r for r in command_json(tmp_path, ["tables", str(run)])["methods"]}
    ace, dc = rows[("ace", "zero_shot")], rows[("dc", "zero_shot")]
    assert (ace["timeouts"], ace["notes"], ace["memory"]) == (1, 1, PLACEHOLDER)
    assert (dc["timeouts"], dc["notes"], dc["memory"]) == (0, 0, EMPTY)
    assert (ace["losses"], ace["timeout_losses"]) == (1, 1) and (dc["losses"], dc["timeout_losses"]) == (2, 0)
