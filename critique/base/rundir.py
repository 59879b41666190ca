"""The run directory: the interface between running and analysing.

Layout (LOG_VERSION 1)::

    manifest.json       config, versions, dataset checksum, template hashes, times
    calls.jsonl         one record per LLM call (critique.base.records.CALL)
    predictions.jsonl   one record per (stage, strategy, item) (critique.base.records.PREDICTION)
    memory/             episodic store and semantic memory
    .lock               held by the process that writes the run

The fields of every record: critique.base.records; for third parties: docs/run-directory.md.

This module is the one writer of run directories (and of the other files critique writes:
memory, reports): every value is redacted (``redact_value``) before it is encoded or cut.
Appends are one whole line on a file opened with O_APPEND, complete or absent: a short
write is finished, and a failed one (a full disk) is cut back off before the error is
raised. A process killed mid-write can leave at most a cut last line: readers skip it, and
the next writer cuts it off before appending. Every file is opened without following a link
(O_NOFOLLOW) and must be a regular file: a link planted in a run directory is refused in one line,
never written (or cut) through. This module imports nothing heavy, so the analysis can use it.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from pathlib import Path

from critique.base.errors import RunError, UnreadableFile
from critique.base.records import flat

LOG_VERSION = 1
_write = os.write  # the one system call that appends (a test injects a full disk here)
MANIFEST = "manifest.json"
CALLS = "calls.jsonl"
PREDICTIONS = "predictions.jsonl"
MEMORY = "memory"
NOTES = "notes.jsonl"  # memory/: a stream's notes, every version (critique.engine.memory.notes)
EPISODIC = "episodic.jsonl"  # memory/: the episodic memory's entries (critique.engine.memory.episodic)
SEMANTIC = "semantic.json"  # memory/: each pool's semantic memory (critique.engine.memory.semantic)
LOCK = ".lock"

# the names of environment variables, query parameters and provider parameters whose values are credentials
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH(?!OR)|PRIVATE|SIGNATURE|^SIG$|^CODE$)",
                          re.IGNORECASE)
# a provider's parameters that configure it without being credentials: every other value given to a provider
# is redacted, whatever it is named (a service account under vertex_credentials, a header under extra_headers)
_PUBLIC_PARAMS = frozenset({
    "model", "api_base", "base_url", "api_version", "custom_llm_provider", "timeout", "stream_timeout", "max_retries",
    "rpm", "tpm", "order", "weight", "region_name", "aws_region_name", "vertex_location", "vertex_project",
    "input_cost_per_token", "output_cost_per_token", "max_tokens", "temperature", "seed", "tags", "model_info"})
_LONG_QUERY_VALUE = 16  # a query value this long is taken for a credential whatever its name (a signed URL's)
_GIVEN: set[str] = set()  # credentials given other than in the environment (add_secret), for this process


def add_secret(value) -> None:
    """Redact ``value`` from everything this process writes from now on (a key given in a study file)."""
    if isinstance(value, str) and len(value) >= 4:
        _GIVEN.add(value)


def add_url_secrets(url) -> None:
    """Redact the credentials written in ``url`` (``http://user:pass@host/``): the password, and user:pass."""
    from urllib.parse import urlsplit

    if not isinstance(url, str):
        return
    try:
        parts = urlsplit(url)
        user, password = parts.username, parts.password
    except ValueError:
        return
    if password:
        add_secret(password)
        add_secret(f"{user}:{password}")
    elif user and len(user) >= 8:  # http://TOKEN@host/
        add_secret(user)
    _add_query_secrets(parts.query)


def _add_query_secrets(query: str) -> None:
    """Redact the credentials of a URL's query (``?api-key=...``): the value of a parameter named like one, and
    any long value, as written (percent-encoded) and decoded."""
    from urllib.parse import unquote_plus

    for pair in query.split("&"):
        name, _, value = pair.partition("=")
        decoded = unquote_plus(value)
        if value and (_SECRET_NAME.search(unquote_plus(name)) or len(decoded) >= _LONG_QUERY_VALUE):
            add_secret(value)
            add_secret(decoded)


def add_param_secrets(params: dict) -> None:
    """Redact every value a provider is configured with (a router deployment's litellm_params): the values of
    keys that name a credential (api_key, token, vertex_credentials, ...), every other string value but those of
    `_PUBLIC_PARAMS` (the model, its version, its limits), each string inside a nested one (a service account's
    JSON), and the credentials in an api_base URL."""
    for name, value in params.items():
        if name in ("api_base", "base_url"):
            add_url_secrets(value)
        elif _SECRET_NAME.search(str(name)):
            _add_leaves(value, shortest=4)
        elif name not in _PUBLIC_PARAMS:
            _add_leaves(value, shortest=8)


def _add_leaves(value, shortest: int) -> None:
    """Redact every string in ``value`` (itself, or inside a dict, a list or a JSON text) of ``shortest`` characters
    or more, and a whole JSON text as given."""
    if isinstance(value, dict):
        for inner in value.values():
            _add_leaves(inner, shortest)
    elif isinstance(value, (list, tuple)):
        for inner in value:
            _add_leaves(inner, shortest)
    elif isinstance(value, str) and len(value) >= shortest:
        add_secret(value)
        if value.lstrip().startswith(("{", "[")):
            try:
                _add_leaves(json.loads(value), shortest)
            except ValueError:
                pass


def secret_values() -> list[str]:
    """Values of environment variables that look like credentials (long enough to matter) and the credentials
    given otherwise (add_secret), and each one as it appears inside a JSON string (a model's JSON reply that
    repeats a key with a quote or a backslash in it holds it escaped), longest first."""
    values = {v for k, v in os.environ.items() if _SECRET_NAME.search(k) and len(v) >= 8} | _GIVEN
    return sorted(values | {json.dumps(v, ensure_ascii=False)[1:-1] for v in values}, key=len, reverse=True)


def redact(text: str, secrets: list[str] | None = None) -> str:
    for value in secrets if secrets is not None else secret_values():
        if value in text:
            text = text.replace(value, "[REDACTED]")
    return text


def redact_value(value, secrets: list[str] | None = None):
    """``value`` with every credential removed from every string in it (keys too), before it
    is encoded: a key with a quote or a backslash would survive in its escaped JSON form."""
    secrets = secret_values() if secrets is None else secrets
    if not secrets:
        return value
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, dict):
        return {redact_value(k, secrets): redact_value(v, secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_value(v, secrets) for v in value]
    return value


def dumps(record: dict) -> str:
    return json.dumps(redact_value(record), ensure_ascii=False, sort_keys=True)


def open_regular(path: str | Path, flags: int, mode: int = 0o644) -> int:
    """A descriptor of ``path`` opened with ``flags``, which must name a regular file, not a link to one: a
    symbolic link in its place (that a write would go through, to a file outside the folder), a FIFO or a
    device is refused in one line (RunError) before anything is read or written."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0), mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise RunError(f"{path}: a symbolic link, not a file critique wrote; "
                           "it is not followed: remove it") from None
        raise
    kind = os.fstat(fd).st_mode
    if not stat.S_ISREG(kind):
        os.close(fd)
        raise RunError(f"{path}: not a regular file ({stat.filemode(kind)}); critique reads and writes only its own "
                       "files here: remove it")
    if hasattr(os, "set_blocking"):
        os.set_blocking(fd, True)
    return fd


def repair_tail(path: Path) -> int:
    """Cut an unfinished last line (left by a killed writer). Returns bytes removed."""
    if not os.path.lexists(path):
        return 0
    with os.fdopen(open_regular(path, os.O_RDWR), "rb+") as handle:
        if os.fstat(handle.fileno()).st_size == 0:
            return 0
        data = handle.read()
        if data.endswith(b"\n"):
            return 0
        keep = data.rfind(b"\n") + 1
        handle.truncate(keep)
        return len(data) - keep


def append_jsonl(path: Path, record: dict) -> None:
    """Append one record as one whole line: all of it or, when the write fails (a full disk),
    none of it, and a RunError that says what to do."""
    line = (dumps(record) + "\n").encode("utf-8")
    fd = open_regular(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        end = os.lseek(fd, 0, os.SEEK_END)
        written = 0
        try:
            while written < len(line):  # os.write may write less than asked
                written += _write(fd, line[written:])
        except OSError as exc:
            os.ftruncate(fd, end)  # no half record
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise RunError(f"{path}: no space left on the device ({exc.strerror}); nothing of this record was "
                               f"kept: free some space, then run the same command again to resume") from None
            raise
    finally:
        os.close(fd)


def read_jsonl(path: str | Path, problems: list[str] | None = None) -> list[dict]:
    """Every whole record of a JSON-lines file (a prediction with its experiment's fields at the top level:
    records.flat); a cut or broken line is skipped and reported."""
    path = Path(path)
    if not os.path.lexists(path):
        return []
    records = []
    with os.fdopen(open_regular(path, os.O_RDONLY), encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                records.append(flat(json.loads(line)))
            except json.JSONDecodeError:
                if problems is not None:
                    problems.append(f"{path}:{number}: unreadable line skipped (cut by a crash?)")
    return records


def write_text_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` (redacted) at once: a temporary file, then a rename."""
    write_bytes_atomic(path, redact(text).encode("utf-8"))


def write_text_chunks_atomic(path: Path, chunks) -> None:
    """Replace ``path`` at once with the text ``chunks`` (an iterable of strings, each redacted as it comes):
    written a chunk at a time to a temporary file, then renamed, so a large file is never held whole. A secret
    never spans two chunks when each chunk is whole lines (rows) of the file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    secrets = secret_values()
    with os.fdopen(_fresh(tmp), "w", encoding="utf-8") as handle:
        for chunk in chunks:
            handle.write(redact(chunk, secrets))
    os.replace(tmp, path)


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` at once: a temporary file, then a rename. Encoded bytes (a
    Parquet file) cannot be redacted here: the caller encodes values that went through
    `redact_value`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with os.fdopen(_fresh(tmp), "wb") as handle:
        handle.write(data)
    os.replace(tmp, path)


def _fresh(tmp: Path) -> int:
    """A new, empty regular file at ``tmp`` (a leftover from a killed writer, or a link planted there, removed
    first: the link itself, never what it points to), opened for writing; the rename that follows replaces
    the target, a link included, without writing through it."""
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass
    return open_regular(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)


def write_json_atomic(path: Path, data: dict) -> None:
    write_text_atomic(path, json.dumps(redact_value(data), indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def write_jsonl_atomic(path: Path, records: list[dict]) -> None:
    write_text_atomic(path, "".join(dumps(r) + "\n" for r in records))


# keys of a probe that say where one of its inputs lies on this machine: never part of the experiment's identity,
# never written (the probe names the input by content: critique probe dose's irrelevant_memory)
PROBE_LOCATIONS = ("irrelevant",)


def probe_identity(probe: dict | None) -> dict | None:
    """The probe as the manifest, every record and a resume's check hold it: without PROBE_LOCATIONS."""
    return None if probe is None else {k: v for k, v in probe.items() if k not in PROBE_LOCATIONS}


def probe_inputs(probe: dict | None) -> dict:
    """Where the probe's inputs lie (PROBE_LOCATIONS that it gives)."""
    return {k: probe[k] for k in PROBE_LOCATIONS if (probe or {}).get(k) is not None}


def is_run_dir(path: str | Path) -> bool:
    return (Path(path) / MANIFEST).exists()


def read_manifest(path: str | Path) -> dict:
    """A run directory's manifest (FileNotFoundError when the folder is not a run directory)."""
    path = Path(path)
    if not is_run_dir(path):
        raise FileNotFoundError(f"{path}: not a run directory (no {MANIFEST})")
    try:
        manifest = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
    except ValueError as exc:  # not UTF-8, not JSON: a damaged or planted file, read as data only
        raise UnreadableFile(f"{path / MANIFEST}: unreadable ({type(exc).__name__}: {str(exc)[:200]}); "
                             "restore it or use another folder") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("config"), dict):
        raise UnreadableFile(f"{path / MANIFEST}: not a run's manifest (no config object)")
    return manifest


def read_run(path: str | Path, problems: list[str] | None = None) -> dict:
    """A run directory as plain data: manifest, calls, predictions, semantic memory."""
    path = Path(path)
    manifest = read_manifest(path)
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
