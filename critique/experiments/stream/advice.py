"""A stream's semantic memory (``critique stream --refresh-every N``): advice that keeps learning with the notes.

The stream then answers with EP+SEM_CRIT's prompt: the notes it retrieves and the advice of the question's pool
(EP_CRIT's prompt while a pool has no advice yet). The advice starts as the train memory's summary (``--start
train``: the study's summary stage) or empty, and every N steps the notes written since the last refresh are
distilled, each line asked which of them it rests on (as ``--advice-sources cited``), and merged with the advice
as it stands (critique.engine.memory.semantic: ``Distiller.distil``, then ``Distiller.merge``), each merged line
keeping the sources of the lines it names. Calls of stage ``stream_summary`` (with ``summary_level`` and
``summary_chunk``). A line whose sources are all disabled notes is left out of every prompt from then on.
Every refresh is kept in memory/advice.jsonl: the step, each pool's lines with their sources, and the error of
a refresh that failed (the advice then stays as it was).
"""

from __future__ import annotations

from critique.base import rundir
from critique.engine import parsing
from critique.engine.memory import semantic
from critique.llm import context

STREAM_SUMMARY = "stream_summary"
FILE = "advice.jsonl"


class Advice:
    """Each pool's advice lines ({text, source_ids, cited}) of one stream, and the notes written since the last
    refresh."""

    def __init__(self, run, every: int):
        self.run, self.every = run, every
        self.lines: dict[str, list[dict]] = {}
        self.new: dict[str, list[dict]] = {}  # pool -> entries of the notes written since the last refresh
        self.history: list[dict] = []

    def start(self, pools: dict[str, dict]) -> None:
        """The train memory's summary (Run.summaries' records, per pool) as the first advice."""
        for pool, record in pools.items():
            self.lines[pool] = [dict(line) for line in record.get("lines") or []]

    def written(self, pool: str, entry: dict) -> None:
        self.new.setdefault(pool, []).append(entry)

    def shown(self, disabled: set[str]) -> dict[str, dict]:
        """Per pool, the advice a prompt shows (a Memory's ``semantic``: critique.engine.memory.value): its lines less
        those whose sources are all disabled notes; a pool with none left has no advice."""
        out = {}
        for pool, lines in self.lines.items():
            kept = [line["text"] for line in lines if not set(line["source_ids"]) <= disabled]
            if kept:
                out[pool] = {"advice": parsing.advice_text(kept)}
        return out

    async def refresh(self, step: int) -> bool:
        """After step ``step``, every N steps: each pool's new notes distilled and merged into its advice; False
        when a call failed (the stream stops there: what follows depends on it)."""
        if (step + 1) % self.every or not self.new:
            return True
        run = self.run
        failed = run.calls_failed_now
        window = run.llm.context_window
        budget = context.summary_budget(window, run.config.max_tokens) if window else None
        record = {"step": step, "pools": {}}
        for pool, entries in sorted(self.new.items()):
            user = None if pool == "all" else pool

            async def call(prompt, level: int, chunk: int, user=user):
                return await run.call(STREAM_SUMMARY, None, None, user, prompt, parsing.CITED_SUMMARY_SCHEMA,
                                      "summary", extra={"summary_level": level, "summary_chunk": chunk})

            distiller = semantic.Distiller(run.task, call, run.llm.count_tokens, budget, cite=True)
            done = await distiller.distil(entries)
            if done.error is None and self.lines.get(pool):
                done = await distiller.merge([self.lines[pool], done.lines])
            if done.error is None:
                self.lines[pool] = done.lines
            record["pools"][pool] = {"lines": self.lines.get(pool, []), "error": done.error,
                                     "new_notes": [e["id"] for e in entries]}
            if run.calls_failed_now > failed:
                return False
        self.new = {}
        self.history.append(record)
        return True

    def save(self) -> None:
        rundir.write_jsonl_atomic(self.run.out / rundir.MEMORY / FILE, self.history)
