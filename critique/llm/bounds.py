"""Length bounds of a reply's fields: JSON Schema ``maxLength`` (strings) and ``maxItems`` (arrays).

The project's schemas say how long each field of a reply may be (critique.engine.parsing), and
only the embedded model is held to that, by its grammar: a 135M model otherwise writes until the
token limit. A served model (``--api-base``: llama.cpp's or llama-cpp-python's server, vLLM) gets the
same bounds in its schema, which its grammar then holds, so that the two are comparable; a hosted
API gets the schema without length keywords (strict structured outputs refuse them), so its replies
are bounded by the token limit alone. A string that reached its bound was cut by the grammar:
``cut_fields`` names those fields for the call record.
"""

from __future__ import annotations

import copy
import json
import os

# A string field without a bound of its own gets this many characters (the embedded model's grammar, a served
# model's schema): a 135M model otherwise rambles until the token limit.
MAX_STRING_CHARS = int(os.environ.get("CRITIQUE_LOCAL_MAX_STRING", "80"))

KEYWORDS = ("maxLength", "minLength", "maxItems", "minItems")


def _walk(schema, visit) -> None:
    if isinstance(schema, dict):
        visit(schema)
        for value in schema.values():
            _walk(value, visit)
    elif isinstance(schema, list):
        for value in schema:
            _walk(value, visit)


def strip(schema: dict) -> dict:
    """``schema`` without length keywords (what a provider other than the embedded model gets)."""
    schema = copy.deepcopy(schema)

    def visit(node: dict) -> None:
        if isinstance(node.get("type"), str):
            for key in KEYWORDS:
                node.pop(key, None)

    _walk(schema, visit)
    return schema


def bounded(schema: dict, default_chars: int) -> dict:
    """``schema`` with ``maxLength = default_chars`` on every free string that has no bound of its own."""
    schema = copy.deepcopy(schema)

    def visit(node: dict) -> None:
        if node.get("type") == "string" and "enum" not in node:
            node.setdefault("maxLength", default_chars)

    _walk(schema, visit)
    return schema


def for_model(schema: dict, embedded: bool, served: bool) -> dict:
    """The schema a request carries: the embedded model's as it is (its provider bounds it), a served model's with
    the embedded model's bounds (``bounded``), a hosted API's without any (``strip``)."""
    if embedded:
        return schema
    return bounded(schema, MAX_STRING_CHARS) if served else strip(schema)


def cut_fields(schema: dict, text: str | None) -> list[str]:
    """Paths (``local_reason``, ``advice[2]``) of the reply's strings that reached their ``maxLength``."""
    try:
        value = json.loads(text or "", strict=False)
    except (ValueError, RecursionError):
        return []
    found: list[str] = []

    def visit(node, value, path: str) -> None:
        if not isinstance(node, dict):
            return
        if isinstance(value, str) and isinstance(node.get("maxLength"), int) and len(value) >= node["maxLength"]:
            found.append(path or "(reply)")
        elif isinstance(value, dict):
            for key, sub in (node.get("properties") or {}).items():
                if key in value:
                    visit(sub, value[key], f"{path}.{key}" if path else key)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                visit(node.get("items"), item, f"{path}[{i}]")

    visit(schema, value, "")
    return found
