"""A warm parent for `critique` processes: imports litellm and critique once, then forks one
child per command read from stdin. Each child is a real process running ``critique.cli.main``
(or a ``module:function``), with its own stdout/stderr files, that a test can ``kill -9``;
forking makes a start cost milliseconds instead of the seconds an import of litellm takes.

Protocol, one JSON object per line each way:
    {"op": "start", "argv": [...] | "call": "module:function", "args": [...],
     "stdout": path, "stderr": path}                 -> {"pid": N}
    {"op": "poll", "pid": N}                         -> {"rc": int | null}   (null: still running)
"""

from __future__ import annotations

import faulthandler
import importlib
import json
import os
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import litellm  # noqa: E402,F401  (the point: imported once, before any fork)
import critique.cli  # noqa: E402
import critique.engine.pipeline  # noqa: E402,F401
import critique.cli.run  # noqa: E402,F401
import critique.llm.client  # noqa: E402,F401

# What litellm imports on its first call (0.4 s a process); a name this litellm lacks is skipped.
for _name in ("litellm.llms.openai_like.dynamic_config", "litellm.llms.litellm_proxy.chat.transformation",
              "litellm.litellm_core_utils.logging_callback_manager", "litellm.proxy._types",
              "litellm._service_logger", "litellm.integrations.prometheus_services", "diskcache", "filelock",
              "critique.engine.memory.episodic", "critique.engine.memory.semantic", "critique.engine.scores", "faiss"):
    try:
        importlib.import_module(_name)
    except Exception:  # noqa: BLE001 - only a warm-up
        pass


def child(command: dict) -> None:
    """Runs in the forked child; never returns."""
    rc = 70
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        for fd, key in ((1, "stdout"), (2, "stderr")):
            out = os.open(command[key], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(out, fd)
            os.close(out)
        if command.get("call"):
            module, _, name = command["call"].partition(":")
            rc = int(getattr(importlib.import_module(module), name)(*command.get("args", [])) or 0)
        else:
            rc = critique.cli.main(command["argv"])
    except SystemExit as exc:
        rc = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001 - a child must never return into the parent's loop
        import traceback

        traceback.print_exc()
        rc = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(rc)


def main() -> None:
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # a test that waits for this process can ask where it is
    reply, ended = sys.stdout, {}  # pid -> exit status of the children already reaped
    for line in sys.stdin:
        command = json.loads(line)
        if command["op"] == "start":
            pid = os.fork()
            if pid == 0:
                child(command)
            answer = {"pid": pid}
        else:  # poll
            pid = command["pid"]
            if pid not in ended:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    ended[pid] = os.waitstatus_to_exitcode(status)
            answer = {"rc": ended.get(pid)}
        reply.write(json.dumps(answer) + "\n")
        reply.flush()


if __name__ == "__main__":
    main()
