"""What litellm is asked besides the messages: a run's reasoning effort (medium for a reasoning
model unless told otherwise, as in the paper), and the parameters litellm drops for a model
(``drop_params``: never silently, the run's manifest lists them per model)."""

from __future__ import annotations

from critique.base.config import DEFAULT_EFFORT


def is_reasoning_model(model: str) -> bool:
    """litellm's model information says the model reasons (``supports_reasoning``); False for a
    model litellm does not know (a served model: give --reasoning-effort) and for the embedded one."""
    import litellm

    from critique.llm import local as local_llm

    if model.split("/", 1)[0] == local_llm.PROVIDER:
        return False
    litellm.suppress_debug_info = True  # an unknown provider would print litellm's provider list
    try:
        return bool(litellm.supports_reasoning(model=model))
    except Exception:  # noqa: BLE001 - litellm raises for models it does not know
        return False


def run_effort(model: str, given: str | None) -> str | None:
    """A run's reasoning effort as its manifest records it: the one given (``"none"``: send none),
    else DEFAULT_EFFORT for a reasoning model (as the paper), else None (none sent)."""
    if given is not None:
        return given
    return DEFAULT_EFFORT if is_reasoning_model(model) else None


# The request's keys that are not provider parameters: what the cache key covers besides them.
NOT_PARAMS = ("model", "messages", "local", "endpoint", "response_form", "answer_by", "content_free")


def dropped_by_litellm(model: str, params: dict) -> list[str]:
    """The parameters of ``params`` (name -> value as sent) that litellm drops for ``model``
    (``drop_params``): those that add nothing to the provider's request when passed alone."""
    import logging

    import litellm
    from litellm.utils import get_optional_params

    try:
        name, provider, _, _ = litellm.get_llm_provider(model)
    except Exception:  # noqa: BLE001 - a model litellm cannot route: check_model says so before a run
        return []
    logger = logging.getLogger("LiteLLM")
    level = logger.level
    logger.setLevel(logging.ERROR)  # litellm warns about some drops (not all): the caller reports them all
    try:
        base = set(get_optional_params(model=name, custom_llm_provider=provider, drop_params=True))
        dropped = []
        for key, value in params.items():
            try:
                alone = set(get_optional_params(model=name, custom_llm_provider=provider, drop_params=True,
                                                **{key: value}))
            except Exception:  # noqa: BLE001 - a parameter litellm refuses outright: the call itself will say so
                continue
            if not alone - base:
                dropped.append(key)
        return dropped
    finally:
        logger.setLevel(level)


def dropped_for(client) -> dict[str, list[str]]:
    """Per model (each deployment's, with several), the parameters of ``client``'s requests (critique.llm.client.LLM)
    that litellm drops because the provider does not support them."""
    import litellm

    litellm.suppress_debug_info = True
    request = client.request([{"role": "user", "content": "?"}], {"type": "object", "properties": {}}, "answer")
    params = {k: v for k, v in request.items() if v is not None and k not in NOT_PARAMS}
    models = [d["litellm_params"]["model"] for d in client.config.deployments or []] or [client.config.model]
    return {model: dropped_by_litellm(model, params) for model in dict.fromkeys(models)}
