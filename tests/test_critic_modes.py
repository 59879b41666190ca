"""Critic modes (--critic gold | noisy:R | self, --label-budget F) on the fake provider: noisy:0 is the
gold run byte for byte, a self critic never sees a label, noisy:R flips exactly round(R * n) seeded
labels and says which, the label budget is nested, and EP_LABEL shows what the run has."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from critique.base import rundir
from critique.base.config import canonical_critic
from critique.cli import main
from critique.datasets.splits import Item
from critique.engine.memory import critic

ANIMALS = ["heron", "walrus", "quokka", "marmot"]  # labels that no question, task or template text holds
VOLATILE = {"run_id", "time", "latency_s", "started", "finished", "resumed", "command", "folders",
            "calls_bytes"}  # differ between runs (calls_bytes: the size of calls.jsonl, its times and latencies)


def run(out, *extra, limit=6, k=3, dataset="mcr-gen"):
    return main(["run", "--dataset", str(dataset), "--model", "fake/model", "--limit", str(limit), "--k", str(k),
                 "--out", str(out), "--quiet", *extra])


def entries(out) -> list[dict]:
    return rundir.read_jsonl(Path(out) / rundir.MEMORY / "episodic.jsonl")


def calls(out, stage="critique") -> list[dict]:
    return [c for c in rundir.read_jsonl(Path(out) / rundir.CALLS) if c["stage"] == stage]


def animal_data(root: Path, shift: int = 0) -> Path:
    """A dataset whose labels are animal names; ``shift`` rotates every train label (same questions)."""
    folder = root / f"animals{shift}"
    folder.mkdir(parents=True)
    card = {"name": "animals", "task": "Pick the option that fits the riddle.", "answer_space": ANIMALS}
    (folder / "dataset.json").write_text(json.dumps(card))
    for split, n in (("train", 8), ("test", 3)):
        lines = [{"id": f"{split}{i}", "question": f"Riddle {split} number {i}: which one is meant?",
                  "answer": ANIMALS[(i + (shift if split == "train" else 0)) % 4]} for i in range(n)]
        (folder / f"{split}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return folder


def normalised(value):
    """A log value without what differs between any two runs (ids, times, latencies)."""
    if isinstance(value, dict):
        return {k: normalised(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [normalised(v) for v in value]
    return value


def contents(out: Path) -> dict:
    found = {}
    for path in sorted(p for p in out.rglob("*") if p.is_file() and p.name != rundir.LOCK):
        name = str(path.relative_to(out))
        if path.suffix == ".jsonl":  # records in any order: concurrent calls finish in any order
            found[name] = sorted(json.dumps(normalised(r), sort_keys=True) for r in rundir.read_jsonl(path))
        elif path.suffix == ".json":
            found[name] = normalised(json.loads(path.read_text()))
        else:
            found[name] = path.read_bytes()
    return found


# ---- the setting ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("given, expected", [
    (("gold", None), ("gold", None)), (("noisy:0", None), ("gold", None)), (("noisy:0.0", None), ("gold", None)),
    (("noisy:0.20", None), ("noisy:0.2", None)), (("self", 0.25), ("self", 0.25)), (("self", 1), ("gold", None)),
])
def test_each_critic_has_one_written_form(given, expected):
    assert canonical_critic(*given) == expected


@pytest.mark.parametrize("args, message", [
    (["--critic", "noisy:1.5"], "0 <= R <= 1"), (["--critic", "noisy:x"], "0 <= R <= 1"),
    (["--critic", "oracle"], "unknown critic 'oracle'"),
    (["--label-budget", "0.5"], "needs the self critic"),
    (["--critic", "self", "--label-budget", "0"], "in (0, 1]"),
    (["--critic", "self", "--label-budget", "1.5"], "in (0, 1]"),
])
def test_bad_critic_settings_are_refused_before_any_call(home, fake_llm, capsys, args, message):
    assert run(home / "r", *args) == 2
    assert message in capsys.readouterr().err and fake_llm.CALLS == [] and not (home / "r").exists()


def test_the_critic_is_part_of_the_run(home, fake_llm, capsys):
    out = home / "r"
    assert run(out, "--strategies", "zero_shot", "--critic", "self") == 0
    assert run(out, "--strategies", "zero_shot") == 2
    assert "critic='self', not 'gold'" in capsys.readouterr().err
    manifest = json.loads((out / rundir.MANIFEST).read_text())
    del manifest["config"]["critic"], manifest["config"]["label_budget"]  # a manifest older than the setting
    rundir.write_json_atomic(out / rundir.MANIFEST, manifest)
    assert run(out, "--strategies", "zero_shot", "--critic", "self") == 2  # it was a gold run
    assert "critic='gold', not 'self'" in capsys.readouterr().err


# ---- noisy:0 is gold ------------------------------------------------------------------------------------
def test_noisy_zero_is_byte_identical_to_gold(home, fake_llm):
    assert run(home / "gold", "--no-cache") == 0
    assert run(home / "noisy", "--no-cache", "--critic", "noisy:0") == 0
    gold, noisy = contents(home / "gold"), contents(home / "noisy")
    assert set(gold) == set(noisy) and {"calls.jsonl", "predictions.jsonl", "memory/episodic.jsonl"} <= set(gold)
    for name in gold:  # every file: calls (request hashes, prompts, replies), predictions, memory, manifest
        assert gold[name] == noisy[name], name
    assert gold["manifest.json"]["config"]["critic"] == "gold" and gold["manifest.json"]["ep_label"] == "gold"
    # and a flipped label does change it: the comparison can fail
    assert run(home / "flip", "--no-cache", "--critic", "noisy:0.5") == 0
    flip = contents(home / "flip")
    assert flip["memory/episodic.jsonl"] != gold["memory/episodic.jsonl"]
    assert flip["manifest.json"] != gold["manifest.json"]


# ---- self: no label ---------------------------------------------------------------------------------------
def test_no_critic_prompt_of_a_self_run_holds_its_gold_label(home, fake_llm):
    a, b = animal_data(home), animal_data(home, shift=1)  # the same questions, every train label another animal
    assert run(home / "a", "--critic", "self", "--no-cache", dataset=a, limit=8) == 0
    assert run(home / "b", "--critic", "self", "--no-cache", dataset=b, limit=8) == 0
    prompts_a = {c["item_id"]: c["messages"] for c in calls(home / "a")}
    prompts_b = {c["item_id"]: c["messages"] for c in calls(home / "b")}
    assert len(prompts_a) == 8 and prompts_a == prompts_b  # nothing in them depends on the label
    gold = {e["item_id"]: e["gold"] for e in entries(home / "a")}
    for c in calls(home / "a"):
        assert c["template"] == "critic_self.j2"
        text = "\n".join(m["content"] for m in c["messages"])
        assert "Correct answer" not in text
        # the gold appears only where every option does (the list of options) or as the answer judged
        answer = text.split("Initial agent response: ", 1)[1].split("\n", 1)[0]
        listed = text.count(", ".join(ANIMALS))
        assert text.count(gold[c["item_id"]]) == listed + (answer == gold[c["item_id"]]), c["item_id"]
    # a gold run of the same data shows the label: the check above fails on it
    assert run(home / "g", "--no-cache", dataset=a, limit=8) == 0
    shown = [c for c in calls(home / "g") if f"Correct answer: {gold[c['item_id']]}" in c["messages"][0]["content"]]
    assert len(shown) == 8


def test_a_self_critique_records_its_verdict_and_believed_answer(home, fake_llm, capsys):
    out = home / "self"
    assert run(out, "--critic", "self") == 0
    found = entries(out)
    assert len(found) == 6
    for e in found:
        assert e["label"] is None and e["assertion_mismatch"] is None and e["label_flipped"] is False
        assert e["verdict"] in ("right", "wrong") and e["believed"] in ["1", "2", "3", "4"]
        assert (e["verdict"] == "right") == (e["believed"] == e["initial_answer"])  # the fake critic's rule
        assert e["critique"]["correct_answer"] == f"The correct answer is {e['believed']}."
    manifest = json.loads((out / rundir.MANIFEST).read_text())
    assert manifest["config"]["critic"] == "self" and manifest["ep_label"] == "believed"
    assert "critic_self.j2" in manifest["templates"]
    # EP_LABEL shows the believed answer as each example's label
    believed = {e["id"]: e["believed"] for e in found}
    by_hash = {c["request_hash"]: c for c in calls(out, "test")}
    shown = 0
    for p in rundir.read_jsonl(out / rundir.PREDICTIONS):
        if p["strategy"] == "EP_LABEL":
            text = by_hash[p["request_hash"]]["messages"][0]["content"]
            for i in p["retrieved"]:
                assert f"Correct answer: {believed[i]}" in text
                shown += 1
    assert shown == 6 * 3
    assert any(e["believed"] != e["gold"] for e in found)  # so the check above is not the gold's
    # the mismatch table counts only critiques shown a label: a self run has none
    from critique.analysis.__main__ import main as analysis_main

    capsys.readouterr()
    assert analysis_main(["tables", str(out), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["mismatch"] is None


# ---- noisy:R -------------------------------------------------------------------------------------------------
def items(n, users=(None,)):
    return [Item(id=f"i{k}", question=f"q{k}", answer=str(k % 4 + 1), user=u) for u in users for k in range(n)]


@pytest.mark.parametrize("rate, n, flipped", [(0.2, 10, 2), (0.25, 10, 3), (0.5, 6, 3), (1.0, 7, 7), (0.05, 6, 0)])
def test_noisy_flips_round_r_n_seeded_items(rate, n, flipped):
    space = ["1", "2", "3", "4"]
    shown = critic.shown_labels(items(n), f"noisy:{rate!r}", None, 0, space)
    chosen = {k for k, s in shown.items() if s["flipped"]}
    assert len(chosen) == flipped
    for key, item in ((f"i{k}", i) for k, i in enumerate(items(n))):
        assert (shown[key]["label"] != item.answer) == (key in chosen) and shown[key]["label"] in space
    again = critic.shown_labels(items(n), f"noisy:{rate!r}", None, 0, space)
    assert again == shown  # seeded
    if 0 < flipped < n:
        others = [critic.flipped_ids(items(n), rate, seed) for seed in range(1, 6)]
        assert any(o != chosen for o in others)  # the seed chooses


def test_the_noisy_order_is_its_own_seeded_order():
    """The labels a noisy critic flips are the first of (seed, "noisy", user, id)'s hash order: the runs on
    disk keep their flips, and the order is independent of the train subsets' (no salt)."""
    from critique.base.ids import entry_id
    from critique.datasets.subsets import seeded_rank

    def noisy(seed, i):
        return hashlib.sha256(f"{seed}\0noisy\0{i.user or ''}\0{i.id}".encode()).hexdigest()

    pool = items(12, users=(None, "u1"))
    for seed in (0, 3):
        order = sorted(pool, key=lambda i: noisy(seed, i))
        assert critic.flipped_ids(pool, 0.5, seed) == {entry_id(i.user, i.id) for i in order[:12]}
        assert order != sorted(pool, key=lambda i: seeded_rank(seed, i.user, i.id))


