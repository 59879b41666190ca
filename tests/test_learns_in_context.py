"""What lets the harness see an effect: the embedded model that learns in context (assembled from its chunk
packages), the example layout (the turns prompt set, the nearest example last), answers by log-likelihood, and
controls that keep their twins under --limit."""

import hashlib
import json
from pathlib import Path

import pytest

from critique.base import rundir
from critique.base.config import RunConfig
from critique.cli import main
from critique.datasets.splits import Item
from critique.engine import agents, prompts
from critique.llm import assembled

ROOT = Path(__file__).resolve().parent.parent


# ---- the assembled model ---------------------------------------------------------------------------------------
def _tiny_model(tmp_path, monkeypatch, parts: list[bytes]) -> assembled.AssembledModel:
    """An AssembledModel over chunk files in tmp_path (chunk_path finds them there)."""
    chunks = []
    for number, data in enumerate(parts, start=1):
        path = tmp_path / f"part{number}.bin"
        path.write_bytes(data)
        chunks.append(assembled.Chunk(f"tiny-part{number}", "1.0", path.name, hashlib.sha256(data).hexdigest()))
    monkeypatch.setattr(assembled, "chunk_path", lambda chunk: tmp_path / chunk.file)
    whole = b"".join(parts)
    return assembled.AssembledModel("tiny", "a tiny file", "MIT", len(whole), hashlib.sha256(whole).hexdigest(),
                                    tuple(chunks))


def test_chunks_assemble_into_the_pinned_file_once(tmp_path, monkeypatch):
    model = _tiny_model(tmp_path, monkeypatch, [b"GGUF-one-", b"two-", b"three"])
    path = assembled.assemble(model, tmp_path / "models")
    assert path.read_bytes() == b"GGUF-one-two-three" and not list(path.parent.glob("*.partial"))
    written = path.stat().st_mtime_ns
    assert assembled.assemble(model, tmp_path / "models").stat().st_mtime_ns == written  # not written again


def test_an_altered_chunk_is_refused_in_one_line_and_nothing_is_left(tmp_path, monkeypatch):
    model = _tiny_model(tmp_path, monkeypatch, [b"GGUF-one-", b"two-", b"three"])
    (tmp_path / "part2.bin").write_bytes(b"tw0-")  # one byte altered
    with pytest.raises(ValueError) as caught:
        assembled.assemble(model, tmp_path / "models")
    message = str(caught.value)
    assert "\n" not in message and "tiny-part2==1.0" in message and "not the pinned one" in message
    assert not list((tmp_path / "models").iterdir())  # no file, no partial file


def test_chunks_whose_whole_is_not_the_pinned_file_are_refused(tmp_path, monkeypatch):
    model = _tiny_model(tmp_path, monkeypatch, [b"GGUF-one-", b"two-"])
    wrong = assembled.AssembledModel(model.name, model.title, model.license, model.size, "0" * 64, model.chunks)
    with pytest.raises(ValueError, match="not the pinned"):
        assembled.assemble(wrong, tmp_path / "models")


def test_a_chunk_package_of_another_version_is_refused(monkeypatch):
    chunk = assembled.QWEN_05B.chunks[0]
    other = assembled.Chunk(chunk.package, "0.0.1", chunk.file, chunk.sha256)
    with pytest.raises(ValueError, match="not the pinned 0.0.1"):
        assembled.chunk_path(other)


qwen_installed = pytest.mark.skipif(
    not all(_ for _ in [__import__("importlib").util.find_spec(c.package.replace("-", "_"))
                        for c in assembled.QWEN_05B.chunks]), reason="the Qwen chunk packages are not installed")


@pytest.fixture(scope="module")
def qwen_cache(tmp_path_factory):
    """A cache folder holding the assembled Qwen file (assembled once for this module)."""
    folder = tmp_path_factory.mktemp("qwen-cache")
    assembled.assemble(assembled.QWEN_05B, folder / "models")
    return folder


