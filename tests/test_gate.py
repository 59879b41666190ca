"""Retrieval that knows when to stay silent: similarity scores logged per retrieved entry, --gate,
--inject-budget, --retrieval contrast, `critique ablate gate` and the gate table (issue 15 section 3,
docs/memory.md section 4). The fake provider answers by a hash of the prompt, so a request answered
twice is a request sent twice: every count of calls below is exact."""

import json
from pathlib import Path

import numpy as np
import pytest

from critique.analysis.memory import gate as gate_table
from critique.analysis import synthetic
from critique.base import rundir
from critique.base.errors import UserError
from critique.cli import main
from critique.engine.memory import selection
from critique.engine.memory.episodic import EpisodicMemory, Retrieved

RUN = ["--dataset", "mcr-gen", "--model", "fake/model", "--limit", "6", "--quiet", "--no-cache"]


def run(out, *extra, strategies="zero_shot,EP_CRIT", k=3):
    return main(["run", *RUN, "--k", str(k), "--strategies", strategies, "--out", str(out), *extra])


def answered(path, strategy=None):
    found = [p for p in rundir.read_jsonl(Path(path) / rundir.PREDICTIONS) if p["stage"] == "test"]
    return {p["item_id"]: p for p in found if strategy is None or p["strategy"] == strategy}


def unit(*xs):
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def entry(n, right=True):
    return {"id": f"e{n}", "item_id": f"e{n}", "user": None, "question": f"q{n}",
            "initial_answer": "1", "gold": "1" if right else "2"}


# ---- the selection rules, on hand-made lists ------------------------------------------------
def test_retrieve_gives_the_faiss_scores_nearest_first():
    vectors = np.stack([unit(1, 0), unit(0.8, 0.6), unit(0, 1), unit(-1, 0.1)])
    memory = EpisodicMemory([entry(n) for n in range(4)], vectors)
    query = unit(0.6, 0.8)
    found = memory.retrieve(query, None, 3)
    assert isinstance(found, list) and [e["id"] for e in found] == ["e1", "e2", "e0"]  # callers' list of entries
    assert found.scores == pytest.approx([float(vectors[n] @ query) for n in (1, 2, 0)], abs=1e-6)
    assert found.scores == sorted(found.scores, reverse=True)
    others = memory.retrieve(query, None, 3, exclude_item="e1")  # K others: one more is searched
    assert [e["id"] for e in others] == ["e2", "e0", "e3"] and others.scores[:2] == pytest.approx([0.8, 0.6], abs=1e-6)
    assert memory.retrieve(query, "nobody", 3) == [] and memory.retrieve(query, "nobody", 3).scores == []
    assert memory.size(None) == 4 and memory.size("nobody") == 0


def test_the_gate_keeps_exactly_the_entries_at_or_above_it():
    found = Retrieved([entry(n) for n in range(5)], [0.9, 0.7, 0.5, 0.5, 0.3])
    assert [e["id"] for e in selection.gated(found, 0.5)] == ["e0", "e1", "e2", "e3"]  # >= T, in order
    assert selection.gated(found, 0.5).scores == [0.9, 0.7, 0.5, 0.5]
    assert selection.gated(found, 0.95) == [] and selection.gated(found, -1.0) == found
    assert selection.gated(found, None) is found  # no gate


def test_the_budget_keeps_the_nearest_first_prefix_that_fits():
    found = Retrieved([entry(n) for n in range(3)], [0.9, 0.8, 0.7])
    lengths = [10, 20, 5]
    tokens = lambda n: sum(lengths[:n])  # noqa: E731
    assert [e["id"] for e in selection.within_budget(found, 30, tokens)] == ["e0", "e1"]
    assert [e["id"] for e in selection.within_budget(found, 29, tokens)] == ["e0"]  # e2 (5) never jumps ahead
    assert selection.within_budget(found, 9, tokens) == [] and selection.within_budget(found, 0, tokens) == []
    assert len(selection.within_budget(found, None, tokens)) == 3