def test_a_noisy_run_records_which_labels_it_flipped(home, fake_llm, capsys):
    out = home / "noisy"
    assert run(out, "--critic", "noisy:0.5") == 0
    assert "3 of 6 train labels flipped" in capsys.readouterr().err
    found = entries(out)
    flipped = [e for e in found if e["label_flipped"]]
    assert len(found) == 6 and len(flipped) == 3
    for e in found:
        assert (e["label"] != e["gold"]) == e["label_flipped"] and not e["assertion_mismatch"]
    by_item = {c["item_id"]: c["messages"][0]["content"] for c in calls(out)}
    for e in found:  # the critic saw the flipped label, not the gold
        assert f"Correct answer: {e['label']}" in by_item[e["item_id"]]
    manifest = json.loads((out / rundir.MANIFEST).read_text())
    assert manifest["config"]["critic"] == "noisy:0.5" and manifest["ep_label"] == "noisy"
    label = {e["id"]: e["label"] for e in found}  # EP_LABEL shows the labels the run has: the noisy ones
    by_hash = {c["request_hash"]: c["messages"][0]["content"] for c in calls(out, "test")}
    shown = [(i, by_hash[p["request_hash"]]) for p in rundir.read_jsonl(out / rundir.PREDICTIONS)
             if p["strategy"] == "EP_LABEL" for i in p["retrieved"]]
    assert len(shown) == 18 and all(f"Correct answer: {label[i]}" in text for i, text in shown)
    assert any(label[i] != e for i, e in ((e["id"], e["gold"]) for e in found))