@qwen_installed
def test_the_qwen_file_is_assembled_verified_and_an_altered_copy_refused(qwen_cache, monkeypatch):
    monkeypatch.setenv("CRITIQUE_CACHE_DIR", str(qwen_cache))
    path = assembled.gguf_path(assembled.QWEN_05B.name)
    assert path.stat().st_size == assembled.QWEN_05B.size
    with open(path, "rb") as handle:
        assert hashlib.file_digest(handle, "sha256").hexdigest() == assembled.QWEN_05B.sha256
    # the same bytes but one, in another cache folder: refused before any load
    other = qwen_cache.parent / "altered"
    (other / "models").mkdir(parents=True)
    copy = assembled.target(assembled.QWEN_05B, other / "models")
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    copy.write_bytes(bytes(data))
    monkeypatch.setenv("CRITIQUE_CACHE_DIR", str(other))
    with pytest.raises(ValueError, match="is not Qwen2.5-Coder-0.5B-Instruct"):
        assembled.gguf_path(assembled.QWEN_05B.name)


# ---- the layout ------------------------------------------------------------------------------------------------
def _examples(n: int) -> list[dict]:
    return [{"id": f"e{i}", "question": f"past question {i}", "gold": str(i), "initial_answer": "4",
             "critique": {"correct_answer": str(i), "local_reason": f"why {i}", "global_reason": f"lesson {i}"}}
            for i in range(1, n + 1)]


def _prompt(template: str, examples: list[dict], prompt_set: str = "turns") -> agents.Prompt:
    task = prompts.Task("Which vault holds it?", prompt_set)
    return agents.performance_prompt(template, task, Item("q", "the new question", "1"), ["1", "2", "3", "4"],
                                     examples, "check the code name", "full")


def test_turns_show_each_example_as_an_earlier_exchange():
    messages = _prompt("performance_ep_label.j2", _examples(2)).messages
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert "Which vault holds it?" in messages[0]["content"]
    assert '{"answer": one of 1, 2, 3, 4}' in messages[0]["content"]
    assert messages[1]["content"] == "Question:\npast question 1\n" and messages[2]["content"] == '{"answer": "1"}'
    assert messages[-1]["content"] == "Question:\nthe new question\n"
    # zero_shot's conversation is EP_LABEL's without the earlier exchanges
    assert _prompt("performance_zero_shot.j2", []).messages == [messages[0], messages[-1]]


def test_turns_show_a_critique_after_the_agents_initial_response():
    messages = _prompt("performance_ep_crit.j2", _examples(2)).messages
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert messages[2]["content"] == '{"answer": "4"}'  # the initial response
    # the critique and the next question are one user turn (roles alternate)
    assert messages[3]["content"].startswith("A critique of your response:\nCritique: 1\nWhy, for this question: why 1")
    assert messages[3]["content"].endswith("Question:\npast question 2\n")
    assert "Critique: 2" in messages[5]["content"] and messages[5]["content"].endswith("Question:\nthe new question\n")


def test_the_paper_set_is_one_message_as_before():
    messages = _prompt("performance_ep_label.j2", _examples(2), "paper").messages
    assert len(messages) == 1 and messages[0]["role"] == "user"
    assert messages[0]["content"].index("Past question 1") < messages[0]["content"].index("Past question 2")


def test_nearest_last_reverses_what_the_prompt_shows_not_what_is_recorded():
    from critique.engine.performance import in_order

    nearest_first = _examples(3)
    last = RunConfig(dataset="d", model="m", example_order="nearest-last")
    assert [e["id"] for e in in_order(last, nearest_first)] == ["e3", "e2", "e1"]
    assert [e["id"] for e in in_order(RunConfig(dataset="d", model="m"), nearest_first)] == ["e1", "e2", "e3"]
    assert [e["id"] for e in nearest_first] == ["e1", "e2", "e3"]


def test_the_paper_sets_request_hashes_are_those_of_the_shipped_logs():
    """The layout settings at their defaults add nothing to a request: the shipped runs resume with zero calls."""
    from critique.base.config import manifest_run_config
    from critique.datasets.splits import answer_schema
    from critique.llm.client import LLM, llm_config

    folder = ROOT / "logs" / "control-pos__local_smollm2"
    manifest = json.loads((folder / rundir.MANIFEST).read_text(encoding="utf-8"))
    config = manifest_run_config(manifest)
    assert (config.example_order, config.answer_by) == ("nearest-first", "generate")
    llm = LLM(llm_config(config))
    calls = [c for c in rundir.read_jsonl(folder / rundir.CALLS) if c["stage"] in ("test", "train_predict")][:40]
    schema = answer_schema(manifest["dataset"]["answer_space"])
    assert {c["request_hash"] for c in calls} == {llm.request_hash(llm.request(c["messages"], schema, "answer"))
                                                  for c in calls}
    llm.close()


