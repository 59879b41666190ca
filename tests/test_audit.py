"""`critique audit`: per-entry provenance, verdicts and reuse, the run's concentration, leniency and
Echo Gap, retrieval versus usage failures with a suggestibility partner, semantic lines with their
sources; every number below is worked out by hand from the synthetic run directories."""

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from critique.analysis import synthetic
from critique.analysis.memory import audit
from critique.analysis.__main__ import main
from critique.base import rundir
from critique.datasets.splits import dataset_checksum

ROOT = Path(__file__).resolve().parent.parent
DIGITS = ["1", "2", "3", "4"]

# id: (initial answer, gold, correct_answer, assertion_mismatch as logged)
ENTRIES = {
    "e0": ("1", "2", "1", True),  # U=0, r=1: lenient (b=1)
    "e1": ("1", "3", "The correct answer is 3, not 2.", False),  # U=0, r=0
    "e2": ("2", "2", "2", False),  # U=1, r=1
    "e3": ("1", "4", "There are 3 items in the first condition.", True),  # no option named: unknown
    "e4": ("3", "4", "Ordering 3", True),  # U=0, r=1 (b=1)
    "e5": ("1", "2", "2", False),  # U=0, r=0
    "e6": ("4", "4", "1", True),  # U=1, r=0 (b=-1)
    "e7": ("1", "1", "1", False), "e8": ("1", "1", "1", False), "e9": ("1", "1", "1", False),
}
# (strategy, test item): (retrieved, answered right)
RETRIEVED = {
    ("EP_CRIT", "t0"): (["e0", "e1"], False), ("EP_CRIT", "t1"): (["e0", "e4"], False),
    ("EP_CRIT", "t2"): (["e0", "e5"], True), ("EP_CRIT", "t3"): (["e2"], False),
    ("EP_LABEL", "t0"): (["e0", "e1"], True), ("EP_LABEL", "t1"): (["e0", "e4"], True),
    ("EP_LABEL", "t2"): (["e0", "e5"], False), ("EP_LABEL", "t3"): (["e2"], True),
    ("EP+SEM_CRIT", "t0"): (["e0"], True), ("EP+SEM_CRIT", "t1"): (["e4"], False),
    ("EP+SEM_CRIT", "t2"): (["e6"], True), ("EP+SEM_CRIT", "t3"): ([], False),
    ("zero_shot", "t0"): ([], True), ("zero_shot", "t1"): ([], False),  # the difficulty strata of kappa
    ("zero_shot", "t2"): ([], True), ("zero_shot", "t3"): ([], False),
}


def entry(entry_id, initial, gold, said, mismatch, user=None):
    return {"id": entry_id, "item_id": entry_id.split("/")[-1], "user": user, "question": f"q {entry_id}",
            "initial_answer": initial, "gold": gold, "critique": {"correct_answer": said, "local_reason": "l",
                                                                  "global_reason": "g"},
            "assertion_mismatch": mismatch, "timeout": False, "model": "m", "template_hash": "0", "run_id": "run",
            "request_hash": "0"}


def memory(path, entries, semantic=None):
    (path / rundir.MEMORY).mkdir(exist_ok=True)
    synthetic.write_jsonl(path / rundir.MEMORY / "episodic.jsonl", entries)
    if semantic is not None:
        (path / rundir.MEMORY / "semantic.json").write_text(json.dumps(semantic), encoding="utf-8")


def manifest(*args, **kwargs) -> dict:
    """A manifest of a run with a test split (a folder with none is a Learner's fit, no study run)."""
    head = synthetic.manifest(*args, **kwargs)
    head["dataset"].update(n_train=10, n_test=4)
    return head


def single_run(root: Path) -> Path:
    head = manifest("m", "d", run_id="plain")
    head["dataset"]["answer_space"] = DIGITS
    head["dataset"]["path"] = str(root / "no-such-dataset")
    predictions = [synthetic.prediction("test", "EP_CRIT", "t3", False, retrieved=["e9"], error="failed call")]
    for (strategy, item), (retrieved, ok) in RETRIEVED.items():
        record = synthetic.prediction("test", strategy, item, ok, retrieved=retrieved)
        if (strategy, item) == ("EP_CRIT", "t0"):
            record["retrieved_scores"] = [0.9, 0.5]  # logged by newer runs; parallel to retrieved
        predictions.append(record)
    path = synthetic.write_run(root / "d__m", head, [], synthetic.in_run(head, predictions))
    semantic = {"all": {"advice": "- Check the length rule.\n- Trust the gold.", "source_ids": list(ENTRIES),
                        "lines": [{"text": "Check the length rule.", "source_ids": ["e0", "e1"]},
                                  {"text": "Trust the gold.", "source_ids": ["e3", "e6", "zz"]}],
                        "model": "m", "template_hash": "0", "timeout": False, "error": None, "run_id": "plain",
                        "request_hash": "0"}}
    memory(path, [entry(k, *v) for k, v in ENTRIES.items()], semantic)
    return path


