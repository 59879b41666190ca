"""Semantic memory: per pool, the advice distilled from all its critiques, with its sources.

At any scale: the pool's critiques are distilled in chunks that fit the model's context, and the
partial advice lists are merged the same way, level by level, until one list remains.

- Level 0 packs the critiques, in memory order, into consecutive chunks whose summary prompt
  (summary.j2) fits the budget (critique.llm.context.summary_budget: the window less room for
  the reply), and asks for the advice of each chunk.
- Level L >= 1 packs the advice lists of level L-1 into merges that fit (summary_merge.j2) and
  asks for one list per merge; a list left alone at the end of a level is passed up without a call.
- When all critiques fit one prompt (or the window is unknown), level 0 is one call and there is
  no merge: the single summary call of the method.

Provenance (--advice-sources): with ``chunk`` (the default, the paper's prompt), every line a call
writes is attributed to all critiques under that call: the critiques of its chunk at level 0, the
union of the merged lists' critiques above (the model is not asked to cite, so the ids never depend
on a model citing right). Every critique therefore reaches the final advice, and the tree says
through which chunk and merges it went. With ``cited`` the summary is asked which questions each
piece rests on (a merge: which of the numbered lines it merges), the numbers are checked against the
prompt, and a line's sources are the critiques its valid numbers reach; a line that names no valid
number falls back to the whole chunk (``cited`` false on the line, so no output presents a chunk as
a citation), and the numbers outside the prompt are kept on the node (``unknown_sources``).

A critique too long for a prompt of its own (a long question) has its texts cut to the longest
length that fits, each cut marked in the prompt by CUT_MARK, and its id is listed in the chunk's
``shortened``. Each call is an ordinary logged call (stage ``summary``, with ``summary_level``
and ``summary_chunk``) whose request depends only on the critiques and on the replies below it,
so a resumed run finds the finished chunks in its log and asks only for the rest.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path

from critique.base import rundir
from critique.engine import agents, parsing
from critique.llm import context

FILE = rundir.SEMANTIC
CONTEXT_MISSED = "the prompt did not fit the model's context"  # a summary chunk the model could not be sent
CUT_MARK = " [... cut to fit the context]"
_TEXTS = ("question", "initial_answer")  # entry fields shown in summary.j2, with the critique's fields


def save(folder: Path, memory: dict[str, dict]) -> None:
    rundir.write_json_atomic(folder / FILE, memory)


def load(folder: Path) -> dict[str, dict]:
    path = folder / FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


class TooSmall(Exception):
    """The context cannot hold what one prompt must hold."""


@dataclass
class Node:
    """One chunk of the tree: a level-0 chunk of critiques, or a merge of lists of the level below."""
    level: int
    chunk: int
    source_ids: list[str]
    inputs: list[int] | None = None  # level >= 1: the chunks of the level below merged (or passed up) here
    shortened: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    line_sources: list[list[str]] = field(default_factory=list)  # each line's source critique ids
    line_cited: list[bool] = field(default_factory=list)  # each line's sources as cited (False: the whole chunk)
    unknown_sources: list[int] = field(default_factory=list)  # numbers a cited reply gave that its prompt lacks
    request_hash: str | None = None  # None: a list passed up without a call
    timeout: bool = False
    error: str | None = None

    def record(self) -> dict:
        record = {"source_ids": self.source_ids, "shortened": self.shortened, "lines": self.lines,
                  "request_hash": self.request_hash, "timeout": self.timeout, "error": self.error}
        if any(self.line_cited) or self.unknown_sources:
            record.update(line_sources=self.line_sources, line_cited=self.line_cited,
                          unknown_sources=self.unknown_sources)
        return record if self.inputs is None else {**record, "inputs": self.inputs}


@dataclass
class Outcome:
    tree: list[list[Node]]
    lines: list[dict]  # the final advice: {text, source_ids, cited}
    error: str | None
    request_hash: str

    @property
    def timeout(self) -> bool:
        return any(node.timeout for level in self.tree for node in level)


class Distiller:
    """One pool's semantic memory. ``call(prompt, level, chunk)`` makes (or finds in the run's log)
    one summary call and returns its LLMResult; ``count(messages)`` counts a prompt's tokens;
    ``budget``: the tokens a summary prompt may hold (None: unknown, one call over all critiques);
    ``cite``: ask each piece of advice for its sources (--advice-sources cited)."""

    def __init__(self, task: str, call, count, budget: int | None, cite: bool = False):
        self.task, self.call, self.count, self.budget, self.cite = task, call, count, budget, cite

    def _fits(self, messages: list[dict]) -> bool:
        return self.budget is None or context.surely_fits(messages, self.budget) or self.count(messages) <= self.budget

    def _chunk_prompt(self, entries: list[dict]) -> list[dict]:
        return agents.summary_prompt(self.task, entries, cite=self.cite).messages

    def _merge_prompt(self, nodes: list[Node]) -> list[dict]:
        return agents.merge_prompt(self.task, [n.lines for n in nodes], cite=self.cite).messages

    # ---- packing ----------------------------------------------------------------------------
    def pack(self, items: list, render) -> list[list]:
        """Consecutive ``items`` in chunks whose prompt ``render(chunk)`` fits (greedy, then checked)."""
        if self._fits(render(items)):
            return [list(items)]
        base = self.count(render([]))
        chunks, current, used = [], [], base
        for item in items:
            cost = self.count(render([item])) - base
            if current and used + cost > self.budget:
                chunks.append(current)
                current, used = [], base
            current.append(item)
            used += cost
        chunks.append(current)
        i = 0
        while i < len(chunks):  # a count of joined texts can differ from the sum of its parts at a seam
            while len(chunks[i]) > 1 and not self._fits(render(chunks[i])):
                moved = chunks[i].pop()
                if i + 1 == len(chunks):
                    chunks.append([])
                chunks[i + 1].insert(0, moved)
            i += 1
        return chunks

    def fitted(self, entry: dict) -> tuple[dict, bool]:
        """``entry`` as a summary prompt of its own can hold it: whole, or with each of its texts cut
        to the longest length that fits (then True); TooSmall when not even empty texts fit."""
        if self._fits(self._chunk_prompt([entry])):
            return entry, False
        longest = max([len(str(entry.get(k) or "")) for k in _TEXTS]
                      + [len(str(v)) for v in entry["critique"].values()])
        low, high = -1, longest  # the longest cut that fits lies in [low, high); -1: none fits
        while high - low > 1:
            middle = (low + high) // 2
            if self._fits(self._chunk_prompt([_cut(entry, middle)])):
                low = middle
            else:
                high = middle
        if low < 0:
            raise TooSmall(f"a summary prompt of {self.budget} tokens cannot hold the critique {entry['id']}, "
                           f"even with its texts left out")
        return _cut(entry, low), True

    def cost(self, entries: list[dict], reply: int) -> int:
        """At most the tokens ``distil(entries)`` spends when no reply holds more than ``reply`` tokens: each
        level-0 chunk's prompt and reply, and fewer merges than chunks (a merge takes two lists or more), each
        at most the budget and a reply; 0 for no entries, or when a critique fits no prompt (no call is made)."""
        if not entries:
            return 0
        try:
            shown = [self.fitted(entry)[0] for entry in entries] if self.budget is not None else list(entries)
        except TooSmall:
            return 0
        chunks = self.pack(shown, self._chunk_prompt)
        merges = (len(chunks) - 1) * ((self.budget or 0) + reply)
        return sum(self.count(self._chunk_prompt(chunk)) + reply for chunk in chunks) + merges

    # ---- calls -------------------------------------------------------------------------------
    async def _ask(self, node: Node, prompt: agents.Prompt, refs: list[list[str]]) -> None:
        """One summary or merge call for ``node``; ``refs``: the source ids each number of the prompt stands for
        (a question's critique at level 0, a merged line's sources above)."""
        result = await self.call(prompt, node.level, node.chunk)
        node.request_hash, node.timeout = result.request_hash, result.timeout
        if result.error is not None:
            node.error = result.error
        elif result.context_overflow:  # only when the window is not known here, or litellm's is wrong
            node.error = f"{CONTEXT_MISSED} (--context-tokens N makes chunks that fit)"
        else:
            self._read_lines(node, result.text, refs)
            if not node.lines:
                node.error = "no advice in the reply" + (" (cut at the token limit)" if result.timeout else "")

    def _read_lines(self, node: Node, text: str | None, refs: list[list[str]]) -> None:
        if not self.cite:
            node.lines = parsing.parse_advice(text)
            node.line_sources, node.line_cited = [node.source_ids] * len(node.lines), [False] * len(node.lines)
            return
        for line, numbers in parsing.parse_cited_advice(text):
            known = [n for n in numbers if 1 <= n <= len(refs)]
            node.unknown_sources += [n for n in numbers if n not in known]
            node.lines.append(line)
            node.line_cited.append(bool(known))
            node.line_sources.append(list(dict.fromkeys(i for n in known for i in refs[n - 1])) or node.source_ids)

    async def distil(self, entries: list[dict]) -> Outcome:
        tree: list[list[Node]] = []
        try:
            shown, shortened = [], set()
            for entry in entries:
                fitted, cut = self.fitted(entry) if self.budget is not None else (entry, False)
                shown.append(fitted)
                if cut:
                    shortened.add(entry["id"])
            chunks = self.pack(shown, self._chunk_prompt)
            level = [Node(0, i, [e["id"] for e in chunk], shortened=[e["id"] for e in chunk if e["id"] in shortened])
                     for i, chunk in enumerate(chunks)]
            tree.append(level)
            await asyncio.gather(*(self._ask(node, agents.summary_prompt(self.task, chunk, cite=self.cite),
                                             [[entry["id"]] for entry in chunk])
                                   for node, chunk in zip(level, chunks)))
            await self._merge_up(tree)
        except TooSmall as exc:
            return Outcome(tree, [], str(exc), "")
        return _finished(tree, "summary")

    async def merge(self, lists: list[list[dict]]) -> Outcome:
        """Advice lists ({text, source_ids, cited} lines, as ``distil`` gives them) merged into one, as the levels
        above 0 merge (several calls, level by level, when one merge prompt cannot hold them all); each merged
        line's sources as the merge gives them (``cite``: the lines it names; else every line's)."""
        level = [Node(0, i, list(dict.fromkeys(s for line in lines for s in line["source_ids"])),
                      lines=[line["text"] for line in lines], line_sources=[line["source_ids"] for line in lines],
                      line_cited=[bool(line.get("cited")) for line in lines]) for i, lines in enumerate(lists)]
        tree = [level]
        try:
            await self._merge_up(tree)
        except TooSmall as exc:
            return Outcome(tree, [], str(exc), "")
        return _finished(tree, "merge")

    async def _merge_up(self, tree: list[list[Node]]) -> None:
        """Merge the tree's last level, level by level, until one list remains or a node fails (TooSmall when a
        merge prompt cannot hold what it must)."""
        while not _failed(tree[-1]) and len(tree[-1]) > 1:
            tree.append(await self._merge_level(tree[-1]))

    async def _merge_level(self, below: list[Node]) -> list[Node]:
        number = below[0].level + 1
        for node in below:
            if not self._fits(self._merge_prompt([node])):
                raise TooSmall(f"a merge prompt of {self.budget} tokens cannot hold the advice of level "
                               f"{node.level} chunk {node.chunk}")
        chunks = self.pack(below, self._merge_prompt)
        if len(chunks) == len(below):
            raise TooSmall(f"a merge prompt of {self.budget} tokens cannot hold two advice lists of level "
                           f"{number - 1}")
        level, asks = [], []
        for i, chunk in enumerate(chunks):
            node = Node(number, i, [s for n in chunk for s in n.source_ids], inputs=[n.chunk for n in chunk])
            if len(chunk) == 1:  # nothing to merge: passed up as it is
                node.lines, node.line_sources = list(chunk[0].lines), list(chunk[0].line_sources)
                node.line_cited = list(chunk[0].line_cited)
            else:
                asks.append(self._ask(node, agents.merge_prompt(self.task, [n.lines for n in chunk], cite=self.cite),
                                      [sources for n in chunk for sources in n.line_sources]))
            level.append(node)
        await asyncio.gather(*asks)
        return level


def _finished(tree: list[list[Node]], what: str) -> Outcome:
    """The outcome of a tree whose last level is one node (its lines, the advice), or whose first failed node
    says why there is none."""
    failed = _failed(tree[-1])
    if failed is not None:
        return Outcome(tree, [], f"{what} level {failed.level} chunk {failed.chunk}: {failed.error}",
                       failed.request_hash or "")
    root = tree[-1][0]
    lines = [{"text": line, "source_ids": sources, "cited": cited}
             for line, sources, cited in zip(root.lines, root.line_sources, root.line_cited)]
    return Outcome(tree, lines, None, root.request_hash or "")


def _failed(level: list[Node]) -> Node | None:
    return next((node for node in level if node.error is not None), None)


def _cut(entry: dict, limit: int) -> dict:
    """``entry`` with each text longer than ``limit`` characters cut there and marked."""
    def cut(text) -> str:
        text = str(text or "")
        return text if len(text) <= limit else text[:limit] + CUT_MARK

    return {**entry, **{k: cut(entry.get(k)) for k in _TEXTS},
            "critique": {k: cut(v) for k, v in entry["critique"].items()}}
