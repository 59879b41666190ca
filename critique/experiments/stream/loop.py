"""A stream: memory that keeps learning (docs/memory.md sections 1 and 2).

``critique stream --dataset D --model M --feedback F`` (manifest ``probe`` = ``{"name": "stream", ...}``). The test
questions arrive in a seeded order (``--order SEED``: each item's place is a hash of the seed, its user and its
id, so a preference user's questions keep one seeded order within the interleaved stream). At step t the agent
answers question t with EP_CRIT's prompt over the memory as it stands: the train memory (``--start train``, the
study's critique stage; ``--start empty``: none) plus the notes the stream has written so far (an empty pool
gives zero_shot's prompt, as in the study). Then feedback arrives and the episode is written back, before
step t+1:

- ``gold``: the critic is shown the gold label (the study's critic, on the stream's answer);
- ``noisy:R``: the gold label, but a seeded round(R * n) of the n questions get another option (the note says so);
- ``self``: no label: the critic judges the answer itself (the deployed case);
- ``none``: nothing is written (the frozen-memory arm);
- ``delayed:D``: gold feedback on step t arrives after step t+D (feedback still due when the stream ends is
  never written, and the table says how much).

Each written note (critique.engine.memory.notes) records its step, its feedback mode and the verdict it stores;
the truth (U) is recorded for the analysis only. ``--conflicts revise``: when labelled feedback (gold, noisy,
delayed) on question t asserts an answer, each note retrieved for question t on a similar question (cosine at
least ``--conflict-similarity``) whose own critique asserts another answer is revised (a new version holding the
new critique, status ``revised``), and one that asserts the same answer gains confidence; ``append`` (default)
only adds notes. ``--rank verdict`` retrieves the nearest RANK_DEPTH x K notes and shows the K stored as right
first, then by confidence, then by similarity (Memento-style); ``similarity`` (default) the K nearest.

Records: the answer of step t is a prediction of stage ``stream`` (strategy EP_CRIT) with the experiment fields
below; the critique calls have stage ``stream_critique``; memory/notes.jsonl holds every note version. A stream
is deterministic and resumable: rerun, each step's request is found in the run's log, so a killed stream
replays to the records of an uninterrupted one (no record written twice) and a finished stream makes no call.
A call that fails stops the stream at its step (a rerun retries it): what comes after depends on it.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np

from critique.base import records, rundir
from critique.base.ids import version_id
from critique.base.records import Field
from critique.datasets.subsets import stream_order
from critique.base.vocab import CRITIQUE, EP_CRIT, EP_SEM_CRIT, SUMMARY, TRAIN
from critique.engine import performance, question
from critique.engine.memory import admission, critic
from critique.engine.memory.episodic import EpisodicMemory, Retrieved, entry_id, pool_of
from critique.engine.memory.notes import AGREEMENT, Notes
from critique.engine.memory.value import Memory
from critique.engine.run_directory import pkey
from critique.experiments.stream import checks
from critique.experiments.stream.spec import RANDOM, RANK_DEPTH, STREAM, STREAM_CRITIQUE, parse_feedback

records.declare(STREAM, (
    Field("step", "integer", "stream: the question's place in the stream, from 0", required=False),
    Field("feedback", "string", "stream: the feedback mode (gold, noisy:R, self, none, delayed:D)", required=False),
    Field("retrieved_versions", "array", "stream: NOTE@VERSION of each note shown, in the order of retrieved",
          required=False),
    Field("memory_notes", "integer", "stream: notes retrievable in the question's pool when it was answered",
          required=False),
    Field("checked_answer", "string", "stream_verify: the new note's answer, the one its verdict is about",
          required=False),
    Field("survives", "boolean", "stream_verify: the answer survived the reorder verifier (the question asked again "
          "with its options permuted got it again); false: the note is demoted (marked doubtful)", required=False),
))


class Ranked:
    """A memory whose retrieval shows the notes stored as right first, then by confidence, then by
    similarity, among the nearest RANK_DEPTH x K (``--rank verdict``)."""

    def __init__(self, memory: EpisodicMemory, confidence: dict[str, float]):
        self.memory, self.confidence = memory, confidence

    def size(self, user: str | None) -> int:
        return self.memory.size(user)

    def retrieve(self, vector, user: str | None, k: int, exclude_item: str | None = None) -> Retrieved:
        found = self.memory.retrieve(vector, user, RANK_DEPTH * k, exclude_item)
        order = sorted(range(len(found)), key=lambda n: (-(_stored_right(found[n])), -self.confidence[found[n]["id"]],
                                                         -found.scores[n]))
        return found.keep(order[:k])


def _stored_right(entry: dict) -> int:
    """1 when the note is trusted: stored as right and not marked doubtful (a de-inflation arm's demotion)."""
    from critique.engine.memory.notes import verdict

    return int(verdict(entry) == 1 and not entry.get("doubtful"))


@dataclass
class Step:
    """A step whose feedback is still due: its question, answer and the notes it was shown."""
    number: int
    item: object
    answer: str | None
    shown: Retrieved


class Stream:
    """One stream over ``run`` (a pipeline.Run whose probe is a stream's)."""

    def __init__(self, run, probe: dict | None = None):
        self.run, self.probe = run, probe or run.probe
        self.feedback = parse_feedback(self.probe["feedback"])
        self.notes = Notes(run.dataset.card.name)
        self.vectors: dict[str, np.ndarray] = {}  # note id -> its question's vector
        self.question_vectors: dict[str, np.ndarray] = {}  # entry id of a test item -> its question's vector
        test = run.dataset.test
        self.flipped = critic.flipped_ids(test, self.feedback.rate, run.config.seed) if self.feedback.rate else set()
        self.stopped: str | None = None
        self.unchecked = 0  # new notes the reorder verifier could not check (their options are not lines)
        self.random_picks = _random_picks(test, self.probe, run.config.seed)
        self.rejected: list[dict] = []  # the notes --admission kept out, in the order refused
        self.advice = None
        if self.probe.get("refresh_every"):
            from critique.experiments.stream.advice import Advice

            self.advice = Advice(run, self.probe["refresh_every"])

    # ---- memory -------------------------------------------------------------------------
    def resume(self, memory: EpisodicMemory) -> None:
        """The notes a Learner's earlier steps saved in its run directory, else ``memory``'s entries (the fitted
        train memory) as notes; their vectors (the saved notes' questions encoded again)."""
        self.notes = Notes.load(self.run.out / rundir.MEMORY, self.notes.dataset)
        self.rejected = rundir.read_jsonl(self.run.out / rundir.MEMORY / admission.REJECTED)
        train = dict(zip((e["id"] for e in memory.entries), memory.vectors()))
        fresh = not self.notes.versions
        if fresh:
            for entry in memory.entries:
                self.notes.add(entry, step=None, feedback="train", why="the train memory")
        self.notes.attach(self.run.out / rundir.MEMORY, fresh)
        missing = [v for v in self.notes.latest().values() if v["note"] not in train]
        encoded = self.run.encoder.encode([v["entry"]["question"] for v in missing]) if missing else []
        self.vectors = {**train, **{v["note"]: vector for v, vector in zip(missing, encoded)}}

    async def start(self) -> None:
        """The train memory as notes (``--start train``), or none; a call of the train stage that failed stops the
        stream before its first step (its memory would lack that entry)."""
        if self.probe["start"] != "train":
            return
        failed = self.run.calls_failed_now
        memory = await self.run.train_stage((TRAIN, CRITIQUE, SUMMARY) if self.advice else (TRAIN, CRITIQUE))
        if self.run.calls_failed_now > failed or any(key[0] == TRAIN for key in self.run.failed_predictions):
            self.stopped = "the train stage: a call failed (calls.jsonl, predictions.jsonl)"
            return
        if self.advice:
            self.advice.start(memory.semantic)
        episodic = memory.episodic
        for entry, vector in zip(episodic.entries, episodic.vectors()):
            self.notes.add(entry, step=None, feedback="train", why="the train memory")
            self.vectors[entry["id"]] = vector

    def memory(self):
        """The notes retrievable now, as the memory a prompt retrieves from."""
        active = self.notes.active()
        entries = [{**v["entry"], "id": v["note"]} for v in active]
        width = len(next(iter(self.vectors.values()))) if self.vectors else 1
        vectors = np.array([self.vectors[v["note"]] for v in active], dtype=np.float32).reshape(len(active), -1) \
            if active else np.zeros((0, width), np.float32)
        memory = EpisodicMemory(entries, vectors)
        if self.probe["rank"] == "verdict":
            return Ranked(memory, {v["note"]: v["confidence"] for v in active})
        return memory

    # ---- one step -----------------------------------------------------------------------
    async def answer(self, number: int, item, vector, judge=None) -> Step | None:
        """Step ``number``: ``item`` answered with EP_CRIT's prompt over the notes as they stand (``judge``: how
        the reply is judged, as Run.answer's; default: against the item's label)."""
        run = self.run
        disabled = {v["note"] for v in self.notes.latest().values() if v["status"] == "disabled"}
        notes, advice = self.memory(), self.advice.shown(disabled) if self.advice else {}
        name = EP_SEM_CRIT if self.advice else EP_CRIT

        def found(strategy: str):  # the strategy's prompt over the notes as they stand (a value, not the run's)
            return performance.performance_prompt(run, strategy, item, vector, item.id, Memory(notes, semantic=advice))

        prompt, shown = found(name) or found(EP_CRIT)  # None: EP+SEM_CRIT in a pool with no advice yet
        latest = self.notes.latest()
        extra = {"step": number, "feedback": str(self.feedback),
                 "retrieved_versions": [version_id(e["id"], latest[e["id"]]["version"]) for e in shown],
                 "memory_notes": notes.size(item.user)}
        record = await question.ask(run, name, item, found=(prompt, shown), stage=STREAM, seed=(name, STREAM),
                                    judge=judge, keep_same=True, extra=extra, experiment=STREAM)
        if record.get("error"):
            self.stopped = f"step {number} ({item.id}): {record['error']}"
            return None
        self.last = record
        return Step(number, item, record["answer"], shown)

    def shown_label(self, item) -> dict:
        """What the critic is shown of ``item``'s label under the feedback mode (critic.shown_labels' form)."""
        if self.feedback.mode == "self":
            return {"label": None, "flipped": False}
        if entry_id(item) in self.flipped:
            from critique.engine import parsing

            wrong = parsing.wrong_answer(item.answer, self.run.space, "noisy", self.run.config.seed, item.user or "",
                                         item.id)
            return {"label": wrong, "flipped": True}
        return {"label": item.answer, "flipped": False}

    async def write_back(self, step: Step, now: int, seen: dict | None = None) -> bool:
        """The feedback on ``step`` arriving at step ``now``: its note written (and, with --conflicts revise, the
        notes it contradicts revised); ``seen``: what the critic is shown of the label (default: as the feedback
        mode says); False when a call failed (the stream stops there)."""
        run = self.run
        failed = run.calls_failed_now
        seen = seen or self.shown_label(step.item)
        entry, keep = await critic.critique_item(run, step.item, seen, answer=step.answer, stage=STREAM_CRITIQUE)
        if run.calls_failed_now > failed:
            self.stopped = f"the feedback on step {step.number} ({step.item.id}): its critique call failed"
            return False
        if entry is None or not keep:
            return True  # no critique parsed (or --on-mismatch drop left it out): nothing to write
        if self.refused(entry, now):
            return True  # --admission kept it out: written to memory/rejected.jsonl, not to the notes
        note = {**entry, "id": f"{STREAM}:{entry['id']}"}
        if self.notes.holds(note):  # a Learner's question learned again, the same way: nothing new
            return True
        if note["id"] in self.notes.latest():  # learned again with other feedback: a new version
            self.notes.change(note["id"], status="revised", step=now, feedback=str(self.feedback), entry=note,
                              why=f"feedback on step {step.number}, on a question learned before",
                              evidence=step.item.id)
        else:
            self.notes.add(note, step=now, feedback=str(self.feedback), why=f"feedback on step {step.number}")
        if self.advice:
            self.advice.written(pool_of(note.get("user")), note)
        self.vectors[note["id"]] = self.question_vectors[entry_id(step.item)]
        if self.probe["conflicts"] == "revise" and self.feedback.labelled:
            self.revise(note, step, now)
        wrong = step.answer != note["label"]
        if self.probe.get("disable") and wrong and not await checks.disable_test(self, step, note, now):
            return False
        if self.probe.get("demote"):
            return await checks.demote(self, note, step, now)
        return True

    def refused(self, entry: dict, now: int) -> bool:
        """Whether the run's --admission keeps the note of ``entry`` out; a refused one is added to
        memory/rejected.jsonl (written whole: a replayed stream writes the same records again) with the step."""
        reason = admission.rejection(self.run.config.admission, entry)
        if reason is None:
            return False
        self.rejected.append({**entry, "reason": reason, "step": now})
        admission.save(self.run.out / rundir.MEMORY, self.rejected)
        return True

    def revise(self, evidence: dict, step: Step, now: int) -> None:
        """Each note shown at ``step`` on a similar question: revised when its critique asserts another answer
        than the labelled ``evidence`` does, more confident when the same."""
        said = evidence.get("asserted")
        if said is None:
            return
        for shown, score in zip(step.shown, step.shown.scores):
            if score < self.probe["conflict_similarity"]:
                continue
            old = self.notes.latest()[shown["id"]]
            if old["status"] == "disabled" or old["entry"].get("asserted") is None:
                continue
            why = f"step {step.number}'s labelled critique (similarity {score:.3f})"
            if old["entry"]["asserted"] == said:
                self.notes.change(shown["id"], status=old["status"], step=now, feedback=str(self.feedback),
                                  why="agrees with " + why, evidence=step.item.id,
                                  confidence=old["confidence"] + AGREEMENT)
            else:
                corrected = {**old["entry"], "critique": evidence["critique"], "asserted": said}
                self.notes.change(shown["id"], status="revised", step=now, feedback=str(self.feedback),
                                  why=f"contradicted by {why}: asserts {said}, not {old['entry']['asserted']}",
                                  evidence=step.item.id, entry=corrected)

    # ---- the stream -----------------------------------------------------------------------
    async def run_all(self) -> None:
        run = self.run
        await self.start()
        if self.stopped:
            print(f"critique: the stream did not start: {self.stopped}; rerun to retry", file=sys.stderr)
            return
        (run.out / rundir.MEMORY).mkdir(exist_ok=True)
        self.notes.attach(run.out / rundir.MEMORY, fresh=True)  # written as the stream goes
        # the train stage's rejections stay; a replayed stream refuses its own notes again
        self.rejected = [r for r in rundir.read_jsonl(run.out / rundir.MEMORY / admission.REJECTED)
                         if r.get("step") is None]
        order = stream_order(run.dataset.test, self.probe["order"])
        encoded = run.encoder.encode([i.question for i in order])
        self.question_vectors = {entry_id(i): v for i, v in zip(order, encoded)}
        due: list[Step] = []
        for number, item in enumerate(order):
            step = await self.answer(number, item, self.question_vectors[entry_id(item)])
            if step is None:
                break
            if self.feedback.mode != "none":
                due.append(step)
            while due and due[0].number + self.feedback.delay <= number:
                if not await self.write_back(due.pop(0), number):
                    break
            if not self.stopped and self.advice and not await self.advice.refresh(number):
                self.stopped = f"the refresh of the advice after step {number}: a summary call failed"
            if self.stopped:
                break
        self.notes.save(run.out / rundir.MEMORY)
        if self.advice:
            self.advice.save()
        if self.stopped:
            print(f"critique: the stream stopped at {self.stopped}; rerun to resume from there", file=sys.stderr)
        elif due:
            print(f"critique: feedback on the last {len(due)} steps was still due when the stream ended "
                  f"({self.feedback}): not written", file=sys.stderr)
        if self.unchecked:
            print(f"critique: warning: the reorder verifier could not check {self.unchecked} new notes (their "
                  "question's options are not lines of it): they were trusted as written", file=sys.stderr)


async def learn(run, memory: EpisodicMemory, item, feedback: str | None, judge) -> dict:
    """One online step of a Learner (critique.learner.Learner.learn) in ``run``: ``item`` answered with EP_CRIT over
    the fitted ``memory`` and the notes learned so far, then written back with ``feedback``: a label (the critic
    is shown it), "self" (the critic judges the answer) or None (nothing is written). Returns the answer's
    prediction record; memory/notes.jsonl keeps every note."""
    from critique.experiments.stream.spec import stream_probe

    stream = Stream(run, stream_probe("self" if feedback == "self" else "gold"))
    stream.resume(memory)
    number = sum(1 for key in run.predictions if key[0] == STREAM)
    vector = run.encoder.encode([item.question])[0]
    step = await stream.answer(number, item, vector, judge)
    if step is not None and feedback is not None:
        stream.vectors[f"{STREAM}:{entry_id(item)}"] = vector
        stream.question_vectors[entry_id(item)] = vector
        await stream.write_back(step, number, {"label": None if feedback == "self" else feedback, "flipped": False})
    stream.notes.save(run.out / rundir.MEMORY)
    if stream.stopped:
        raise RuntimeError(f"the learning step stopped at {stream.stopped}; call learn again to retry")
    return stream.last


def _random_picks(items: list, probe: dict, seed: int) -> set[str]:
    """The random control's demoted items: the ``demote_count`` first in a seeded order of the test items."""
    if probe.get("demote") != RANDOM:
        return set()
    from critique.datasets.subsets import seeded_rank

    ordered = sorted(items, key=lambda i: seeded_rank(seed, i.user, i.id, "stream-random"))
    return {entry_id(i) for i in ordered[:probe["demote_count"]]}


async def stream(run) -> None:
    """The stream of ``run`` (its probe: stream_probe)."""
    await Stream(run).run_all()


def cost(run) -> int:
    """Calls at most: the train stage's still to do (with --start train), and per test question still to answer
    its answer, its feedback's critique (none with --feedback none; a recritique more with --on-mismatch
    recritique), the reorder verifier's check (--demote reorder) and K answers without one note each
    (--disable-test); a refresh's summary calls are not counted (--refresh-every)."""
    probe, feedback = run.probe, parse_feedback(run.probe["feedback"])
    todo = [i for i in run.dataset.test if pkey(STREAM, probe["strategy"], i.user, i.id) not in run.predictions]
    train = [i for i in run.dataset.train if pkey(TRAIN, None, i.user, i.id) not in run.predictions]
    per_step = 1
    if feedback.mode != "none":
        per_step += 2 if run.config.on_mismatch == "recritique" else 1
        per_step += 1 if probe.get("demote") == "reorder" else 0
        per_step += run.config.k if probe.get("disable") else 0
    return (2 * len(train) if probe["start"] == "train" else 0) + len(todo) * per_step