def test_a_noisy_recritique_holds_the_critic_to_the_label_it_was_shown(home, fake_llm, monkeypatch, capsys):
    monkeypatch.setenv("FAKE_LLM_CRITIC_WRONG", "1,2,3,4")  # every first critique asserts another label
    out = home / "noisy"
    assert run(out, "--critic", "noisy:0.5", "--on-mismatch", "recritique") == 0
    err = capsys.readouterr().err
    asked = [e for e in entries(out) if "recritique" in e]
    assert len(asked) == 6 and any(e["label_flipped"] for e in asked)  # some shown a label that is not the gold
    for e in asked:  # asked again, each names the label it was shown
        assert e["recritique"]["kept"] == "second" and e["asserted"] == e["label"]
    assert (f"{len(asked)} of 6 critiques did not name the label the critic was shown and were asked again; "
            f"{len(asked)} now do") in err
    assert "gold" not in err


# ---- the label budget ---------------------------------------------------------------------------------------
def test_the_label_budget_is_nested_and_seeded():
    space = ["1", "2", "3", "4"]
    pool = items(20, users=("u1", "u2"))

    def labelled(fraction, seed=0):
        shown = critic.shown_labels(pool, "self", fraction, seed, space)
        return {k for k, s in shown.items() if s["label"] is not None}

    quarter, half = labelled(0.25), labelled(0.5)
    assert len(quarter) == 10 and len(half) == 20 and quarter < half  # per user: 5 and 10 of 20 each
    assert labelled(0.25) == quarter and labelled(0.25, seed=1) != quarter
    assert labelled(None) == set()


