"""The one step every stage, probe and experiment asks through (docs/architecture.md, "Asking a question"):
``Step.call`` (the request and its hash, once; its answer as the policy allows; its call record), ``Step.answer``
(call, judge, prediction record) and ``Step.unanswered`` (the record of a question not asked), over the run
directory (critique.engine.run_directory.RunDirectory). ``critique.engine.pipeline.Run`` adds the stages."""

from __future__ import annotations

import asyncio
from dataclasses import asdict
from pathlib import Path

from critique.base import records, rundir
from critique.base.config import RunConfig
from critique.base.errors import Stopped
from critique.datasets.splits import Dataset, Item
from critique.engine import agents
from critique.engine.policy import SHARED, Policy
from critique.engine.run_directory import RunDirectory, now, pkey
from critique.llm.client import LLM, LLMResult


class Step(RunDirectory):
    """A run directory with the step that asks: its calls and predictions, each logged once."""

    def __init__(self, out: Path, config: RunConfig, dataset: Dataset, llm: LLM, probe: dict | None = None,
                 ablation: dict | None = None, learner: bool = False):
        super().__init__(Path(out), config, dataset, llm, probe, ablation, learner)
        self.space = dataset.card.answer_space
        self.progress = True  # a progress bar for each batch of questions (``each``)
        self.reuse: dict[str, dict] = {}  # request hash -> call record of a matching run (logged as cached)
        self._pending: dict[str, list] = {}  # request hash -> [the call of that request in flight, its callers]

    async def call(self, stage: str, strategy: str | None, item_id: str | None, user: str | None,
                   prompt: agents.Prompt, schema: dict, name: str, policy: Policy = SHARED,
                   extra: dict | None = None) -> LLMResult:
        """One logged call: the request, its hash (computed here, once), its answer as ``policy`` allows it
        (critique.engine.policy: this run's log, a matching run, the response cache, the model) and its call
        record; ``extra``: more fields of the call record (a summary call's level and chunk). A prompt that does
        not fit the model's context is not sent: its result and record say ``context_overflow``."""
        request, key = self.request(prompt, schema, name, policy)
        if policy.log and key in self.logged:
            return _logged_result(self.logged[key])
        sending = self._send(request, key, stage, strategy, item_id, user, prompt, policy, extra)
        if not policy.log:
            return await sending
        if key in self._pending:  # the same request in flight (a gated-empty prompt is zero_shot's): its answer, as
            sending.close()  # when logged: no second call, no second record (its record: the first caller's strategy)
        else:
            self._pending[key] = [asyncio.ensure_future(sending), 0]  # the call in flight, and its callers
            self._pending[key][0].add_done_callback(lambda _: self._pending.pop(key, None))
        pending = self._pending[key]
        pending[1] += 1
        try:  # shielded: a caller cancelled does not cancel the call for the others (a Stopped in it reaches all)
            return await asyncio.shield(pending[0])
        finally:  # once no caller awaits it, the call is cancelled: a stopped run leaves no call running
            pending[1] -= 1
            if not pending[1]:
                pending[0].cancel()  # nothing when it is done

    def request(self, prompt: agents.Prompt, schema: dict, name: str = "answer",
                policy: Policy = SHARED) -> tuple[dict, str]:
        """The request ``call`` sends for ``prompt`` (its reply read by ``schema`` under ``name``), and its hash: the
        one definition, for whoever needs to know a request's hash before asking it (credit, de-inflation)."""
        request = self.llm.request(prompt.messages, schema, name, policy.seed, policy.temperature, prompt.content_free)
        return request, self.llm.request_hash(request)

    async def _send(self, request: dict, key: str, stage: str, strategy: str | None, item_id: str | None,
                    user: str | None, prompt: agents.Prompt, policy: Policy, extra: dict | None) -> LLMResult:
        if policy.shared and key in self.reuse and not self.llm.overflows(prompt.messages):
            result = _logged_result(self.reuse[key], latency_s=0.0, cached=True, retries=0)  # logged as cached
        else:
            result = await self.llm.send(request, key, cache=policy.shared)
        record = records.make(
            "call", run_id=self.run_id, stage=stage, strategy=strategy, item_id=item_id, user=user,
            model=self.config.model, **{k: v for k, v in asdict(result).items() if k != "text"},
            cost_usd=self.llm.cost_of(result), response=result.text, template=prompt.template,
            template_hash=prompt.template_hash, messages=prompt.messages, time=now(), probe=self.probe,
            ablation=self.ablation, **(extra or {}))
        rundir.append_jsonl(self.out / rundir.CALLS, record)
        if result.error is None and policy.log:  # a repetition's reply never answers another request of that hash
            self.logged[key] = record
        self.note_call(record)
        return result

    def record_prediction(self, stage: str, strategy: str | None, item: Item, result: LLMResult | None,
                          outcome: dict, retrieved: list[str], extra: dict | None = None,
                          experiment: str | None = None) -> dict:
        record = records.make(
            "prediction", **{"run_id": self.run_id, "stage": stage, "strategy": strategy, "item_id": item.id,
                             "user": item.user, "context_overflow": False, **outcome, "retrieved": retrieved,
                             "retrieved_scores": None if retrieved else [],  # the caller gives them (extra)
                             "request_hash": result.request_hash if result else None,
                             "prompt_tokens": result.prompt_tokens if result else 0,
                             "completion_tokens": result.completion_tokens if result else 0,
                             "reasoning_tokens": result.reasoning_tokens if result else 0,
                             "probe": self.probe, "ablation": self.ablation,
                             **records.split(experiment or (self.probe or {}).get("name"), extra or {})})
        rundir.append_jsonl(self.out / rundir.PREDICTIONS, record)
        record = records.flat(record)  # as a reader sees it: the experiment's fields by their names
        key = pkey(stage, strategy, item.user, item.id)
        if not record.get("error"):
            self.predictions[key] = record
        self.note_prediction(key, record.get("error"))
        return record

    def unanswered(self, stage: str, strategy: str | None, item: Item, error: str | None, extra: dict | None = None,
                   *, answer: str | None = None, context_overflow: bool = False) -> dict:
        """The prediction record of a question that was not asked (the memory it needs is missing, a call before
        it failed or did not fit): no answer (or ``answer``), wrong when there is a gold label, and ``error``,
        which a rerun redoes (None: not an error, as a prompt that did not fit)."""
        labelled = bool(item.answer)
        outcome = {"answer": answer, "gold": item.answer if labelled else None, "correct": False if labelled else None,
                   "parse_failed": False, "timeout": False, "error": error, "context_overflow": context_overflow}
        return self.record_prediction(stage, strategy, item, None, outcome, [], extra)

    async def answer(self, stage: str, strategy: str | None, item: Item, prompt: agents.Prompt, *, seed: tuple,
                     retrieved: list[str] = (), extra=None, judge=None, keep_same: bool = False,
                     policy: Policy = SHARED, schema: dict | None = None, name: str = "answer",
                     from_reply=None, experiment: str | None = None) -> dict:
        """The one step of the stages, probes and experiments that ask a question: call (``Run.call``), judge,
        prediction record (returned).

        ``seed``: what seeds the random wrong option of a parse failure; ``judge(result, item)``
        makes the outcome (default: parsed against the gold label, wrong unless right);
        ``extra``: more fields of the record, or a function of the outcome that gives them;
        ``from_reply(result)``: more fields read from the reply (credit's cited examples);
        ``schema`` and ``name``: the reply's schema when it asks for more than the answer (default: the dataset's);
        ``keep_same``: a prediction already logged for this very request is returned as it is;
        ``policy``: where the answer may come from (critique.engine.policy); ``experiment``: whose fields ``extra``
        holds (default: the run's probe's; a Learner's stream step names it)."""
        result = await self.call(stage, strategy, item.id, item.user, prompt,
                                 schema or self.dataset.card.response_schema, name, policy)
        if keep_same:
            old = self.predictions.get(pkey(stage, strategy, item.user, item.id))
            if old is not None and old["request_hash"] == result.request_hash:
                return old
        outcome = judge(result, item) if judge else agents.answer_record(result, item, self.space, *seed)
        if result.context_overflow:  # no reply: no answer, wrong (when there is a gold label), not a parse failure
            outcome = agents.unsent(outcome)
        outcome = {**outcome, "context_overflow": result.context_overflow}
        fields = extra(outcome) if callable(extra) else extra
        if from_reply is not None:
            fields = {**(fields or {}), **from_reply(result)}
        return self.record_prediction(stage, strategy, item, result, outcome, list(retrieved), fields, experiment)

    async def each(self, items: list, work, desc: str) -> None:
        """Run ``work(item)`` for all items concurrently (the LLM bounds calls in flight)."""
        if not items:
            return
        from tqdm import tqdm

        tasks = [asyncio.ensure_future(work(i)) for i in items]  # started, and queued for the model, in order
        with tqdm(total=len(items), desc=desc, disable=not self.progress, leave=False) as bar:
            try:
                for done in asyncio.as_completed(tasks):
                    await done
                    bar.update(1)
            except Stopped:  # a spend cap or the study's stop: no call starts now, and the calls in flight were
                # sent (and are billed), so they end and are logged before the run stops
                await asyncio.gather(*tasks, return_exceptions=True)
                raise
            except BaseException:  # the run stops (a full disk, Ctrl-C): its other calls stop with it
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                raise



def _logged_result(r: dict, **changes) -> LLMResult:
    """The result of a call as its record in ``calls.jsonl`` has it."""
    fields = ("prompt_tokens", "completion_tokens", "reasoning_tokens", "finish_reason", "latency_s", "cached",
              "retries", "request_hash")
    later = {"context_overflow": bool(r.get("context_overflow")), "cut_fields": r.get("cut_fields"),  # newer fields
             "option_scores": r.get("option_scores"), "content_free_scores": r.get("content_free_scores")}
    return LLMResult(r["response"], **{**{f: r[f] for f in fields}, **later, **changes})
