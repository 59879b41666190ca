"""What fits a model's context: its window in tokens, and the tokens of a prompt.

The window is ``--context-tokens`` when given (a GGUF file run in process, ``local/PATH.gguf``, is
then loaded with that ``n_ctx``), else the embedded model's ``n_ctx``, else
litellm's ``max_input_tokens`` for the model, else what a served model's server says of it (llama.cpp's
``/props``, vLLM's ``/v1/models``), else unknown (None: nothing is checked, and a pool's critiques are
summarised in one call; for a served model one warning line says so and names ``--context-tokens``).
Prompts are counted with the embedded model's own tokenizer, or litellm's ``token_counter`` (the model's
tokenizer where litellm has it, else tiktoken's), or, when that fails, a conservative estimate from the bytes.
A prompt certainly fits when its UTF-8 bytes do, with room for the chat template (a token is at least one byte), and is
then not counted at all.
"""

from __future__ import annotations

import json
import sys
import urllib.request
from urllib.parse import urlsplit, urlunsplit

MIN_REPLY = 64  # tokens a prompt leaves at least for the reply (the embedded model shares its window with it)
TEMPLATE_ROOM = 64  # tokens of the chat template around the messages, at most (a pessimistic bound)


PROBE_TIMEOUT_S = 5  # how long a server is given to say its context (an answer, else the window is unknown)
_WARNED: set[tuple[str, str]] = set()  # (model, server) whose unknown window was said, once per process


def window(model: str, context_tokens: int | None, local: dict | None, api_base: str | None = None) -> int | None:
    """The model's context window in tokens, or None when it is not known."""
    if context_tokens:
        return int(context_tokens)
    if local is not None:
        return int(local["n_ctx"])
    known = _litellm_window(model)
    if known is None and api_base:
        known = served_window(api_base)
        if known is None and (model, api_base) not in _WARNED:
            _WARNED.add((model, api_base))
            print(f"critique: warning: the context window of {model} is unknown (litellm does not know the model and "
                  "its server does not say): prompts are sent unchecked and each pool's critiques are summarised in "
                  "one call; give --context-tokens N, the server's context (llama-cpp-python's server: 2048 unless "
                  "started with --n_ctx)", file=sys.stderr)
    return known


def _litellm_window(model: str) -> int | None:
    import litellm

    try:
        info = litellm.get_model_info(model)
    except Exception:  # noqa: BLE001 - litellm raises for a model it has no information on
        return None
    value = info.get("max_input_tokens") if isinstance(info, dict) else None
    return int(value) if isinstance(value, int) and value > 0 else None


def served_window(api_base: str) -> int | None:
    """The context a served model's server says it runs with: llama.cpp's ``/props`` (``n_ctx``, or that of its
    ``default_generation_settings``), else its ``/v1/models`` (vLLM's ``max_model_len``, llama.cpp's
    ``meta.n_ctx``); None when it says nothing."""
    parts = urlsplit(api_base)
    path = parts.path.rstrip("/")
    root = path[:-3] if path.endswith("/v1") else path
    props = _get_json(urlunsplit(parts._replace(path=f"{root}/props")))
    if isinstance(props, dict):
        found = props.get("n_ctx") or (props.get("default_generation_settings") or {}).get("n_ctx")
        if isinstance(found, int) and found > 0:
            return found
    models = _get_json(urlunsplit(parts._replace(path=f"{path}/models")))
    entries = models.get("data") if isinstance(models, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict):
            continue
        found = entry.get("max_model_len") or (entry.get("meta") or {}).get("n_ctx")
        if isinstance(found, int) and found > 0:
            return found
    return None


def _get_json(url: str):
    """The JSON a GET of ``url`` answers, or None (no server, no such page, no JSON)."""
    try:
        with urllib.request.urlopen(url, timeout=PROBE_TIMEOUT_S) as reply:
            return json.loads(reply.read(1_000_000))
    except (OSError, ValueError):
        return None


def prompt_limit(window_tokens: int, max_tokens: int) -> int:
    """Tokens a prompt may hold and still be sent: the window less a little room for the reply."""
    return window_tokens - min(max_tokens, MIN_REPLY)


def summary_budget(window_tokens: int, max_tokens: int) -> int:
    """Tokens a summary prompt may hold: the window less room for an advice list (a quarter of the
    window, at most max_tokens, at least MIN_REPLY)."""
    return window_tokens - min(max_tokens, max(MIN_REPLY, window_tokens // 4))


def text(messages: list[dict]) -> str:
    """The prompt's words: its messages' contents, one per line (what every count below reads)."""
    return "\n".join(str(m.get("content") or "") for m in messages)


def surely_fits(messages: list[dict], limit: int) -> bool:
    """True when the prompt fits ``limit`` tokens whatever the tokenizer (each token is one byte or more)."""
    return len(text(messages).encode("utf-8")) + 16 * len(messages) + TEMPLATE_ROOM <= limit


def estimate(messages: list[dict]) -> int:
    """A conservative count when no tokenizer answers: one token per three bytes, plus the template."""
    return -(-len(text(messages).encode("utf-8")) // 3) + 16 * len(messages) + TEMPLATE_ROOM


def count(model: str, messages: list[dict]) -> int:
    """Tokens of the prompt ``messages`` for a litellm ``model`` (the embedded model counts its own:
    critique.llm.local.count_tokens)."""
    import litellm

    try:
        return int(litellm.token_counter(model=model, messages=messages))
    except Exception:  # noqa: BLE001 - no tokenizer for this model: the estimate
        return estimate(messages)
