"""Each kind of fault, one at a time, through critique.llm (litellm, openai/<name> + api_base)."""

from __future__ import annotations

import asyncio
import email.utils
import time
from types import SimpleNamespace

import pytest

from critique.engine import agents, parsing
from critique.llm.client import LLM, LLMConfig, backoff, retry_after_of
from faults.server import MALFORMED, reply_text

SCHEMA = {"type": "object", "properties": {"answer": {"type": "string", "enum": ["1", "2", "3", "4"]}},
          "required": ["answer"], "additionalProperties": False}


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-llm-faults-0000")


def complete(server, text: str, **config):
    llm = LLM(LLMConfig(**{"model": "openai/fault-model", "api_base": server.url, "use_cache": False,
                           "num_retries": 2, "retry_after": 0.01, "timeout": 3.0, **config}))
    started = time.monotonic()
    result = asyncio.run(llm.complete([{"role": "user", "content": text}], SCHEMA, "answer"))
    return result, time.monotonic() - started


@pytest.mark.parametrize("fault", ["429", "500", "503", "hang", "malformed"])
def test_a_transport_fault_is_retried_then_reported_as_the_calls_error(server, fault):
    server.faults, server.fault_rate, server.hang_s = (fault,), 1.0, 600.0
    result, seconds = complete(server, f"always {fault}", timeout=1.0)
    assert result.error and result.text is None and result.retries == 2
    assert len(server.log) == 3
    expected = {"429": "RateLimit", "500": "InternalServer", "503": "ServiceUnavailable", "hang": "Timeout",
                "malformed": "InternalServer"}[fault]
    assert expected in result.error
    if fault == "hang":  # three attempts, each ended by the client's timeout, not by the server
        assert seconds >= 3.0
        while server.hangs_cut < 3:  # the server sees each connection go away (no hang lasts its 600 s)
            time.sleep(0.01)


@pytest.mark.parametrize("body", MALFORMED)
def test_every_malformed_body_is_a_retried_error_never_a_crash(server, body, monkeypatch):
    monkeypatch.setattr("faults.server.MALFORMED", (body,))
    server.faults, server.fault_rate = ("malformed",), 1.0
    result, _ = complete(server, "malformed " + body[:8], num_retries=1)
    assert result.error and result.retries == 1 and len(server.log) == 2


def test_a_refused_connection_is_retried_then_reported():
    import socket

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result, _ = complete(SimpleNamespace(url=f"http://127.0.0.1:{port}/v1"), "anyone there?")
    assert result.error and "Connection" in result.error and result.retries == 2


def test_a_bad_request_is_not_retried(server):
    server.faults, server.fault_rate = ("400",), 1.0
    result, _ = complete(server, "bad request")
    assert result.error and "BadRequest" in result.error and result.retries == 0 and len(server.log) == 1


def test_transient_faults_then_success_count_the_retries(server):
    server.faults, server.fault_rate, server.seed = ("500", "503", "429", "malformed"), 0.5, 3
    retried_then_answered = 0
    for i in range(12):
        server.reset()
        result, _ = complete(server, f"question {i}", num_retries=5)
        attempts = len(server.log)
        if server.log[-1][2] == "ok":
            assert result.error is None and result.retries == attempts - 1
            assert result.text == reply_text([{"role": "user", "content": f"question {i}"}], SCHEMA)
            retried_then_answered += result.retries > 0
        else:
            assert result.error and attempts == 6
    assert retried_then_answered  # the seed gives faults before a success: the case this test is about


def test_retry_after_is_honoured(server):
    server.faults, server.fault_rate, server.retry_after = ("429",), 1.0, "0.4"
    result, seconds = complete(server, "slow down", num_retries=2)
    assert result.retries == 2 and seconds >= 0.8


def test_an_empty_reply_is_no_answer_and_is_not_cached(server, tmp_path):
    cache = {"use_cache": True, "cache_dir": str(tmp_path)}
    server.faults, server.fault_rate = ("empty",), 1.0
    result, _ = complete(server, "reply empty", num_retries=1, **cache)
    assert result.text is None and result.retries == 1 and len(server.log) == 2  # retried, then an error
    assert result.error.startswith("EmptyReply: the reply has no content")
    server.fault_rate = 0.0
    again, _ = complete(server, "reply empty", **cache)
    assert again.error is None and again.text and not again.cached and len(server.log) == 3  # asked again


@pytest.mark.parametrize("fault, parse_failed, timeout", [("truncated", True, False), ("length", True, True)])
def test_a_bad_reply_is_the_models_answer_and_parses_by_the_policy(server, fault, parse_failed, timeout):
    server.faults, server.fault_rate = (fault,), 1.0
    result, _ = complete(server, f"reply {fault}")
    assert result.error is None and result.retries == 0 and len(server.log) == 1
    assert result.timeout == timeout and result.completion_tokens == len((result.text or "").split())
    item = SimpleNamespace(id="q1", user=None, answer="2")
    record = agents.answer_record(result, item, ["1", "2", "3", "4"], "zero_shot")
    assert record["parse_failed"] == parse_failed and not record["correct"] and record["answer"] != "2"


def test_usage_numbers_are_the_servers(server):
    result, _ = complete(server, "one two three four")
    assert result.error is None and result.prompt_tokens == 4
    assert result.completion_tokens == len(result.text.split()) == 2
    assert parsing.extract_answer(result.text, ["1", "2", "3", "4"]) is not None


def test_backoff_and_retry_after_parsing():
    assert backoff(0, 0.5, 30, None) >= 0.5 and backoff(0, 0.5, 30, None) <= 0.625
    assert 8 <= backoff(4, 0.5, 30, None) <= 10 and backoff(20, 0.5, 30, None) <= 37.5
    assert backoff(3, 0.5, 30, 2.5) == 2.5 and backoff(3, 0.5, 30, 10_000) <= 5
    headers = lambda value: SimpleNamespace(litellm_response_headers={"retry-after": value})  # noqa: E731
    assert retry_after_of(headers("3")) == 3.0 and retry_after_of(headers("0.25")) == 0.25
    later = email.utils.formatdate(time.time() + 20, usegmt=True)
    assert 15 <= retry_after_of(headers(later)) <= 21
    assert retry_after_of(headers("soon")) is None and retry_after_of(SimpleNamespace()) is None