def test_contrast_pairs_the_nearest_right_with_the_nearest_wrong():
    kinds = [True, True, False, True, False, False]  # nearest first: R R W R W W
    found = Retrieved([entry(n, r) for n, r in enumerate(kinds)], [0.9, 0.8, 0.7, 0.6, 0.5, 0.4])
    assert [e["id"] for e in selection.contrast(found, 4)] == ["e0", "e1", "e2", "e4"]  # 2 pairs, nearest first
    assert [e["id"] for e in selection.contrast(found, 5)] == ["e0", "e1", "e2", "e3", "e4"]  # odd K: nearest left
    assert [e["id"] for e in selection.contrast(found, 2)] == ["e0", "e2"]
    assert selection.contrast(found, 2).scores == [0.9, 0.7]
    only_right = Retrieved([entry(n) for n in range(4)], [0.9, 0.8, 0.7, 0.6])
    assert [e["id"] for e in selection.contrast(only_right, 2)] == ["e0", "e1"]  # no pair: the nearest K


def test_contrast_classes_an_entry_by_what_the_run_knows_never_the_hidden_gold():
    noisy = {**entry(0), "gold": "1", "label": "2", "label_flipped": True, "verdict": None}  # shown 2: wrong
    assert not selection.right(noisy)
    assert selection.right({**noisy, "initial_answer": "2"})
    self_right = {**entry(1), "gold": "2", "label": None, "verdict": "right", "believed": "1"}
    self_wrong = {**entry(2), "gold": "1", "label": None, "verdict": "wrong", "believed": "3"}
    assert selection.right(self_right) and not selection.right(self_wrong)
    assert selection.right(entry(3)) and not selection.right(entry(4, right=False))  # older logs: no label
    found = Retrieved([noisy, self_right, entry(3)], [0.9, 0.8, 0.7])
    assert [e["id"] for e in selection.contrast(found, 2)] == ["e0", "e1"]  # noisy: wrong, paired with a right


# ---- the pipeline --------------------------------------------------------------------------------
def test_retrieved_scores_are_logged_nearest_first_and_are_the_cosines(home, fake_llm):
    from critique.datasets.registry import resolve
    from critique.engine.memory.embed import Encoder

    assert run(home / "plain") == 0
    memory = {e["id"]: e for e in rundir.read_jsonl(home / "plain" / "memory" / "episodic.jsonl")}
    questions = {i.id: i.question for i in resolve("mcr-gen").test}
    encoder = Encoder()
    for item_id, p in answered(home / "plain", "EP_CRIT").items():
        assert len(p["retrieved"]) == len(p["retrieved_scores"]) == 3
        assert p["retrieved_scores"] == sorted(p["retrieved_scores"], reverse=True)
        vectors = encoder.encode([questions[item_id], *(memory[i]["question"] for i in p["retrieved"])])
        assert p["retrieved_scores"] == pytest.approx([float(vectors[0] @ v) for v in vectors[1:]], abs=1e-4)
        assert p["injected_tokens"] is None  # counted only where the run gates or budgets its examples
    for p in answered(home / "plain", "zero_shot").values():
        assert p["retrieved"] == [] and p["retrieved_scores"] == [] and p["injected_tokens"] == 0


