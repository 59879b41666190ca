"""``dspy:mipro``, ``dspy:gepa`` and ``dspy:simba``: DSPy's own optimizers (MIPROv2, GEPA, SIMBA; the pinned
``dspy`` package, ``critique-bench[dspy]``) compile the task's ``dspy.Predict`` program (critique.engine.field
.dspy_program) on each pool's train split with the study's metric (the exact option), every call they make
through the run's step (critique.engine.field.dspy_lm): the offline stage. Each optimizer's own budget is derived
from the pool's share of ``--train-budget`` (``calls_within``: how many program calls it buys) and the stage stops
at the budget whatever the optimizer would do next.

The compiled program (its instructions and demos) is saved in memory/<method>/<pool>.json and answers the test
questions; its memory, for the audit, is its instructions (a note resting on the train items the optimizer saw)
and its demos (each a note resting on its train item). An optimizer the budget stopped before it returned a
program (MIPROv2 can be) learned nothing: the task's own program, as it was given, answers, with no note."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from pathlib import Path

from critique.base import rundir
from critique.engine.field import dspy_lm, dspy_program, memory
from critique.engine.field.offline import BUDGET, Offline, calls_left
from critique.engine.memory.episodic import Retrieved, pool_of
from critique.engine.method_memory import Saved, file_of
from critique.engine.methods import Method, register

# One compile at a time in a process: DSPy's optimizers are not safe to run at once (their progress bars share
# tqdm's global list of bars, which DSPy's evaluator clears), so the pools and methods compile one after another.
COMPILING = threading.Lock()
ANSWER_TOKENS = 16  # what a program call's reply costs beyond its prompt, in the estimate of calls a budget buys
NO_BUDGET_CALLS = 200  # the program calls an optimizer is given when the run sets no --train-budget


def exact_option(example, prediction, trace=None, *rest) -> float:
    """The study's metric: 1 when the program's answer is the gold option, else 0 (GEPA passes two more arguments)."""
    return float(str(getattr(prediction, "answer", "")).strip() == example.answer)


def gepa(dspy, lm, calls: int, student, trainset: list, seed: int):
    """GEPA with the run's model as its reflection model, ``calls`` metric calls, a fifth of the train items (at
    most) as its Pareto validation set."""
    held = max(1, min(len(trainset) // 5, calls // 4))
    optimizer = dspy.GEPA(metric=exact_option, max_metric_calls=max(calls, held + 1), reflection_lm=lm,
                          num_threads=1, seed=seed, track_stats=False)
    return optimizer.compile(student, trainset=trainset[held:] or trainset, valset=trainset[:held])


def mipro(dspy, lm, calls: int, student, trainset: list, seed: int):
    """MIPROv2 with three instruction and demo candidates and as many minibatch trials as the calls buy."""
    minibatch = max(1, min(35, len(trainset), calls // 6))
    optimizer = dspy.MIPROv2(metric=exact_option, prompt_model=lm, task_model=lm, auto=None, num_candidates=3,
                             num_threads=1, max_errors=10**9, seed=seed, verbose=False, track_stats=False)
    return optimizer.compile(student, trainset=trainset, seed=seed,
                             num_trials=max(1, calls // (2 * minibatch)), minibatch_size=minibatch,
                             max_bootstrapped_demos=2, max_labeled_demos=2)


def simba(dspy, lm, calls: int, student, trainset: list, seed: int):
    """SIMBA with batches of at most 32 train items and as many steps as the calls buy."""
    bsize = max(1, min(32, len(trainset), calls // 8))
    candidates = 4
    optimizer = dspy.SIMBA(metric=lambda example, prediction: exact_option(example, prediction), bsize=bsize,
                           num_candidates=candidates, max_steps=max(1, calls // (bsize * candidates)), num_threads=1,
                           prompt_model=lm)
    return optimizer.compile(student, trainset=trainset, seed=seed)


@dataclass
class Learned:
    programs: dict  # pool -> the compiled dspy.Predict, or None (the optimizer did not finish)
    notes: dict  # pool -> the memory's notes
    vectors: dict  # pool -> the notes' vectors (memory.encoded)
    ids: dict  # pool -> {train question: its item id} (a demo is a train example: its question names its item)
    offline: dict  # pool -> Offline
    saved: Saved  # memory/METHOD.json (the engine writes it)


class Optimized(Method):
    """One DSPy optimizer as a memory method."""

    def __init__(self, name: str, optimizer):
        self.name, self.optimizer = name, optimizer

    def needs(self, config) -> frozenset[str]:
        return frozenset()

    def learning_calls(self, run) -> tuple[int, str]:
        pools: dict = {}
        for item in run.dataset.train:
            pools.setdefault(pool_of(item.user), []).append(item)
        share = memory.budget_share(run, pools)
        # the program calls each pool's budget buys at the cost of a K-demo prompt (one more: the stage stops at the
        # first call past its budget); cheaper calls buy more, and without a budget the proposer's calls come on top
        calls = sum(calls_within(run, items, share) + 1 for items in pools.values())
        per = ("the program calls each pool's share of --train-budget buys, at a K-demo prompt's cost"
               if share is not None else
               f"the {NO_BUDGET_CALLS} program calls each pool's optimizer is given, its proposer's calls besides")
        return calls_left(run, self.name, calls, per, bound=False)

    async def learn(self, run) -> Learned:
        dspy_program.module()
        compiled, offline = await memory.each_pool(run, self.name,
                                                   lambda items, stage: self._compiled(run, items, stage))
        programs = {pool: program for pool, (program, _) in compiled.items()}
        notes = {pool: _notes(pool, program, items) for pool, (program, items) in compiled.items()}
        for pool, program in programs.items():
            if program is not None:
                # DSPy's own state of the program, written (redacted) by the one writer of the run directory
                rundir.write_json_atomic(self.program_file(run.out, pool), program.dump_state())
        vectors = {pool: memory.encoded(run, mine) for pool, mine in notes.items()}
        ids = {pool: {item.question: item.id for item in items} for pool, (_, items) in compiled.items()}
        return Learned(programs, notes, vectors, ids, offline,
                       Saved(notes, offline, {"optimizer": self.optimizer.__name__}))

    async def _compiled(self, run, items: list, offline: Offline) -> tuple:
        """The pool's compile in a thread of its own: it waits there for each of its calls, which the run's loop
        makes, so it must never hold a thread of the loop's default executor (the model's calls may need one)."""
        from concurrent.futures import ThreadPoolExecutor

        own = ThreadPoolExecutor(1, thread_name_prefix=f"{self.name}-compile")
        try:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(own, self._compile, run, items, offline, loop)
        finally:  # never waits here: a cancelled run's compile ends at its next call (the run has stopped)
            own.shutdown(wait=False)

    def _compile(self, run, items: list, offline: Offline, loop) -> tuple:
        """(the optimizer's compiled program of the pool, or None; the pool's train items), in a worker thread:
        its calls go to the run's loop."""
        dspy = dspy_program.module()
        dspy_program.quiet_optimizers()
        engine = dspy_lm.RunEngine(offline, loop, f"{self.name}:compile", dspy_program.template_hash())
        lm = dspy_lm.language_model(engine)
        student = dspy.Predict(dspy_program.signature(run))
        calls = calls_within(run, items, offline.budget)
        try:
            with COMPILING, dspy.context(lm=lm, adapter=dspy.JSONAdapter(), max_errors=10**9):
                program = self.optimizer(dspy, lm, calls, student, dspy_program.examples(items), run.config.seed)
        except Exception as error:  # noqa: BLE001  (the optimizer's own failure is the stage's outcome)
            if offline.stopped is None:
                offline.stopped = f"DSPy's {self.optimizer.__name__} failed: {type(error).__name__}: {error}"
            return None, items
        return program, items

    def prompt(self, run, item, vector, exclude: str | None = None):
        found = memory.ready(run, self.name, item)
        if found is None:
            return None
        learned, pool = found
        if learned.programs.get(pool) is None:
            if learned.offline[pool].stopped != BUDGET:
                return None  # the optimizer failed: missing() says why, and a rerun retries it
            # the budget stopped it before it returned a program: the program as it was given (DSPy's student)
            return dspy_program.test_prompt(dspy_program.signature(run), [], item.question), Retrieved([], [])
        program, notes, ids = learned.programs[pool], learned.notes[pool], learned.ids[pool]
        demos = [d for d in program.demos if ids.get(d.question) != exclude]
        prompt = dspy_program.test_prompt(program.signature, demos, item.question)
        shown = memory.shown(notes, learned.vectors[pool], vector)
        kept = [i for i, note in enumerate(notes) if note["id"] != f"demo:{exclude}"]
        return prompt, Retrieved([shown[i] for i in kept], [shown.scores[i] for i in kept])

    def without(self, run, item, vector, note: str):
        """The test prompt of ``item`` without ``note``: a demo left out, or the instructions the optimizer wrote
        replaced by the task's own (the program's before it was compiled)."""
        learned, pool = memory.ready(run, self.name, item)
        program, ids = learned.programs[pool], learned.ids[pool]
        demos = [d for d in program.demos if ids.get(d.question) != item.id and f"demo:{ids.get(d.question)}" != note]
        signature = dspy_program.signature(run) if note == f"instructions:{pool}" else program.signature
        return dspy_program.test_prompt(signature, demos, item.question)

    def missing(self, run, item) -> str:
        found = memory.ready(run, self.name, item)
        if found is None:
            return memory.not_ready(run, self.name, item)
        return f"no {self.name} program ({found[0].offline[found[1]].stopped})"

    def program_file(self, out: Path, pool: str) -> Path:
        folder = file_of(out, self.name).with_suffix("")
        folder.mkdir(parents=True, exist_ok=True)
        return folder / ("".join(c if c.isalnum() or c in "-_." else "_" for c in pool) + ".json")


