"""The DSPy program every ``dspy:`` method builds on (the pinned ``dspy`` package, ``critique-bench[dspy]``): a
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
        from critique.base.distribution import install

        raise RuntimeError(f"the dspy: methods need the package dspy: {install('dspy')}") from None
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

    for name in OPTIMIZER_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)
    for handler in _handlers():
        if not any(isinstance(f, OwnStops) for f in handler.filters):
            handler.addFilter(OwnStops())


OPTIMIZER_LOGGERS = ("dspy", "optuna", "gepa")


def _handlers() -> list:
    """The handlers an optimizer's log records reach: those of its loggers, of the root logger, and logging's last
    resort (used when there is none)."""
    import logging

    found = [h for name in (*OPTIMIZER_LOGGERS, None) for h in logging.getLogger(name).handlers]
    return found + ([logging.lastResort] if logging.lastResort is not None else [])


class OwnStops:
    """A logging filter, on the handlers, that drops DSPy's errors about the run's own stops (dspy_lm.StageStopped:
    the budget was spent, a prompt did not fit): a normal end of the offline stage, which the method's memory file
    records, not an error. Other errors still reach the terminal."""

    def filter(self, record) -> bool:
        return not _own_stop(record)


def _own_stop(record) -> bool:
    from critique.engine.field.dspy_lm import STOPPED, StageStopped

    cause = record.exc_info[1] if record.exc_info else None
    return isinstance(cause, StageStopped) or STOPPED in record.getMessage()