def test_a_gated_empty_prompt_is_the_zero_shot_request_and_costs_no_call(home, fake_llm):
    assert run(home / "g", "--gate", "1.0") == 0  # no other question is that similar: every prompt is empty
    # initial, critiques, zero_shot: EP_CRIT asks nothing (and needs no summary)
    assert len(fake_llm.CALLS) == 6 + 6 + 6
    zero, gated = answered(home / "g", "zero_shot"), answered(home / "g", "EP_CRIT")
    assert set(zero) == set(gated) and len(gated) == 6
    for item_id, p in gated.items():
        assert p["retrieved"] == [] and p["retrieved_scores"] == [] and p["injected_tokens"] == 0
        assert p["request_hash"] == zero[item_id]["request_hash"] and p["answer"] == zero[item_id]["answer"]
    calls = {c["request_hash"]: c for c in rundir.read_jsonl(home / "g" / rundir.CALLS) if c["stage"] == "test"}
    assert len(calls) == 6 and {c["template"] for c in calls.values()} == {"performance_zero_shot.j2"}
    # in another run with EP_CRIT alone, the same requests are answered by the response cache
    out = home / "alone"
    assert main(["run", *[a for a in RUN if a != "--no-cache"], "--k", "3", "--strategies", "zero_shot,EP_CRIT",
                 "--out", str(home / "zs")]) == 0  # its train stage is EP_CRIT's
    fake_llm.CALLS.clear()
    assert main(["run", *[a for a in RUN if a != "--no-cache"], "--k", "3", "--strategies", "EP_CRIT",
                 "--gate", "1.0", "--out", str(out)]) == 0
    test_calls = [c for c in rundir.read_jsonl(out / rundir.CALLS) if c["stage"] == "test"]
    assert len(test_calls) == 6 and all(c["cached"] for c in test_calls)
    assert {c["request_hash"] for c in test_calls} == {p["request_hash"] for p in zero.values()}
    assert len(fake_llm.CALLS) == 0  # the train stage is cached too


