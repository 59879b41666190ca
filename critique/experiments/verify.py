"""Verifiers (issue 16): an answer-free check of each episodic memory entry of a run, one run directory each.

``critique verify RUN --verifier reorder`` (manifest ``probe`` = ``{name: verify, verifier: reorder, source,
source_run_id}``): for each entry of RUN's memory the performance agent answers the entry's train question
again, zero-shot, with the options permuted (the texts of the option lines reversed: A and B swapped for two
options, 1 <-> 4 and 2 <-> 3 for four), and the answer is mapped back to the original labels. The entry's
answer (its ``initial_answer``, the one its stored verdict is about) *survives* when the permuted question gets
it again; it is *flagged* otherwise (a reply with no valid answer is flagged too). The verifier never sees the
label: its score is V = 1 (survives) or 0 (flagged).

A question is permutable when each option of the answer space heads exactly one line of it ("A: ...",
"2. ...", "3) ..."), as in mcr-gen and pref-gen; an entry whose question is not is not checked, and the
command says how many. Prediction records: stage ``probe``, strategy ``reorder``, the answer in the original
labels, ``correct`` against the gold (for measuring only), and ``verifier``, ``checked_answer``,
``shown_answer`` and ``survives`` (critique.base.records).

``--verifier sample:N``: the entry's question is asked N more times, zero-shot, at a sampling temperature
(SAMPLE_TEMPERATURE, or the run's own when it is above 0), each sample i with its own seed (the run's seed + i:
seeded where the provider honours a seed), never answered by the response cache or another run (the calls are
an independent trial: critique.engine.policy.INDEPENDENT; this run's own log answers them when it resumes). The
entry survives when every sample gives its answer; any disagreement (or a sample with no valid answer) flags it.
Call records of stage ``probe``, strategy ``sample-i``; one prediction per entry, strategy ``sample:N``, with
``samples`` (the N answers) and ``answer`` the most frequent one.

``--verifier judge:MODEL``: MODEL (a litellm model string) gets the self critic's request (critic_self.j2: the
question and the entry's answer, no label) and says whether the answer is right: the entry survives when its
verdict is ``right`` (``judge_verdict``; ``answer`` is the answer it believes). The verify run's model is MODEL.
With MODEL the critic of a ``--critic self`` run, the request is the critic's own: the judge copies the stored
verdict (the error-independence condition's worst case)."""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from dataclasses import replace
from pathlib import Path

from critique.base import records, rundir
from critique.base.records import Field
from critique.base.config import RunConfig, manifest_run_config
from critique.engine.policy import INDEPENDENT
from critique.base.errors import UserError
from critique.base.vocab import JUDGE, PROBE, REORDER, SAMPLE, VERIFIERS  # noqa: F401  (VERIFIERS: re-exported)
from critique.datasets.splits import Item
from critique.engine import agents, parsing
from critique.engine.memory.episodic import entry_id
from critique.engine.run_directory import pkey
from critique.experiments.source_run import SourceRun


SAMPLE_TEMPERATURE = 0.7  # sample:N at a source run's temperature 0
# the fields of a verifier's predictions (critique.base.records: record["experiment"]["verify"])
records.declare("verify", (
    Field("verifier", "string", "verify: the verifier (reorder: the options permuted)", required=False),
    Field("checked_answer", "string", "verify: the memory entry's initial answer, the one its verdict is about",
          required=False),
    Field("shown_answer", "string|null", "verify reorder: the label answered in the permuted question (answer is it "
          "mapped back to the original labels); null when none", required=False),
    Field("survives", "boolean", "verify: the checked answer survived the check (reorder: the permuted question got "
          "it again); false means the entry is flagged (a reply with no valid answer is flagged)", analysis=True,
          required=False),
    Field("samples", "array", "verify sample:N: the N sampled answers (null where a sample had no valid answer); "
          "answer is the most frequent valid one", required=False),
    Field("judge_verdict", "string|null", "verify judge:MODEL: the judge's verdict on the checked answer, right or "
          "wrong (answer is the answer it believes); null when its reply did not parse", required=False),
))


def parse_verifier(text: str) -> str:
    """A verifier in its one written form: reorder, sample:N (N >= 2), judge:MODEL; ValueError otherwise."""
    text = str(text or "").strip()
    kind, sep, arg = text.partition(":")
    if kind == REORDER and not sep:
        return REORDER
    if kind == SAMPLE and arg.strip().isdigit() and int(arg) >= 2:
        return f"{SAMPLE}:{int(arg)}"
    if kind == JUDGE and arg.strip():
        return f"{JUDGE}:{arg.strip()}"
    raise ValueError(f"--verifier must be reorder, sample:N (N >= 2) or judge:MODEL, not {text!r}")


def kind_of(verifier: str) -> str:
    return verifier.partition(":")[0]