def probe_run(root: Path) -> Path:
    head = manifest("m", "d", probe={"name": "suggestibility", "attribution": None}, run_id="probe")
    records = [synthetic.prediction("probe", "truth", "t0", True),
               synthetic.prediction("probe", "truth", "t1", True),
               synthetic.prediction("probe", "truth", "t1", False),  # the later record counts: usage failure
               synthetic.prediction("probe", "lying", "t3", True)]  # t3 has no truth arm: not classified
    return synthetic.write_run(root / "d__m__suggestibility", head, [], synthetic.in_run(head, records))


@pytest.fixture()
def runs(tmp_path):
    single_run(tmp_path)
    probe_run(tmp_path)
    return tmp_path


def the_audit(paths) -> dict:
    result = audit.audit([str(p) for p in paths])
    assert len(result["audits"]) == 1
    return result["audits"][0]


def test_reuse_per_entry_and_strategy(runs):
    a = the_audit([runs])
    rows = {r["id"]: r for r in a["entries"]}
    # the reuse n counts EP_CRIT and EP+SEM_CRIT prompts (audit.REUSE), never EP_LABEL's
    assert {k: r["n"] for k, r in rows.items()} == {"e0": 4, "e1": 1, "e2": 1, "e3": 0, "e4": 2, "e5": 1, "e6": 1,
                                                    "e7": 0, "e8": 0, "e9": 0}  # e9: only in a replaced record
    assert rows["e0"]["reuse"] == {"EP_LABEL": {"n": 3, "labeled": 3, "correct": 2},
                                   "EP_CRIT": {"n": 3, "labeled": 3, "correct": 1},
                                   "EP+SEM_CRIT": {"n": 1, "labeled": 1, "correct": 1}}  # every strategy's, listed
    assert rows["e0"]["correct"] == 2 and rows["e4"]["correct"] == 0 and rows["e0"]["labeled"] == 4
    assert a["prompts"] == {"stages": ["test"], "labeled": 16, "unlabeled": 0, "note": None}  # a study's: all labeled
    assert {s: (v["prompts"], v["prompts_with_memory"], v["retrievals"], v["entries_reached"])
            for s, v in a["reuse"].items()} == {"zero_shot": (4, 0, 0, 0), "EP_LABEL": (4, 4, 7, 5),
                                                "EP_CRIT": (4, 4, 7, 5), "EP+SEM_CRIT": (4, 3, 3, 3)}
    assert a["reuse"]["EP_CRIT"]["accuracy_with_memory"] == pytest.approx(0.25)
    assert a["reuse"]["zero_shot"]["accuracy_with_memory"] is None and a["reuse"]["EP_CRIT"]["unlabeled"] == 0
    s = a["summary"]
    assert (s["entries"], s["retrievals"], s["never_retrieved"]) == (10, 10, 4)
    assert s["never_retrieved_share"] == pytest.approx(0.4)
    assert s["top_entries"] == 1 and s["top10_share"] == pytest.approx(4 / 10)  # e0 alone


