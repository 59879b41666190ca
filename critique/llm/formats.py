"""How a request asks for JSON (``--response-format``): servers constrain output in different ways.

- ``json_schema``: OpenAI's ``{"type": "json_schema", "json_schema": {name, schema, strict}}`` (hosted APIs, vLLM,
  the embedded model);
- ``json_object``: ``{"type": "json_object", "schema": SCHEMA}``, the form llama-cpp-python's own server
  (``python -m llama_cpp.server``) takes; it answers the first with HTTP 500. That server also penalises
  repeated tokens by default (repeat_penalty 1.1, unlike its library and other servers), so a request in this
  form asks for none (``repeat_penalty`` 1.0), as the embedded model runs;
- ``none``: no ``response_format``; the prompt's last message asks for one JSON object that follows the schema,
  and the reply is parsed as any other (critique.engine.parsing.json_object finds the object in the text);
- ``auto`` (the default): ``json_schema`` until the server refuses it. A served model (``--api-base``) whose
  first call is refused (HTTP 400, 422 or 500 naming the response_format, before any call was answered) is
  asked again at once in the next form, and the form it answers is the one the run keeps (the manifest's
  ``response_format``).

Requests are built in the ``json_schema`` form and keyed by it (critique.llm.client), so a run's log and the
response cache hold the same keys whichever form the server took; the form sent is the manifest's.
"""

from __future__ import annotations

import json

FORMS = ("json_schema", "json_object", "none")
AUTO = "auto"
REFUSALS = (400, 422, 500)  # what a server that cannot take a response_format answers
NAMED = ("response_format", "json_schema", "json_object")  # what its words name


def first(asked: str) -> str:
    """The form a client starts with."""
    return FORMS[0] if asked == AUTO else asked


def following(form: str) -> str | None:
    """The form ``auto`` tries after ``form`` is refused; None after the last."""
    index = FORMS.index(form)
    return FORMS[index + 1] if index + 1 < len(FORMS) else None


def instruction(schema: dict) -> str:
    """What the last message asks for when the request carries no response_format."""
    return ("\n\nReply with one JSON object that follows this JSON schema, and nothing else:\n"
            + json.dumps(schema, sort_keys=True))


def in_form(params: dict, form: str) -> dict:
    """``params`` (of a request built in the json_schema form) as sent in ``form``."""
    spec = params.get("response_format")
    if form == "json_schema" or not isinstance(spec, dict) or spec.get("type") != "json_schema":
        return params
    schema = spec["json_schema"]["schema"]
    if form == "json_object":
        extra = {**(params.get("extra_body") or {}), "repeat_penalty": 1.0}
        return {**params, "response_format": {"type": "json_object", "schema": schema}, "extra_body": extra}
    messages = [dict(m) for m in params["messages"]]
    messages[-1]["content"] = f"{messages[-1]['content']}{instruction(schema)}"
    return {**{k: v for k, v in params.items() if k != "response_format"}, "messages": messages}


def refused(error: Exception) -> bool:
    """The server refused the request's response_format: a status such a refusal gets, with words that name it (a
    transient HTTP 500, or a refused key, is no refusal of the form: it is retried, or reported, as any error)."""
    status = getattr(error, "status_code", None)
    text = str(error).lower()
    return isinstance(status, int) and status in REFUSALS and any(word in text for word in NAMED)


def learns(config, answered: int, tried: str, current: str, error: Exception) -> bool:
    """Whether a client (its LLMConfig ``config``, ``answered`` calls answered so far) leaves the form ``tried``
    after ``error``: --response-format auto, a served model that has answered no call yet, a refusal, and ``tried``
    still the client's ``current`` form (calls in flight refused together move on once); never the last form."""
    return (config.response_format == AUTO and config.api_base is not None and answered == 0 and tried == current
            and following(tried) is not None and refused(error))


def record(client) -> dict:
    """The manifest's ``response_format`` of a client (critique.llm.client.LLM): the form asked for, the form its
    requests are sent in, and the refusals that made auto leave a form."""
    return {"asked": client.config.response_format, "used": client.form, "refused": dict(client.refused)}
