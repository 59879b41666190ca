"""DSPy's language model inside a run: every call an optimizer makes (the program's answers, MIPROv2's proposer,
GEPA's reflection, SIMBA's rules) is a call of the method's offline stage (critique.engine.field.offline), so it
goes through the run's step (``Run.call``): logged in calls.jsonl, answered from the run's log or the response
cache when it can be, limited, counted against ``--train-budget``.

DSPy runs its optimizer in a worker thread and calls this engine from there; the engine hands each request to
the run's event loop and waits for its answer. The request keeps what DSPy asked for: its messages, the JSON
schema of its outputs (DSPy's JSONAdapter sends one, since this model takes a schema) and its temperature, when
DSPy sets one (a bootstrap round at 1.0); the seed and the length limit are the run's. DSPy strips a rollout's id
before the engine sees a request, so two rollouts of one prompt at one temperature are one request, answered
once."""

from __future__ import annotations

import asyncio

from critique.engine.agents import Prompt

STAGE = "dspy_compile"  # the stage of every call an optimizer makes


STOPPED = "the offline stage stopped"  # how a StageStopped begins


class StageStopped(Exception):
    """The offline stage stopped (its budget was spent, or a call failed): DSPy's optimizer gets no reply."""


class RunEngine:
    """DSPy's engine contract (dspy.clients.engines.base: ``complete(Request) -> Response``) over one Offline
    stage of the run, called from DSPy's threads."""

    def __init__(self, offline, loop: asyncio.AbstractEventLoop, template: str, template_hash: str):
        self.offline, self.loop = offline, loop
        self.template, self.template_hash = template, template_hash

    def complete(self, request):
        return asyncio.run_coroutine_threadsafe(self.ask(request), self.loop).result()

    async def ask(self, request):
        from dspy.lm15 import Message, Response, TextPart, Usage

        schema, name = _schema(request.config.response_format)
        prompt = Prompt(self.template, self.template_hash, _messages(request))
        result = await self.offline.ask(STAGE, None, prompt, schema, name, temperature=request.config.temperature)
        if result is None or result.error is not None:
            raise StageStopped(f"{STOPPED}: {self.offline.stopped}")
        if result.context_overflow:
            raise StageStopped(f"{STOPPED}: the prompt did not fit the model's context")
        return Response(id=None, model=request.model, message=Message.assistant([TextPart(result.text or "")]),
                        finish_reason="stop", usage=Usage(input_tokens=result.prompt_tokens,
                                                          output_tokens=result.completion_tokens,
                                                          total_tokens=result.prompt_tokens + result.completion_tokens))

    def stream(self, request):
        raise NotImplementedError("a run's DSPy engine does not stream")

    def close(self) -> None:
        pass


class AsyncRunEngine:
    """The same engine for DSPy's async calls (from its own event loop, in its thread)."""

    def __init__(self, engine: RunEngine):
        self.engine = engine

    async def complete(self, request):
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self.engine.ask(request), self.engine.loop))

    def stream(self, request):
        raise NotImplementedError("a run's DSPy engine does not stream")

    async def aclose(self) -> None:
        pass


def language_model(engine: RunEngine):
    """A ``dspy.LM`` whose every call is the engine's: no retries of its own (the run's client retries), no cache
    of its own (the run's is the one), and JSON schemas for its outputs (the embedded model is held to them)."""
    import dspy

    class RunLM(dspy.LM):
        @property
        def supports_response_schema(self) -> bool:
            return True

        @property
        def supported_params(self) -> frozenset:
            return frozenset({"response_format"})

    return RunLM("critique/run", engine=engine, async_engine=AsyncRunEngine(engine), cache=False, num_retries=0)


def _messages(request) -> list[dict]:
    messages = []
    if request.system is not None:
        system = request.system if isinstance(request.system, str) else "".join(p.text for p in request.system)
        messages.append({"role": "system", "content": system})
    return messages + [{"role": m.role, "content": m.text or ""} for m in request.messages]


def _schema(response_format) -> tuple[dict, str]:
    """The JSON schema and its name of DSPy's ``response_format`` (any JSON object when it names none)."""
    if isinstance(response_format, dict) and isinstance(response_format.get("schema"), dict):
        return response_format["schema"], str(response_format.get("name") or "outputs")
    return {"type": "object"}, "outputs"
