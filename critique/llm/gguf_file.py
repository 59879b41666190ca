"""A GGUF file the user names (``local/PATH.gguf``): checked, identified and read for the embedded
model's backend (critique.llm.local).

The part of the model string after ``local/`` is the path, as written: ``local//home/u/m.gguf``
is the absolute path ``/home/u/m.gguf``, ``local/./m.gguf`` and ``local/models/m.gguf`` are
relative to the working directory, ``~`` is the home folder. The name ``smollm2`` alone is the
packaged model (a file of that name is ``local/./smollm2``).

A file is refused before any call, in one line naming it, when it is missing, unreadable, not
GGUF, cut short (its tensors run past its end), or of an architecture llama.cpp does not know. The
prompts are chats: a file that carries a chat template (``tokenizer.chat_template``: an instruct
model) formats them with it (the form ``gguf``); a file without one (a base model) reads them as
plain text in the completion form (``completion``: COMPLETION, the system text, then each question
and each earlier answer after ``Answer:``, ending with the cue ``Answer:``, as lm-eval and HELM
prompt base models), and the manifest's ``local_model.chat_template`` records which. Its identity
(size, sha256 of the whole file) is part of every request and of the manifest, so runs on other
weights are other experiments; the sha256 is computed once per file (a few seconds for a 7B model)
and remembered in the cache folder under the file's path, size and modification time.
"""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

MAGIC = b"GGUF"
DEFAULT_CHAT = "chat_template.default"  # llama-cpp-python's name for the file's own template
TEMPLATE_KEY = "tokenizer.chat_template"
OWN, COMPLETION_FORM = "gguf", "completion"  # how a file's prompts are formatted: its own template, or COMPLETION
# The completion form: a chat as the plain text a base model continues. The system text, each user message (a
# question, with its examples), each assistant message (an earlier answer) right after the cue, and the cue last:
# the model's reply is what follows "Answer:", as an earlier answer does (the same tokens where an answer is scored
# by log-likelihood). Part of every request (``local_model.completion_sha256``).
COMPLETION = ("{{ bos_token }}"
              "{% for message in messages %}"
              "{% if message['role'] == 'assistant' %}Answer:{{ message['content'] }}\n\n"
              "{% else %}{{ message['content'] }}\n\n{% endif %}"
              "{% endfor %}"
              "{% if add_generation_prompt %}Answer:{% endif %}")


def path_of(name: str) -> Path:
    """The file ``local/<name>`` names, checked to be a whole GGUF file (else ValueError, one line)."""
    path = Path(name).expanduser()
    where = f"local/{name}"
    if not name:
        raise ValueError("local/: no model named (use local/smollm2 or local/PATH.gguf)")
    try:
        with open(path, "rb") as handle:
            magic = handle.read(4)
    except FileNotFoundError:
        raise ValueError(f"{where}: no such file {path.absolute()} (a local model is local/smollm2 "
                         f"or local/PATH.gguf)") from None
    except OSError as exc:
        raise ValueError(f"{where}: cannot read {path.absolute()}: {exc.strerror or exc}") from None
    if magic != MAGIC:
        raise ValueError(f"{where}: {path.absolute()} is not a GGUF file")
    _check_header(path.resolve(), where)
    return path.resolve()


@functools.cache
def header_reader():
    """ggml's own GGUF header reader (libggml, loaded by llama-cpp-python), with its C signatures."""
    import ctypes

    from llama_cpp._ggml import libggml

    class Params(ctypes.Structure):  # struct gguf_init_params
        _fields_ = [("no_alloc", ctypes.c_bool), ("ctx", ctypes.c_void_p)]

    gguf = ctypes.c_void_p
    signatures = {"gguf_init_from_file": (gguf, [ctypes.c_char_p, Params]),
                  "gguf_find_tensor": (ctypes.c_int64, [gguf, ctypes.c_char_p]),
                  "gguf_get_tensor_type": (ctypes.c_int, [gguf, ctypes.c_int64]),
                  "gguf_get_n_tensors": (ctypes.c_int64, [gguf]),
                  "gguf_get_data_offset": (ctypes.c_size_t, [gguf]),
                  "gguf_get_tensor_offset": (ctypes.c_size_t, [gguf, ctypes.c_int64]),
                  "gguf_get_tensor_size": (ctypes.c_size_t, [gguf, ctypes.c_int64]),
                  "gguf_find_key": (ctypes.c_int64, [gguf, ctypes.c_char_p]),
                  "gguf_get_val_str": (ctypes.c_char_p, [gguf, ctypes.c_int64]),
                  "gguf_free": (None, [gguf])}
    for function, (restype, argtypes) in signatures.items():
        getattr(libggml, function).restype = restype
        getattr(libggml, function).argtypes = argtypes
    return libggml, Params


