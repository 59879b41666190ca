"""Where a model's calls go: the name of the endpoint that answers (part of every request's hash), the
provider whose limits a call counts against, and a litellm Router over several endpoints."""

from __future__ import annotations


def endpoint_of(config):  # an LLMConfig (critique.llm.client)
    """What names the server that answers: ``endpoint_id`` if given (identical servers share
    their cached responses under it), else ``api_base``, else the router's endpoints; None for a
    provider's own endpoint."""
    if config.endpoint_id:
        return config.endpoint_id
    if config.api_base:
        return config.api_base
    if config.deployments:
        return sorted(str(d["litellm_params"].get("api_base")) for d in config.deployments)
    return None


def provider_of(model: str) -> str:
    """The provider part of a litellm model string."""
    return model.split("/", 1)[0]


def router(config):  # an LLMConfig with deployments
    """One litellm Router over the model's deployments. This client retries each call itself
    (num_retries=0 per call); the Router only picks the endpoint, and rests one that keeps
    failing while another can answer."""
    import litellm

    model_list = [{"model_name": "critique-model", "litellm_params": dict(d["litellm_params"]),
                   **({"model_info": d["model_info"]} if "model_info" in d else {})} for d in config.deployments]
    options = {"num_retries": 0, "timeout": config.timeout, "disable_cooldowns": len(model_list) < 2}
    if config.routing_strategy:
        options["routing_strategy"] = config.routing_strategy
    return litellm.Router(model_list=model_list, **options)
