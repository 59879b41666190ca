"""Whether a model can be called as given: one litellm can route (or the embedded model, or a GGUF file), with its
key in the environment unless a server of the user's (--api-base) answers it. Checked before any call."""

from __future__ import annotations


def check_model(config) -> None:
    """Raise ValueError for a model litellm cannot route, or a hosted model without its key (``config``: an
    LLMConfig, critique.llm.client)."""
    import litellm

    from critique.llm import local as local_llm

    provider = config.model.split("/", 1)[0]
    if config.answer_by != "generate" and provider != local_llm.PROVIDER:
        raise ValueError(f"--answer-by {config.answer_by} scores each option with the model's own log-probabilities, "
                         f"which the harness reads from the embedded models only (local/...), not {config.model}")
    if provider == local_llm.PROVIDER:
        local_llm.check(config.model.split("/", 1)[1])  # the packaged model or a GGUF file
        return
    try:
        _, provider, _, _ = litellm.get_llm_provider(config.model, api_base=config.api_base)
    except Exception as exc:  # litellm raises BadRequestError for an unknown provider
        raise ValueError(f"unknown model {config.model!r}: litellm cannot route it "
                         f"(use provider/model, e.g. openai/gpt-4o-mini)") from exc
    if config.api_base:
        return  # a served model (vLLM, Ollama, a proxy) may need no key
    env = litellm.validate_environment(model=config.model)
    if not env.get("keys_in_environment", True):
        raise ValueError(f"model {config.model!r} needs {', '.join(env.get('missing_keys', []))} "
                         f"in the environment")
