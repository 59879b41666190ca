"""LLM access: litellm only.

Each call is ``litellm.acompletion`` (or, with ``deployments``, a litellm ``Router`` over
several endpoints), one attempt at a time: this module retries
what a retry can cure (rate limits, 5xx, timeouts, dropped connections, malformed
bodies), waiting as the provider's Retry-After says or with exponential backoff, and
records how many retries a call took. A call waiting for its retry keeps its slot, so a
rate-limited provider sees fewer calls in flight. Every attempt has a deadline
(``timeout``), so a hung connection ends in a retried timeout. A call that still fails
comes back with ``error`` set; it never raises (unless told to stop: ``Stopped``). Responses are
cached on disk by the hash of everything that determines them (model, messages, decoding
parameters, schema, endpoint), shared across runs. Provider limits shared with other
clients (``limits``) and a stop signal (``stop``) are options of the client.

A prompt that does not fit the model's context window (critique.llm.context: ``--context-tokens``,
the embedded model's n_ctx, or litellm's model information) is not sent and never truncated:
the result says ``context_overflow``, as it does when a provider refuses a prompt as too long.
Only the embedded model is held to the length bounds of a schema (critique.llm.bounds); its
result names the strings that reached theirs (``cut_fields``).

With ``processes`` > 1 (``--call-processes``) each attempt runs in one of that many worker
processes (critique.llm.workers), for hundreds of calls in flight; the rest of a call (cache,
slots, retries, redaction) stays here, and the records are the same.

Why not the Router's own retries: for one endpoint the Router buys nothing and costs 2 ms
of CPU per call at 8 calls in flight, 4 to 8 ms at 32 (up to half the client's CPU; see
bench/THROUGHPUT.md); its backoff also waits at least half a second plus jitter, and it
reads Retry-After in whole seconds only.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
import time
from dataclasses import asdict, dataclass

from critique.base.config import RunConfig
from critique.base.errors import RunError, Stopped
from critique.base.paths import cache_dir
from critique.base.rundir import add_param_secrets, add_url_secrets, redact, redact_value
from critique.llm import bounds, context, formats, loglikelihood
from critique.llm.price import price_of, unknown
from critique.llm.response_cache import ResponseCache
from critique.llm.spend import SpendCapReached
from critique.llm.routing import endpoint_of, provider_of, router
from critique.llm.params import NOT_PARAMS, dropped_for, run_effort
from critique.llm.attempt import (RETRY_STATUS, CallFailed, MalformedResponse, backoff, context_exceeded,  # noqa: F401
                                  describe, fields_of, incurable, outage, retry_after_of, retryable)

# Calls in a row that failed, with no answer between them, after which a client stops making calls (_fail_fast):
# an outage fails calls with errors that differ (429, 500, 503, a body that is no reply), not with one error.
FAILURES_IN_A_ROW = 10


@dataclass
class LLMConfig:
    """How one model is called; the defaults shared with a run are RunConfig's."""
    model: str
    temperature: float = RunConfig.temperature
    max_tokens: int = RunConfig.max_tokens
    reasoning_effort: str | None = None
    api_base: str | None = None
    seed: int = RunConfig.seed
    concurrency: int = RunConfig.concurrency
    num_retries: int = RunConfig.num_retries  # retries after the first attempt
    retry_after: float = 0.5  # first backoff wait, seconds; doubles per retry up to max_backoff
    max_backoff: float = 30.0
    timeout: float = RunConfig.timeout  # seconds per attempt
    use_cache: bool = RunConfig.use_cache
    cache_dir: str | None = None
    deployments: list[dict] | None = None  # several endpoints of the model (litellm Router model_list entries)
    routing_strategy: str | None = None  # the Router's, with deployments
    endpoint_id: str | None = None  # the name an endpoint's responses are cached under (default: its URL)
    processes: int = RunConfig.call_processes  # > 1: attempts run in that many worker processes (workers.py)
    context_tokens: int | None = None  # the model's context window (None: the embedded model's, else litellm's)
    cache_size_gb: float = RunConfig.cache_size_gb  # the response cache's size limit
    price: str | None = None  # "IN,OUT" dollars per million tokens (None: litellm's price table; critique.llm.price)
    response_format: str = RunConfig.response_format  # how a request asks for JSON (critique.llm.formats)
    answer_by: str = RunConfig.answer_by  # an answer written by the model, or its best-scored option