def calls_within(run, items: list, budget: int | None) -> int:
    """The program calls ``budget`` tokens buy: a call's prompt showing K train examples as demos, plus a short
    reply (the optimizers' proposer and reflection calls come out of the same budget: the stage stops at it)."""
    if budget is None:
        return NO_BUDGET_CALLS
    shown = dspy_program.examples(items[:run.config.k + 1])
    prompt = dspy_program.test_prompt(dspy_program.signature(run), shown[1:], shown[0].question)
    return max(1, budget // (run.llm.count_tokens(prompt.messages) + ANSWER_TOKENS))


def _notes(pool: str, program, items: list) -> list[dict]:
    """The compiled program's memory: its instructions (resting on the pool's train items) and its demos (each
    resting on its train item)."""
    if program is None:
        return []
    ids = {item.question: item.id for item in items}
    notes = [{"id": f"instructions:{pool}", "text": program.signature.instructions, "sources": [i.id for i in items]}]
    return notes + [{"id": f"demo:{ids[d.question]}", "text": f"{d.question} -> {d.answer}",
                     "sources": [ids[d.question]]} for d in program.demos if d.get("question") in ids]


for _name, _optimizer in (("dspy:mipro", mipro), ("dspy:gepa", gepa), ("dspy:simba", simba)):
    register(Optimized(_name, _optimizer))
