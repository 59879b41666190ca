"""--advice-sources cited: the summary is asked which critiques each line of advice rests on, the numbers it
gives are checked against its prompt, and a line that names none valid is traced to its whole chunk and says
so (`cited` false), in the record and in the audit. The default (chunk, the paper's prompt) asks nothing."""

import json
from pathlib import Path

from critique.base import rundir
from critique.cli import main
from critique.engine import parsing

CONTEXT = 534  # as in test_semantic_chunks: one critique per level-0 chunk, two lists per merge


def argv(out: Path, *extra: str) -> list[str]:
    return ["run", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", "5", "--k", "3",
            "--strategies", "zero_shot,SEM_CRIT", "--out", str(out), "--quiet", *extra]


def semantic_of(out: Path) -> dict:
    return json.loads((out / "memory" / "semantic.json").read_text(encoding="utf-8"))["all"]


def expected_lines(node: dict, response: str, refs: list[list[str]]) -> tuple[list, list, list]:
    """(sources, cited, unknown numbers) of a node's lines, from its call's reply and what its numbers stand for."""
    sources, cited, unknown = [], [], []
    for _, numbers in parsing.parse_cited_advice(response):
        known = [n for n in numbers if 1 <= n <= len(refs)]
        unknown += [n for n in numbers if n not in known]
        cited.append(bool(known))
        sources.append(list(dict.fromkeys(i for n in known for i in refs[n - 1])) or node["source_ids"])
    return sources, cited, unknown


def check_cited_tree(out: Path) -> dict:
    sem = semantic_of(out)
    calls = {c["request_hash"]: c for c in rundir.read_jsonl(out / "calls.jsonl") if c["stage"] == "summary"}
    tree = sem["tree"]
    for number, level in enumerate(tree):
        for node in level:
            if node["request_hash"] is None:  # passed up alone
                below = tree[number - 1][node["inputs"][0]]
                assert (node["line_sources"], node["line_cited"]) == (below["line_sources"], below["line_cited"])
                continue
            call = calls[node["request_hash"]]
            assert '"sources"' in call["messages"][0]["content"]  # the prompt asks for them
            refs = ([[i] for i in node["source_ids"]] if number == 0 else
                    [s for c in node["inputs"] for s in tree[number - 1][c]["line_sources"]])
            sources, cited, unknown = expected_lines(node, call["response"], refs)
            assert (node["line_sources"], node["line_cited"], node["unknown_sources"]) == (sources, cited, unknown)
    root = tree[-1][0]
    assert [(x["source_ids"], x["cited"]) for x in sem["lines"]] == list(zip(root["line_sources"], root["line_cited"]))
    return sem


def test_cited_sources_are_the_numbers_the_summary_gave_and_a_line_naming_none_is_its_chunk(home, fake_llm):
    out = home / "cited"
    assert main(argv(out, "--advice-sources", "cited")) == 0
    sem = check_cited_tree(out)
    ids = [e["id"] for e in rundir.read_jsonl(out / "memory" / "episodic.jsonl")]
    # one chunk: the fake's first line names questions 1 and 2, its last one 99, which the prompt has not
    assert [(x["source_ids"], x["cited"]) for x in sem["lines"]] == [(ids[:2], True), (ids, False)]
    assert sem["tree"][0][0]["unknown_sources"] == [99]
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["config"]["advice_sources"] == "cited"
    fake_llm.CALLS.clear()
    assert main(argv(out, "--advice-sources", "cited")) == 0 and fake_llm.CALLS == []


def test_cited_sources_go_through_the_merges(home, fake_llm, monkeypatch):
    monkeypatch.setenv("FAKE_LLM_ADVICE_LINES", "3")
    out = home / "chunked"
    assert main(argv(out, "--advice-sources", "cited", "--context-tokens", str(CONTEXT))) == 0
    sem = check_cited_tree(out)
    assert len(sem["tree"]) >= 2 and any(sem["tree"][-1][0]["line_cited"])
    ids = {e["id"] for e in rundir.read_jsonl(out / "memory" / "episodic.jsonl")}
    cited = [x for x in sem["lines"] if x["cited"]]
    assert cited and all(set(x["source_ids"]) < ids for x in cited)  # traced closer than the whole pool


def test_the_default_asks_for_no_sources_and_every_line_says_it_is_its_chunk(home, fake_llm):
    out = home / "chunk"
    assert main(argv(out)) == 0
    sem = semantic_of(out)
    ids = [e["id"] for e in rundir.read_jsonl(out / "memory" / "episodic.jsonl")]
    assert sem["lines"] and all(x["source_ids"] == ids and x["cited"] is False for x in sem["lines"])
    call = next(c for c in rundir.read_jsonl(out / "calls.jsonl") if c["stage"] == "summary")
    assert '"sources"' not in call["messages"][0]["content"]


def test_the_audit_says_which_lines_are_cited_and_which_are_their_chunk(home, fake_llm, tmp_path):
    out = home / "cited"
    assert main(argv(out, "--advice-sources", "cited")) == 0
    report = tmp_path / "audit.json"
    assert main(["audit", str(out), "--format", "json", "-o", str(report)]) == 0
    lines = json.loads(report.read_text(encoding="utf-8"))["audits"][0]["semantic"]["pools"][0]["lines"]
    assert [(x["sources"], x["traced"]) for x in lines] == [(2, "cited"), (5, "chunk")]
    text = tmp_path / "audit.md"
    assert main(["audit", str(out), "-o", str(text)]) == 0
    assert "2 cited" in text.read_text(encoding="utf-8") and "5 (chunk)" in text.read_text(encoding="utf-8")
