"""A small OpenAI-compatible chat-completions server that can inject faults (tests and benchmark).

Replies are deterministic and follow the JSON schema of the request's ``response_format``
(like ``tests/fake_llm.py``): an option chosen by a hash of the prompt, a critique that
restates the prompt's "Correct answer" line, or advice. Usage numbers are whitespace tokens
of the prompt and of the reply text.

Faults are drawn per (request key, attempt): the request key is a hash of model, messages
and response_format; the attempt is how many times this server has already seen that key.
With ``seed`` and ``fault_rate`` fixed, the sequence of replies to a run is reproducible.
``doom_rate`` is an outage: that share of request keys gets a transport fault on every
attempt, so their calls fail for good however often they are retried.

    FAULTS = 429 (with Retry-After), 500, 503, hang (nothing, or half a body, until ``hang_s``;
    the client times out first), malformed (HTTP 200, a body that is not a chat completion), empty (content ""),
    truncated (content cut in the middle of the JSON), length (content cut, finish_reason "length").
    Also on request, not by default: 400 (a bad request, which no retry can cure) and 401 (a
    refused key, echoed in the error message as some providers do).

In-process: ``with FaultServer(latency=0.01, fault_rate=0.2) as server: server.url``.
As a process: ``python tests/faults/server.py --latency 0.2`` prints the URL on its first line.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import threading
import time
from collections import Counter

from aiohttp import web

FAULTS = ("429", "500", "503", "hang", "malformed", "empty", "truncated", "length")
TRANSIENT = ("429", "500", "503", "hang", "malformed")  # transport faults: a retry can cure them
DOOM = ("429", "500", "503", "malformed")  # the faults of an outage (no hang: it would only be slower)
MALFORMED = ('{"id": "x", "choices": [{"mess', '{"id": "x", "object": "chat.completion"}', "<html>Bad gateway</html>")


def kind_of(schema: dict | None) -> str:
    props = (schema or {}).get("properties", {})
    return "answer" if "answer" in props else "critique" if "correct_answer" in props else "summary"


def reply_text(messages: list[dict], schema: dict | None) -> str:
    prompt = "\n".join(str(m.get("content") or "") for m in messages)
    props = (schema or {}).get("properties", {})
    if "answer" in props:
        options = props["answer"].get("enum") or ["1"]
        pick = int(hashlib.sha256(prompt.encode()).hexdigest(), 16) % len(options)
        return json.dumps({"answer": options[pick]})
    if "correct_answer" in props:
        gold = prompt.split("Correct answer: ", 1)[-1].split("\n", 1)[0].strip()
        return json.dumps({"correct_answer": f"The correct answer is {gold}.",
                           "local_reason": f"Here {gold} follows from the conditions.",
                           "global_reason": "Apply the high-priority condition first."})
    return json.dumps({"advice": "- Apply conditions in order of priority.\n- Check every candidate."})


def messages_digest(messages: list[dict]) -> str:
    """How a test matches a logged call (its ``messages``) to the requests the server saw."""
    return hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()


def request_key(body: dict) -> str:
    keep = {k: body.get(k) for k in ("model", "messages", "response_format")}
    return hashlib.sha256(json.dumps(keep, sort_keys=True).encode()).hexdigest()


def _unit(text: str) -> tuple[float, int]:
    h = hashlib.sha256(text.encode()).digest()
    return int.from_bytes(h[:8], "big") / 2**64, int.from_bytes(h[8:16], "big")


def draw(seed: int, key: str, attempt: int, rate: float, faults: tuple[str, ...], doom_rate: float = 0.0) -> str | None:
    """The fault for this attempt at this request, or None; a pure function of its arguments."""
    u, pick = _unit(f"{seed}:{key}:{attempt}")
    if doom_rate > 0 and _unit(f"{seed}:{key}:doom")[0] < doom_rate:
        return DOOM[pick % len(DOOM)]
    if rate <= 0 or not faults or u >= rate:
        return None
    return faults[pick % len(faults)]


class FaultServer:
    """The server on 127.0.0.1 (a free port), run by a background thread with its own event loop.

    Settings are attributes and may be changed between runs. ``seen`` counts requests per key;
    ``outcomes`` counts what was sent (``ok`` or a fault name); ``log`` holds one
    (messages digest, attempt, outcome) per request; ``reset()`` clears them.
    ``slow`` adds seconds of latency by kind of request (``answer``, ``critique``, ``summary``).

    Gates, for tests that act at a moment of a run whatever the machine's speed: ``gate(n)``
    answers the next ``n`` requests and holds every later one; ``gate(hold={"summary"})``
    holds the requests of those kinds. A held request waits, unanswered, until ``open()``
    (or until its client goes away); ``held`` counts the requests waiting now, by kind.
    """

    def __init__(self, latency: float = 0.0, fault_rate: float = 0.0, faults: tuple[str, ...] = FAULTS,
                 seed: int = 0, hang_s: float = 30.0, retry_after: str = "0", port: int = 0,
                 doom_rate: float = 0.0, slow: dict[str, float] | None = None):
        self.latency, self.fault_rate, self.faults, self.seed = latency, fault_rate, tuple(faults), seed
        self.hang_s, self.retry_after, self.port = hang_s, retry_after, port
        self.doom_rate, self.slow = doom_rate, dict(slow or {})
        self.seen: Counter = Counter()
        self.outcomes: Counter = Counter()
        self.log: list[tuple[str, int, str]] = []
        self.auth: set[str] = set()  # Authorization headers received
        self.hangs_cut = 0  # hangs that ended because the client went away, not after hang_s
        self.in_flight = 0  # requests being answered now (held ones not counted)
        self.peak = 0  # the most requests answered at once
        self.models_in_flight: Counter = Counter()
        self.peak_models = 0  # the most distinct models answered at once
        self.held: Counter = Counter()  # kind of request -> requests held by the gate now
        self._budget: int | None = None  # requests still answered before the gate holds them
        self._hold: frozenset[str] = frozenset()
        self._opened = 0  # how many times the gate was opened: a held request waits for a change
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def gate(self, answer: int | None = None, hold: set[str] | frozenset[str] = frozenset()) -> None:
        """Answer ``answer`` more requests, then hold the rest (None: no count); hold ``hold``'s kinds."""
        with self._lock:
            self._budget, self._hold = answer, frozenset(hold)

    def open(self) -> None:
        """Let every held request go on, and hold none from now on."""
        with self._lock:
            self._budget, self._hold = None, frozenset()
            self._opened += 1

    def holding(self, kind: str | None = None) -> int:
        """Requests held now (of one kind, or all)."""
        with self._lock:
            return self.held[kind] if kind else sum(self.held.values())

    def _admit(self, kind: str) -> int | None:
        """None if the request goes on now; else the gate's generation it waits to change."""
        with self._lock:
            if kind in self._hold or self._budget == 0:
                self.held[kind] += 1
                return self._opened
            if self._budget is not None:
                self._budget -= 1
            return None

    async def _wait_open(self, kind: str, generation: int) -> None:
        try:
            while True:
                with self._lock:
                    if self._opened != generation:
                        self.held[kind] -= 1
                        return
                await asyncio.sleep(0.005)
        except asyncio.CancelledError:  # the client went away (a killed run)
            with self._lock:
                self.held[kind] -= 1
            raise

    def reset(self) -> None:
        with self._lock:
            self.seen.clear()
            self.outcomes.clear()
            self.log.clear()

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self.handle)
        app.router.add_post("/chat/completions", self.handle)
        app.router.add_get("/stats", self.stats)
        return app

    async def stats(self, request: web.Request) -> web.Response:
        with self._lock:
            return web.json_response({"requests": sum(self.seen.values()), "outcomes": dict(self.outcomes)})

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        key = request_key(body)
        messages = body.get("messages") or []
        schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema")
        generation = self._admit(kind_of(schema))
        if generation is not None:
            await self._wait_open(kind_of(schema), generation)
        model = str(body.get("model"))
        with self._lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            self.models_in_flight[model] += 1
            self.peak_models = max(self.peak_models, sum(1 for n in self.models_in_flight.values() if n))
        try:
            return await self._answer(request, body, key, messages, schema)
        finally:
            with self._lock:
                self.in_flight -= 1
                self.models_in_flight[model] -= 1

    async def _answer(self, request, body, key, messages, schema) -> web.StreamResponse:
        with self._lock:
            attempt = self.seen[key]
            self.seen[key] += 1
            self.auth.add(request.headers.get("Authorization", ""))
            fault = draw(self.seed, key, attempt, self.fault_rate, self.faults, self.doom_rate)
            self.outcomes[fault or "ok"] += 1
            self.log.append((messages_digest(messages), attempt, fault or "ok"))
        delay = self.latency + self.slow.get(kind_of(schema), 0.0)
        if delay:
            await asyncio.sleep(delay)
        if fault == "401":
            auth = request.headers.get("Authorization", "")
            return web.json_response({"error": {"message": f"Incorrect API key provided: {auth}",
                                                "type": "invalid_request_error", "code": "invalid_api_key"}},
                                     status=401)
        if fault in ("400", "429", "500", "503"):
            headers = {"Retry-After": self.retry_after} if fault == "429" else {}
            return web.json_response({"error": {"message": f"injected {fault}", "type": "server_error",
                                                "code": fault}}, status=int(fault), headers=headers)
        if fault == "hang":  # before the headers, or (by the same hash) in the middle of the body
            try:
                if int(hashlib.sha256(f"{key}:{attempt}".encode()).hexdigest(), 16) % 2:
                    stalled = web.StreamResponse(status=200, headers={"Content-Type": "application/json",
                                                                      "Content-Length": "400"})
                    await stalled.prepare(request)
                    await stalled.write(b'{"id": "x", "object": "chat.completion", "choices": [')
                    await asyncio.sleep(self.hang_s)
                    return stalled
                await asyncio.sleep(self.hang_s)
            except asyncio.CancelledError:  # the client gave up first
                with self._lock:
                    self.hangs_cut += 1
                raise
        if fault == "malformed":  # one of three bodies, by the same hash
            body = MALFORMED[int(hashlib.sha256(f"{key}:{attempt}".encode()).hexdigest(), 16) % len(MALFORMED)]
            return web.Response(status=200, text=body, content_type="application/json")
        text, finish = reply_text(messages, schema), "stop"
        if fault == "empty":
            text = ""
        elif fault in ("truncated", "length"):
            text, finish = text[: len(text) // 2], "stop" if fault == "truncated" else "length"
        prompt_tokens = sum(len(str(m.get("content") or "").split()) for m in messages)
        completion_tokens = len(text.split())
        return web.json_response({
            "id": f"chatcmpl-{key[:16]}-{attempt}", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "model"),
            "choices": [{"index": 0, "finish_reason": finish, "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        })

    # ---- lifecycle ----------------------------------------------------------------
    async def _start(self) -> None:
        self._runner = web.AppRunner(self.app(), access_log=None, handler_cancellation=True)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port, backlog=1024)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]

    def start(self) -> "FaultServer":
        started = threading.Event()

        def serve() -> None:
            self._loop = asyncio.new_event_loop()
            self._loop.run_until_complete(self._start())
            started.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=serve, name="fault-server", daemon=True)
        self._thread.start()
        started.wait(30)
        return self

    def stop(self) -> None:
        if self._loop is None:
            return
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(30)
        self._loop = None

    def __enter__(self) -> "FaultServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per call")
    parser.add_argument("--fault-rate", type=float, default=0.0)
    parser.add_argument("--faults", default=",".join(FAULTS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--doom-rate", type=float, default=0.0)
    args = parser.parse_args()
    server = FaultServer(latency=args.latency, fault_rate=args.fault_rate, faults=tuple(args.faults.split(",")),
                         seed=args.seed, port=args.port, doom_rate=args.doom_rate)

    async def serve() -> None:
        await server._start()
        print(server.url, flush=True)
        await asyncio.Event().wait()

    asyncio.run(serve())


if __name__ == "__main__":
    main()
