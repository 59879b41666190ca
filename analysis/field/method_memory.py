"""What a field method's memory holds, read from its logs (memory/METHOD.json and the calls its offline stage
asked, in order, each with its prompt and its reply in calls.jsonl): per note, where its text first occurs in the
stage's calls, each call's prompt before its reply:

- in the stage's first prompt: the program it started from (a DSPy program's instructions, the task's own);
- in a later prompt, before any reply held it: a placeholder of the prompt (a curator's example JSON, such as
  ACE's "[the new bullet]" or Dynamic Cheatsheet's "[the new cheatsheet]", copied back by the model);
- in a reply first, or nowhere (a note the memory composes, such as a demo or a successful trial): learned, but
  for a note that is one bracketed blank and nothing else (``[add a new strategy or insight]``), a placeholder the
  model wrote in the form of the prompt's.

Per method, the verdict the methods table shows (``memory``): EMPTY (no note in any pool), PLACEHOLDER or STARTING
(every note is one: nothing learned), or LEARNED, with how many notes are placeholders or the starting program
and how many pools are empty where some are."""

from __future__ import annotations

import json
import re
from pathlib import Path

from critique.analysis.reading import logs

EMPTY, PLACEHOLDER, STARTING, LEARNED = "empty", "placeholder", "starting program", "learned"
CALL_FIELDS = ("request_hash", "messages", "response", "error")
BLANK = re.compile(r"\[[^\[\]]*\]")  # one bracketed blank, the whole of a note: "[the new bullet]"


def verdicts(run: Path, documents: dict[str, dict], problems: list[str]) -> dict[str, dict]:
    """method -> {notes, memory} of the run's field methods (``documents``: analysis.field.methods.learned)."""
    asked = _asked(run, documents, problems)
    return {name: verdict(document, asked) for name, document in documents.items()}


def verdict(document: dict, asked: dict[str, tuple[str, str]]) -> dict:
    """The notes of one method's memory and what they are (``asked``: request hash -> (prompt, reply))."""
    pools = list(document["pools"].values())
    origins = [origin(str(note["text"]), [asked.get(h, ("", "")) for h in pool.get("requests") or []])
               for pool in pools for note in _notes(pool)]
    empty = sum(not _notes(pool) for pool in pools)
    return {"notes": len(origins), "memory": _said(origins, empty, len(pools))}


def origin(text: str, stage: list[tuple[str, str]]) -> str:
    """STARTING, PLACEHOLDER or LEARNED: where ``text`` first occurs in ``stage``, its calls' (prompt, reply) in
    the order asked (a reply's JSON may hold the text escaped)."""
    forms = {text, json.dumps(text)[1:-1], json.dumps(text, ensure_ascii=False)[1:-1]}
    for n, (prompt, reply) in enumerate(stage):
        if any(form in prompt for form in forms):
            return STARTING if n == 0 else PLACEHOLDER
        if any(form in reply for form in forms):
            break
    return PLACEHOLDER if BLANK.fullmatch(text.strip()) else LEARNED


def _notes(pool: dict) -> list[dict]:
    """A pool's notes that say something (a blank one holds nothing)."""
    return [n for n in pool.get("notes") or [] if isinstance(n, dict) and str(n.get("text") or "").strip()]


def _said(origins: list[str], empty: int, pools: int) -> str:
    """``learned (5 of 6 notes placeholder; 4 of 10 pools empty)``, ``starting program``, ``empty``, ..."""
    if not origins:
        return EMPTY
    given = [o for o in origins if o != LEARNED]
    kinds = " or ".join(sorted(set(given)))
    head = kinds if len(given) == len(origins) else LEARNED
    parts = [f"{len(given)} of {len(origins)} notes {kinds}"] if given and head == LEARNED else []
    parts += [f"{empty} of {pools} pools empty"] if empty else []
    return head + (f" ({'; '.join(parts)})" if parts else "")


def _asked(run: Path, documents: dict[str, dict], problems: list[str]) -> dict[str, tuple[str, str]]:
    """request hash -> (its prompt's text, its reply) of the requests the memories list (an answered record
    where a request has several)."""
    wanted = {h for d in documents.values() for pool in d["pools"].values() for h in pool.get("requests") or []}
    found: dict[str, tuple[str, str]] = {}
    for request, messages, reply, error in logs.rows(run, logs.CALLS, CALL_FIELDS, problems):
        if request in wanted and (request not in found or not error):
            found[request] = (_prompt(messages), reply if isinstance(reply, str) else "")
    return found


def _prompt(messages) -> str:
    """The text of a call's messages."""
    if not isinstance(messages, list):
        return ""
    contents = (m.get("content") for m in messages if isinstance(m, dict))
    return "\n".join(c if isinstance(c, str) else json.dumps(c, ensure_ascii=False) for c in contents)
