"""LLM access: litellm only.

Calls go through a litellm ``Router`` (retries with backoff for rate limits, 5xx and
timeouts, honouring Retry-After; the number of retries comes back with the response).
Responses are cached on disk by the hash of everything that determines them (model,
messages, decoding parameters, schema), shared across runs.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path



@dataclass
class LLMConfig:
    model: str
    temperature: float = 0.0
    max_tokens: int = 8192
    reasoning_effort: str | None = None
    api_base: str | None = None
    seed: int = 0
    concurrency: int = 4
    num_retries: int = 5
    retry_after: float = 0.5  # minimum wait before a retry, seconds
    timeout: float = 600.0
    use_cache: bool = True
    cache_dir: str | None = None


@dataclass
class LLMResult:
    text: str | None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    finish_reason: str | None = None
    latency_s: float = 0.0
    cached: bool = False
    retries: int = 0
    error: str | None = None
    request_hash: str = ""

    @property
    def timeout(self) -> bool:
        return self.finish_reason == "length"


def cache_dir(explicit: str | None = None) -> Path:
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("CRITIQUE_CACHE_DIR", Path.home() / ".cache" / "critique"))


def check_model(config: LLMConfig) -> None:
    """Raise ValueError for a model litellm cannot route, or a hosted model without its key."""
    import litellm

    from critique import local_llm

    provider = config.model.split("/", 1)[0]
    if provider == local_llm.PROVIDER:
        local_llm.gguf_path(config.model.split("/", 1)[1])
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


def response_format(schema: dict, name: str) -> dict:
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}


class LLM:
    """One model, called asynchronously with at most ``concurrency`` calls in flight."""

    def __init__(self, config: LLMConfig):
        import diskcache
        import litellm

        from critique import local_llm

        litellm.drop_params = True  # a provider without json_schema support still gets the call
        litellm.suppress_debug_info = True
        if config.model.startswith(f"{local_llm.PROVIDER}/"):
            local_llm.register()
        self.config = config
        deployment = {"model": config.model}
        if config.api_base:
            deployment["api_base"] = config.api_base
        self._router = litellm.Router(
            model_list=[{"model_name": "critique-model", "litellm_params": deployment}],
            num_retries=config.num_retries, retry_after=config.retry_after, timeout=config.timeout,
            disable_cooldowns=True,
        )
        self._cache = diskcache.Cache(str(cache_dir(config.cache_dir) / "responses")) if config.use_cache else None
        self._slots: asyncio.Semaphore | None = None
        self.calls_made = 0

    def request(self, messages: list[dict], schema: dict, schema_name: str) -> dict:
        """Everything that determines the response."""
        c = self.config
        return {"model": c.model, "messages": messages, "temperature": c.temperature, "max_tokens": c.max_tokens,
                "reasoning_effort": c.reasoning_effort, "seed": c.seed,
                "response_format": response_format(schema, schema_name)}

    @staticmethod
    def request_hash(request: dict) -> str:
        return hashlib.sha256(json.dumps(request, sort_keys=True, ensure_ascii=False).encode()).hexdigest()

    async def complete(self, messages: list[dict], schema: dict, schema_name: str) -> LLMResult:
        request = self.request(messages, schema, schema_name)
        key = self.request_hash(request)
        if self._cache is not None:
            hit = self._cache.get(key)
            if hit is not None:
                return LLMResult(**{**hit, "cached": True, "latency_s": 0.0, "retries": 0, "request_hash": key})
        if self._slots is None:
            self._slots = asyncio.Semaphore(max(1, self.config.concurrency))
        async with self._slots:
            result = await self._call(request)
        result.request_hash = key
        if self._cache is not None and result.error is None:
            self._cache.set(key, {k: v for k, v in asdict(result).items()
                                  if k not in ("cached", "latency_s", "retries", "request_hash")})
        return result

    async def _call(self, request: dict) -> LLMResult:
        params = {k: v for k, v in request.items() if v is not None and k != "model"}
        metadata = {"critique": True}
        started = time.monotonic()
        self.calls_made += 1
        try:
            response = await self._router.acompletion(model="critique-model", metadata=metadata, **params)
        except Exception as exc:  # the final error after litellm's retries
            return LLMResult(None, latency_s=time.monotonic() - started, error=f"{type(exc).__name__}: {exc}"[:1000],
                             retries=int(metadata.get("attempted_retries") or 0))
        return _result(response, time.monotonic() - started)

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()


def _result(response, latency: float) -> LLMResult:
    usage = getattr(response, "usage", None)
    details = getattr(usage, "completion_tokens_details", None)
    headers = (getattr(response, "_hidden_params", None) or {}).get("additional_headers") or {}
    choice = response.choices[0]
    return LLMResult(
        text=choice.message.content,
        prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        reasoning_tokens=int(getattr(details, "reasoning_tokens", 0) or 0),
        finish_reason=choice.finish_reason,
        latency_s=round(latency, 4),
        retries=int(headers.get("x-litellm-attempted-retries") or 0),
    )
