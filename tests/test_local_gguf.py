"""Integration: any GGUF file in process (``--model local/PATH.gguf``), here a copy of the weights
the packaged model runs with, under another name and path."""

import hashlib
import json
import shutil

import pytest

from critique.base import rundir
from critique.cli import main

pytest.importorskip("llama_cpp")


def _copy(source, home):
    folder = home / "my models"  # a space in the path, too
    folder.mkdir(exist_ok=True)
    path = folder / "tiny.gguf"
    shutil.copyfile(source, path)
    return path


@pytest.fixture
def gguf(home):
    """The packaged model's file, copied to a folder of the test under another name."""
    from critique.llm import local as local_llm

    return _copy(local_llm.gguf_path("smollm2"), home)


@pytest.fixture
def gguf_f16(home, monkeypatch):
    """The packaged model's F16 weights (twice as fast at reading prompts on the CPU), copied likewise."""
    from critique.llm import local as local_llm

    monkeypatch.setattr(local_llm, "WEIGHTS", "f16")
    return _copy(local_llm.weights_path("smollm2"), home)


def test_a_gguf_file_runs_the_pipeline_in_process(home, gguf_f16, monkeypatch, capsys):
    from critique.llm import local as local_llm

    monkeypatch.chdir(home)
    model = "local/./my models/tiny.gguf"  # relative to the working directory
    out = home / "run"
    argv = ["run", "--dataset", "mcr-gen", "--model", model, "--limit", "1", "--k", "1",
            "--strategies", "zero_shot,EP_CRIT", "--out", str(out), "--quiet", "--max-tokens", "200"]
    assert main(argv) == 0
    data = rundir.read_run(out)
    calls = data["calls"]
    assert {c["stage"] for c in calls} == {"train_predict", "critique", "test"}  # EP_CRIT needs no summary
    # real usage numbers, and a prompt count that never falls short of what the model read
    assert all(c["error"] is None and c["prompt_tokens"] > 50 and c["completion_tokens"] > 0 for c in calls)
    assert all(local_llm.count_tokens("./my models/tiny.gguf", c["messages"]) >= c["prompt_tokens"] for c in calls)
    tests = [p for p in data["predictions"] if p["stage"] == "test"]
    assert len(tests) == 2
    # grammar-constrained JSON: the answer is always an option, never a parse failure
    assert all(not p["parse_failed"] and p["answer"] in {"1", "2", "3", "4"} for p in tests if not p["timeout"])
    assert all(c["cut_fields"] is not None for c in calls)  # held to the schema's bounds like the packaged model
    local = data["manifest"]["local_model"]
    gguf = gguf_f16
    assert local["path"] == str(gguf.resolve()) and local["file"] == "tiny.gguf" and local["weights"] == "gguf"
    assert local["size"] == gguf.stat().st_size
    assert local["sha256"] == hashlib.sha256(gguf.read_bytes()).hexdigest()
    assert local["n_ctx"] == local["n_ctx_train"] == 8192 and local["chat_template"] == "gguf"
    assert main(argv) == 0  # rerun: all from the logs (the same settings, the sha256 remembered)
    assert "0 LLM calls made" in capsys.readouterr().out


