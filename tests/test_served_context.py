"""A served model's context window (critique.llm.context): asked of its server (llama.cpp's /props, vLLM's
/v1/models), said in one warning line when nobody knows it, named as the cure when a prompt did not fit, and
taken on resume by a run directory when it only narrows what the run may send. The end to end case runs against
llama-cpp-python's own server on loopback, started with a small context."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from critique.base import rundir
from critique.cli import main
from critique.engine.run_directory import narrows
from critique.llm import context

START_S = 300  # how long the server may take to load (a cap against a hang, not a timing)
SMALL_CTX = 768  # a window the summary of five critiques does not fit
ARGS = ["--dataset", "mcr-gen", "--model", "openai/smollm2", "--limit", "5", "--strategies", "SEM_CRIT",
        "--prompts", "compact", "--max-tokens", "256", "--quiet"]


class Pages(BaseHTTPRequestHandler):
    """A server that answers GETs from ``pages`` (path -> JSON) and 404 otherwise."""
    pages: dict = {}

    def do_GET(self):  # noqa: N802 (http.server's name)
        body = self.pages.get(self.path.split("?")[0])
        self.send_response(200 if body is not None else 404)
        self.end_headers()
        self.wfile.write(json.dumps(body).encode() if body is not None else b"{}")

    def log_message(self, *args):
        pass


@pytest.fixture
def pages():
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("Served", (Pages,), {"pages": {}}))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.RequestHandlerClass.pages, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_llama_cpps_props_give_the_window(pages):
    served, url = pages
    served["/props"] = {"default_generation_settings": {"n_ctx": 4096}, "total_slots": 1}  # llama.cpp's server
    assert context.served_window(f"{url}/v1") == 4096
    served["/props"] = {"n_ctx": 8192}  # newer llama.cpp builds say it at the top
    assert context.served_window(f"{url}/v1?api-key=x") == 8192


def test_vllms_models_give_the_window(pages):
    served, url = pages
    served["/v1/models"] = {"object": "list", "data": [{"id": "Qwen/Qwen3-8B", "max_model_len": 32768}]}
    assert context.served_window(f"{url}/v1") == 32768
    assert context.window("hosted_vllm/unknown-model", None, None, f"{url}/v1") == 32768


def test_a_server_that_says_nothing_leaves_the_window_unknown_and_one_line_says_so(pages, capsys, monkeypatch):
    served, url = pages
    served["/v1/models"] = {"object": "list", "data": [{"id": "m", "object": "model", "owned_by": "me"}]}
    monkeypatch.setattr(context, "_WARNED", set())
    assert context.window("openai/no-such-model", None, None, f"{url}/v1") is None
    assert context.window("openai/no-such-model", None, None, f"{url}/v1") is None
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("critique: warning: the context window of openai/no-such-model is unknown")
    assert "--context-tokens N" in line


def test_a_context_only_narrows():
    assert narrows(None, 2048) and narrows(4096, 2048)
    assert not narrows(2048, 4096) and not narrows(2048, None) and not narrows(None, None) and not narrows(2048, 2048)


@pytest.fixture(scope="module")
def small_server():
    """The shipped GGUF served by llama-cpp-python's own server with a small context (which it does not say)."""
    pytest.importorskip("sse_starlette")
    pytest.importorskip("starlette_context")
    from test_served_llama_cpp import serving

    yield from serving("--n_ctx", str(SMALL_CTX))


def test_a_summary_that_did_not_fit_names_the_cure_and_the_run_takes_the_servers_context(home, small_server,
                                                                                         monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback-0000")
    monkeypatch.setattr(context, "_WARNED", set())
    out = home / "served"
    assert main(["run", *ARGS, "--api-base", small_server, "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "critique: warning: the context window of openai/smollm2 is unknown" in err
    assert "a rerun alone cannot fit: run the same command with --context-tokens N" in err, err
    semantic = json.loads((out / "memory" / "semantic.json").read_text())
    assert "did not fit the model's context" in json.dumps(semantic)
    made = len(rundir.read_jsonl(out / rundir.CALLS))
    assert main(["run", *ARGS, "--api-base", small_server, "--out", str(out), "--context-tokens",
                 str(SMALL_CTX)]) == 0  # the window narrows from unknown to the server's: the same folder goes on
    calls = rundir.read_jsonl(out / rundir.CALLS)
    assert len(calls) > made and all(c["stage"] in ("summary", "test") for c in calls[made:])
    assert json.loads((out / rundir.MANIFEST).read_text())["config"]["context_tokens"] == SMALL_CTX
    tests = [p for p in rundir.read_jsonl(out / rundir.PREDICTIONS) if p["stage"] == "test"]
    assert tests and all(p["error"] is None for p in rundir.latest(tests))
    assert main(["run", *ARGS, "--api-base", small_server, "--out", str(out), "--context-tokens",
                 str(2 * SMALL_CTX)]) == 2  # a wider window than the run was fitted to is another run
    assert f"holds a run with context_tokens={SMALL_CTX}" in capsys.readouterr().err