def test_verdicts_leniency_and_echo_gap(runs):
    a = the_audit([runs])
    rows = {r["id"]: r for r in a["entries"]}
    assert [(rows[k]["U"], rows[k]["r"], rows[k]["b"]) for k in ("e0", "e1", "e2", "e3", "e4", "e6")] == [
        (0, 1, 1), (0, 0, 0), (1, 1, 0), (0, None, None), (0, 1, 1), (1, 0, -1)]
    assert rows["e1"]["asserted"] == "3" and rows["e3"]["asserted"] is None and rows["e4"]["asserted"] == "3"
    s = a["summary"]
    assert (s["u0_entries"], s["u0_verdict_known"], s["verdict_unknown"]) == (5, 4, 1)
    # the gold critic was shown the gold label: its P(r=1 | U=0) is contradiction, not the label-free leniency
    assert s["contradiction"] == pytest.approx(0.5) and s["mean_b_u0"] == pytest.approx(0.5)
    assert (s["leniency"], s["leniency_entries"], s["contradiction_entries"]) == (None, 0, 4)
    # U=0 with a known verdict: b = (1, 0, 1, 0), n = (4, 1, 2, 1): r = 2 / sqrt(6), the Echo table's
    assert s["corr_b_n_u0"] == pytest.approx(2 / math.sqrt(6))
    assert (s["contradiction_low"], s["contradiction_high"]) == (pytest.approx(0.150039, abs=1e-6),
                                                                 pytest.approx(0.849961, abs=1e-6))
    rests = s["corr_b_n_u0_interval"]  # e0 and e4 carry it: too few for an interval, and it says so
    assert (rests["entries"], rests["lenient_reused"], rests["low"]) == (4, 2, None) and "no interval" in rests["why"]
    assert (s["assertion_mismatch"], s["asserts_other_than_gold"]) == (4, 3)
    assert (s["wrong_verdict"]["entries"], s["wrong_verdict"]["retrievals"]) == (3, 7)
    assert s["wrong_verdict"]["mean_n"] == pytest.approx(7 / 3)
    assert (s["right_verdict"]["entries"], s["right_verdict"]["retrievals"], s["right_verdict"]["mean_n"]) == (6, 3,
                                                                                                              0.5)
    assert s["flipped"] is None and "not available" in a["truth"]


def test_similarity_when_logged_else_not(runs):
    a = the_audit([runs])
    rows = {r["id"]: r for r in a["entries"]}
    assert rows["e0"]["similarity"] == {"mean": 0.9, "min": 0.9, "max": 0.9, "count": 1}
    assert rows["e1"]["similarity"]["mean"] == 0.5 and rows["e4"]["similarity"] is None
    assert [r["score"] for r in rows["e0"]["retrieved_by"] if r["strategy"] == "EP_CRIT"] == [0.9, None, None]
    assert a["summary"]["similarity_logged"] is True


@pytest.mark.parametrize("text, space, expected", [
    ("The correct answer is 3, not 2.", DIGITS, "3"),
    ("No", ["yes", "no"], "no"),
    ("The correct answer is: yes.", ["yes", "no"], "yes"),
    ("There are 3 conditions and the first one decides.", DIGITS, None),  # a stray digit names no answer
    ("The student's answer was right", DIGITS, None),
    ("The correct answer is 3 or 4", DIGITS, None),
    ("The correct answer is not 2", DIGITS, None),
    ("The answer is 30", DIGITS, None),
    ("(B)", ["A", "B"], "B"),
    ("Option 2 is correct", DIGITS, "2"),
    ("2. quince, file, Quito", DIGITS, "2"),
    ("the answer is a comedy", ["A", "B"], None),  # "a" is not option A
    ("The Broken Engine", ["A", "B"], None),
    (None, DIGITS, None),
])
def test_the_assertion_is_parsed_strictly(text, space, expected):
    assert audit.asserted_option(text, space) == expected


def test_retrieval_and_usage_failures(runs):
    a = the_audit([runs])
    f = a["failures"]
    assert f["partner"].endswith("d__m__suggestibility")
    assert (f["wrong"], f["retrieval"], f["usage"], f["unclassified"]) == (3, 1, 1, 1)
    assert [(i["item_id"], i["class"], i["retrieved_wrong_verdict"]) for i in f["items"]] == [
        ("t0", "retrieval", 1), ("t1", "usage", 2), ("t3", None, 0)]
    alone = the_audit([runs / "d__m"])  # no partner given: nothing classified
    assert alone["failures"]["partner"] is None and alone["failures"]["unclassified"] == 3


def test_semantic_lines_with_their_sources(runs):
    pools = the_audit([runs])["semantic"]["pools"]
    assert [p["pool"] for p in pools] == ["all"] and pools[0]["format"] == "lines"
    lines = pools[0]["lines"]
    assert [(x["sources"], x["wrong_verdict"], x["assertion_mismatch"], x["unknown_verdict"], x["not_in_memory"])
            for x in lines] == [(2, 1, 1, 0, 0), (3, 1, 2, 1, 1)]
    assert lines[1]["source_ids"] == ["e3", "e6", "zz"]