def verifier_config(config: RunConfig, verifier: str) -> RunConfig:
    """The verify run's config: the source run's; sample:N samples above temperature 0; judge:MODEL is MODEL's."""
    if kind_of(verifier) == SAMPLE and not config.temperature:
        return replace(config, temperature=SAMPLE_TEMPERATURE)
    if kind_of(verifier) == JUDGE:
        return replace(config, model=verifier.split(":", 1)[1])
    return config


def verify_probe(verifier: str, source: Path, source_run_id: str, out: Path) -> dict:
    """``source``: the checked run's path from the verify run's folder ``out``'s parent (its name when beside
    it), so the logs can move together."""
    return {"name": "verify", "verifier": verifier, "source": beside(source, out), "source_run_id": source_run_id}


def beside(path: Path, out: Path) -> str:
    """``path`` relative to the folder holding the run directory ``out`` (read back as out.parent / it)."""
    import os

    return os.path.relpath(Path(path).resolve(), Path(out).resolve().parent)


def option_lines(question: str, space: list[str]) -> list[tuple[int, str, str]] | None:
    """(line index, label, text) of each option line, in the answer space's order; None when some option does
    not head exactly one line."""
    lines = question.split("\n")
    found = []
    for label in space:
        pattern = re.compile(rf"^\s*\(?{re.escape(label)}\s*[.:)]\s+(?P<text>.*)$")
        hits = [(n, m.group("text")) for n, line in enumerate(lines) for m in [pattern.match(line)] if m]
        if len(hits) != 1:
            return None
        found.append((hits[0][0], label, hits[0][1]))
    if len({n for n, _, _ in found}) != len(found):
        return None
    return found


def reordered(question: str, space: list[str]) -> tuple[str, dict[str, str]] | None:
    """(the question with the option texts reversed, shown label -> original label), or None when its options
    are not lines of it (option_lines)."""
    found = option_lines(question, space)
    if found is None:
        return None
    lines = question.split("\n")
    back = {}
    for (n, label, text), (_, original_label, moved) in zip(found, reversed(found)):
        lines[n] = lines[n][:len(lines[n]) - len(text)] + moved  # the line keeps its label, gets another text
        back[label] = original_label
    return "\n".join(lines), back


def source_config(source: Path) -> tuple[RunConfig, dict]:
    """The run config of the run directory ``source`` (as its manifest has it) and the manifest."""
    run = SourceRun(source)
    if not run.is_run():
        raise UserError(f"{source}: not a run directory (no {rundir.MANIFEST})")
    manifest = run.manifest
    if manifest.get("probe"):
        raise UserError(f"{source}: a probe run ({manifest['probe'].get('name')}); verify a run with memory")
    if not run.has_episodic():
        raise UserError(f"{source}: no episodic memory ({rundir.MEMORY}/episodic.jsonl): nothing to verify")
    return replace(manifest_run_config(manifest), strategies=[]), manifest


def entries_of(source: Path) -> dict[str, dict]:
    return {e["id"]: e for e in SourceRun(source).episodic()}


def reorder_work(entries: dict[str, dict], skipped: list[str]):
    """The work of a reorder verifier run: each entry's question, permuted, answered zero-shot."""

    async def work(run) -> None:
        todo = []
        for item in run.dataset.train:
            entry = entries.get(entry_id(item))
            if entry is None or pkey("probe", REORDER, item.user, item.id) in run.predictions:
                continue
            shown = reordered(item.question, run.space)
            if shown is None:
                skipped.append(entry_id(item))
                continue
            todo.append((item, entry, *shown))

        async def one(job) -> None:
            item, entry, question, back = job
            forward = {original: label for label, original in back.items()}
            asked = Item(item.id, question, forward[item.answer], item.user, item.meta)
            prompt = agents.performance_prompt("performance_zero_shot.j2", run.task, asked, run.space, [], None,
                                               "full")

            def judge(result, _item) -> dict:
                outcome = agents.answer_record(result, asked, run.space, "probe", REORDER)
                answer = back.get(outcome["answer"]) if outcome["answer"] is not None else None
                return {**outcome, "answer": answer, "gold": item.answer}

            def extra(outcome) -> dict:
                valid = not (outcome["parse_failed"] or outcome["timeout"] or outcome.get("error")
                             or outcome.get("context_overflow"))
                shown_answer = forward.get(outcome["answer"]) if outcome["answer"] is not None else None
                return {"verifier": REORDER, "checked_answer": entry["initial_answer"], "shown_answer": shown_answer,
                        "survives": bool(valid and outcome["answer"] == entry["initial_answer"])}

            await run.answer("probe", REORDER, asked, prompt, seed=("probe", REORDER), judge=judge, extra=extra)

        await run.each(todo, one, "verify (reorder)")

    return work


def summary(predictions: list[dict]) -> dict:
    """Checked entries, flagged ones, errors (from the verifier's prediction records)."""
    mine = [p for p in rundir.latest(predictions) if p.get("stage") == "probe" and p.get("verifier")]
    done = [p for p in mine if not p.get("error")]
    return {"checked": len(done), "flagged": sum(not p["survives"] for p in done),
            "errors": len(mine) - len(done)}


