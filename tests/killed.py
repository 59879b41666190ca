"""Kill a `critique` command at an event it reports: the fake provider answers the first N calls and holds every
later one (FAKE_LLM_HOLD_AFTER), and the process is killed with SIGKILL once its calls.jsonl holds N records, so
how far it got never depends on the machine's speed."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from critique.base import rundir


def kill_after_calls(args: list[str], out: Path, answered: int, **env: str) -> list[str]:
    """Run `critique ARGS` (with the fake provider) until `out`/calls.jsonl holds `answered` records, then kill it;
    returns the command line (its `critique` arguments from index 2), to resume it."""
    command = [sys.executable, str(Path(__file__).parent / "fake_llm.py"), *args]
    proc = subprocess.Popen(command, env=dict(os.environ, FAKE_LLM_HOLD_AFTER=str(answered), **env),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    logged = []
    while len(logged) < answered and proc.poll() is None:  # waits for the records, polling the file
        logged = rundir.read_jsonl(out / "calls.jsonl") if (out / "calls.jsonl").exists() else []
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    return command
