"""One memory method's own offline stage in one run (critique.engine.field): its calls go through the run's
step (critique.engine.pipeline.Run.call), so each is logged in calls.jsonl with its stage and the method's name
as its strategy, answered from the run's log or the response cache when it can be, limited and counted like
any other; and the tokens they spend are counted against ``--train-budget``.

A stage replays deterministically: every request depends only on the replies before it, so a rerun (after a
kill, or of a finished run) finds each request in the log and makes no call until it reaches the first one
that is not there. Where the stage stops, and why, is what the method's memory records: the budget was spent,
or a call failed (a rerun retries it, and goes on from there).

No stage passes its budget by more than one call: each call is asked only while the tokens spent before it are
under the budget, and a stage with a budget asks one call at a time (calls it sends at once wait their turn,
each checked against what the ones before it spent), so only its last call can cross the budget. A stage may
keep part of its budget back for its last calls (``reserve``: a budgeted critique strategy's summary, critique
.engine.field.budgeted): the calls before are asked only while the spent tokens and the reserve are under the
budget, and the calls it was kept for (``from_reserve``) are asked from it after the others have stopped."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from critique.engine import parsing, prompts
from critique.base import rundir
from critique.engine.agents import Prompt
from critique.engine.method_memory import file_of
from critique.engine.policy import Policy
from critique.llm.client import LLMResult

BUDGET = "budget"  # stopped: the method's offline stage spent --train-budget tokens
REASONING_CHARS = 600  # the longest reasoning the embedded model's grammar lets a method's answer hold


def reasoned_answer(space: list[str]) -> dict:
    """The JSON schema of an answer with its reasoning first (DC's generator, ExpeL's trials)."""
    return {"type": "object", "properties": {"reasoning": {"type": "string", "maxLength": REASONING_CHARS},
                                             "answer": {"type": "string", "enum": list(space)}},
            "required": ["reasoning", "answer"], "additionalProperties": False}


def method_prompt(template: str, **values) -> Prompt:
    """A prompt of one of the field's methods (prompts/methods/)."""
    return Prompt(template, prompts.method_template_hash(template),
                  [{"role": "user", "content": prompts.render_method(template, **values)}])


@dataclass
class Offline:
    """The offline stage of method ``name`` in ``run``: what it asked and spent, and why it stopped (None: it
    went to its end)."""

    run: object  # critique.engine.pipeline.Run
    name: str
    budget: int | None = None  # the tokens it may spend (its share of --train-budget); None: no limit
    spent: int = 0  # prompt + completion tokens of its calls (a request asked again is not paid again)
    calls: int = 0  # its calls: the distinct requests it asked (each has its record in calls.jsonl; another
    # method that asked the same request first, as ace and ace:nolabel do with an empty playbook, wrote it)
    stopped: str | None = None  # BUDGET, or the error of the call that failed
    skipped: list[str] = field(default_factory=list)  # steps whose reply could not be read (kept going without)
    asked: dict = field(default_factory=dict)  # the request hashes of its calls, in order (a dict: ordered, unique)
    # a budgeted stage's calls, one at a time (each checked against what the calls before it spent)
    turn: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False, compare=False)

    async def ask(self, stage: str, item, prompt: Prompt, schema: dict, schema_name: str,
                  temperature: float | None = None, extra: dict | None = None, reserve: int = 0,
                  from_reserve: bool = False) -> LLMResult | None:
        """One call of the stage (``item``: the train item it is about, or None; ``temperature``: the request's
        own, default the run's; ``extra``: more fields of its call record), or None when the stage has stopped:
        its budget is spent (with ``reserve`` tokens kept back for its last calls), or a call before it failed. A
        failed call stops the stage here. ``from_reserve``: one of the calls the reserve was kept for, asked
        whatever was spent (but never after a failed call)."""
        if self.budget is None:
            return await self._ask(stage, item, prompt, schema, schema_name, temperature, extra, 0, from_reserve)
        async with self.turn:  # each call checked against every call before it, ended and counted
            return await self._ask(stage, item, prompt, schema, schema_name, temperature, extra, reserve,
                                   from_reserve)

    async def _ask(self, stage: str, item, prompt: Prompt, schema: dict, schema_name: str,
                   temperature: float | None, extra: dict | None, reserve: int,
                   from_reserve: bool) -> LLMResult | None:
        if self.failed or (self.stopped is not None and not from_reserve):
            return None
        if not from_reserve and self.budget is not None and self.spent + reserve >= self.budget:
            self.stopped = BUDGET
            return None
        result = await self.run.call(stage, self.name, getattr(item, "id", None), getattr(item, "user", None),
                                     prompt, schema, schema_name, Policy(temperature=temperature), extra)
        if result.request_hash not in self.asked:  # the same request again is answered from the log
            self.asked[result.request_hash] = None
            self.calls += 1
            self.spent += result.prompt_tokens + result.completion_tokens
        if result.error is not None:
            self.stopped = f"a call of stage {stage} failed ({result.error}); rerun to retry it and go on"
        return result

    def read(self, result: LLMResult | None, item) -> dict | None:
        """The JSON object of a reply, or None: no call (the stage stopped), no reply (the prompt did not fit the
        context) or no JSON object in it (the stage goes on without this step, and says so)."""
        if result is None or result.error is not None:
            return None
        if result.context_overflow:
            self.skip(f"{getattr(item, 'id', item)}: the prompt did not fit the context")
            return None
        parsed = parsing.json_object(result.text or "")
        if parsed is None:
            self.skip(f"{getattr(item, 'id', item)}: no JSON object in the reply")
        return parsed

    def skip(self, why: str) -> None:
        """A step whose reply could not be used (no JSON, no answer, no room in the context): the stage goes on
        without it, and the memory says so."""
        self.skipped.append(why)

    def record(self) -> dict:
        """What the memory file says of the stage."""
        return {"offline_calls": self.calls, "offline_tokens": self.spent, "train_budget": self.budget,
                "stopped": self.stopped, "skipped": list(self.skipped), "requests": list(self.asked)}

    @property
    def failed(self) -> bool:
        """The stage stopped at a failed call (not at its budget): the memory is not the method's yet."""
        return self.stopped is not None and self.stopped != BUDGET


def calls_left(run, name: str, most: int, per: str, bound: bool = True) -> tuple[int, str]:
    """The cost line's count of the calls method ``name`` makes to learn (``learning_calls``): at most ``most``
    (``per``: what that bound is, e.g. "8 per train item"), less those of its strategy already logged (never asked
    again; none once its memory file says every pool's stage ended); with --train-budget, it stops earlier, at its
    tokens. ``bound`` False: ``most`` is an estimate the method may pass (said "about", not "at most")."""
    if finished(run, name):
        return 0, f"none: its stage has ended ({rundir.MEMORY}/{file_of(run.out, name).name})"
    made = sum(r.get("strategy") == name and r.get("stage") != "test" for r in run.logged.values())
    budget = (f"; each pool stops at its share of --train-budget {run.config.train_budget:,} tokens"
              if run.config.train_budget is not None else "")
    return max(0, most - made), f"{'at most' if bound else 'about'} {per}{budget}"


def finished(run, name: str) -> bool:
    """Method ``name``'s memory file is there and says each pool's stage ended (done, or stopped at its budget; not
    at a failed call, which a rerun retries)."""
    import json

    path = file_of(run.out, name)
    if not path.exists():
        return False
    pools = json.loads(path.read_text(encoding="utf-8")).get("pools") or {}
    return all(pool.get("stopped") in (None, BUDGET) for pool in pools.values())
