"""What fits a model's context: its window in tokens, and the tokens of a prompt.

The window is ``--context-tokens`` when given (a GGUF file run in process, ``local/PATH.gguf``, is
then loaded with that ``n_ctx``), else the embedded model's ``n_ctx``, else
litellm's ``max_input_tokens`` for the model, else unknown (None: nothing is checked, and a
pool's critiques are summarised in one call). Prompts are counted with the embedded model's own
tokenizer, or litellm's ``token_counter`` (the model's tokenizer where litellm has it, else
tiktoken's), or, when that fails, a conservative estimate from the bytes. A prompt certainly fits
when its UTF-8 bytes do, with room for the chat template (a token is at least one byte), and is
then not counted at all.
"""

from __future__ import annotations

MIN_REPLY = 64  # tokens a prompt leaves at least for the reply (the embedded model shares its window with it)
TEMPLATE_ROOM = 64  # tokens of the chat template around the messages, at most (a pessimistic bound)


def window(model: str, context_tokens: int | None, local: dict | None) -> int | None:
    """The model's context window in tokens, or None when it is not known."""
    if context_tokens:
        return int(context_tokens)
    if local is not None:
        return int(local["n_ctx"])
    import litellm

    try:
        info = litellm.get_model_info(model)
    except Exception:  # noqa: BLE001 - litellm raises for a model it has no information on
        return None
    value = info.get("max_input_tokens") if isinstance(info, dict) else None
    return int(value) if isinstance(value, int) and value > 0 else None


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
