"""Jinja templates from `prompts/`, each with a hash that goes into every log record."""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

import jinja2


def prompts_dir() -> Path:
    explicit = os.environ.get("CRITIQUE_PROMPTS_DIR")
    return Path(explicit) if explicit else Path(__file__).resolve().parents[2] / "prompts"  # the project's prompts/ folder


@functools.lru_cache(maxsize=None)
def _environment(folder: str) -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(folder), undefined=jinja2.StrictUndefined,
                              keep_trailing_newline=False, autoescape=False)


def template_hash(name: str, folder: Path | None = None) -> str:
    """sha256 of the template and of the shared partials (``_*.j2``) it may import."""
    return _hash(name, str(folder or prompts_dir()))


@functools.lru_cache(maxsize=None)  # templates do not change while a process runs
def _hash(name: str, folder_name: str) -> str:
    folder = Path(folder_name)
    digest = hashlib.sha256()
    for path in [folder / name] + sorted(folder.glob("_*.j2")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def render(name: str, **values) -> str:
    folder = prompts_dir()
    if not (folder / name).exists():
        raise FileNotFoundError(f"{folder / name}: prompt template not found")
    return _environment(str(folder)).get_template(name).render(**values).strip() + "\n"


def all_hashes(folder: Path | None = None) -> dict[str, str]:
    folder = folder or prompts_dir()
    return {p.name: template_hash(p.name, folder) for p in sorted(folder.glob("*.j2")) if not p.name.startswith("_")}
