"""The run directory: the interface between running and analysing.

Layout (LOG_VERSION 1)::

    manifest.json       config, versions, dataset checksum, template hashes, times
    calls.jsonl         one record per LLM call (CALL_FIELDS)
    predictions.jsonl   one record per (stage, strategy, item) (PREDICTION_FIELDS)
    memory/             episodic store and semantic memory
    .lock               held by the process that writes the run

Appends are one ``write`` of one whole line on a file opened with O_APPEND. A process
killed mid-write can leave at most a cut last line: readers skip it, and the next
writer cuts it off before appending. This module imports nothing heavy, so the
analysis can use it.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

LOG_VERSION = 1
MANIFEST = "manifest.json"
CALLS = "calls.jsonl"
PREDICTIONS = "predictions.jsonl"
MEMORY = "memory"
LOCK = ".lock"

CALL_FIELDS = (
    "stage", "strategy", "item_id", "user", "model", "prompt_tokens", "completion_tokens",
    "reasoning_tokens", "finish_reason", "latency_s", "cached", "retries", "error",
    "request_hash", "template", "template_hash", "messages", "response",
)
PREDICTION_FIELDS = (
    "stage", "strategy", "item_id", "user", "answer", "gold", "correct", "parse_failed",
    "timeout", "error", "retrieved", "request_hash",
)

_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD)", re.IGNORECASE)


def secret_values() -> list[str]:
    """Values of environment variables that look like credentials (long enough to matter)."""
    return sorted({v for k, v in os.environ.items() if _SECRET_NAME.search(k) and len(v) >= 8},
                  key=len, reverse=True)


def redact(text: str, secrets: list[str] | None = None) -> str:
    for value in secrets if secrets is not None else secret_values():
        if value in text:
            text = text.replace(value, "[REDACTED]")
    return text


def dumps(record: dict) -> str:
    return redact(json.dumps(record, ensure_ascii=False, sort_keys=True))


def repair_tail(path: Path) -> int:
    """Cut an unfinished last line (left by a killed writer). Returns bytes removed."""
    if not path.exists() or path.stat().st_size == 0:
        return 0
    with path.open("rb+") as handle:
        data = handle.read()
        if data.endswith(b"\n"):
            return 0
        keep = data.rfind(b"\n") + 1
        handle.truncate(keep)
        return len(data) - keep


def append_jsonl(path: Path, record: dict) -> None:
    """Append one record as one line, in one write."""
    line = (dumps(record) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def read_jsonl(path: str | Path, problems: list[str] | None = None) -> list[dict]:
    """Every whole record of a JSON-lines file; a cut or broken line is skipped and reported."""
    path = Path(path)
    if not path.exists():
        return []
    records = []
    with path.open(encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                if problems is not None:
                    problems.append(f"{path}:{number}: unreadable line skipped (cut by a crash?)")
    return records


def write_json_atomic(path: Path, data: dict) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(redact(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False)) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def is_run_dir(path: str | Path) -> bool:
    return (Path(path) / MANIFEST).exists()


def read_run(path: str | Path, problems: list[str] | None = None) -> dict:
    """A run directory as plain data: manifest, calls, predictions, semantic memory."""
    path = Path(path)
    if not is_run_dir(path):
        raise FileNotFoundError(f"{path}: not a run directory (no {MANIFEST})")
    manifest = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
    return {
        "path": str(path),
        "manifest": manifest,
        "calls": read_jsonl(path / CALLS, problems),
        "predictions": read_jsonl(path / PREDICTIONS, problems),
    }


def latest(records: list[dict]) -> list[dict]:
    """The final record per (stage, strategy, user, item): a rerun's record replaces a failed one."""
    final: dict[tuple, dict] = {}
    for r in records:
        final[(r["stage"], r.get("strategy"), r.get("user"), r["item_id"])] = r
    return list(final.values())
