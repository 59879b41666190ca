"""De-inflation (issue 16; docs/memory.md section 1): demote the memory entries a verifier flagged, re-run the
critique strategies that retrieve them on the test split, and compare with demoting as many entries at random.

``critique deinflate RUN --verifier V --control random:S --mode doubt|drop`` reads RUN (a plain run with episodic
memory) and its verify run (``critique verify RUN --verifier V``; default ``RUN__verify-V``). The entries the
verifier flagged (``survives`` false; checks that ended in an error count as not flagged and are said) are
demoted:

- ``doubt``: each keeps its place in memory, but its stored verdict (the critique's ``correct_answer``) carries
  the doubtful mark of ``prompts/<set>/doubtful.j2``, so EP prompts show it as doubtful. The mark is written
  into the entry (``doubtful: true``), not into the EP templates: a prompt that retrieves no demoted entry is
  the very request of RUN (same messages, same hash), answered from RUN's log without a call.
- ``drop``: they leave memory; each test question retrieves its K nearest among the others.

Then EP_CRIT and EP+SEM_CRIT answer every test question (EP+SEM_CRIT keeps RUN's advice: the semantic memory is
not distilled again). The control: the same number of entries, chosen at random among all (seed s of
0..S-1), demoted the same way. Each arm is an ordinary run directory (resumable; the response cache and RUN's
log answer every request already made):

    <parent>/<RUN>__deinflate-<mode>-<verifier>/      the flagged entries demoted
    <parent>/<RUN>__deinflate-<mode>-random<n>-s<s>/  n random entries demoted (shared by verifiers flagging n)

Manifest ``probe`` = ``{name: deinflate, mode, demote (verifier | random), verifier (null for random), seed
(null for the verifier), demoted (n), source, source_run_id, verify_run}``; the arm's memory/ holds the memory
it used and ``memory/demoted.json`` the demoted ids. Test predictions are ordinary test records.
The table: critique.analysis.memory.deinflate.
"""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

from critique.base import rundir
from critique.base.errors import UserError
from critique.base.ids import entry_id
from critique.base.vocab import DEINFLATE, DEMOTIONS, EP_CRIT, EP_SEM_CRIT
from critique.experiments.source_run import SourceRun

STRATEGIES = [EP_CRIT, EP_SEM_CRIT]
DOUBTFUL = "doubtful.j2"
DEMOTED = "demoted.json"  # memory/: the ids an arm demoted
VERIFIER, RANDOM = "verifier", "random"


def parse_control(text: str) -> int:
    """The number of random seeds of ``random:S``; ValueError otherwise."""
    kind, _, n = str(text or "").strip().partition(":")
    if kind != RANDOM or not n.strip().isdigit() or int(n) < 1:
        raise ValueError(f"--control must be random:S (S >= 1 seeds), not {text!r}")
    return int(n)


def check_mode(mode: str) -> str:
    if mode not in DEMOTIONS:
        raise ValueError(f"--mode must be one of {', '.join(DEMOTIONS)}, not {mode!r}")
    return mode


def flagged_ids(verify_run: Path, source_run_id: str) -> tuple[list[str], int, int]:
    """(ids of the entries the verify run flagged, entries checked, checks that ended in an error)."""
    run = SourceRun(verify_run)
    if not run.is_run():
        raise UserError(f"{verify_run}: no verify run there; run `critique verify` on the run first (or give "
                        "--verify-run)")
    probe = run.probe
    if probe.get("name") != "verify":
        raise UserError(f"{verify_run}: not a verify run (its manifest's probe is {probe.get('name')!r})")
    if probe.get("source_run_id") != source_run_id:
        raise UserError(f"{verify_run}: checks run {probe.get('source_run_id')!r}, not this run ({source_run_id})")
    checks = [p for p in run.predictions("probe", latest=True) if p.get("verifier")]
    done = [p for p in checks if not p.get("error")]
    ids = sorted(entry_id(p.get("user"), p["item_id"]) for p in done if p.get("survives") is False)
    return ids, len(done), len(checks) - len(done)


def random_ids(ids: list[str], n: int, seed: int, run_seed: int) -> list[str]:
    return sorted(random.Random(f"{run_seed}\0deinflate\0{seed}\0{n}").sample(sorted(ids), min(n, len(ids))))


