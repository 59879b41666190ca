"""The dose-response probe (docs/memory.md section 4): accuracy as the injected memory grows, against the same
amount of irrelevant memory.

``critique probe dose --dataset D --model M [--values 1,2,4,8,16] [--irrelevant RUN]`` (manifest ``probe`` =
``{"name": "dose", "values": [...], "irrelevant_dataset": NAME or null, "irrelevant_memory": SHA256 or null}``:
the irrelevant memory is named by its content, so moving RUN, or resuming from a copy, keeps the experiment's
identity; a resume is given RUN again and checks it holds that very memory). The train
stage runs as the study's does (a run of the same model and data answers its calls). Each test item is asked:

- ``none``: the zero-shot prompt (zero_shot's very request: the memory-off arm);
- ``own@K``: EP_CRIT's prompt with the K nearest entries of this run's memory (at the run's K, EP_CRIT's very
  request);
- ``irrelevant@K`` (with ``--irrelevant RUN``, a run directory on another, single-pool dataset): the same prompt
  with the K entries of RUN's memory nearest to the question: as much memory, as near as that memory allows,
  about another task.

The values are on a log scale by default, so the curve shows where more memory stops helping and where it starts
to hurt. Each record says how many entries it showed (``shown``) and, for rule R7's lexical check, whether the
answer is an option that only the memory carries (``memory_only``: a label a shown note asserts that the question
does not hold as a word; null where no shown note asserts such a label, as on data whose options the question
lists: there the check cannot fire, and a 0 would be no finding). The table is critique.analysis.memory.dose.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from dataclasses import replace
from pathlib import Path

from critique.base import records, rundir
from critique.base.errors import RunError
from critique.base.records import Field
from critique.base.vocab import CRITIQUE, DOSE, EP_CRIT, PROBE, TRAIN
from critique.engine import agents, performance
from critique.engine.memory import selection
from critique.engine.run_directory import pkey
from critique.engine.strategies import STRATEGIES
from critique.experiments import arm_probes

NONE, OWN, IRRELEVANT = "none", "own", "irrelevant"
VALUES = (1, 2, 4, 8, 16)
ZERO_SHOT_TEMPLATE = "performance_zero_shot.j2"

records.declare(DOSE, (
    Field("memory", "string", "dose: whose memory the prompt showed: none, own (this run's) or irrelevant (another "
          "dataset's run)", required=False),
    Field("k", "integer", "dose: the entries the prompt was to show (K); 0 for none", required=False),
    Field("shown", "integer", "dose: the entries it showed", required=False),
    Field("memory_only", "boolean|null", "dose: the answer is an option a shown note asserts that the question "
          "does not hold as a word (rule R7's lexical check); null when no shown note asserts an option the question "
          "lacks (the check cannot fire)", required=False),
))


def dose_probe(values=VALUES, irrelevant: str | Path | None = None) -> dict:
    """The probe; ``irrelevant``: a run directory whose memory is the control (its dataset and its memory's
    sha256 are recorded; its place is not)."""
    probe = {"name": DOSE, "values": arm_probes.parse_counts(values, "values"), "irrelevant": None,
             "irrelevant_dataset": None, "irrelevant_memory": None}
    if irrelevant is not None:
        path = Path(irrelevant).resolve()
        try:
            manifest = rundir.read_manifest(path)
        except (OSError, ValueError) as exc:
            raise ValueError(str(exc)) from None
        if not (path / rundir.MEMORY / rundir.EPISODIC).exists():
            raise ValueError(f"{irrelevant}: a run without an episodic memory (memory/episodic.jsonl)")
        if manifest["dataset"].get("kind") == "preference":
            raise ValueError(f"{irrelevant}: a preference run; the irrelevant memory must be one pool")
        probe.update(irrelevant=str(path), irrelevant_dataset=manifest["dataset"]["name"],
                     irrelevant_memory=memory_hash(path / rundir.MEMORY))
    return probe


def memory_hash(folder: Path) -> str:
    """The sha256 of a memory folder's episodic entries: how the probe names the irrelevant memory."""
    return hashlib.sha256((folder / rundir.EPISODIC).read_bytes()).hexdigest()