def _check_header(path: Path, where: str) -> None:
    """The header reads, and every tensor it lists lies inside the file."""
    from llama_cpp._utils import suppress_stdout_stderr

    libggml, Params = header_reader()
    with suppress_stdout_stderr(disable=False):  # ggml prints why a header does not read
        gguf = libggml.gguf_init_from_file(str(path).encode(), Params(True, None))
    if not gguf:
        raise ValueError(f"{where}: the GGUF header of {path} does not read (a damaged file?)")
    try:
        offset = libggml.gguf_get_data_offset(gguf)
        end = max((libggml.gguf_get_tensor_offset(gguf, i) + libggml.gguf_get_tensor_size(gguf, i)
                   for i in range(libggml.gguf_get_n_tensors(gguf))), default=0)
    finally:
        libggml.gguf_free(gguf)
    size = path.stat().st_size
    if offset + end > size:
        raise ValueError(f"{where}: {path} is cut short ({size} bytes of the {offset + end} its tensors need)")


def load_vocab(path: Path, where: str):
    """The file's tokenizer alone (vocab_only: no weights read)."""
    from llama_cpp import Llama
    from llama_cpp._utils import suppress_stdout_stderr

    try:
        with suppress_stdout_stderr(disable=False):
            vocab = Llama(model_path=str(path), vocab_only=True, n_ctx=8, verbose=False)
    except (ValueError, RuntimeError):  # llama.cpp could not load it (its reason went to its log): one line
        raise ValueError(f"{where}: llama.cpp cannot load {path} (architecture {_architecture(path)!r}: one this "
                         f"llama.cpp does not know, or a damaged file)") from None
    return vocab


def chat_form(vocab) -> str:
    """How the file's prompts are formatted: OWN (the chat template it carries) or COMPLETION_FORM (it has none)."""
    return OWN if vocab.metadata.get(TEMPLATE_KEY) else COMPLETION_FORM


def form_settings(vocab) -> dict:
    """The manifest's and every request's record of the prompt form: ``chat_template`` (OWN or COMPLETION_FORM)
    and, for the completion form, the sha256 of COMPLETION (a changed form is another experiment)."""
    if chat_form(vocab) == OWN:
        return {"chat_template": OWN}
    return {"chat_template": COMPLETION_FORM, "completion_sha256": hashlib.sha256(COMPLETION.encode()).hexdigest()}


def _architecture(path: Path) -> str | None:
    """``general.architecture`` as the header says."""
    libggml, Params = header_reader()
    gguf = libggml.gguf_init_from_file(str(path).encode(), Params(True, None))
    if not gguf:
        return None
    try:
        key = libggml.gguf_find_key(gguf, b"general.architecture")
        return libggml.gguf_get_val_str(gguf, key).decode("utf-8", "replace") if key >= 0 else None
    finally:
        libggml.gguf_free(gguf)


def training_context(vocab) -> int | None:
    """The context length the model was trained with (``<architecture>.context_length``), if the file says."""
    meta = vocab.metadata
    value = meta.get(f"{meta.get('general.architecture', '')}.context_length")
    try:
        return int(value) if value is not None and int(value) > 0 else None
    except ValueError:
        return None


def formatter(vocab):
    """The file's chat template (COMPLETION for a file without one), as llama-cpp-python formats a chat with it."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    def text(token: int) -> str:
        return vocab._model.token_get_text(token) if token != -1 else ""

    template = vocab.metadata[TEMPLATE_KEY] if chat_form(vocab) == OWN else COMPLETION
    return Jinja2ChatFormatter(template=template, eos_token=text(vocab.token_eos()),
                               bos_token=text(vocab.token_bos()), stop_token_ids=[vocab.token_eos()])


def prompt_tokens(vocab, chat, messages: list) -> int:
    """Tokens of the prompt the model reads: the messages formatted by the file's form (``chat``), tokenized
    as llama-cpp-python does (special tokens parsed, no BOS added: the template writes its own)."""
    prompt = chat(messages=[{"role": m.get("role", "user"), "content": str(m.get("content") or "")}
                            for m in messages]).prompt
    return len(vocab.tokenize(prompt.encode("utf-8"), add_bos=False, special=True))


def identity(path: Path) -> dict:
    """Size and sha256 of the file; the sha256 remembered under (path, size, mtime) in the cache folder."""
    from critique.base.paths import cache_dir

    stat = path.stat()
    key = hashlib.sha256(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}".encode()).hexdigest()[:32]
    memo = cache_dir() / "models" / "sha256" / key
    try:
        digest = memo.read_text(encoding="ascii").strip()
    except OSError:
        digest = ""
    if len(digest) != 64:
        with open(path, "rb") as handle:
            digest = hashlib.file_digest(handle, "sha256").hexdigest()
        try:
            memo.parent.mkdir(parents=True, exist_ok=True)
            partial = memo.with_name(f"{key}.{os.getpid()}.partial")
            partial.write_text(digest, encoding="ascii")
            os.replace(partial, memo)
        except OSError:
            pass  # only saves the next run a few seconds
    return {"size": stat.st_size, "sha256": digest}