def pref_run(root: Path, data: Path | None) -> Path:
    """A preference run over two users; its dataset folder flips the gold of u1/x0 and u2/y0."""
    head = manifest("m", "pref-gen", kind="preference", run_id="pref")
    head["dataset"]["users"] = ["u1", "u2"]
    head["dataset"]["path"] = str(root / "no-such-dataset")
    items = {"u1": [("x0", True, "A"), ("x1", False, "B")], "u2": [("y0", True, "B")]}
    if data is not None:
        for user, rows in items.items():
            (data / user).mkdir(parents=True)
            synthetic.write_jsonl(data / user / "train.jsonl", [
                {"id": i, "question": "q", "answer": "B" if prefers == "A" else "A",
                 "meta": {"flipped": flipped, "rule_prefers": prefers}} for i, flipped, prefers in rows])
        (data / "dataset.json").write_text("{}", encoding="utf-8")
        head["dataset"]["path"], head["dataset"]["checksum"] = str(data), dataset_checksum(data)
    predictions = [synthetic.prediction("test", "EP_CRIT", "t0", True, user="u1", retrieved=["u1/x0", "u1/x1"]),
                   synthetic.prediction("test", "EP_CRIT", "t1", True, user="u1", retrieved=["u1/x0"]),
                   synthetic.prediction("test", "EP_CRIT", "s0", True, user="u2", retrieved=["u2/y0"])]
    path = synthetic.write_run(root / "pref", head, [], synthetic.in_run(head, predictions))
    semantic = {"u1": {"advice": "- Prefer comedies.\n- Mind the year.", "source_ids": ["u1/x0", "u1/x1"],
                       "model": "m", "template_hash": "0", "timeout": False, "error": None, "run_id": "pref",
                       "request_hash": "0"},
                "u2": {"advice": None, "source_ids": ["u2/y0"], "model": "m", "template_hash": "0", "timeout": False,
                       "error": "level 0 chunk 0: failed call", "run_id": "pref", "request_hash": "0"}}
    memory(path, [entry("u1/x0", "A", "B", "B", False, "u1"), entry("u1/x1", "A", "A", "A", False, "u1"),
                  entry("u2/y0", "B", "A", "A", False, "u2")], semantic)
    return path


def test_generator_truth_and_the_old_semantic_format(tmp_path):
    a = the_audit([pref_run(tmp_path / "runs", tmp_path / "data")])
    rows = {r["id"]: r for r in a["entries"]}
    assert (rows["u1/x0"]["flipped"], rows["u1/x1"]["flipped"], rows["u1/x0"]["rule_prefers"]) == (True, False, "A")
    flipped = a["summary"]["flipped"]
    assert (flipped["entries"], flipped["retrieved_entries"], flipped["retrievals"]) == (2, 2, 3)
    assert flipped["share_of_retrievals"] == pytest.approx(3 / 4)
    pools = {p["pool"]: p for p in a["semantic"]["pools"]}
    assert pools["u1"]["format"] == "advice" and "older log" in pools["u1"]["note"]
    assert [(x["text"], x["source_ids"]) for x in pools["u1"]["lines"]] == [
        ("Prefer comedies.", ["u1/x0", "u1/x1"]), ("Mind the year.", ["u1/x0", "u1/x1"])]
    assert pools["u2"]["lines"] == [] and "failed call" in pools["u2"]["note"]


def test_truth_of_a_moved_changed_or_missing_dataset_folder(tmp_path):
    path = pref_run(tmp_path / "runs", tmp_path / "data")
    (tmp_path / "data").rename(tmp_path / "moved")
    assert "not available" in the_audit([path])["truth"]
    moved = audit.audit([str(path)], [str(tmp_path / "moved")])["audits"][0]  # --data DIR
    assert moved["summary"]["flipped"]["entries"] == 2 and str(tmp_path / "moved") in moved["truth"]
    (tmp_path / "moved").rename(tmp_path / "data")
    (tmp_path / "data" / "dataset.json").write_text('{"changed": true}', encoding="utf-8")
    a = the_audit([path])
    assert a["summary"]["flipped"] is None and "checksum" in a["truth"]
    assert "not available" in the_audit([pref_run(tmp_path / "other", None)])["truth"]


def test_a_run_without_memory_says_so(tmp_path):
    head = manifest("m", "d")
    path = synthetic.write_run(tmp_path / "zs", head, [], [synthetic.prediction("test", "zero_shot", "t0", True)])
    a = the_audit([path])
    assert a["memory"] is False and "no episodic memory" in a["note"] and a["summary"] is None


