"""Integration: a base model (a GGUF file without a chat template) runs in process in the completion form
(critique.llm.gguf_file.COMPLETION) instead of being refused, as lm-eval and HELM take base models; the manifest
and every request record the form, and the prompt is counted exactly in it."""

import shutil

import pytest

from critique.base import rundir
from critique.cli import main

pytest.importorskip("llama_cpp")


@pytest.fixture
def base_gguf(home, monkeypatch):
    """The packaged model's F16 weights with their chat template's key renamed: a file without one."""
    from critique.llm import local as local_llm

    monkeypatch.setattr(local_llm, "WEIGHTS", "f16")
    source = local_llm.weights_path("smollm2")
    path = home / "base.gguf"
    shutil.copyfile(source, path)
    data = path.read_bytes()
    assert data.count(b"tokenizer.chat_template") == 1
    path.write_bytes(data.replace(b"tokenizer.chat_template", b"tokenizer.chat_templatX", 1))
    return path


def test_the_completion_form_is_plain_text_ending_with_the_cue(base_gguf):
    from critique.llm import gguf_file, local as local_llm

    vocab = local_llm._vocab(str(base_gguf))
    assert gguf_file.chat_form(vocab) == gguf_file.COMPLETION_FORM
    messages = [{"role": "system", "content": "Pick 1 or 2."}, {"role": "user", "content": "Q: first?"},
                {"role": "assistant", "content": '{"answer": "1"}'}, {"role": "user", "content": "Q: second?"}]
    text = local_llm._chat(str(base_gguf))(messages=messages).prompt
    bos = vocab._model.token_get_text(vocab.token_bos())  # the file's own begin token, then no role marker
    assert text == bos + 'Pick 1 or 2.\n\nQ: first?\n\nAnswer:{"answer": "1"}\n\nQ: second?\n\nAnswer:'


@pytest.mark.parametrize("answer_by", ["generate", "loglikelihood"])
def test_a_base_model_runs_the_pipeline_in_the_completion_form(home, base_gguf, answer_by, capsys):
    from critique.llm import gguf_file, local as local_llm

    out = home / f"run-{answer_by}"
    argv = ["run", "--dataset", "control-pos", "--model", f"local/{base_gguf}", "--limit", "2", "--k", "1",
            "--prompts", "turns", "--answer-by", answer_by, "--strategies", "zero_shot,EP_LABEL", "--out", str(out),
            "--quiet", "--max-tokens", "200"]
    assert main(argv) == 0
    data = rundir.read_run(out)
    local = data["manifest"]["local_model"]
    assert local["chat_template"] == gguf_file.COMPLETION_FORM and len(local["completion_sha256"]) == 64
    calls = data["calls"]
    assert calls and all(c["error"] is None and c["prompt_tokens"] > 20 for c in calls)
    # the prompt is counted in the form the model reads it (exactly, a few tokens spare)
    assert all(local_llm.count_tokens(str(base_gguf), c["messages"]) >= c["prompt_tokens"] for c in calls)
    tests = [p for p in data["predictions"] if p["stage"] == "test"]
    assert len(tests) == 4 and all(p["answer"] in {"1", "2", "3", "4"} for p in tests if not p["timeout"])
    assert main(argv) == 0 and "0 LLM calls made" in capsys.readouterr().out  # resumed from the log


def test_a_file_with_a_template_keeps_its_own_form(home):
    from critique.llm import gguf_file, local as local_llm

    path = home / "instruct.gguf"
    shutil.copyfile(local_llm.gguf_path("smollm2"), path)
    settings = local_llm.settings(str(path))
    assert settings["chat_template"] == gguf_file.OWN  # as before the completion form: the same request hashes
    assert set(settings) == {"file", "path", "size", "sha256", "weights", "chat_template", "flash_attn",
                             "max_string_chars", "n_ctx", "n_ctx_train"}
