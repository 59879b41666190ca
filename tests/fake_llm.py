"""A fake litellm provider for tests: ``fake/<name>``, deterministic, with real usage numbers.

Usage is counted from the texts (whitespace tokens of the prompt and of the reply), so the
numbers in the logs are the numbers of what was sent and received. The reply follows the
JSON schema of the request: an answer chosen by a hash of the prompt (or always the first
option in the prompt's "Correct answer" line when one is shown), a critique, or a list of lines
of advice (the first names a rule chosen by a hash of the prompt; FAKE_LLM_ADVICE_LINES of them,
default 2; asked for sources, the first line names 1 and 2, the last one 99, the others their own number).
Set FAKE_LLM_DELAY (seconds) to slow each call, and FAKE_LLM_HOLD_AFTER=N to answer the
first N calls of the process and hold every later one for good (a test that kills a run at
an event then knows how far it can have gone, whatever the machine's speed). FAKE_LLM_ECHO=TEXT
puts TEXT into every reply's free-text fields, and FAKE_LLM_FAIL=KIND,... makes every call of
those kinds (answer, critique, summary) fail with a long error message that ends in
FAKE_LLM_ECHO, as a provider that echoes the key would (secret tests). FAKE_LLM_CONTEXT=N refuses
a prompt of more than N (whitespace) tokens with litellm's ContextWindowExceededError; FAKE_LLM_USAGE_FACTOR=F
reports F times the reply's tokens as its usage (a provider that bills more than the reply's length).
FAKE_LLM_CRITIC_WRONG=LABEL,... makes a critique told one of those labels assert another one ("1",
or "2" when told "1"); a critique asked again (a request with an earlier assistant reply: the
recritique) asserts the label it was told, unless that label is in FAKE_LLM_RECRITIC_WRONG; a critique
told one of the labels of FAKE_LLM_OUTCOME_NOTES=LABEL,... gives reasons that only state the outcome (no
instruction). A self critic (--critic self: no label) believes an option chosen by a hash of the prompt
(FAKE_LLM_SELF=lenient: the answer it judges, always called right). Run as a
script it is the `critique` command with this provider registered, for tests that kill a run.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
import time
import uuid

import litellm
from litellm import CustomLLM

CALLS: list[dict] = []
# A test may script the performance agent: ANSWER(prompt, options, properties) returns the reply object
# (e.g. {"answer": "yes"}) or None for the default hashed answer (tests/test_credit.py).
ANSWER = None
_STARTED = {"calls": 0}
_STARTED_LOCK = threading.Lock()


def _hold_if_due() -> None:
    limit = os.environ.get("FAKE_LLM_HOLD_AFTER")
    with _STARTED_LOCK:
        _STARTED["calls"] += 1
        due = limit is not None and _STARTED["calls"] > int(limit)
    if due:
        threading.Event().wait()  # never set: the test kills the process


def _reply(messages: list[dict], schema: dict | None) -> str:
    prompt = "\n".join(m["content"] for m in messages)
    props = (schema or {}).get("properties", {})
    if "answer" in props:
        options = props["answer"]["enum"]
        scripted = ANSWER(prompt, options, props) if ANSWER is not None else None
        if scripted is not None:
            return json.dumps(scripted)
        pick = int(hashlib.sha256(prompt.encode()).hexdigest(), 16) % len(options)
        more = {key: _filled(value, prompt, key) for key, value in props.items() if key != "answer"}
        return json.dumps({**more, "answer": options[pick]})
    echo = os.environ.get("FAKE_LLM_ECHO", "")
    if "verdict" in props:  # the self critic (--critic self): no label in the prompt
        return _self_reply(prompt, props, echo)
    if "correct_answer" in props:
        gold = prompt.split("Correct answer: ", 1)[1].split("\n", 1)[0].strip()
        again = any(m["role"] == "assistant" for m in messages)
        wrong = os.environ.get("FAKE_LLM_RECRITIC_WRONG" if again else "FAKE_LLM_CRITIC_WRONG", "").split(",")
        said = ("2" if gold == "1" else "1") if gold in wrong else gold
        if gold in os.environ.get("FAKE_LLM_OUTCOME_NOTES", "").split(","):  # reasons that state the outcome only
            return json.dumps({"correct_answer": f"The correct answer is {said}.",
                               "local_reason": f"The answer to this question was {gold}.{echo}",
                               "global_reason": f"This one was answered {gold}.{echo}"})
        return json.dumps({"correct_answer": f"The correct answer is {said}.",
                           "local_reason": f"Here {gold} follows from the conditions.{echo}",
                           "global_reason": f"Apply the high-priority condition first.{echo}"})
    if "advice" not in props and props:  # the field's methods' replies (critique.engine.field)
        return json.dumps(_filled(schema, prompt, ""))
    # advice that depends on the prompt (a merge on the lists merged), always of the same length in tokens
    rule = int(hashlib.sha256(prompt.encode()).hexdigest(), 16) % 9 + 1
    more = [f"Check candidate {i} against every condition in turn." for i in
            range(1, int(os.environ.get("FAKE_LLM_ADVICE_LINES", "2")) - 1)]
    lines = [f"Apply conditions in order of priority (rule {rule}).", *more, f"Check every candidate.{echo}"]
    items = (schema or {}).get("properties", {}).get("advice", {}).get("items", {})
    if items.get("type") == "object":  # --advice-sources cited: the first line cites 1 and 2, the last one 99
        cited = [[1, 2]] + [[n] for n in range(3, len(lines) + 1)][:len(lines) - 2] + [[99]]
        return json.dumps({"advice": [{"text": t, "sources": c} for t, c in zip(lines, cited)]})
    return json.dumps({"advice": lines})


def _filled(schema: dict, prompt: str, path: str):
    """A reply that follows ``schema``, each value chosen by a hash of the prompt and of where it is: an enum's
    option, one item of an array, a short sentence for a string (an ExpeL operation, ADD or AGREE, where one is
    asked for; a cheatsheet that keeps what the prompt's previous one said)."""
    hashed = int(hashlib.sha256(f"{prompt}\0{path}".encode()).hexdigest(), 16)
    if "enum" in schema:
        return schema["enum"][hashed % len(schema["enum"])]
    kind = schema.get("type")
    if kind == "object":
        return {key: _filled(value, prompt, f"{path}.{key}") for key, value in schema.get("properties", {}).items()}
    if kind == "array":
        return [_filled(schema.get("items", {}), prompt, f"{path}[0]")]
    if kind == "integer":
        return 1
    if path.strip(".") == "operations[0]":  # ExpeL: add a rule, or agree with the first one shown
        shown = prompt.split("EXISTING RULES:\n1. ", 1)
        if len(shown) == 2 and hashed % 2:
            return f"AGREE 1: {shown[1].split(chr(10), 1)[0]}"
        return f"ADD 1: Apply rule {hashed % 5 + 1} before anything else."
    return f"Rule {hashed % 5 + 1} on {path.strip('.')}."


def _self_reply(prompt: str, props: dict, echo: str) -> str:
    """A self critic's reply. It believes an option chosen by a hash of the prompt, and calls the answer right
    when that is the answer; FAKE_LLM_SELF=lenient: it believes the answer and calls it right, always."""
    options = props["believed_answer"]["enum"]
    answer = next((line.split(": ", 1)[1].strip() for line in prompt.splitlines()
                   if line.startswith(("Initial agent response: ", "Student's answer: "))), None)
    if os.environ.get("FAKE_LLM_SELF") == "lenient" and answer in options:
        believed = answer
    else:
        believed = options[int(hashlib.sha256(prompt.encode()).hexdigest(), 16) % len(options)]
    return json.dumps({"verdict": "right" if believed == answer else "wrong", "believed_answer": believed,
                       "correct_answer": f"The correct answer is {believed}.",
                       "local_reason": f"Here {believed} follows from the question.{echo}",
                       "global_reason": f"Check every condition.{echo}"})


class FakeLLM(CustomLLM):
    def completion(self, model, messages, *args, optional_params=None, **kwargs):
        _hold_if_due()
        delay = float(os.environ.get("FAKE_LLM_DELAY", "0"))
        if delay:
            time.sleep(delay)
        fmt = (optional_params or {}).get("response_format") or {}
        schema = (fmt.get("json_schema") or {}).get("schema")
        props = (schema or {}).get("properties", {})
        kind = "answer" if "answer" in props else "critique" if "correct_answer" in props else "summary"
        if kind in os.environ.get("FAKE_LLM_FAIL", "").split(","):
            raise ValueError("the provider refused the call: " + "x" * 900 + os.environ.get("FAKE_LLM_ECHO", ""))
        prompt_tokens = sum(len(m["content"].split()) for m in messages)
        context = os.environ.get("FAKE_LLM_CONTEXT")
        if context and prompt_tokens > int(context):  # as a provider refuses a prompt longer than its context
            raise litellm.ContextWindowExceededError(message=f"{prompt_tokens} tokens > context {context}",
                                                     model=model, llm_provider="fake")
        text = _reply(messages, schema)
        CALLS.append({"model": model, "messages": messages, "seed": (optional_params or {}).get("seed"),
                      "temperature": (optional_params or {}).get("temperature")})
        completion_tokens = len(text.split()) * int(os.environ.get("FAKE_LLM_USAGE_FACTOR", "1"))
        return litellm.ModelResponse(
            id=f"fake-{uuid.uuid4().hex}", model=model,
            choices=[{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            usage=litellm.Usage(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                                total_tokens=prompt_tokens + completion_tokens))

    async def acompletion(self, *args, **kwargs):
        import asyncio

        return await asyncio.to_thread(self.completion, *args, **kwargs)


_HANDLER = FakeLLM()


def register() -> None:
    entries = [e for e in (litellm.custom_provider_map or []) if e.get("provider") != "fake"]
    litellm.custom_provider_map = entries + [{"provider": "fake", "custom_handler": _HANDLER}]
    from litellm.utils import custom_llm_setup

    custom_llm_setup()


if __name__ == "__main__":
    register()
    from critique.cli import main

    sys.exit(main(sys.argv[1:]))
