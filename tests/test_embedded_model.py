"""Integration: the embedded model (SmolLM2-135M through llama.cpp) on a few mcr-gen items."""

import json

import pytest

from critique.base import rundir
from critique.cli import main

pytest.importorskip("llama_cpp")


def test_embedded_model_runs_the_whole_pipeline(home, capsys):
    out = home / "run"
    argv = ["run", "--dataset", "mcr-gen", "--model", "local/smollm2", "--limit", "3", "--k", "2",
            "--strategies", "zero_shot,EP_CRIT,EP+SEM_CRIT", "--out", str(out), "--quiet", "--max-tokens", "256"]
    assert main(argv) == 0
    data = rundir.read_run(out)
    calls = data["calls"]
    assert {c["stage"] for c in calls} == {"train_predict", "critique", "summary", "test"}
    assert all(c["error"] is None and c["prompt_tokens"] > 50 and c["completion_tokens"] > 0 for c in calls)
    tests = [p for p in data["predictions"] if p["stage"] == "test"]
    assert len(tests) == 9
    # JSON-schema-constrained output: the answer is always an option, never a parse failure
    assert all(not p["parse_failed"] and p["answer"] in {"1", "2", "3", "4"} for p in tests if not p["timeout"])
    assert "| EP+SEM_CRIT |" in capsys.readouterr().out
    # each field of a reply within the length its schema gives it; the strings that reached it are named
    from critique.engine import parsing
    from critique.llm import local as local_llm

    assert all(isinstance(c["cut_fields"], list) and not c["context_overflow"] for c in calls)
    for entry in rundir.read_jsonl(out / "memory" / "episodic.jsonl"):
        assert all(len(entry["critique"][k]) <= parsing.FIELD_CHARS[k] for k in parsing.CRITIQUE_KEYS)
    semantic = json.loads((out / "memory" / "semantic.json").read_text(encoding="utf-8"))["all"]
    assert 1 <= len(semantic["lines"]) <= parsing.MAX_ADVICE_LINES
    assert all(len(line["text"]) <= parsing.FIELD_CHARS["advice_line"] for line in semantic["lines"])
    for call in calls:  # what decides whether a prompt fits never counts fewer tokens than the model reads
        assert local_llm.count_tokens("smollm2", call["messages"]) >= call["prompt_tokens"]
    assert main(argv) == 0  # rerun: all from the logs
    assert "0 LLM calls made" in capsys.readouterr().out
    local = data["manifest"]["local_model"]
    assert local["weights"] == "f16" and local["file"] == "SmolLM2-135M-Instruct.Q4_1.gguf" and local["flash_attn"]
    assert list((home / "cache" / "models").glob("*.f16-embd-kept.gguf"))


def test_f16_weights_are_written_once_and_hold_the_shipped_values(home, monkeypatch):
    import llama_cpp
    import numpy as np
    from llama_cpp import Llama

    from critique.llm import local as local_llm

    monkeypatch.setattr(local_llm, "WEIGHTS", "f16")
    path = local_llm.weights_path("smollm2")
    assert path.parent == home / "cache" / "models" and path.name.endswith(".f16-embd-kept.gguf")
    written = path.stat().st_mtime_ns
    assert local_llm.weights_path("smollm2") == path and path.stat().st_mtime_ns == written  # not written again
    assert not list(path.parent.glob("*.partial"))
    shipped = local_llm.gguf_path("smollm2")
    # the layers become F16; the token embedding (also the output layer) keeps its shipped type
    assert local_llm._shipped_type(shipped, "token_embd.weight") == llama_cpp.GGML_TYPE_Q8_0
    assert local_llm._shipped_type(path, "token_embd.weight") == llama_cpp.GGML_TYPE_Q8_0
    assert local_llm._shipped_type(shipped, "blk.0.attn_q.weight") == llama_cpp.GGML_TYPE_Q4_1
    assert local_llm._shipped_type(path, "blk.0.attn_q.weight") == llama_cpp.GGML_TYPE_F16
    with pytest.raises(RuntimeError, match="no tensor"):
        local_llm._shipped_type(path, "no.such.weight")

    prompt = b"Task: pick the larger number. Question: 3 or 7?"
    logits = []
    for weights in ("gguf", "f16"):
        monkeypatch.setattr(local_llm, "WEIGHTS", weights)
        llm = Llama(model_path=str(local_llm.weights_path("smollm2")), n_ctx=256, logits_all=True, verbose=False)
        try:
            llm.eval(llm.tokenize(prompt))
            logits.append(np.array(llm.scores[llm.n_tokens - 1]))
        finally:
            llm.close()
    # the same weights at another precision: the same next token, logits close
    assert logits[0].argmax() == logits[1].argmax()
    assert np.corrcoef(logits[0], logits[1])[0, 1] > 0.99