def test_cli_formats(runs, tmp_path, capsys):
    assert main(["audit", str(runs), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) == {"audits", "inputs", "problems", "errors"}
    a = data["audits"][0]
    assert set(a) == {"run", "model", "dataset", "kind", "experiment", "strategies", "answer_space", "memory", "note",
                      "truth", "prompts", "summary", "reuse", "entries", "failures", "semantic", "methods"}
    assert set(a["entries"][0]) >= {"id", "item_id", "initial_answer", "gold", "critique", "asserted", "U", "r", "b",
                                    "n", "correct", "reuse", "retrieved_by", "similarity", "flipped"}
    assert set(a["summary"]) >= {"never_retrieved_share", "top10_share", "leniency", "contradiction", "mean_b_u0",
                                 "corr_b_n_u0",
                                 "assertion_mismatch", "wrong_verdict", "right_verdict", "flipped"}
    assert main(["audit", str(runs), "--rows", "2"]) == 0
    out = capsys.readouterr().out
    assert "## m / d: plain run" in out and "| e0 | 1 | 2 | 1 | 0 | 1 | 1 | yes | 4 | 2 |" in out
    assert ("retrieval failures 1 (made right by a note that states the gold label), usage failures 1, not "
            "classified 1") in out and "8 more entries" in out
    page = tmp_path / "audit.html"
    assert main(["audit", str(runs), "--format", "html", "-o", str(page)]) == 0
    text = page.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and "<style>" in text and "Memory audit" in text
    assert main(["audit", str(runs / "d__m__suggestibility")]) == 2  # only a probe: nothing to audit


def test_the_shipped_logs(capsys):
    assert main(["audit", str(ROOT / "logs")]) == 0
    out = capsys.readouterr().out
    plain = [p for p in sorted((ROOT / "logs").iterdir()) if (p / rundir.MANIFEST).exists()
             and not {"probe", "ablation"} & {k for k, v in json.loads((p / rundir.MANIFEST).read_text()).items() if v}]
    assert {p.name.split("__")[0] for p in plain} == {"mcr-gen", "pref-gen", "control-pos", "control-neg"}
    for path in plain:  # every plain run shipped (gold, noisy and self critics) is audited
        assert f": plain run ({path})" in out, path.name
    assert "Suggestibility partner: " + str(ROOT / "logs") in out


def test_the_audit_imports_nothing_heavy(runs):
    code = f"""import contextlib, io, sys
from critique.analysis.__main__ import main
with contextlib.redirect_stdout(io.StringIO()):
    assert main(["audit", {str(runs)!r}]) == 0 and main(["audit", {str(runs)!r}, "--format", "json"]) == 0
heavy = ("pandas", "numpy", "scipy", "matplotlib", "litellm", "torch", "sentence_transformers")
print(sorted(m for m in heavy if m in sys.modules))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_u_is_the_truth_where_the_run_believes_otherwise():
    """U (critique.base.truth.initial_right) compares the initial answer with the gold label; contrast
    retrieval's ``right`` is what the run believes (the label shown, or the self critic's verdict)."""
    from critique.base.truth import initial_right
    from critique.engine.memory import selection

    noisy = {"initial_answer": "2", "gold": "1", "label": "2", "verdict": None}  # shown a flipped label
    assert selection.right(noisy) and not initial_right(noisy)
    self_wrong = {"initial_answer": "1", "gold": "1", "label": None, "verdict": "wrong"}
    assert initial_right(self_wrong) and not selection.right(self_wrong)


def test_a_self_critic_entry_has_no_mismatch_to_show(home, fake_llm, capsys, tmp_path):
    """An entry of a --critic self run was shown no label: its assertion_mismatch is null (not applicable),
    shown as "-" in the entries table (markdown and HTML), not as "no" (checked, no mismatch)."""
    from critique.cli import main as critique_main

    out = home / "runs" / "self"
    assert critique_main(["run", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", "6", "--k", "3",
                          "--critic", "self", "--out", str(out), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["audit", str(out), "--format", "json"]) == 0
    entries = json.loads(capsys.readouterr().out)["audits"][0]["entries"]
    assert len(entries) == 6 and all(e["assertion_mismatch"] is None for e in entries)
    assert main(["audit", str(out)]) == 0
    lines = capsys.readouterr().out.split("### Entries", 1)[1].split("\n\n")[1].splitlines()
    column = [c.strip() for c in lines[0].strip("|").split("|")].index("mismatch")
    cells = [[c.strip() for c in line.strip("|").split("|")][column] for line in lines[2:]]
    assert cells == ["-"] * 6
    page = tmp_path / "audit.html"
    assert main(["audit", str(out), "--format", "html", "-o", str(page)]) == 0
    table = page.read_text(encoding="utf-8").split("Entries, most reused first", 1)[1].split("</table>", 1)[0]
    column = re.findall(r"<th[^>]*>(.*?)</th>", table).index("mismatch")
    rows = re.findall(r"<tr>(.*?)</tr>", table, re.S)[1:]
    assert [re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)[column] for row in rows] == ["-"] * 6