def arm_probe(mode: str, demote: str, verifier: str | None, seed: int | None, demoted: int, source: Path,
              source_run_id: str, verify_run: Path | None, out: Path) -> dict:
    """``source``, ``verify_run``: relative to the folder holding the arm's run directory ``out`` (their names
    when beside it), so the logs can move together."""
    from critique.experiments.verify import beside

    return {"name": DEINFLATE, "mode": mode, "demote": demote, "verifier": verifier, "seed": seed,
            "demoted": demoted, "source": beside(source, out), "source_run_id": source_run_id,
            "verify_run": beside(verify_run, out) if verify_run else None}


def arm_dir(parent: Path, source: Path, mode: str, verifier: str | None, n: int, seed: int | None) -> Path:
    from critique.runner import safe

    tail = f"random{n}-s{seed}" if verifier is None else safe(verifier.replace(":", "-"))
    return Path(parent) / f"{Path(source).name}__{DEINFLATE}-{mode}-{tail}"


def marked(entry: dict, prompt_set: str) -> dict:
    """The entry with its stored verdict marked doubtful (doubtful.j2), and ``doubtful: true``."""
    from critique.engine import prompts

    critique = dict(entry["critique"])
    critique["correct_answer"] = prompts.render(DOUBTFUL, prompt_set,
                                                assertion=str(critique.get("correct_answer") or "")).strip()
    return {**entry, "critique": critique, "doubtful": True}


def demoted_memory(source: Path, demoted: set[str], mode: str, prompt_set: str, encoder):
    """RUN's episodic memory with the ``demoted`` ids marked (doubt) or left out (drop)."""
    from critique.engine.memory.episodic import EpisodicMemory

    memory = EpisodicMemory.load(Path(source) / rundir.MEMORY, lambda: encoder)
    if not memory.entries:
        return memory
    vectors = memory.vectors()
    if mode == "drop":
        keep = [n for n, e in enumerate(memory.entries) if e["id"] not in demoted]
        return EpisodicMemory([memory.entries[n] for n in keep], vectors[keep])
    entries = [marked(e, prompt_set) if e["id"] in demoted else e for e in memory.entries]
    return EpisodicMemory(entries, vectors)


def arm_memory(run, source: Path, demoted: list[str]):
    """The arm's memory (critique.engine.memory.value.Memory), saved in ``run``'s memory/ folder with the demoted ids:
    RUN's episodic memory, demoted; RUN's semantic memory."""
    from critique.engine.memory import semantic
    from critique.engine.memory.value import Memory

    mode = run.probe["mode"]
    memory = Memory(demoted_memory(source, set(demoted), mode, run.config.prompts, run.encoder),
                    semantic=semantic.load(Path(source) / rundir.MEMORY))
    memory.episodic.save(run.out / rundir.MEMORY)
    semantic.save(run.out / rundir.MEMORY, memory.semantic)
    rundir.write_json_atomic(run.out / rundir.MEMORY / DEMOTED, {"mode": mode, "ids": sorted(demoted)})
    return memory


def cost(run, memory, source_hashes: set[str]) -> tuple[int, int]:
    """(test prompts still to answer over the arm's ``memory``, of those the ones neither RUN's log nor this arm's
    answers)."""
    from critique.engine.performance import performance_prompt
    from critique.engine.run_directory import pkey

    test = run.dataset.test
    todo = [(s, i) for i in test for s in run.config.strategies if pkey("test", s, i.user, i.id) not in run.predictions]
    if not todo:
        return 0, 0
    vectors = dict(zip((entry_id(i.user, i.id) for i in test), run.encoder.encode([i.question for i in test])))
    new = 0
    for strategy, item in todo:
        found = performance_prompt(run, strategy, item, vectors[entry_id(item.user, item.id)], item.id, memory)
        if found is None:
            continue
        prompt = found[0]
        key = run.request(prompt, run.dataset.card.response_schema)[1]
        new += key not in source_hashes and key not in run.logged
    return len(todo), new


def arm_steps(source: Path, demoted: list[str], opened=None):
    """(setup, work) of an arm's run (critique.runner.execute_run's): ``setup(run)`` makes the arm's memory
    (``arm_memory``) and hands it to ``opened(run, memory)`` (the command's cost line); ``work(run)`` is the test
    stage over it."""
    made = {}

    def setup(run) -> None:
        made["memory"] = arm_memory(run, source, demoted)
        if opened is not None:
            opened(run, made["memory"])

    async def work(run) -> None:
        await run.test_stage(made["memory"])

    return setup, work


def arm_config(config, source: Path):
    """An arm's config: the source run's, answering EP_CRIT, and EP+SEM_CRIT when the source has the semantic
    memory it needs (a source whose strategies needed no summary has none)."""
    has_advice = SourceRun(source).has_semantic()
    return replace(config, strategies=[s for s in STRATEGIES if s == EP_CRIT or has_advice])