def test_a_label_budget_run_shows_the_gold_to_its_items_only(home, fake_llm):
    out = home / "budget"
    assert run(out, "--critic", "self", "--label-budget", "0.5") == 0
    found = {e["item_id"]: e for e in entries(out)}
    templates = {c["item_id"]: c["template"] for c in calls(out)}
    labelled = {i for i, e in found.items() if e["label"] is not None}
    assert len(labelled) == 3
    for item_id, e in found.items():
        if item_id in labelled:
            assert templates[item_id] == "critic.j2" and e["label"] == e["gold"] and e["verdict"] is None
        else:
            assert templates[item_id] == "critic_self.j2" and e["verdict"] in ("right", "wrong")
    assert json.loads((out / rundir.MANIFEST).read_text())["ep_label"] == "budget"


# ---- the study file -------------------------------------------------------------------------------------
def test_a_study_file_sets_the_critic(home):
    from critique.base.errors import UserError
    from critique.experiments.study.file import load
    from critique.experiments.study.plan import base_config

    def study(text):
        path = home / "study.toml"
        path.write_text(text + 'datasets = ["mcr-gen"]\nout = "out"\n\n[[models]]\nname = "fake/model"\n')
        loaded = load(path)
        return base_config(loaded, loaded.models[0], "mcr-gen")

    assert (study("").critic, study("").label_budget) == ("gold", None)
    assert (study('critic = "noisy:0"\n').critic, study('critic = "noisy:0.50"\n').critic) == ("gold", "noisy:0.5")
    config = study('critic = "self"\nlabel_budget = 0.25\n')
    assert (config.critic, config.label_budget) == ("self", 0.25)
    with pytest.raises(UserError, match="needs the self critic"):
        study("label_budget = 0.25\n")
    with pytest.raises(UserError, match="unknown critic"):
        study('critic = "teacher"\n')


