"""Answers by log-likelihood: the embedded model scores each option's reply after the prompt, and the best
is the answer, as lm-eval scores a multiple-choice task (the sum of the log-probabilities of the
continuation's tokens given the context, no length normalisation).

An option's reply is the text the answer schema makes of it (``reply_text``: ``{"answer": "2"}``), so a
prompt that shows earlier answers (the turns prompt set) shows them in the very form that is scored. The
prompt is read once; the replies' tokens are read as a tree (their common tokens once, each branch from
where it leaves the others), one token at a time, so each option costs the tokens it does not share.

Contextual calibration (Zhao et al. 2021, "Calibrate before use"): the same scores after the same prompt
with a content-free question ("N/A") give the model's bias toward each option; the calibrated score of an
option is its log-probability, normalised over the options, less its normalised log-probability after the
content-free prompt. This removes a preference for one label position that the question does not cause.
"""

from __future__ import annotations

import json
import math

CONTENT_FREE = "N/A"  # the content-free question of contextual calibration
BY_GENERATION = "generate"  # RunConfig.answer_by: the model writes its answer (the other ways score the options)


def options_of(schema: dict) -> list[str] | None:
    """The options an answer by log-likelihood scores: the labels of an answer schema (one string field
    ``answer`` with an enum); None for any other schema (a critique, a summary, an answer that cites)."""
    properties = schema.get("properties") or {}
    answer = properties.get("answer") or {}
    if set(properties) != {"answer"} or not isinstance(answer.get("enum"), list) or not answer["enum"]:
        return None
    return [str(option) for option in answer["enum"]]


def scored(request: dict, schema: dict, answer_by: str, content_free: list[dict] | None) -> None:
    """Make ``request`` (critique.llm.client.LLM.request) one that is answered by scoring ``schema``'s options,
    when ``answer_by`` says so and the schema is an answer's: no sampling and no length then (temperature,
    max_tokens and seed are not part of it), and, calibrated, the content-free prompt is."""
    if answer_by == BY_GENERATION or options_of(schema) is None:
        return
    request.update(answer_by=answer_by, temperature=None, max_tokens=None, seed=None)
    if answer_by == "calibrated":
        if content_free is None:
            raise ValueError("--answer-by calibrated needs the prompt's content-free twin "
                             "(agents.Prompt.content_free); this request has none")
        request["content_free"] = content_free


def reply_text(label: str) -> str:
    """The reply that names ``label`` as the answer, as the answer schema writes it (and the turns prompt set
    shows an earlier answer)."""
    return json.dumps({"answer": label}, ensure_ascii=False)


def continuations(llm, prompt: str, options: list[str]) -> dict[str, list[int]]:
    """Each option's reply as tokens after ``prompt``: the prompt and reply tokenized together and cut where
    the prompt's own tokens end (as lm-eval splits context and continuation), or the reply alone when the
    prompt's last token merges with the reply's first."""
    head = llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
    out = {}
    for option in options:
        whole = llm.tokenize((prompt + reply_text(option)).encode("utf-8"), add_bos=False, special=True)
        if whole[:len(head)] == head and len(whole) > len(head):
            out[option] = whole[len(head):]
        else:
            out[option] = llm.tokenize(reply_text(option).encode("utf-8"), add_bos=False, special=False)
    return out


def _log_softmax(llm):
    import llama_cpp
    import numpy as np

    logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1), shape=(llm.n_vocab(),))
    logits = logits.astype(np.float64)
    top = logits.max()
    return logits - (top + math.log(np.exp(logits - top).sum()))


def _read(llm, tokens: list[int]) -> None:
    """Read ``tokens`` after the model's first ``llm.n_tokens`` (the KV cache past them is dropped)."""
    llm.eval(tokens)


def _tree(options: dict[str, list[int]]) -> dict:
    """The options' tokens as a tree: token -> (subtree, the options that end there)."""
    root: dict = {}
    for option, tokens in options.items():
        node = root
        for depth, token in enumerate(tokens):
            child = node.setdefault(token, [{}, []])
            if depth == len(tokens) - 1:
                child[1].append(option)
            node = child[0]
    return root


def _walk(llm, node: dict, logprobs, total: float, scores: dict[str, float]) -> None:
    """Score every option below ``node``: ``logprobs`` are the model's after the tokens read so far."""
    position = llm.n_tokens
    for token, (children, ending) in node.items():
        score = total + float(logprobs[token])
        for option in ending:
            scores[option] = score
        if children:
            llm.n_tokens = position
            _read(llm, [token])
            _walk(llm, children, _log_softmax(llm), score, scores)
    llm.n_tokens = position


def score(llm, prompt: str, options: list[str]) -> dict[str, float]:
    """Each option's log-likelihood: the sum of the log-probabilities of its reply's tokens after ``prompt``
    (a formatted chat, ending where the assistant's reply begins). The prompt is read from its first token
    whatever the model read before, so that a prompt's scores do not depend on the call before it (reading
    a prompt in other pieces changes its logits in their last digits)."""
    tokens = llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
    if not tokens:
        raise ValueError("an empty prompt has no log-likelihood")
    llm.n_tokens = 0
    _read(llm, tokens)
    scores: dict[str, float] = {}
    _walk(llm, _tree(continuations(llm, prompt, options)), _log_softmax(llm), 0.0, scores)
    return {option: scores[option] for option in options}


def normalised(scores: dict[str, float]) -> dict[str, float]:
    """Log-probabilities renormalised over the options (they sum to 1 as probabilities)."""
    top = max(scores.values())
    total = top + math.log(sum(math.exp(s - top) for s in scores.values()))
    return {option: s - total for option, s in scores.items()}


def calibrated(scores: dict[str, float], content_free: dict[str, float]) -> dict[str, float]:
    """Contextual calibration: each option's normalised log-probability less its normalised log-probability
    after the content-free prompt."""
    mine, bias = normalised(scores), normalised(content_free)
    return {option: mine[option] - bias[option] for option in scores}


def best(scores: dict[str, float], options: list[str]) -> str:
    """The option of the highest score; a tie goes to the option listed first."""
    return max(options, key=lambda option: (scores[option], -options.index(option)))
