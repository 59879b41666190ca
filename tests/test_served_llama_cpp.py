"""A model served by llama-cpp-python's own server (`python -m llama_cpp.server`), on loopback, serving the
embedded model's GGUF: `--response-format auto` learns from the server's first refusal that it takes
`json_object` with a schema, and the served model answers as the in-process one does on the same items (the same
weights, grammar, length bounds and greedy decoding)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

pytest.importorskip("sse_starlette")  # llama-cpp-python's server extra
pytest.importorskip("starlette_context")

from critique.base import rundir  # noqa: E402
from critique.cli import main  # noqa: E402
from critique.llm import local  # noqa: E402

ARGS = ["--dataset", "mcr-gen", "--limit", "2", "--strategies", "zero_shot,EP_CRIT", "--max-tokens", "256",
        "--quiet"]
START_S = 300  # how long the server may take to load (a cap against a hang, not a timing)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def answering(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/models", timeout=5):
            return True
    except OSError:
        return False


def serving(*options: str):
    """llama-cpp-python's own server of the shipped GGUF on loopback with ``options``: yields its URL, then stops
    it (a context manager)."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(local.gguf_path("smollm2")),
                             "--host", "127.0.0.1", "--port", str(port), *options, "--verbose", "false"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + START_S
    while not answering(url):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"llama_cpp.server did not start: {proc.stderr.read()[-2000:]}")
        time.sleep(0.2)
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=60)


@pytest.fixture(scope="module")
def server():
    """The shipped GGUF as the in-process model runs it (flash attention, its threads, its context)."""
    threads = str(local.threads())
    yield from serving("--n_ctx", str(local.N_CTX), "--flash_attn", "true", "--n_threads", threads,
                       "--n_threads_batch", threads)


@pytest.fixture
def served_env(home, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback-0000")


def responses(out) -> dict:
    return {(c["stage"], c["strategy"], c["item_id"]): c["response"] for c in rundir.read_jsonl(out / rundir.CALLS)}


def test_auto_learns_json_object_and_the_served_model_answers_as_the_embedded_one(home, served_env, server,
                                                                                  monkeypatch):
    monkeypatch.setattr(local, "WEIGHTS", "gguf")  # the shipped file, as the server serves it
    assert main(["run", *ARGS, "--model", "local/smollm2", "--out", str(home / "inproc")]) == 0
    assert main(["run", *ARGS, "--model", "openai/smollm2", "--api-base", server, "--out",
                 str(home / "served")]) == 0
    manifest = json.loads((home / "served" / rundir.MANIFEST).read_text())
    assert manifest["response_format"]["asked"] == "auto" and manifest["response_format"]["used"] == "json_object"
    assert "json_object" in manifest["response_format"]["refused"]["json_schema"]  # the server's own words
    inproc, served = responses(home / "inproc"), responses(home / "served")
    assert len(served) == 8 and served == inproc
    assert not any(c["error"] for c in rundir.read_jsonl(home / "served" / rundir.CALLS))


def test_json_schema_asked_outright_is_refused_and_none_asks_in_the_prompt(home, served_env, server, capsys):
    out = home / "schema"
    assert main(["run", *ARGS, "--model", "openai/smollm2", "--api-base", server, "--response-format",
                 "json_schema", "--retries", "0", "--out", str(out)]) == 1
    assert all(c["error"] for c in rundir.read_jsonl(out / rundir.CALLS))
    out = home / "none"
    assert main(["run", *ARGS, "--model", "openai/smollm2", "--api-base", server, "--response-format", "none",
                 "--out", str(out)]) == 0
    manifest = json.loads((out / rundir.MANIFEST).read_text())
    assert manifest["response_format"] == {"asked": "none", "used": "none", "refused": {}}
    sent = rundir.read_jsonl(out / rundir.CALLS)
    assert sent and not any(c["error"] for c in sent)  # answered in free text, parsed as any reply
    tests = [p for p in rundir.read_jsonl(out / rundir.PREDICTIONS) if p["stage"] == "test"]
    assert len(tests) == 4 and all(p["error"] is None for p in tests)
