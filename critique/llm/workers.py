"""One run's calls spread over several worker processes (``--call-processes N``).

At hundreds of calls in flight one client process runs out of CPU, most of it inside
``litellm.acompletion`` (see bench/THROUGHPUT.md). With N > 1 the LLM client hands each
attempt's parameters to one of N long-lived worker processes, each running its own asyncio
loop with many ``litellm.acompletion`` calls in flight. A worker sends back the fields of the
reply, or the error already classified (worth a retry or not, the seconds Retry-After asked
for, its text: a litellm exception may not pickle). Everything else stays in the run's
process: the response cache, the slots, the retries, redaction and every write, so the run
directory still has one writer and its guarantees are unchanged.

A worker reads its requests from stdin and writes its replies to the stdout it was started
with (anything printed goes to stderr); it ignores SIGINT and ends as soon as stdin reaches
end of file, which is when the run closes the client or when the run's process dies, however
it dies (kill -9 included). Frames on both pipes: a 4-byte length, then a JSON document (never a pickle: what
comes through a pipe is data, never code).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import json
import signal
import struct
import subprocess
import sys
import threading
from pathlib import Path

from critique.llm.attempt import CallFailed, describe, fields_of, retry_after_of, retryable

HEADER = struct.Struct("!I")


def send(stream, message) -> None:
    data = json.dumps(message).encode("utf-8")
    stream.write(HEADER.pack(len(data)) + data)
    stream.flush()


def receive(stream):
    """The next message, or None at end of file."""
    header = stream.read(HEADER.size)
    if len(header) < HEADER.size:
        return None
    size = HEADER.unpack(header)[0]
    data = stream.read(size)
    return json.loads(data) if len(data) == size else None


class Worker:
    def __init__(self, settings: dict):
        root = str(Path(__file__).resolve().parents[2])  # this critique, however sys.path found it
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
        self.proc = subprocess.Popen([sys.executable, "-m", "critique.llm.workers"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env)
        self.pending: dict[int, asyncio.Future] = {}
        self.ended = False
        self.lock = threading.Lock()
        send(self.proc.stdin, settings)
        self.reader = threading.Thread(target=self._read, name=f"call-process-{self.proc.pid}", daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while True:
            try:
                message = receive(self.proc.stdout)
            except Exception:  # noqa: BLE001 - a garbled pipe ends the worker like end of file
                message = None
            if message is None:
                break
            key, ok, payload = message
            future = self.pending.pop(key, None)
            if future is not None:
                _settle(future, (ok, payload))
        self.ended = True
        for key in list(self.pending):
            future = self.pending.pop(key, None)
            if future is not None:
                _settle(future, (False, (True, None, "ConnectionError: the call process ended")))

    def submit(self, key: int, params: dict, future: asyncio.Future) -> None:
        self.pending[key] = future
        try:
            with self.lock:
                send(self.proc.stdin, ("call", key, params))
        except (OSError, ValueError):
            self.pending.pop(key, None)
            self.ended = True
            raise ConnectionError("the call process ended") from None

    def cancel(self, key: int) -> None:
        if self.pending.pop(key, None) is not None and not self.ended:
            try:
                with self.lock:
                    send(self.proc.stdin, ("cancel", key, None))
            except (OSError, ValueError):
                pass

    def close(self) -> None:
        try:
            self.proc.stdin.close()  # end of file: the worker exits
        except OSError:
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.reader.join(10)
        self.proc.stdout.close()


def _settle(future: asyncio.Future, value) -> None:
    def settle():
        if not future.done():
            future.set_result(value)
    try:
        future.get_loop().call_soon_threadsafe(settle)
    except RuntimeError:  # the loop that waited is closed: nobody waits any more
        pass


class CallProcesses:
    """N worker processes, started on the first attempt, each attempt sent to the least busy."""

    def __init__(self, n: int, settings: dict):
        self.n, self.settings = n, settings
        self.workers: list[Worker] = []
        self.keys = itertools.count()
        self.lock = threading.Lock()

    def _pick(self) -> Worker:
        with self.lock:
            for worker in [w for w in self.workers if w.ended]:  # one that died is replaced
                self.workers.remove(worker)
                worker.close()
            while len(self.workers) < self.n:
                self.workers.append(Worker(self.settings))
            return min(self.workers, key=lambda w: len(w.pending))

    def pids(self) -> list[int]:
        return [w.proc.pid for w in self.workers]

    async def attempt(self, params: dict) -> dict:
        """The fields of the reply; CallFailed (or ConnectionError) for a failed attempt."""
        worker, key = self._pick(), next(self.keys)
        future = asyncio.get_running_loop().create_future()
        worker.submit(key, params, future)
        try:
            ok, payload = await future
        except asyncio.CancelledError:
            worker.cancel(key)
            raise
        if ok:
            return payload
        raise CallFailed(*payload)

    def close(self) -> None:
        with self.lock:
            workers, self.workers = self.workers, []
        for worker in workers:
            worker.close()


# ---- the worker process --------------------------------------------------------------------
def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the run's to handle; end of file ends this
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever litellm prints goes to stderr, never into the replies
    requests = sys.stdin.buffer
    settings = receive(requests)
    if settings is None:
        return
    loop = asyncio.new_event_loop()
    tasks: dict[int, asyncio.Task] = {}

    def reply(message) -> None:
        try:
            send(replies, message)
        except (OSError, ValueError):  # the run is gone
            os._exit(0)

    async def one(key: int, params: dict) -> None:
        import litellm

        try:
            call = litellm.acompletion(model=settings["model"], api_base=settings["api_base"],
                                       timeout=settings["timeout"], max_retries=0, **params)
            message = (key, True, fields_of(await asyncio.wait_for(call, settings["timeout"] + 30)))
        except asyncio.CancelledError:
            return
        except Exception as exc:  # noqa: BLE001 - every failure goes back, classified here
            message = (key, False, (retryable(exc), retry_after_of(exc), describe(exc)))
        finally:
            tasks.pop(key, None)
        reply(message)

    def dispatch(message) -> None:
        op, key, params = message
        if op == "call":
            tasks[key] = loop.create_task(one(key, params))
        elif op == "cancel" and key in tasks:
            tasks[key].cancel()

    def read() -> None:
        while True:
            try:
                message = receive(requests)
            except Exception:  # noqa: BLE001
                message = None
            if message is None:  # the run closed the client, or its process died
                os._exit(0)
            loop.call_soon_threadsafe(dispatch, message)  # run once the loop runs, after the import below

    # reading starts before the import of litellm (seconds): the run never waits on a full pipe,
    # and a run that dies meanwhile ends this process at once
    threading.Thread(target=read, name="requests", daemon=True).start()
    import litellm

    litellm.drop_params = True
    litellm.suppress_debug_info = True
    loop.run_forever()


if __name__ == "__main__":
    main()