def run(out, *extra, dataset="control-pos", limit="3"):
    return main(["run", "--dataset", dataset, "--model", "fake/model", "--limit", limit, "--k", "2",
                 "--strategies", "zero_shot,EP_LABEL", "--out", str(out), "--quiet", *extra])


def test_the_layout_is_recorded_and_part_of_the_identity(home, fake_llm, capsys):
    out = home / "turns"
    assert run(out, "--prompts", "turns", "--example-order", "nearest-last") == 0
    manifest = json.loads((out / rundir.MANIFEST).read_text(encoding="utf-8"))
    assert manifest["config"]["example_order"] == "nearest-last" and manifest["config"]["prompts"] == "turns"
    assert manifest["config"]["answer_by"] == "generate"
    capsys.readouterr()
    assert run(out, "--prompts", "turns") == 2
    assert "example_order='nearest-last', not 'nearest-first'" in capsys.readouterr().err
    first = {c["request_hash"] for c in rundir.read_jsonl(out / rundir.CALLS) if c["strategy"] == "EP_LABEL"}
    assert run(home / "first", "--prompts", "turns") == 0
    other = {c["request_hash"] for c in rundir.read_jsonl(home / "first" / rundir.CALLS) if c["strategy"] == "EP_LABEL"}
    assert first and not first & other  # another order, other requests


def test_answer_by_loglikelihood_is_refused_for_a_model_that_cannot_score(home, fake_llm, capsys):
    assert run(home / "r", "--answer-by", "loglikelihood") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--answer-by loglikelihood" in err[0] and "local/" in err[0]
    assert not (home / "r" / rundir.CALLS).exists()


# ---- controls under --limit ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["control-pos", "control-neg"])
def test_a_limited_control_keeps_the_twins_of_its_test_items(home, name):
    from critique.datasets.registry import resolve

    full = resolve(name)
    limited = full.limited(10)
    assert [i.id for i in limited.test] == [i.id for i in full.test[:10]]
    assert {i.id for i in limited.train} == {i.meta["twin"] for i in limited.test} and len(limited.train) == 10
    assert [i.id for i in limited.train] == [i.id for i in full.train if i.id in {t.id for t in limited.train}]
    assert limited.train_kept == "twins"
    if name == "control-pos":  # each test item's label is its twin's
        labels = {i.id: i.answer for i in limited.train}
        assert all(labels[i.meta["twin"]] == i.answer for i in limited.test)


def test_a_limit_on_other_data_keeps_the_first_items(home):
    from critique.datasets.registry import resolve

    full = resolve("pref-gen")
    limited = full.limited(2)
    assert limited.train_kept == "first" and len(limited.train) == 2 * len(full.card.users)