def test_the_gate_keeps_exactly_the_retrieved_entries_at_or_above_it(home, fake_llm):
    assert run(home / "plain") == 0
    plain = answered(home / "plain", "EP_CRIT")
    scores = sorted(s for p in plain.values() for s in p["retrieved_scores"])
    threshold = scores[len(scores) // 2]  # some prompts keep all, some a part, some nothing
    assert run(home / "gated", "--gate", repr(threshold)) == 0
    gated = answered(home / "gated", "EP_CRIT")
    kept = {}
    for item_id, p in plain.items():
        expected = [e for e, s in zip(p["retrieved"], p["retrieved_scores"]) if s >= threshold]
        assert gated[item_id]["retrieved"] == expected
        assert all(s >= threshold for s in gated[item_id]["retrieved_scores"])
        kept[item_id] = len(expected)
        if expected == p["retrieved"]:  # nothing gated out: the very prompt of the ungated run
            assert gated[item_id]["request_hash"] == p["request_hash"]
    assert 0 < sum(kept.values()) < 3 * len(kept)


def test_the_inject_budget_keeps_the_nearest_entries_within_it(home, fake_llm):
    assert run(home / "plain", "--inject-budget", "1000000") == 0  # room for all: the plain prompts, counted
    plain = answered(home / "plain", "EP_CRIT")
    assert all(len(p["retrieved"]) == 3 and p["injected_tokens"] > 0 for p in plain.values())
    budget = min(p["injected_tokens"] for p in plain.values())  # some fit whole, others lose their farthest
    assert run(home / "budget", "--inject-budget", str(budget)) == 0
    cut = 0
    for item_id, p in answered(home / "budget", "EP_CRIT").items():
        assert p["injected_tokens"] <= budget
        assert p["retrieved"] == plain[item_id]["retrieved"][:len(p["retrieved"])]  # a nearest-first prefix
        assert p["retrieved_scores"] == plain[item_id]["retrieved_scores"][:len(p["retrieved"])]
        cut += len(p["retrieved"]) < 3
    assert cut > 0
    assert run(home / "none", "--inject-budget", "0") == 0  # no room for any example: every prompt memory-free
    zero = answered(home / "none", "zero_shot")
    assert all(p["retrieved"] == [] and p["request_hash"] == zero[i]["request_hash"]
               for i, p in answered(home / "none", "EP_CRIT").items())


def test_contrast_retrieval_gives_right_and_wrong_pairs(home, fake_llm):
    from critique.datasets.registry import resolve
    from critique.engine.memory.embed import Encoder

    assert run(home / "c", "--retrieval", "contrast", k=2) == 0
    memory = {e["id"]: e for e in rundir.read_jsonl(home / "c" / "memory" / "episodic.jsonl")}
    right = {i for i, e in memory.items() if e["initial_answer"] == e["gold"]}
    assert right and set(memory) - right  # the fake agent got some right, some wrong
    questions = {i.id: i.question for i in resolve("mcr-gen").test}
    encoder = Encoder()
    ids = list(memory)
    pool = encoder.encode([memory[i]["question"] for i in ids])
    for item_id, p in answered(home / "c", "EP_CRIT").items():
        similarity = pool @ encoder.encode([questions[item_id]])[0]
        nearest = [ids[n] for n in np.argsort(-similarity, kind="stable")]
        pair = {next(i for i in nearest if i in right), next(i for i in nearest if i not in right)}
        assert set(p["retrieved"]) == pair  # the nearest right with the nearest wrong
        assert p["retrieved"] == sorted(p["retrieved"], key=nearest.index)  # shown nearest first
        assert p["retrieved_scores"] == pytest.approx([float(similarity[ids.index(i)]) for i in p["retrieved"]],
                                                      abs=1e-4)
    manifest = json.loads((home / "c" / rundir.MANIFEST).read_text())
    assert manifest["config"]["retrieval"] == "contrast"


def test_the_gate_is_part_of_the_identity(home, fake_llm, capsys):
    assert run(home / "g", "--gate", "0.5") == 0
    capsys.readouterr()
    assert run(home / "g", "--gate", "0.6") == 2
    assert "holds a run with gate=0.5, not 0.6" in capsys.readouterr().err
    assert run(home / "g", "--gate", "0.5", "--retrieval", "contrast") == 2
    assert run(home / "g", "--gate", "0.5", "--inject-budget", "100") == 2
    # a manifest written before these settings existed is a run with their defaults
    assert run(home / "old") == 0
    path = home / "old" / rundir.MANIFEST
    manifest = json.loads(path.read_text())
    for key in ("gate", "inject_budget", "retrieval"):
        del manifest["config"][key]
    path.write_text(json.dumps(manifest))
    fake_llm.CALLS.clear()
    assert run(home / "old") == 0 and fake_llm.CALLS == []
    assert run(home / "old", "--gate", "0.5") == 2


@pytest.mark.parametrize("args, message", [
    (["--gate", "1.5"], "--gate must be at most 1.0"), (["--gate", "-2"], "--gate must be at least -1.0"),
    (["--inject-budget", "-1"], "--inject-budget must be at least 0"),
])
def test_out_of_bounds_settings_are_refused(home, fake_llm, capsys, args, message):
    assert run(home / "bad", *args) == 2
    assert message in capsys.readouterr().err and not (home / "bad").exists()


def test_the_audit_reads_the_logged_scores(home, fake_llm):
    from critique.analysis.memory import audit

    assert run(home / "plain") == 0
    result = audit.audit([str(home / "plain")])["audits"][0]
    used = [r for r in result["entries"] if r["n"]]
    assert used and all(r["similarity"] is not None and r["similarity"]["count"] == r["n"] for r in used)
    logged = sorted(s for p in answered(home / "plain", "EP_CRIT").values() for s in p["retrieved_scores"])
    assert sorted(x["score"] for r in used for x in r["retrieved_by"]) == pytest.approx(logged)


# ---- the gate ablation ---------------------------------------------------------------------------
def test_the_gate_sweep_writes_one_run_per_value_and_reuses_the_train_stage(home, fake_llm, capsys):
    assert main(["ablate", "gate", "--values", "0.5,1", *RUN, "--k", "3", "--out", str(home / "runs")]) == 0
    # train stage (6 + 6), zero_shot (6) and EP_CRIT at 0.5 (6) once; EP_CRIT at gate 1 is zero_shot's
    assert len(fake_llm.CALLS) == 6 + 6 + 6 + 6
    for value, name in ((0.5, "0.5"), (1.0, "1")):
        path = home / "runs" / f"mcr-gen__fake_model__gate-{name}"
        manifest = json.loads((path / rundir.MANIFEST).read_text())
        assert manifest["ablation"] == {"name": "gate", "value": value} and manifest["config"]["gate"] == value
        assert manifest["config"]["strategies"] == ["zero_shot", "EP_CRIT"] and manifest["status"] == "complete"
        assert all(p["ablation"] == manifest["ablation"] for p in answered(path).values())
    printed = capsys.readouterr().out
    assert "ablation gate" in printed and "| 0.5 | EP_CRIT | 6 |" in printed
    assert main(["ablate", "gate", "--values", "1.5", *RUN, "--out", str(home / "runs")]) == 2
    assert main(["ablate", "gate", "--gate", "0.5", *RUN, "--out", str(home / "runs")]) == 2
    # the tables of the sweep: the gate table, with what it read
    assert main(["tables", str(home / "runs"), "--format", "json", "-o", str(home / "t.json")]) == 0
    out = json.loads((home / "t.json").read_text())
    rows = {r["gate"]: r for r in out["gate"]}
    assert set(rows) == {0.5, 1.0} and rows[1.0]["empty"] == 100.0 and rows[1.0]["injected_tokens"] == 0
    assert rows[1.0]["gain"] == 0.0 and rows[1.0]["points_per_1k_tokens"] is None
    assert "2 gate ablation run directories" in out["notes"]["gate"]
    assert main(["tables", str(home / "runs"), "-o", str(home / "t.md")]) == 0
    text = (home / "t.md").read_text()
    assert f"## {gate_table.TITLE}" in text and "| mcr-gen | EP_CRIT | 1.00 |" in text
    assert main(["report", str(home / "runs"), "-o", str(home / "r.html")]) == 0
    page = (home / "r.html").read_text()
    assert gate_table.TITLE in page and "2 gate ablation run directories" in page


def gate_run(root, value, zero_shot, ep_crit, kind="single"):
    """A gate ablation run directory: zero_shot [(item, correct, user)], EP_CRIT [(item, correct,
    retrieved, injected_tokens, user)]."""
    ablation = {"name": "gate", "value": value}
    head = synthetic.manifest("m", "d", kind=kind, ablation=ablation, run_id=f"gate{value}")
    head["config"].update(gate=value, strategies=["zero_shot", "EP_CRIT"])
    head["dataset"].update(n_train=4, n_test=4)
    predictions = [synthetic.prediction("test", "zero_shot", i, ok, user=u, injected_tokens=0, retrieved_scores=[])
                   for i, ok, u in zero_shot]
    predictions += [synthetic.prediction("test", "EP_CRIT", i, ok, user=u, retrieved=ids,
                                         retrieved_scores=[0.9] * len(ids),
                                         **({} if tokens is None else {"injected_tokens": tokens}))
                    for i, ok, ids, tokens, u in ep_crit]
    return synthetic.write_run(root / f"d__m__gate-{value}", head, [], synthetic.in_run(head, predictions))


def test_the_gate_table_on_hand_made_runs(tmp_path):
    zero = [("t0", True, None), ("t1", False, None), ("t2", False, None), ("t3", False, None)]  # 25 %
    gate_run(tmp_path, 0.5, zero, [("t0", True, [], 0, None), ("t1", True, ["e1"], 100, None),
                                   ("t2", True, ["e1", "e2"], 200, None), ("t3", False, [], 0, None)])
    gate_run(tmp_path, 0.7, zero, [("t0", True, [], 0, None), ("t1", False, [], 0, None),
                                   ("t2", False, ["e1"], 40, None), ("t3", False, [], 0, None)])
    gate_run(tmp_path, 0.9, zero, [(f"t{n}", n == 0, [], 0, None) for n in range(4)])
    from critique.analysis.reading import read

    problems = []
    metas = read.runs([str(tmp_path)], False, [], problems)
    table = gate_table.table(metas, problems)
    rows = {r["gate"]: r for r in table.rows}
    assert [r["gate"] for r in table.rows] == [0.5, 0.7, 0.9]
    r = rows[0.5]
    assert (r["accuracy"], r["arm_accuracy"], r["gain"], r["injected_tokens"], r["empty"]) == (75.0, 25.0, 50.0,
                                                                                               75.0, 50.0)
    assert r["points_per_1k_tokens"] == pytest.approx(50 / 75 * 1000) and r["arm"] == "zero_shot" and r["n"] == 4
    r = rows[0.7]
    assert (r["accuracy"], r["gain"], r["injected_tokens"], r["empty"]) == (25.0, 0.0, 10.0, 75.0)
    assert r["points_per_1k_tokens"] == 0.0
    r = rows[0.9]
    assert (r["gain"], r["injected_tokens"], r["empty"], r["points_per_1k_tokens"]) == (0.0, 0.0, 100.0, None)
    assert "3 gate ablation run directories" in table.note and not problems


def test_the_gate_table_averages_users_and_says_what_it_lacks(tmp_path):
    zero = [("a0", False, "u1"), ("a1", False, "u1"), ("a2", False, "u1"), ("a3", False, "u1"), ("b0", True, "u2")]
    ep = [("a0", True, ["e"], 10, "u1"), ("a1", False, [], 0, "u1"), ("a2", False, [], 0, "u1"),
          ("a3", False, [], 0, "u1"), ("b0", True, ["e"], 30, "u2")]
    gate_run(tmp_path, 0.5, zero, ep, kind="preference")
    gate_run(tmp_path / "old", 0.6, zero, [(i, ok, ids, None, u) for i, ok, ids, _, u in ep], kind="preference")
    from critique.analysis.reading import read

    problems = []
    table = gate_table.table(read.runs([str(tmp_path)], False, [], problems), problems)
    rows = {r["gate"]: r for r in table.rows}
    r = rows[0.5]  # per user, then the mean: u1 25 %, u2 100 %; zero_shot u1 0 %, u2 100 %
    assert (r["accuracy"], r["arm_accuracy"], r["gain"]) == (62.5, 50.0, 12.5)
    assert (r["injected_tokens"], r["empty"]) == ((2.5 + 30) / 2, (75.0 + 0.0) / 2)
    old = rows[0.6]
    assert old["injected_tokens"] is None and old["points_per_1k_tokens"] is None and old["gain"] == 12.5
    assert any("without injected_tokens" in p for p in problems)


def test_no_gate_run_skips_the_table_saying_why(tmp_path):
    assert "no ablation runs with manifest.ablation.name == 'gate'" in gate_table.table([], []).skipped


def test_a_study_file_sets_the_retrieval_and_sweeps_the_gate(home):
    from critique.experiments.study.file import load
    from critique.experiments.study.plan import base_config, plan

    text = ('datasets = ["mcr-gen"]\nlimit = 3\nstrategies = ["EP_CRIT"]\nout = "out"\ngate = 0.4\n'
            'inject_budget = 300\nretrieval = "contrast"\n[[models]]\nname = "fake/model"\n'
            '[ablations.gate]\nvalues = [0.5, 0.7]\n')
    (home / "s.toml").write_text(text)
    study = load(home / "s.toml")
    config = base_config(study, study.models[0], "mcr-gen")
    assert (config.gate, config.inject_budget, config.retrieval) == (0.4, 300, "contrast")
    (cell,) = plan(study, {"mcr-gen": "x"})
    gates = [(t.config.gate, t.config.retrieval, t.out.name) for t in cell.tasks]
    assert gates == [(0.4, "contrast", "mcr-gen__fake_model"), (0.5, "contrast", "mcr-gen__fake_model__gate-0.5"),
                     (0.7, "contrast", "mcr-gen__fake_model__gate-0.7")]
    for bad, message in (('gate = 2.0', "gate must be at most 1.0"), ('retrieval = "far"', "retrieval must be one"),
                         ('inject_budget = -5', "inject_budget must be at least 0")):
        (home / "bad.toml").write_text(bad + "\n" + text.replace("gate = 0.4\n", "").replace(
            'retrieval = "contrast"\n', "").replace("inject_budget = 300\n", ""))
        with pytest.raises(UserError, match=message):
            load(home / "bad.toml")
