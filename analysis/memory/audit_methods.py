"""The audit of the field's methods' memories (`critique audit`, key ``methods``; critique.engine.field): per method
and pool, how its offline stage went (calls, tokens, the budget, why it stopped, the steps it skipped) and how its
test questions went; per note (an ACE bullet, DC's cheatsheet, an ExpeL rule, a DSPy program's instructions or
demo, a dspy:knn example) its text, the train items it rests on, and its use: the test prompts of its method that
showed it and how many of them were answered right. Reads logs only."""

from __future__ import annotations

from pathlib import Path

from critique.analysis.reading import logs
from critique.analysis.study.tabular import Table
from critique.base.ids import pool_of
STAGE_NOTE = ("a field method's offline stage per pool (memory/METHOD.json): its calls and their prompt + completion "
              "tokens, --train-budget (the pool's share), why it stopped (- : it went to its end), the steps whose "
              "reply it could not use; its test prompts and how many were answered right (errors count wrong; "
              "\"R of L\": of the L with a gold label, when some, a Learner's predict prompts, had none)")
NOTES_NOTE = ("each note of a field method's memory: the train items it rests on (sources), the test prompts of its "
              "method that showed it (shown) and how many of them were answered right")


def audit(path: Path, predictions: list[dict], problems: list[str]) -> list[dict]:
    """One record per (method, pool) of the run's field methods, with its notes (``predictions``: the run's final
    test records)."""
    from critique.analysis.field.methods import learned

    out = []
    for name, document in sorted(learned(path, problems).items()):
        mine = [r for r in predictions if r.get("strategy") == name]
        for pool, record in sorted(document["pools"].items()):
            asked = [r for r in mine if pool_of(r.get("user")) == pool]
            out.append({"method": name, "pool": pool, "offline_calls": record.get("offline_calls"),
                        "offline_tokens": record.get("offline_tokens"), "train_budget": record.get("train_budget"),
                        "stopped": record.get("stopped"), "skipped": len(record.get("skipped") or []),
                        "prompts": len(asked), "labeled": sum(logs.labeled(r) for r in asked),
                        "right": sum(r.get("correct") is True for r in asked),
                        "notes": [_note(note, asked) for note in record.get("notes") or []]})
    return out


def _note(note: dict, asked: list[dict]) -> dict:
    shown = [r for r in asked if note.get("id") in (r.get("retrieved") or [])]
    return {"id": note.get("id"), "text": note.get("text"), "sources": list(note.get("sources") or []),
            "shown": len(shown), "labeled": sum(logs.labeled(r) for r in shown),
            "right": sum(r.get("correct") is True for r in shown)}


def right_text(shown: int, labeled: int, right: int) -> str:
    """How many of ``shown`` prompts were answered right: "R of L" when only L of them had a gold label (the audit's
    tables: analysis.memory.audit_render too)."""
    return str(right) if labeled == shown else f"{right} of {labeled}"


def stage_table(audit_: dict) -> Table:
    title = "The field's methods: each offline stage"
    if not audit_["methods"]:
        return Table("methods", title, skipped="no field method's memory (memory/METHOD.json) in this run")
    columns = ["method", "pool", "calls", "tokens", "budget", "stopped", "skipped", "notes", "test prompts", "right"]
    rows = [dict(zip(columns, [m["method"], m["pool"], m["offline_calls"], m["offline_tokens"],
                               "-" if m["train_budget"] is None else m["train_budget"], m["stopped"] or "-",
                               m["skipped"], len(m["notes"]), m["prompts"],
                               right_text(m["prompts"], m["labeled"], m["right"])]))
            for m in audit_["methods"]]
    return Table("methods", title, columns, rows, note=STAGE_NOTE)


def notes_table(audit_: dict, limit: int) -> Table | None:
    """Every note (the first ``limit`` of each method and pool; 0: all), or None when no method kept one."""
    from critique.analysis.study.render import short
    columns = ["method", "pool", "note", "text", "sources", "shown", "right"]
    rows, left = [], 0
    for m in audit_["methods"]:
        notes = m["notes"] if limit <= 0 else m["notes"][:limit]
        left += len(m["notes"]) - len(notes)
        rows += [dict(zip(columns, [m["method"], m["pool"], n["id"], short(n["text"], 80), len(n["sources"]),
                                    n["shown"], right_text(n["shown"], n["labeled"], n["right"])])) for n in notes]
    if not rows:
        return None
    more = f"; {left} more in --format json" if left else ""
    return Table("method_notes", "The field's methods: each note and its use", columns, rows, note=NOTES_NOTE + more)