def llm_config(run: RunConfig) -> LLMConfig:
    """How a run's model is called (its reasoning effort as ``run_effort`` resolves it)."""
    effort = run_effort(run.model, run.reasoning_effort)
    return LLMConfig(model=run.model, temperature=run.temperature, max_tokens=run.max_tokens,
                     reasoning_effort=None if effort == "none" else effort, api_base=run.api_base, seed=run.seed,
                     concurrency=run.concurrency, use_cache=run.use_cache, cache_dir=run.cache_dir,
                     timeout=run.timeout, num_retries=run.num_retries, endpoint_id=run.endpoint_id,
                     processes=run.call_processes, context_tokens=run.context_tokens,
                     cache_size_gb=run.cache_size_gb, price=run.price, response_format=run.response_format,
                     answer_by=run.answer_by)


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
    context_overflow: bool = False  # the prompt did not fit the context: not sent (or refused as too long)
    cut_fields: list[str] | None = None  # the embedded model: the reply's strings cut at their length bound
    option_scores: dict | None = None  # --answer-by loglikelihood|calibrated: each option's log-likelihood
    content_free_scores: dict | None = None  # --answer-by calibrated: the same after the content-free prompt

    @property
    def timeout(self) -> bool:
        return self.finish_reason == "length"


def response_format(schema: dict, name: str) -> dict:
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}


