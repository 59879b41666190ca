"""Length bounds of a reply's fields: JSON Schema ``maxLength`` (strings) and ``maxItems`` (arrays).

The project's schemas say how long each field of a reply may be (critique.engine.parsing), and
only the embedded model is held to that, by its grammar: a 135M model otherwise writes until the
token limit. Other providers get the schema without length keywords (strict structured outputs
refuse them), so their replies are bounded by the token limit alone. A string that reached its
bound was cut by the grammar: ``cut_fields`` names those fields for the call record.
"""

from __future__ import annotations

import copy
import json

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