# ---- the cost in calls ------------------------------------------------------------------------------------
def test_a_run_says_its_cost_in_calls_before_it_starts(home, fake_llm, capsys):
    assert run(home / "r", "--critic", "self", "--no-cache") == 0
    err = capsys.readouterr().err
    assert "at most 43 calls (6 initial answers + 6 critiques + 1 summary + 30 test answers;" in err
    assert len(fake_llm.CALLS) == 43
    assert err.index("critique: cost:") < err.index("--critic self: 6 of 6")  # said before the critique stage


# ---- critique verify --verifier reorder ------------------------------------------------------------------
MCR_QUESTION = "Items: a, b\nConditions:\n- high: a first\nOrderings:\n1. a, b, c\n2. b, a, c\n3. c, b, a\n4. a, c, b"


def test_reorder_reverses_the_option_texts_and_maps_answers_back():
    from critique.experiments.verify import reordered

    question, back = reordered(MCR_QUESTION, ["1", "2", "3", "4"])
    assert question.split("Orderings:\n")[1] == "1. a, c, b\n2. c, b, a\n3. b, a, c\n4. a, b, c"
    assert back == {"1": "4", "2": "3", "3": "2", "4": "1"}
    pref = "Is user g01 more likely to prefer A or B?\nA: The Winter Lantern (2014)\nB: Machine of the Mirror (1990)"
    swapped, back = reordered(pref, ["A", "B"])
    assert swapped.splitlines()[1:] == ["A: Machine of the Mirror (1990)", "B: The Winter Lantern (2014)"]
    assert back == {"A": "B", "B": "A"}
    assert reordered("Is it so?", ["yes", "no"]) is None  # no option lines: not checked
    assert reordered("1. x\n1. y\n2. z", ["1", "2"]) is None  # an option on two lines


def test_verify_reorder_checks_each_entry_without_its_label(home, fake_llm, capsys):
    source = home / "self"
    assert run(source, "--critic", "self") == 0
    capsys.readouterr()
    fake_llm.CALLS.clear()
    assert main(["verify", str(source), "--verifier", "reorder", "--quiet"]) == 0
    captured = capsys.readouterr()
    assert "at most 6 calls" in captured.err and len(fake_llm.CALLS) == 6
    out = home / "self__verify-reorder"
    entries_by_id = {e["id"]: e for e in entries(source)}
    checks = [p for p in rundir.read_jsonl(out / rundir.PREDICTIONS) if p["stage"] == "probe"]
    assert len(checks) == 6
    asked = {c["item_id"]: c["messages"][0]["content"] for c in calls(out, "probe")}
    for p in checks:
        e = entries_by_id[p["item_id"]]
        assert p["checked_answer"] == e["initial_answer"] and p["verifier"] == "reorder"
        assert p["survives"] == (p["answer"] == e["initial_answer"])
        assert p["answer"] == str(5 - int(p["shown_answer"]))  # four options reversed: mapped back
        assert e["question"] not in asked[p["item_id"]]  # the question was asked permuted
        assert "Correct answer" not in asked[p["item_id"]]
    manifest = json.loads((out / rundir.MANIFEST).read_text())
    assert manifest["probe"]["name"] == "verify" and manifest["probe"]["source"] == "self"  # beside it
    assert "Verifiers:" in captured.out and "| reorder | 6 |" in captured.out
    # the logs moved together: the verify run still finds the run it checked
    import shutil

    from critique.analysis.memory import echo

    moved = home / "moved"
    shutil.copytree(source, moved / "self")
    shutil.copytree(out, moved / out.name)
    problems: list[str] = []
    shutil.move(str(source), str(home / "gone"))
    assert echo.verifier_row(moved / out.name, problems)["checked"] == 6 and not problems
    shutil.move(str(home / "gone"), str(source))
    fake_llm.CALLS.clear()
    assert main(["verify", str(source), "--verifier", "reorder", "--quiet"]) == 0 and fake_llm.CALLS == []
