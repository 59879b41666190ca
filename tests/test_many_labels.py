"""A task of 150 labels end to end on the fake provider: labels that contain one another or hold spaces are
answered, parsed and checked as themselves; the tables summarise each cell's answers instead of listing 150 labels
(every label in JSON); the audit says how often retrieval brought the question's gold label."""

from __future__ import annotations

import json

import pytest

from critique.base import rundir
from critique.cli import main
from critique.engine.parsing import extract_answer

WORDS = ["card", "balance", "bill", "transfer", "pin", "account", "cash", "fee", "rate", "refund"]
KINDS = ["arrival", "lost", "declined", "pending", "limit", "top up", "exchange", "blocked", "charge", "status",
         "change", "request", "history", "verify"]
LABELS = [label for word in WORDS for label in [word] + [f"{word} {kind}" if " " in kind else f"{word}_{kind}"
                                                         for kind in KINDS]]


def many_labels(folder):
    """150 labels (a word alone, and the word with a kind: "card", "card_lost", "card top up"), two train items and
    one test item of each, every question naming its label's words."""
    folder.mkdir(parents=True)
    card = {"name": "intents150", "task": "Name the intent of the customer's message.", "answer_space": LABELS}
    (folder / "dataset.json").write_text(json.dumps(card))
    for split, copies in (("train", 2), ("test", 1)):
        rows = [{"id": f"{split}-{n}-{c}", "question": f"{split} message {c}: the customer writes about "
                 f"{label.replace('_', ' ')} (ticket {n})", "answer": label}
                for n, label in enumerate(LABELS) for c in range(copies)]
        (folder / f"{split}.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return folder


def test_the_label_space_has_150_labels_that_contain_one_another():
    assert len(LABELS) == len(set(LABELS)) == 150
    assert extract_answer("The answer is card_lost.", LABELS) == "card_lost"  # not "card"
    assert extract_answer('{"answer": "card top up"}', LABELS) == "card top up"
    assert extract_answer("balance", LABELS) == "balance"


def test_a_150_label_task_runs_end_to_end_and_its_tables_summarise(home, fake_llm, capsys):
    data, out = many_labels(home / "intents"), home / "run"
    assert main(["run", "--dataset", str(data), "--model", "fake/model", "--k", "3", "--out", str(out),
                 "--quiet"]) == 0
    run = rundir.read_run(out)
    tests = [p for p in run["predictions"] if p["stage"] == "test"]
    assert len(tests) == 5 * 150 and not any(p["parse_failed"] or p["error"] for p in tests)
    assert {p["answer"] for p in tests} <= set(LABELS) and len({p["answer"] for p in tests}) > 50
    entries = rundir.read_jsonl(out / rundir.MEMORY / "episodic.jsonl")
    assert len(entries) == 300 and not any(e["assertion_mismatch"] for e in entries)  # each asserts its label
    capsys.readouterr()

    assert main(["tables", str(out), "--format", "json"]) == 0
    tables = json.loads(capsys.readouterr().out)
    assert len(tables["answers"]) == 5 and all(len(row["per_class"]) == 150 for row in tables["answers"])
    assert main(["tables", str(out)]) == 0
    text = capsys.readouterr().out
    section = text[text.index("## Answers"):].split("\n## ")[0]
    rows = [line for line in section.splitlines() if line.startswith("| fake/model")]
    assert len(rows) == 5
    for row in rows:
        cells = [cell.strip() for cell in row.split("|")]
        assert "of 150 labels never given" in cells[8] and cells[8].count(",") <= 5  # five labels named, no more
        assert cells[9].startswith("150 gold labels: mean")

    assert main(["audit", str(out), "--format", "json"]) == 0
    audit = json.loads(capsys.readouterr().out)
    reuse = audit["audits"][0]["reuse"]
    assert reuse["zero_shot"]["gold_retrieved_share"] is None  # no memory, nothing retrieved
    for strategy in ("EP_LABEL", "EP_CRIT", "EP+SEM_CRIT"):
        assert reuse[strategy]["label_judged"] == 150 and reuse[strategy]["gold_retrieved_share"] > 0.5


def test_the_embedded_model_answers_one_of_150_labels_by_grammar_and_by_log_likelihood(home):
    """The answer schema's 150-label enum as the embedded model's JSON grammar, and as the options it scores."""
    pytest.importorskip("llama_cpp")
    data = many_labels(home / "intents")
    for answer_by in ("generate", "loglikelihood"):
        out = home / f"run-{answer_by}"
        assert main(["run", "--dataset", str(data), "--model", "local/smollm2", "--limit", "2", "--strategies",
                     "zero_shot", "--answer-by", answer_by, "--out", str(out), "--quiet"]) == 0
        tests = [p for p in rundir.read_jsonl(out / rundir.PREDICTIONS) if p["stage"] == "test"]
        assert len(tests) == 2 and all(p["answer"] in LABELS and not p["parse_failed"] for p in tests)
        if answer_by == "loglikelihood":
            calls = [c for c in rundir.read_jsonl(out / rundir.CALLS) if c["stage"] == "test"]
            assert all(len(c["option_scores"]) == 150 for c in calls)  # every label scored
