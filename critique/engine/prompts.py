"""Jinja templates from `prompts/<set>/`, each with a hash that goes into every log record.

A prompt set is a folder of templates with the same names (critique.base.config.PROMPT_SETS):
`paper` follows the study's prompts, `compact` is shaped for prompt-prefix reuse. A run renders
every prompt from the set of its config (``RunConfig.prompts``): the agents get the dataset's
task text as a ``Task``, which carries the set, so that every prompt of a run (the pipeline's,
the probes', the summary's) comes from that one set. A plain ``str`` task is refused: it names no set.
"""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

import jinja2

from critique.base.config import PROMPT_SETS, RunConfig

METHODS = "methods"  # prompts/methods/: the field's memory methods' templates (not a prompt set)


class Task(str):
    """A dataset's task text (it renders as the text), tagged with the prompt set to render in."""

    prompt_set: str

    def __new__(cls, text: str, prompt_set: str):
        check_set(prompt_set)
        task = super().__new__(cls, text)
        task.prompt_set = prompt_set
        return task

    def __getnewargs__(self):  # pickling keeps the set
        return (str(self), self.prompt_set)


def check_set(prompt_set: str) -> str:
    if prompt_set not in PROMPT_SETS:
        raise ValueError(f"unknown prompt set {prompt_set!r}; choose from {', '.join(PROMPT_SETS)}")
    return prompt_set


def set_of(task) -> str:
    """The prompt set a task text is to be rendered in: a Task's own (a plain str names none, and is refused
    rather than rendered in a set the run did not choose)."""
    if not isinstance(task, Task):
        raise TypeError("a prompt's task must be a prompts.Task (its text and its prompt set), "
                        f"not {type(task).__name__}")
    return task.prompt_set


def prompts_root() -> Path:
    explicit = os.environ.get("CRITIQUE_PROMPTS_DIR")
    return Path(explicit) if explicit else Path(__file__).resolve().parents[2] / "prompts"  # the project's prompts/


def prompts_dir(prompt_set: str | None = None) -> Path:
    """The folder of one prompt set (RunConfig's default when None)."""
    return prompts_root() / check_set(prompt_set or RunConfig.prompts)


@functools.lru_cache(maxsize=None)
def _environment(folder: str) -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(folder), undefined=jinja2.StrictUndefined,
                              keep_trailing_newline=False, autoescape=False)


def template_hash(name: str, prompt_set: str | None = None) -> str:
    """sha256 of the template and of the shared partials (``_*.j2``) of its set it may import."""
    return _hash(name, str(prompts_dir(prompt_set)))


@functools.lru_cache(maxsize=None)  # templates do not change while a process runs
def _hash(name: str, folder_name: str) -> str:
    folder = Path(folder_name)
    digest = hashlib.sha256()
    for path in [folder / name] + sorted(folder.glob("_*.j2")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def render(name: str, prompt_set: str | None = None, **values) -> str:
    folder = prompts_dir(prompt_set)
    if not (folder / name).exists():
        raise FileNotFoundError(f"{folder / name}: prompt template not found")
    return _environment(str(folder)).get_template(name).render(**values).strip() + "\n"


def methods_dir() -> Path:
    """The templates of the field's memory methods (critique.engine.field): their papers' prompts, the same
    whatever a run's prompt set."""
    return prompts_root() / METHODS


def render_method(name: str, **values) -> str:
    folder = methods_dir()
    if not (folder / name).exists():
        raise FileNotFoundError(f"{folder / name}: prompt template not found")
    return _environment(str(folder)).get_template(name).render(**values).strip() + "\n"


def method_template_hash(name: str) -> str:
    """sha256 of one of the field's methods' templates (and of the partials of their folder)."""
    return _hash(name, str(methods_dir()))


def all_hashes(prompt_set: str | None = None) -> dict[str, str]:
    """Template name -> hash, for every template of one set (the manifest's ``templates``)."""
    folder = prompts_dir(prompt_set)
    return {p.name: template_hash(p.name, prompt_set)
            for p in sorted(folder.glob("*.j2")) if not p.name.startswith("_")}