def test_the_file_decides_the_request_and_the_packaged_model_is_unchanged(home, gguf, monkeypatch):
    from critique.llm import gguf_file
    from critique.llm import local as local_llm
    from critique.llm.client import LLM, LLMConfig

    llm = LLM(LLMConfig(model="local/smollm2"))
    assert llm.local == {"file": "SmolLM2-135M-Instruct.Q4_1.gguf", "weights": "f16", "flash_attn": True,
                         "max_string_chars": local_llm.MAX_STRING_CHARS, "n_ctx": local_llm.N_CTX}
    llm.close()

    def request(model, **options):
        llm = LLM(LLMConfig(model=model, **options))
        try:
            return llm, llm.request([{"role": "user", "content": "hi"}], {"type": "object"}, "reply")
        finally:
            llm.close()

    llm, first = request(f"local/{gguf}")
    assert llm.context_window == 8192 and first["local"]["sha256"] == hashlib.sha256(gguf.read_bytes()).hexdigest()
    # the sha256 is remembered: the next run does not read the file again
    monkeypatch.setattr(gguf_file.hashlib, "file_digest", lambda *a: pytest.fail("hashed again"))
    assert request(f"local/{gguf}")[1] == first
    # other weights at the same path: another request (the response cache never mixes them)
    with open(gguf, "r+b") as handle:
        handle.seek(gguf.stat().st_size - 4096)
        handle.write(b"\1" * 16)
    monkeypatch.undo()
    changed = request(f"local/{gguf}")[1]
    assert changed["local"]["sha256"] != first["local"]["sha256"]
    # --context-tokens is the context the file is loaded with
    llm, request_ = request(f"local/{gguf}", context_tokens=2048)
    assert llm.context_window == 2048 and request_["local"]["n_ctx"] == 2048 and local_llm.n_ctx_of(str(gguf)) == 2048
    # the default context: the file's training context, at most CRITIQUE_LOCAL_N_CTX
    monkeypatch.setattr(local_llm, "N_CTX", 4096)
    assert request(f"local/{gguf}")[1]["local"]["n_ctx"] == 4096


BAD = {"missing": "no such file", "folder": "cannot read", "not gguf": "not a GGUF file", "cut short": "cut short",
       "unknown architecture": "architecture 'llamX'"}


@pytest.mark.parametrize("case", BAD)
def test_a_bad_gguf_file_is_one_line_exit_2_and_nothing_written(home, gguf, case, capsys):
    import struct

    path = {"missing": home / "nowhere" / "m.gguf", "folder": gguf.parent}.get(case, home / "bad.gguf")
    data = gguf.read_bytes()
    arch = b"general.architecture" + struct.pack("<IQ", 8, 5) + b"llama"  # the key, a string of 5 bytes, its value
    if case == "not gguf":
        path.write_text("not a model\n")
    elif case == "cut short":
        path.write_bytes(data[:len(data) // 2])
    elif case == "unknown architecture":
        path.write_bytes(data.replace(arch, arch[:-1] + b"X", 1))
    out = home / "run"
    assert main(["run", "--dataset", "mcr-gen", "--model", f"local/{path}", "--limit", "2", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err and "Traceback" not in err, err
    assert BAD[case] in err
    assert not out.exists()


def test_the_prompt_count_of_a_file_is_its_template_exactly(gguf):
    from critique.llm import local as local_llm

    messages = [{"role": "user", "content": "Which is larger, 3 or 7? Answer with JSON."}]
    from llama_cpp import Llama

    llm = Llama(model_path=str(gguf), n_ctx=256, chat_format="chat_template.default", verbose=False)
    try:
        read = llm.create_chat_completion(messages=messages, max_tokens=1)["usage"]["prompt_tokens"]
    finally:
        llm.close()
    assert local_llm.count_tokens(str(gguf), messages) == read + 8  # 8 spare: a template may write the date
    json.dumps(local_llm.settings(str(gguf)))  # the manifest's local_model is plain JSON


def test_the_embedded_model_runs_on_the_cores_this_process_may_use(monkeypatch):
    from critique.llm import local

    monkeypatch.setattr(local.os, "sched_getaffinity", lambda pid: {3}, raising=False)
    assert local.threads() == 1  # `taskset -c 3`: one llama.cpp thread, not one per core of the machine


def test_reading_a_prompt_uses_those_cores_too(monkeypatch, tmp_path):
    """llama-cpp-python reads a prompt with n_threads_batch threads, one per core of the machine unless
    told: two of them on one allowed core stall each other (prompt reading several times slower)."""
    from critique.llm import grammar, local

    seen = {}

    class Recorder:
        def __init__(self, **kwargs):
            seen.update(kwargs)

        def close(self):
            pass

    monkeypatch.setattr(local.os, "sched_getaffinity", lambda pid: {3}, raising=False)
    monkeypatch.setattr(grammar, "GrammarFirstLlama", Recorder)
    monkeypatch.setattr(local, "weights_path", lambda name: tmp_path / "m.gguf")
    local.LocalLLM()._model("smollm2", 256)
    assert seen["n_threads"] == seen["n_threads_batch"] == 1