def arms(probe: dict) -> list[str]:
    kinds = (OWN, IRRELEVANT) if probe.get("irrelevant_memory") else (OWN,)
    return [NONE, *(f"{kind}@{k}" for kind in kinds for k in probe["values"])]


def memory_only(answer: str | None, question: str, shown: list[dict]) -> bool | None:
    """The answer is an option a shown note asserts that is not a word of the question (None: no shown note asserts
    such an option, so no answer could be one)."""
    words = set(re.findall(r"\w+", question.lower()))
    lacking = {e.get("asserted") for e in shown} - {None}
    lacking = {a for a in lacking if str(a).lower() not in words}
    if not lacking:
        return None
    return answer in lacking


def _prompt(run, item, vector, pool, k: int, user):
    """EP_CRIT's prompt for ``item`` showing the ``k`` entries of ``pool`` nearest to ``vector`` (``user``'s
    pool of it), and those entries."""
    template = STRATEGIES[EP_CRIT].template

    def added(shown: list[dict]) -> int:
        def count(entries):
            return run.llm.count_tokens(performance.rendered(run, template, item, entries, None).messages)

        return count(shown) - count([])

    shown = selection.choose(replace(run.config, k=k), pool, vector, user, item.id, added)
    return performance.rendered(run, template, item, shown, None), shown


async def _ask(run, item, vector, arm: str, pools: dict) -> None:
    if arm == NONE:
        prompt = agents.performance_prompt(ZERO_SHOT_TEMPLATE, run.task, item, run.space, [], None, "full")
        extra = {"memory": NONE, "k": 0, "shown": 0, "memory_only": None}
        await run.answer(PROBE, arm, item, prompt, seed=(PROBE, arm), extra=extra)
        return
    kind, k = arm.split("@")
    pool = pools[kind]
    prompt, shown = _prompt(run, item, vector, pool, int(k), item.user if kind == OWN else None)
    await run.answer(PROBE, arm, item, prompt, seed=(PROBE, arm), retrieved=[e["id"] for e in shown],
                     extra=lambda outcome: {**selection.logged(shown), "memory": kind, "k": int(k),
                                            "shown": len(shown),
                                            "memory_only": memory_only(outcome.get("answer"), item.question, shown)})


def _irrelevant_memory(run) -> Path:
    """The memory folder of the run given as irrelevant, checked to hold the memory the probe names."""
    folder = Path(run.inputs["irrelevant"]) / rundir.MEMORY
    if memory_hash(folder) != run.probe["irrelevant_memory"]:
        raise RunError(f"{folder}: its memory changed since the probe named it; give --irrelevant again")
    return folder


async def dose(run) -> None:
    """The train stage, then every arm for every test item of ``run``'s dataset."""
    from critique.engine.memory.episodic import EpisodicMemory

    memory = await run.train_stage((TRAIN, CRITIQUE))
    pools = {OWN: memory.episodic}
    if run.probe.get("irrelevant_memory"):
        pools[IRRELEVANT] = EpisodicMemory.load(_irrelevant_memory(run), lambda: run.encoder)
    test = run.dataset.test
    vectors = dict(zip(((i.user, i.id) for i in test), run.encoder.encode([i.question for i in test])))
    names = arms(run.probe)

    async def one(item) -> None:
        todo = [a for a in names if pkey(PROBE, a, item.user, item.id) not in run.predictions]
        await asyncio.gather(*(_ask(run, item, vectors[(item.user, item.id)], a, pools) for a in todo))

    await run.each(test, one, DOSE)


def cost(run) -> int:
    return arm_probes.cost(run, arms(run.probe))
