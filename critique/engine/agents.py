"""The performance agent (answers) and the critic agent (critiques against the gold label).

Both render a template, call the model with a JSON schema, and parse the reply. They
return plain records; the pipeline decides what is logged and stored.
"""

from __future__ import annotations

from dataclasses import dataclass

from critique.base import ids
from critique.base.config import TURN_SETS
from critique.engine import parsing, prompts
from critique.datasets.splits import Item
from critique.llm.client import LLMResult
from critique.llm.loglikelihood import CONTENT_FREE, reply_text
from critique.base.vocab import TRAIN, ZERO_SHOT
from critique.engine.strategies import LABEL_TEMPLATES, STRATEGIES

NO_ANSWER = "(no valid answer)"


@dataclass
class Prompt:
    template: str
    template_hash: str
    messages: list[dict]
    content_free: list[dict] | None = None  # a performance prompt with the question N/A (--answer-by calibrated)


def prompt(template: str, **values) -> Prompt:
    """``template`` rendered from the prompt set of ``values["task"]`` (critique.engine.prompts.Task)."""
    prompt_set = prompts.set_of(values.get("task"))
    return Prompt(template, prompts.template_hash(template, prompt_set),
                  [{"role": "user", "content": prompts.render(template, prompt_set, **values)}])


def performance_prompt(template: str, task: str, item: Item, answer_space: list[str], examples: list[dict],
                       advice: str | None, parts: str, more: dict | None = None) -> Prompt:
    """The performance agent's prompt: one user message (the paper and compact sets), or a conversation whose
    earlier turns are the examples (a set of TURN_SETS: ``turns``); ``more``: values of an experiment's own
    template (the conditioning probe's preamble)."""
    values = dict(task=task, question=item.question, answer_space=answer_space, examples=examples,
                  advice=advice or "", parts=parts, **(more or {}))
    prompt_set = prompts.set_of(task)
    free = {**values, "question": CONTENT_FREE}
    if prompt_set not in TURN_SETS:
        return Prompt(**{**vars(prompt(template, **values)), "content_free": prompt(template, **free).messages})
    return Prompt(template, prompts.template_hash(template, prompt_set), turns(template, prompt_set, values),
                  turns(template, prompt_set, free))


def labeled_example(item: Item, label: str) -> dict:
    """A train item as an example that shows its label (``gold``: ``label``): many_shot's, and EP_LABEL's with the
    initial answer added (critique.engine.pipeline.Run.label_entry)."""
    return {"id": ids.entry_id(item.user, item.id), "item_id": item.id, "user": item.user, "question": item.question,
            "gold": label}


def turns(template: str, prompt_set: str, values: dict) -> list[dict]:
    """A performance prompt as a conversation: the system message (the task, the answer's form), each example as
    an earlier exchange (its question, then the correct answer for EP_LABEL and many_shot; the agent's initial
    response and its critique for the critique strategies), then the new question (``template``). Two user turns in
    a row are one message: some chat templates refuse roles that do not alternate."""
    def render(name: str, **more) -> str:
        return prompts.render(name, prompt_set, **{**values, **more})

    show_label = template in LABEL_TEMPLATES
    messages = [{"role": "system", "content": render("_system.j2")}]
    for example in values["examples"]:
        messages.append({"role": "user", "content": render("_example_question.j2", question=example["question"])})
        messages.append({"role": "assistant",
                         "content": reply_text(example["gold"] if show_label else example["initial_answer"])})
        if not show_label:
            messages.append({"role": "user", "content": render("_example_critique.j2", critique=example["critique"])})
    messages.append({"role": "user", "content": render(template)})
    return _joined(messages)


def _joined(messages: list[dict]) -> list[dict]:
    """Consecutive messages of one role as one message, their texts a blank line apart."""
    out: list[dict] = []
    for message in messages:
        if out and out[-1]["role"] == message["role"]:
            out[-1] = {"role": message["role"],
                       "content": out[-1]["content"].rstrip("\n") + "\n\n" + message["content"]}
        else:
            out.append(dict(message))
    return out


def answer_record(result: LLMResult, item: Item, answer_space: list[str], *seed: object) -> dict:
    """Parse a performance reply; timeouts, failed calls and parse failures count as wrong. A failed
    call has no reply to parse: no answer, and not a parse failure."""
    if result.error is not None:
        return {"answer": None, "gold": item.answer, "correct": False, "parse_failed": False,
                "timeout": result.timeout, "error": result.error}
    parsed = parsing.parse_answer(result.text, answer_space, item.answer, item.user, item.id, *seed)
    correct = (not parsed.parse_failed) and (not result.timeout) and result.error is None \
        and parsed.answer == item.answer
    return {"answer": parsed.answer, "gold": item.answer, "correct": correct, "parse_failed": parsed.parse_failed,
            "timeout": result.timeout, "error": result.error}


def unsent(outcome: dict) -> dict:
    """The outcome of a prompt that did not fit the context (no reply): no answer, wrong when there is a gold
    label, not a parse failure."""
    return {**outcome, "answer": None, "correct": None if outcome.get("correct") is None else False,
            "parse_failed": False, "timeout": False, "error": None}


def critiqued_answer(outcome: dict | None) -> str | None:
    """The answer a critique is of, from an initial answer's outcome (or its prediction record): None when there
    is none (no outcome, a failed call, a reply that did not parse, a prompt that did not fit)."""
    if outcome is None or outcome["parse_failed"] or outcome.get("error"):
        return None
    return outcome["answer"]


def initial_answer(result: LLMResult, item: Item, answer_space: list[str]) -> str | None:
    """The answer a critique is of, from the reply to an initial answer's request (the train stage's:
    ``initial_prompt``), as the train stage's prediction record gives it."""
    outcome = answer_record(result, item, answer_space, TRAIN)
    return critiqued_answer(unsent(outcome) if result.context_overflow else outcome)


def initial_prompt(task, item: Item, answer_space: list[str]) -> Prompt:
    """The train stage's initial answer request: zero_shot's prompt (whatever part of a critique the run's
    examples show)."""
    return performance_prompt(STRATEGIES[ZERO_SHOT].template, task, item, answer_space, [], None, "full")


def critic_prompt(task: str, item: Item, initial_answer: str | None, gold: str) -> Prompt:
    return prompt("critic.j2", task=task, question=item.question, answer=initial_answer or NO_ANSWER, gold=gold)


def summary_prompt(task: str, entries: list[dict], max_points: int = parsing.MAX_ADVICE_LINES,
                   cite: bool = False) -> Prompt:
    """Distil critiques (episodic entries) into advice; ``cite``: each piece names the questions (numbered
    from 1 in the prompt) it rests on."""
    return prompt("summary_cited.j2" if cite else "summary.j2", task=task, entries=entries, max_points=max_points)


def merge_prompt(task: str, lists: list[list[str]], max_points: int = parsing.MAX_ADVICE_LINES,
                 cite: bool = False) -> Prompt:
    """Merge advice lists (each a list of lines) into one; ``cite``: every line shown carries its number,
    counted from 1 across the lists (``[3] Check ...``), and each merged piece names the lines it rests on."""
    if cite:
        numbers = iter(range(1, sum(map(len, lists)) + 1))
        lists = [[f"[{next(numbers)}] {line}" for line in lines] for lines in lists]
    return prompt("summary_merge_cited.j2" if cite else "summary_merge.j2", task=task, lists=lists,
                  max_points=max_points)