def test_local_settings_are_part_of_the_request(home, monkeypatch):
    from critique.llm import local as local_llm
    from critique.llm.client import LLM, LLMConfig

    requests = {}
    for weights in ("f16", "gguf"):
        monkeypatch.setattr(local_llm, "WEIGHTS", weights)
        llm = LLM(LLMConfig(model="local/smollm2"))
        request = llm.request([{"role": "user", "content": "hi"}], {"type": "object"}, "reply")
        assert request["local"]["weights"] == weights and request["local"]["file"].endswith(".gguf")
        requests[weights] = llm.request_hash(request)
        llm.close()
    assert requests["f16"] != requests["gguf"]  # the response cache never mixes the two


def test_a_prompt_longer_than_the_local_context_is_an_overflow_not_an_error(home):
    import asyncio

    from critique.llm import local as local_llm
    from critique.llm.client import LLM, LLMConfig

    llm = LLM(LLMConfig(model="local/smollm2", use_cache=False))
    assert llm.context_window == local_llm.N_CTX
    long = [{"role": "user", "content": "word " * local_llm.N_CTX}]
    assert llm.overflows(long) and not llm.overflows([{"role": "user", "content": "word " * 100}])
    llm.close()
    # told a larger window than the model has: the model itself refuses, and that is an overflow too
    llm = LLM(LLMConfig(model="local/smollm2", use_cache=False, context_tokens=10 * local_llm.N_CTX))
    result = asyncio.run(llm.complete(long, {"type": "object"}, "reply"))
    assert result.context_overflow and result.error is None and result.text is None and result.retries == 0
    llm.close()


def test_unknown_weight_type_is_refused(monkeypatch):
    from critique.llm import local as local_llm

    monkeypatch.setattr(local_llm, "WEIGHTS", "q2")
    with pytest.raises(ValueError, match="CRITIQUE_LOCAL_WEIGHTS"):
        local_llm.weights_path("smollm2")


def test_grammar_first_greedy_chooses_what_the_full_grammar_pass_chooses(home):
    from llama_cpp import Llama

    from critique.llm import local as local_llm
    from critique.llm.grammar import GrammarFirstLlama, GreedyUnderGrammar

    reason = {"type": "string", "maxLength": 60}
    critique = {"type": "object", "properties": {"correct_answer": reason, "local_reason": reason},
                "required": ["correct_answer", "local_reason"]}
    answer = {"type": "object", "properties": {"answer": {"type": "string", "enum": ["1", "2", "3", "4"]}},
              "required": ["answer"]}
    asks = [("Critique the answer 3 to 2+2; the correct answer is 4.", critique),
            ("Which ordering is right? 1. a b  2. b a  3. c  4. d", answer)]
    replies = {}
    for cls in (Llama, GrammarFirstLlama):
        llm = cls(model_path=str(local_llm.weights_path("smollm2")), n_ctx=1024, seed=0, verbose=False)
        try:
            replies[cls] = [llm.create_chat_completion(
                messages=[{"role": "user", "content": text}], temperature=0.0, max_tokens=80,
                response_format={"type": "json_object", "schema": schema}) for text, schema in asks]
            if cls is GrammarFirstLlama:
                assert isinstance(llm._sampler, GreedyUnderGrammar)  # the fast path was taken
        finally:
            llm.close()
    got = [[(r["choices"][0]["message"]["content"], r["usage"]) for r in replies[cls]] for cls in replies]
    assert got[0] == got[1]
    assert all(r["usage"]["completion_tokens"] > 3 for r in replies[Llama])


def test_async_calls_of_the_embedded_model_all_run_on_one_thread(monkeypatch):
    """llama.cpp's OpenMP team belongs to the calling thread: one thread keeps one team."""
    import asyncio
    import threading
    import time

    from critique.llm import local as local_llm

    handler = local_llm.LocalLLM()
    seen = []

    def completion(*args, **kwargs):
        seen.append(threading.get_ident())
        time.sleep(0.01)
        return args

    monkeypatch.setattr(handler, "completion", completion)

    async def calls():
        return await asyncio.gather(*(handler.acompletion(i) for i in range(8)))

    assert asyncio.run(calls()) == [(i,) for i in range(8)]
    assert len(seen) == 8 and len(set(seen)) == 1 and seen[0] != threading.get_ident()
    handler.close()