# ---- sample:N --------------------------------------------------------------------------------------------
def sample_name(i: int) -> str:
    return f"sample-{i}"


def _valid(result) -> bool:
    return result.error is None and not result.context_overflow and not result.timeout


def sample_work(entries: dict[str, dict], verifier: str):
    """The work of a sample:N verifier run: each entry's question asked N times (see the module's doc)."""
    n = int(verifier.split(":", 1)[1])

    async def work(run) -> None:
        todo = [(item, entries[entry_id(item)]) for item in run.dataset.train
                if entry_id(item) in entries and pkey(PROBE, verifier, item.user, item.id) not in run.predictions]

        async def sample(item, prompt, i: int):  # each sample its own seed: N distinct requests, each logged once
            return await run.call(PROBE, sample_name(i), item.id, item.user, prompt,
                                  run.dataset.card.response_schema, "answer", INDEPENDENT.seeded(run.config.seed + i))

        async def one(job) -> None:
            item, entry = job
            prompt = agents.performance_prompt("performance_zero_shot.j2", run.task, item, run.space, [], None, "full")
            results = await asyncio.gather(*(sample(item, prompt, i) for i in range(1, n + 1)))
            answers = []
            for i, result in enumerate(results, 1):
                parsed = agents.answer_record(result, item, run.space, PROBE, sample_name(i)) if _valid(result) \
                    else None
                answers.append(None if parsed is None or parsed["parse_failed"] else parsed["answer"])
            failed = [r.error for r in results if r.error is not None]
            valid = [a for a in answers if a is not None]
            top = Counter(valid).most_common(1)[0][0] if valid else None
            outcome = {"answer": top, "gold": item.answer, "correct": top is not None and top == item.answer,
                       "parse_failed": not valid, "timeout": any(r.timeout for r in results),
                       "error": f"a sample call failed ({failed[0]}); rerun to retry" if failed else None}
            run.record_prediction(PROBE, verifier, item, results[0], outcome, [], {
                "verifier": verifier, "checked_answer": entry["initial_answer"], "samples": answers,
                "survives": all(a == entry["initial_answer"] for a in answers)})

        await run.each(todo, one, f"verify ({verifier})")

    return work


# ---- judge:MODEL -----------------------------------------------------------------------------------------
def judge_work(entries: dict[str, dict], verifier: str):
    """The work of a judge:MODEL verifier run: the self critic's request about each entry's answer, to MODEL."""
    from critique.engine.memory.critic import self_prompt

    async def work(run) -> None:
        todo = [(item, entries[entry_id(item)]) for item in run.dataset.train
                if entry_id(item) in entries and pkey(PROBE, verifier, item.user, item.id) not in run.predictions]

        async def one(job) -> None:
            item, entry = job
            shown = None if entry["initial_answer"] == agents.NO_ANSWER else entry["initial_answer"]

            def judged(result):  # (verdict, believed answer) of the judge's reply, or None
                parsed = parsing.parse_self_critique(result.text, run.space) if _valid(result) else None
                return parsed[1:3] if parsed else None

            def judge(result, _item) -> dict:
                parsed = judged(result)
                believed = parsed[1] if parsed else None
                return {"answer": believed, "gold": item.answer, "correct": believed == item.answer,
                        "parse_failed": result.error is None and not result.context_overflow and not parsed,
                        "timeout": result.timeout, "error": result.error}

            def verdict(result) -> dict:
                said = (judged(result) or (None, None))[0]
                return {"judge_verdict": said, "survives": said == "right"}

            await run.answer(PROBE, verifier, item, self_prompt(run.task, item, shown, run.space), seed=(),
                             judge=judge, from_reply=verdict, schema=parsing.self_critique_schema(run.space),
                             name="critique", extra={"verifier": verifier, "checked_answer": entry["initial_answer"]})

        await run.each(todo, one, f"verify ({verifier})")

    return work


def work_for(verifier: str, entries: dict[str, dict], skipped: list[str]):
    kind = kind_of(verifier)
    if kind == SAMPLE:
        return sample_work(entries, verifier)
    if kind == JUDGE:
        return judge_work(entries, verifier)
    return reorder_work(entries, skipped)


def cost(run, verifier: str, entries: dict[str, dict]) -> tuple[int, int]:
    """(calls at most, entries that cannot be checked) of the entries still to check."""
    todo = [i for i in run.dataset.train if entry_id(i) in entries
            and pkey(PROBE, verifier, i.user, i.id) not in run.predictions]
    kind = kind_of(verifier)
    if kind == SAMPLE:
        return len(todo) * int(verifier.split(":", 1)[1]), 0
    if kind == JUDGE:
        return len(todo), 0
    can = sum(reordered(i.question, run.space) is not None for i in todo)
    return can, len(todo) - can