def test_a_run_limited_before_twins_were_kept_is_not_resumed_with_them(home, fake_llm, capsys):
    out = home / "old"
    assert run(out) == 0
    manifest = json.loads((out / rundir.MANIFEST).read_text(encoding="utf-8"))
    assert manifest["dataset"]["train_kept"] == "twins"
    del manifest["dataset"]["train_kept"]  # as a run written before: its limit kept the first items
    (out / rundir.MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    capsys.readouterr()
    assert run(out) == 2 and "kept the first N items of train, not the twins" in capsys.readouterr().err


# ---- answers by log-likelihood ---------------------------------------------------------------------------------
def _reference(model_path: Path, prompt: str, reply: str) -> float:
    """llama.cpp's log-likelihood of ``reply`` after ``prompt``: the whole text read in one batch with the logits
    of every position kept (logits_all), each reply token's log-probability summed."""
    import numpy as np
    from llama_cpp import Llama

    llm = Llama(model_path=str(model_path), n_ctx=1024, logits_all=True, verbose=False, seed=0, n_threads=1)
    head = llm.tokenize(prompt.encode(), add_bos=False, special=True)
    whole = llm.tokenize((prompt + reply).encode(), add_bos=False, special=True)
    assert whole[:len(head)] == head
    llm.eval(whole)
    total = 0.0
    for position in range(len(head), len(whole)):
        logits = np.asarray(llm.scores[position - 1], dtype=np.float64)
        top = logits.max()
        total += logits[whole[position]] - (top + np.log(np.exp(logits - top).sum()))
    llm.close()
    return float(total)


def test_loglikelihood_scores_equal_llama_cpps_for_a_fixed_prompt(home):
    pytest.importorskip("llama_cpp")
    from llama_cpp import Llama

    from critique.llm import local as local_llm
    from critique.llm import loglikelihood

    path = local_llm.weights_path("smollm2")
    messages = [{"role": "system", "content": "Which vault (1-4) holds the object?"},
                {"role": "user", "content": "Question:\nA brass kettle, Velmora."},
                {"role": "assistant", "content": '{"answer": "3"}'},
                {"role": "user", "content": "Question:\nVelmora, a kettle of brass."}]
    prompt = local_llm._chat("smollm2")(messages=messages).prompt
    llm = Llama(model_path=str(path), n_ctx=1024, verbose=False, seed=0, n_threads=1)
    options = ["1", "2", "3", "4"]
    scores = loglikelihood.score(llm, prompt, options)
    again = loglikelihood.score(llm, prompt, options)  # read after another prompt's state: the same numbers
    llm.close()
    assert scores == again
    reference = {option: _reference(path, prompt, loglikelihood.reply_text(option)) for option in options}
    # read in other pieces (the prompt, then one token at a time, against all in one batch), the logits differ in
    # their last digits: a few hundredths of a nat at most, by how the processor's kernels round
    tolerance = 0.05
    assert all(scores[option] == pytest.approx(reference[option], abs=tolerance) for option in options), \
        (scores, reference)
    # within it, two options further apart than twice the tolerance keep llama.cpp's order (two nearer may swap: 0.008
    # apart, seen on an AVX2 machine); this prompt's answer leads every other option by more, so it is llama.cpp's
    leader, *rest = sorted(options, key=reference.get, reverse=True)
    assert all(reference[leader] - reference[other] > 2 * tolerance for other in rest), reference


def test_calibration_removes_the_content_free_preference():
    from critique.llm import loglikelihood

    raw = {"1": -0.5, "2": -2.0, "3": -2.5}
    bias = {"1": -0.1, "2": -3.0, "3": -3.0}  # the model says 1 to a content-free question
    calibrated = loglikelihood.calibrated(raw, bias)
    assert loglikelihood.best(raw, list(raw)) == "1" and loglikelihood.best(calibrated, list(raw)) == "2"
    assert loglikelihood.options_of({"type": "object", "properties": {"answer": {"type": "string", "enum": ["a", "b"]}},
                                     "required": ["answer"]}) == ["a", "b"]
    assert loglikelihood.options_of({"type": "object", "properties": {"advice": {"type": "array"}}}) is None


@pytest.mark.parametrize("answer_by", ["loglikelihood", "calibrated"])
def test_a_run_answers_by_loglikelihood_logs_the_scores_and_resumes_with_no_call(home, capsys, answer_by):
    pytest.importorskip("llama_cpp")
    from critique.llm import loglikelihood

    out = home / answer_by
    argv = ["run", "--dataset", "control-pos", "--model", "local/smollm2", "--limit", "3", "--k", "2",
            "--strategies", "zero_shot,EP_LABEL", "--prompts", "turns", "--example-order", "nearest-last",
            "--answer-by", answer_by, "--out", str(out), "--quiet"]
    assert main(argv) == 0
    data = rundir.read_run(out)
    assert data["manifest"]["config"]["answer_by"] == answer_by
    calls = data["calls"]
    assert len(calls) == 3 + 6 and all(c["error"] is None for c in calls)
    options = ["1", "2", "3", "4"]
    for call in calls:
        scores = call["option_scores"]
        assert set(scores) == set(options) and all(s < 0 for s in scores.values())
        final = scores
        if answer_by == "calibrated":
            assert set(call["content_free_scores"]) == set(options)
            free = [m for m in call["messages"]]
            assert free and "N/A" not in call["messages"][-1]["content"]
            final = loglikelihood.calibrated(scores, call["content_free_scores"])
        else:
            assert call["content_free_scores"] is None
        assert call["response"] == loglikelihood.reply_text(loglikelihood.best(final, options))
    assert all(not p["parse_failed"] for p in data["predictions"])
    capsys.readouterr()
    assert main(argv) == 0 and "0 LLM calls made" in capsys.readouterr().out
