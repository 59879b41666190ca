"""The DSPy program every ``dspy:`` method builds on (the pinned ``dspy`` package, ``critique[dspy]``): a
``dspy.Predict`` of ``question -> answer``, the dataset's task as its instructions and the answer space as the
answer's type, its train examples, and its test prompt as DSPy's JSONAdapter writes it (instructions and demos as
the program holds them), which the engine's step asks as every strategy's test prompt."""

from __future__ import annotations

import contextlib
import hashlib
import io
from typing import Literal

from critique.engine.agents import Prompt

ADAPTER = "JSONAdapter"


def module():
    """The ``dspy`` package, with its own cache off (one cache: the run's)."""
    try:
        import dspy
    except ImportError:
        raise RuntimeError("the dspy: methods need the package dspy: pip install 'critique[dspy]'") from None
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)
    return dspy


def signature(run):
    """``question -> answer`` with the run's task as its instructions and the answer space as the answer's type."""
    dspy = module()
    return dspy.Signature("question -> answer", instructions=str(run.task)).with_updated_fields(
        "answer", type_=Literal[tuple(run.space)])


def examples(items: list) -> list:
    """The train items as DSPy examples (the question is the input, the gold label the answer)."""
    dspy = module()
    return [dspy.Example(question=i.question, answer=i.answer).with_inputs("question") for i in items]


def test_prompt(signature, demos: list, question: str) -> Prompt:
    """The prompt of one test question: ``signature`` with ``demos`` (DSPy examples), as the JSONAdapter writes it."""
    dspy = module()
    messages = dspy.JSONAdapter().format(signature, demos, {"question": question})
    return Prompt(f"dspy:{ADAPTER}", template_hash(), messages)


def template_hash() -> str:
    """What a DSPy prompt's words depend on besides the program: DSPy's version and its adapter."""
    import dspy

    return hashlib.sha256(f"dspy=={dspy.__version__} {ADAPTER}".encode()).hexdigest()


@contextlib.contextmanager
def quiet():
    """DSPy's own output off the run's terminal, for a step in the run's thread (the run's log says what happened)."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        yield


def quiet_optimizers() -> None:
    """DSPy's and optuna's logs off but for errors (an optimizer runs in a worker thread, where standard output
    cannot be redirected for it alone; DSPy warns of its own proposer's inputs): its calls are in calls.jsonl,
    its outcome in the method's memory file."""
    import logging

    for name in ("dspy", "optuna", "gepa"):
        logging.getLogger(name).setLevel(logging.ERROR)
