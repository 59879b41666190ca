"""No secret anywhere, and caches that cannot lie.

The canary key holds a quote and a backslash (it survives JSON encoding only escaped) and
reaches the run through every path a provider can echo it: critiques, advice, answers'
free text, and failed calls whose long error message ends in it (past the 1,000-character
cut). Nothing under the test's folder may hold the key, its JSON-escaped form, or a prefix.
"""

from __future__ import annotations

import errno
import json
import sqlite3

import pytest

from critique.base import rundir
from critique.cli import main

SECRET = 'sk-canary-A1b"c\\d-4242424242'


def files_under(root):
    return [p for p in root.rglob("*") if p.is_file()]


def leaks(root) -> list[str]:
    forms = {SECRET.encode(), json.dumps(SECRET)[1:-1].encode(), SECRET[:12].encode()}
    return [f"{p}: {form!r}" for p in files_under(root) for form in forms if form in p.read_bytes()]


def run(home, *extra, out="run"):
    return main(["run", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", "4", "--k", "2", "--retries", "0",
                 "--out", str(home / out), "--quiet", *extra])


@pytest.fixture
def canary(home, fake_llm, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("FAKE_LLM_ECHO", f" (key {SECRET})")
    return home


def test_the_key_reaches_no_file_by_any_path(canary, monkeypatch, capsys):
    home = canary
    monkeypatch.setenv("FAKE_LLM_FAIL", "summary")  # the summary's error is stored in semantic.json
    assert run(home, "--strategies", "zero_shot,EP_CRIT,SEM_CRIT") == 1  # SEM_CRIT had no memory
    semantic = json.loads((home / "run" / "memory" / "semantic.json").read_text())
    assert "[REDACTED]" in semantic["all"]["error"] and semantic["all"]["advice"] is None
    monkeypatch.setenv("FAKE_LLM_FAIL", "answer")  # answers fail: long errors in calls and predictions
    assert run(home, out="failing") == 1  # predictions ended in errors: the run says so
    errors = [c["error"] for c in rundir.read_jsonl(home / "failing" / rundir.CALLS) if c["error"]]
    assert errors and all("[REDACTED]" in e or len(e) == 1000 for e in errors)
    monkeypatch.delenv("FAKE_LLM_FAIL")
    assert run(home, out="echo") == 0
    episodic = rundir.read_jsonl(home / "echo" / "memory" / "episodic.jsonl")
    assert episodic and all("[REDACTED]" in e["critique"]["local_reason"] for e in episodic)
    assert main(["probe", "suggestibility", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", "4",
                 "--retries", "0", "--out", str(home / "probe"), "--quiet"]) == 0
    study = home / "study.toml"
    study.write_text('datasets = ["mcr-gen"]\nlimit = 3\nk = 2\nstrategies = ["zero_shot", "EP+SEM_CRIT"]\n'
                     'out = "study"\n\n[[models]]\nname = "fake/other"\n')
    assert main(["study", str(study)]) == 0
    assert main(["report", str(home), "-o", str(home / "report.html")]) in (0, 1)
    assert main(["tables", str(home), "-o", str(home / "tables.md")]) in (0, 1)
    assert (home / "report.html").exists() and (home / "cache" / "responses").exists()
    assert not leaks(home), leaks(home)
    assert SECRET not in capsys.readouterr().out


def test_redaction_happens_before_encoding_and_before_cutting(monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", SECRET)
    line = rundir.dumps({"error": ("x" * 990 + SECRET)[:1000], SECRET: [SECRET, {"k": SECRET}]})
    assert SECRET[:12] not in line or SECRET[:12] not in json.loads(line)["error"]
    assert json.dumps(SECRET)[1:-1] not in line and SECRET not in line
    assert json.loads(line) == {"error": ("x" * 990 + SECRET)[:1000], "[REDACTED]": ["[REDACTED]",
                                                                                     {"k": "[REDACTED]"}]}


# ---- caches -------------------------------------------------------------------------------
def test_the_endpoint_is_part_of_the_request_and_a_shared_name_shares_it():
    from critique.llm.client import LLM, LLMConfig

    def key(**options):
        llm = LLM(LLMConfig(model="hosted_vllm/m", use_cache=False, **options))
        return llm.request_hash(llm.request([{"role": "user", "content": "hi"}], {"type": "object"}, "reply"))

    a, b = key(api_base="http://gpu1:8000/v1"), key(api_base="http://gpu2:8000/v1")
    assert a != b != key()
    assert key(api_base="http://gpu1:8000/v1", endpoint_id="qwen-8b") == \
        key(api_base="http://gpu2:8000/v1", endpoint_id="qwen-8b") != a


def test_a_response_cached_from_one_endpoint_is_not_the_answer_of_another(home, monkeypatch, capsys):
    from faults.server import FaultServer

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-endpoints-0000")
    with FaultServer() as first, FaultServer() as second:
        argv = ["run", "--dataset", "mcr-gen", "--model", "openai/served", "--limit", "2", "--k", "1", "--quiet",
                "--strategies", "zero_shot"]
        assert main([*argv, "--api-base", first.url, "--out", str(home / "a")]) == 0
        assert main([*argv, "--api-base", second.url, "--out", str(home / "b")]) == 0
        assert len(second.log) == len(first.log) > 0  # asked, not answered from the first one's cache
        shared = ["--endpoint-id", "the-same-model"]
        assert main([*argv, "--api-base", first.url, "--out", str(home / "c"), *shared]) == 0
        before = len(second.log)
        assert main([*argv, "--api-base", second.url, "--out", str(home / "d"), *shared]) == 0
        assert len(second.log) == before  # the same name on purpose: the cache answers
    manifest = json.loads((home / "d" / "manifest.json").read_text())
    assert manifest["config"]["endpoint_id"] == "the-same-model"


def corrupt(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE t (x)")
        db.executemany("INSERT INTO t VALUES (?)", [("row %d" % i * 50,) for i in range(2000)])
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])  # truncated, as by a crash or a full disk


def test_a_corrupt_response_cache_is_set_aside_and_rebuilt(home, fake_llm, capsys):
    corrupt(home / "cache" / "responses" / "cache.db")
    assert run(home) == 0
    err = capsys.readouterr().err
    assert "the response cache" in err and "is unreadable" in err and "moved to" in err
    assert len([line for line in err.splitlines() if "unreadable" in line]) == 1
    assert list((home / "cache").glob("responses.corrupt-*"))
    calls = len(fake_llm.CALLS)
    assert run(home, out="again") == 0 and len(fake_llm.CALLS) == calls  # the rebuilt cache answers


def test_a_corrupt_embedding_cache_is_set_aside_and_rebuilt(home, fake_llm, capsys):
    corrupt(home / "cache" / "embeddings.sqlite")
    assert run(home) == 0
    err = capsys.readouterr().err
    assert "the embedding cache" in err and "moved to" in err
    assert list((home / "cache").glob("embeddings.sqlite.corrupt-*"))


def test_no_cache_means_no_cache_at_all(home, fake_llm):
    assert run(home, "--no-cache") == 0
    cache = home / "cache"
    assert not (cache / "responses").exists() and not (cache / "embeddings.sqlite").exists()


# ---- a full disk --------------------------------------------------------------------------
def test_a_full_disk_stops_the_run_with_whole_records_and_a_rerun_completes(home, fake_llm, monkeypatch, capsys):
    assert run(home, "--no-cache", out="reference") == 0
    real, count = rundir._write, {"n": 0}

    def full_disk(fd, data):
        count["n"] += 1
        if count["n"] == 20:  # the 20th record: half of it is written (a short count), then the disk is full
            return real(fd, data[: len(data) // 2])
        if count["n"] > 20:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data)

    monkeypatch.setattr(rundir, "_write", full_disk)
    assert run(home, "--no-cache") == 1
    err = [line for line in capsys.readouterr().err.splitlines()
           if line.startswith("critique:") and not line.startswith("critique: cost:")]  # the cost comes first
    assert len(err) == 1 and "no space left on the device" in err[0] and "run the same command again" in err[0]
    for name in (rundir.CALLS, rundir.PREDICTIONS):
        data = (home / "run" / name).read_bytes()
        assert data.endswith(b"\n") and all(json.loads(line) for line in data.splitlines())  # no half record
    monkeypatch.setattr(rundir, "_write", real)
    assert run(home, "--no-cache") == 0
    mine, theirs = (rundir.read_run(home / name) for name in ("run", "reference"))
    key = lambda r: (r["stage"], r["strategy"], r["user"], r["item_id"])  # noqa: E731
    assert sorted(map(key, rundir.latest(mine["predictions"]))) == \
        sorted(map(key, rundir.latest(theirs["predictions"])))
    assert {c["request_hash"] for c in mine["calls"]} == {c["request_hash"] for c in theirs["calls"]}
    assert mine["manifest"]["status"] == "complete"
