"""What the fault tests share: a launcher of real `critique` processes, and how run
directories are compared.

"Identical in content" ignores exactly the fields in VOLATILE_CALL, VOLATILE_PREDICTION,
VOLATILE_MEMORY and VOLATILE_MANIFEST: when and how fast a call was answered, by which
attempt, from which cache, the id of the run, and the command line and folders it was opened with (and so the
size of calls.jsonl its manifest's offline totals were counted at). Everything else must match.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from critique.base import offline_totals, rundir
from critique.base.rundir import latest

HERE = Path(__file__).resolve().parent

VOLATILE_CALL = frozenset({"run_id", "time", "latency_s", "cached", "retries"})
VOLATILE_PREDICTION = frozenset({"run_id"})
VOLATILE_MEMORY = frozenset({"run_id"})
VOLATILE_MANIFEST = frozenset({"run_id", "started", "finished", "resumed", "command", "folders"})


class Launcher:
    """Forks `critique` processes from one warm parent (tests/faults/zygote.py)."""

    def __init__(self, env: dict[str, str]):
        self.proc = subprocess.Popen([sys.executable, str(HERE / "zygote.py")], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env={**os.environ, **env})

    def _ask(self, command: dict) -> dict:
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the zygote died (exit {self.proc.wait()})")
        return json.loads(line)

    def start(self, argv: list[str] | None = None, logs_to: Path | None = None, call: str | None = None,
              args: list | None = None) -> int:
        logs_to = Path(logs_to)
        return self._ask({"op": "start", "argv": argv, "call": call, "args": args or [],
                          "stdout": str(logs_to) + ".out", "stderr": str(logs_to) + ".err"})["pid"]

    def poll(self, pid: int) -> int | None:
        return self._ask({"op": "poll", "pid": pid})["rc"]

    def wait(self, pid: int, timeout: float = 300) -> int:
        deadline = time.monotonic() + timeout
        while (rc := self.poll(pid)) is None:
            if time.monotonic() > deadline:
                os.kill(pid, 9)
                raise TimeoutError(f"process {pid} still running after {timeout}s")
            time.sleep(0.02)
        return rc

    def close(self) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            os.kill(self.proc.pid, signal.SIGUSR1)  # its threads' stacks, on stderr
            time.sleep(1)
            self.proc.kill()
            raise


def warm(data_dir: str, cache: str, limit: int) -> int:
    """Build mcr-gen and embed its first ``limit`` train and test questions into ``cache``."""
    from critique.datasets.registry import resolve
    from critique.base.config import DEFAULT_ENCODER
    from critique.engine.memory.embed import Encoder

    dataset = resolve("mcr-gen", data_dir).limited(limit)
    Encoder(DEFAULT_ENCODER, Path(cache)).encode([i.question for i in dataset.train + dataset.test])
    return 0


def fresh_cache(embeddings: Path, folder: Path) -> Path:
    """A cache folder of its own (no response cached yet) holding the warm embeddings."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(embeddings, folder / embeddings.name)
    return folder


# ---- reading and comparing run directories -----------------------------------------------
def pkey(record: dict) -> tuple:
    return (record["stage"], record.get("strategy"), record.get("user"), record.get("item_id"))


def lines(path: Path) -> int:
    """Whole lines in a file (a line cut by a kill is not counted)."""
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def strip(record: dict, volatile: frozenset) -> dict:
    return {k: v for k, v in record.items() if k not in volatile}


def canonical(records: list[dict], volatile: frozenset) -> list[str]:
    return sorted(json.dumps(strip(r, volatile), sort_keys=True) for r in records)


def content(run: Path) -> dict:
    """Everything a run directory says, minus the volatile fields, in a comparable form."""
    calls = rundir.read_jsonl(run / rundir.CALLS)
    predictions = rundir.read_jsonl(run / rundir.PREDICTIONS)
    manifest = json.loads((run / rundir.MANIFEST).read_text())
    manifest.get(offline_totals.FIELD, {}).pop("calls_bytes", None)  # calls.jsonl's size: its times and latencies
    semantic_path = run / rundir.MEMORY / "semantic.json"  # none when no strategy of the run needs a summary
    semantic = json.loads(semantic_path.read_text()) if semantic_path.exists() else {}
    return {
        "calls": canonical(calls, VOLATILE_CALL),
        "predictions": canonical(latest(predictions), VOLATILE_PREDICTION),
        "episodic": canonical(rundir.read_jsonl(run / rundir.MEMORY / "episodic.jsonl"), VOLATILE_MEMORY),
        "semantic": {pool: strip(v, VOLATILE_MEMORY) for pool, v in semantic.items()},
        "faiss": {p.name: p.read_bytes() for p in sorted((run / rundir.MEMORY).glob("*.faiss"))},
        "manifest": strip(manifest, VOLATILE_MANIFEST),
    }


def duplicates(records: list[dict], key) -> dict:
    return {k: n for k, n in Counter(key(r) for r in records).items() if n > 1}