class LLM:
    """One model, called asynchronously with at most ``concurrency`` calls in flight."""

    def __init__(self, config: LLMConfig, limits=None, stop=None, spend=None):
        """``limits``: provider limits shared with other clients (critique.llm.limits); ``stop``: a
        function that says the run must stop, asked before every attempt (then ``Stopped``); ``spend``: a cap in
        dollars shared with other clients (critique.llm.spend), which needs a known price."""
        import litellm

        from critique.llm import local as local_llm

        litellm.drop_params = True  # a provider without json_schema support still gets the call (dropped_params)
        litellm.suppress_debug_info = True
        self.local = None
        if config.model.startswith(f"{local_llm.PROVIDER}/"):
            local_llm.register()
            self.local = local_llm.settings(config.model.split("/", 1)[1], config.context_tokens)
        self.config = config
        add_url_secrets(config.api_base)  # every credential it is given, from any source, is redacted
        for deployment in config.deployments or []:
            add_param_secrets(deployment.get("litellm_params") or {})
        self._router = router(config) if config.deployments else None
        self._limits = limits
        self._stop = stop
        self.price = price_of(config.model, config.price)  # None: unknown (critique.llm.price)
        if spend is not None and self.price is None:
            raise ValueError(f"--max-cost needs a price: {unknown(config.model)}")
        self._spend = spend
        self.form = formats.first(config.response_format)  # the form requests are sent in (auto: learned)
        self.refused: dict[str, str] = {}  # form -> the refusal that made auto leave it
        self._cache = self._open_cache() if config.use_cache else None
        self._slots: asyncio.Semaphore | None = None
        # the embedded model computes one reply at a time: more calls in flight only queue
        self.concurrency = 1 if config.model.startswith(f"{local_llm.PROVIDER}/") else max(1, config.concurrency)
        self.calls_made = 0
        self._answered = 0  # calls the provider answered (not the cache)
        self._streak: list[str] = []  # the errors of the last calls that failed in a row
        self._fatal: str | None = None  # why this client makes no more calls (fail_fast)
        self._capped: str | None = None  # the cap this client reached (what it said): it makes no more calls
        self._window: tuple[int | None] | None = None  # (the context window,) once asked: context_window
        self._processes = None  # the worker processes of the attempts, started on the first one
        if config.processes > 1 and self.local is None and not config.deployments:
            from critique.llm.workers import CallProcesses

            self._processes = CallProcesses(config.processes, {"model": config.model, "api_base": config.api_base,
                                                               "timeout": config.timeout})

    def request(self, messages: list[dict], schema: dict, schema_name: str, seed: int | None = None,
                temperature: float | None = None, content_free: list[dict] | None = None) -> dict:
        """Everything that determines the response; ``seed``: this request's own (default: the run's), for
        independent samples of one prompt; ``temperature``: this request's own (default: the run's);
        ``content_free``: the prompt with a content-free question, which ``--answer-by calibrated`` scores too."""
        c = self.config
        schema = bounds.for_model(schema, embedded=self.local is not None, served=c.api_base is not None)
        temperature = c.temperature if temperature is None else temperature
        request = {"model": c.model, "messages": messages, "temperature": temperature, "max_tokens": c.max_tokens,
                   "reasoning_effort": c.reasoning_effort, "seed": c.seed if seed is None else seed,
                   "response_format": response_format(schema, schema_name)}
        if c.response_format not in (formats.AUTO, formats.FORMS[0]):
            request["response_form"] = c.response_format  # another form asked for: another reply (keyed apart)
        if self.local is not None:
            request["local"] = self.local  # the embedded model's own settings decide the reply too
        loglikelihood.scored(request, schema, c.answer_by, content_free)
        endpoint = endpoint_of(c)
        if endpoint is not None:  # another server under the same model name may answer otherwise
            request["endpoint"] = endpoint
        return request

    def dropped_params(self) -> dict[str, list[str]]:
        """Per model (each deployment's, with several), the parameters of this client's requests that
        litellm drops because the provider does not support them: the run's manifest lists them."""
        return dropped_for(self)

    @property
    def context_window(self) -> int | None:
        """The model's context window in tokens (None: unknown), found on first use (critique.llm.context.window:
        a served model's server may be asked, and an unknown window is said then, not by a run that makes no call)."""
        if self._window is None:
            c = self.config
            self._window = (context.window(c.model, c.context_tokens, self.local, c.api_base),)
        return self._window[0]

    def _check_stop(self) -> None:
        if self._fatal is not None:
            raise RunError(self._fatal)
        if self._capped is not None:  # a smaller call could still fit: the run stops at the first that does not
            raise SpendCapReached(self._capped)
        if self._spend is not None:
            self._spend.check()
        if self._stop is not None and self._stop():
            raise Stopped(f"{self.config.model}: stopped before a call (the study was interrupted or is gone)")

    def _reserve(self, messages: list[dict]) -> float:
        """Reserve what a call of ``messages`` could cost at most (critique.llm.spend); SpendCapReached, then and for
        every later call of this client, when it could pass the cap."""
        try:
            return self._spend.take(self.price, self.count_tokens(messages), self.config.max_tokens)
        except SpendCapReached as exc:
            self._capped = str(exc)
            raise

    # ---- the response cache (critique.llm.response_cache: busy, unwritable or corrupt, never a traceback) ----
    def _open_cache(self) -> ResponseCache:
        return ResponseCache(cache_dir(self.config.cache_dir) / "responses", int(self.config.cache_size_gb * 2**30))

    @staticmethod
    def request_hash(request: dict) -> str:
        return hashlib.sha256(json.dumps(request, sort_keys=True, ensure_ascii=False).encode()).hexdigest()

    def count_tokens(self, messages: list[dict]) -> int:
        """Tokens of a prompt for this model (critique.llm.context)."""
        if self.local is not None:
            from critique.llm import local as local_llm

            return local_llm.count_tokens(self.config.model.split("/", 1)[1], messages)
        return context.count(self.config.model, messages)

    def fits(self, messages: list[dict], limit: int) -> bool:
        """The prompt holds at most ``limit`` tokens (counted only when its bytes could exceed it)."""
        return context.surely_fits(messages, limit) or self.count_tokens(messages) <= limit

    def overflows(self, messages: list[dict]) -> bool:
        """The prompt leaves no room for a reply in the context window (never, when the window is unknown)."""
        window = self.context_window
        return window is not None and not self.fits(messages, context.prompt_limit(window, self.config.max_tokens))

    async def complete(self, messages: list[dict], schema: dict, schema_name: str, cache: bool = True,
                       seed: int | None = None) -> LLMResult:
        """One call; ``cache=False``: the response cache is neither read nor written (an independent trial);
        ``seed``: the request's own seed (``request``)."""
        request = self.request(messages, schema, schema_name, seed)
        return await self.send(request, self.request_hash(request), cache)

    async def send(self, request: dict, key: str, cache: bool = True) -> LLMResult:
        """One call of ``request`` (``request``), whose hash ``key`` the caller has computed once;
        ``cache=False``: the response cache is neither read nor written."""
        result = await self._complete(request, key, cache)
        if self.local is not None and result.text is not None:  # which strings the grammar cut at their bound
            schema = request["response_format"]["json_schema"]["schema"]
            result.cut_fields = bounds.cut_fields(bounds.bounded(schema, self.local["max_string_chars"]), result.text)
        return result

    async def _complete(self, request: dict, key: str, cache: bool) -> LLMResult:
        store = self._cache if cache else None
        messages = request["messages"]
        if self.overflows(messages):  # never sent, never truncated (nor taken from the cache): the caller records it
            return LLMResult(None, prompt_tokens=self.count_tokens(messages), context_overflow=True, request_hash=key)
        if store is not None:
            hit = self._cache.get(key)
            if hit is not None:
                return LLMResult(**{**hit, "cached": True, "latency_s": 0.0, "retries": 0, "request_hash": key})
        self._check_stop()
        result, bound = None, None
        try:
            if self._slots is None:
                self._slots = asyncio.Semaphore(self.concurrency)
            async with self._slots:  # a call queued in this client holds no provider slot, and reserves nothing
                # under --max-cost: what the call could cost at most is reserved, or SpendCapReached (llm.spend)
                bound = None if self._spend is None else self._reserve(messages)
                if self._limits is None:
                    result = await self._call(request)
                else:
                    async with self._limits.slot(provider_of(self.config.model)):
                        result = await self._call(request)
        finally:
            if bound is not None:  # the reservation becomes what the call cost (nothing, if it never answered)
                self._spend.settle(bound, self.cost_of(result) if result is not None else 0.0)
        result.request_hash = key
        if store is not None and result.error is None and not result.context_overflow:
            self._cache.set(key, redact_value({k: v for k, v in asdict(result).items()
                                               if k not in ("cached", "latency_s", "retries", "request_hash",
                                                            "context_overflow", "cut_fields")}))
        return result

    def cost_of(self, result: LLMResult) -> float | None:
        """Dollars of a result's tokens at this client's price; None when no price is known."""
        if self.price is None:
            return None
        return self.price.cost(result.prompt_tokens, result.completion_tokens)

    async def _call(self, request: dict) -> LLMResult:
        """Attempts until one succeeds, the error is not worth a retry, or the retries are spent."""
        params = {k: v for k, v in request.items() if v is not None and k not in NOT_PARAMS}
        params["messages"] = request["messages"]
        started = time.monotonic()
        self.calls_made += 1
        retries = 0
        while True:
            self._check_stop()
            form = self.form
            try:
                fields = await (self._score(request) if "answer_by" in request
                                else self._attempt(formats.in_form(params, form)))
                self._answered, self._streak = self._answered + 1, []
                return LLMResult(**fields, latency_s=round(time.monotonic() - started, 4), retries=retries)
            except Exception as exc:  # noqa: BLE001 - every failure of the call is reported, none raised
                error = exc
            if formats.learns(self.config, self._answered, form, self.form, error):  # ask at once in the next form
                self.refused[form] = redact(describe(error))[:300]
                self.form = formats.following(form)
                continue
            if context_exceeded(error):  # the provider's own word that the prompt is too long: an overflow
                return LLMResult(None, latency_s=round(time.monotonic() - started, 4), retries=retries,
                                 context_overflow=True)
            text = redact(describe(error))
            cure = incurable(text)
            if retries >= self.config.num_retries or not retryable(error) or cure:
                self._fail_fast(text, cure)
                return LLMResult(None, latency_s=round(time.monotonic() - started, 4), retries=retries,
                                 error=text[:1000])  # redact, then cut
            await asyncio.sleep(backoff(retries, self.config.retry_after, self.config.max_backoff,
                                        retry_after_of(error)))
            retries += 1

    def _fail_fast(self, text: str, cure: str | None) -> None:
        """Make no more calls (every later one raises RunError; this one's failure is still recorded) when the
        first call the provider answers fails with an error no retry can cure, or when FAILURES_IN_A_ROW calls in
        a row fail, whatever their errors."""
        if cure is not None and self._answered == 0:
            self._fatal = (f"{self.config.model}: the first call failed with an error no retry can cure "
                           f"({text[:300]}): {cure}; no more calls are made. What is logged stays; run the same "
                           "command again once it is fixed")
        else:
            self._streak.append(text[:300])
            if len(self._streak) >= FAILURES_IN_A_ROW:
                self._fatal = outage(self.config.model, self._streak)

    async def _attempt(self, params: dict) -> dict:
        """One request: the LLMResult fields of the reply. The outer deadline is a guard in case a
        provider ignores ``timeout`` (or a worker process its own deadline)."""
        import litellm

        c = self.config
        if self._processes is not None and self._router is None:
            return await asyncio.wait_for(self._processes.attempt(params), c.timeout + 60)
        if self._router is not None:
            call = self._router.acompletion(model="critique-model", num_retries=0, **params)
        else:
            call = litellm.acompletion(model=c.model, api_base=c.api_base, timeout=c.timeout, max_retries=0, **params)
        return fields_of(await asyncio.wait_for(call, c.timeout + 30))

    async def _score(self, request: dict) -> dict:
        """An answer by log-likelihood: the embedded model scores the schema's options (critique.llm.local)."""
        from critique.llm import local as local_llm

        options = loglikelihood.options_of(request["response_format"]["json_schema"]["schema"])
        name = self.config.model.removeprefix(f"{local_llm.PROVIDER}/")  # what litellm hands a completion: a path
        return await local_llm.handler().ascore(name, request["messages"], options, request.get("content_free"))

    def close(self) -> None:
        if self._processes is not None:
            self._processes.close()
        if self._cache is not None:
            self._cache.close()
            if self._cache.evictions:
                print(f"critique: warning: the response cache {self._cache.folder} evicted {self._cache.evictions} "
                      f"older entries to stay within its size limit ({self.config.cache_size_gb:g} GB, "
                      "--cache-size-gb): their calls would be made again", file=sys.stderr)
