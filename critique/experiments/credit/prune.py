"""Pruning by credit (docs/memory.md sections 1 and 3): remove entries from episodic memory by a rule
and score EP_CRIT and EP+SEM_CRIT on questions the credit never saw.

Rules (``--prune``, comma-separated):

- ``toxic``: the entries the credit run found toxic (critique.analysis.memory.credit);
- ``lowest:N``: the N entries of lowest credit (net D over the prompts that retrieved them; ties by id);
- ``estimate:N``: the N entries of lowest *learned* credit: each shown entry's estimate from what the logs hold
  without a deletion call, by the model fitted on the other half of the entries
  (critique.analysis.memory.credit_model.cross_fitted; ties by id; an entry never shown is left out);
- ``random:N``: N entries at random (seeds 0..``--seeds``-1);

and always ``none`` (nothing removed) and, for ``toxic``, ``lowest:N`` and ``estimate:N``, the budget-matched
control: the same number of entries removed at random, once per seed (docs/memory.md: generic pruning is no fix,
and reported random pruning *lowered* quality).

Held-out questions: with ``--on train`` every test question (the credit was measured on train), with
``--on test-half`` the other half of test; ``--on test`` is refused (pruning on the questions the
credit was measured on selects on the test set). Each held-out question retrieves its K nearest entries
among those left (the memory's FAISS vectors, inner product as the index); EP+SEM_CRIT keeps the
source run's advice (distilled from every entry: re-summarising a pruned memory is not done here).

One run directory (default ``<credit run>__prune``, manifest probe ``{name: credit_prune, ...}``):
predictions and calls of stage ``credit_prune``, strategy ``STRATEGY|RULE`` (``EP_CRIT|toxic``,
``EP_CRIT|random:3#1``: seed 1), field ``pruned``: the number of entries removed. The ``none`` prompts
are the source run's own test requests when retrieval finds the same entries: answered from its log.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from critique.base import records, rundir
from critique.base.records import Field
from critique.base.vocab import CREDIT_PRUNE, EP_CRIT, EP_SEM_CRIT

PRUNED = (EP_CRIT, EP_SEM_CRIT)  # the strategies scored with pruned memory
# the fields of its predictions (critique.base.records: record["experiment"]["credit_prune"])
records.declare(CREDIT_PRUNE, (
    Field("pruned", "integer", "credit_prune: the number of entries the rule (strategy STRATEGY|RULE) removed "
          "from memory", required=False),
))
NONE, TOXIC, LOWEST, ESTIMATE, RANDOM = "none", "toxic", "lowest", "estimate", "random"
SEEDS = 3  # random removals per rule, by default
SEP = "|"


def parse_rules(text: str) -> list[tuple[str, int | None]]:
    """[(kind, N)] from 'toxic,lowest:5,random:5'; ValueError with the reason."""
    rules = []
    for part in [p.strip() for p in str(text).split(",") if p.strip()]:
        kind, _, n = part.partition(":")
        if kind == TOXIC and not n:
            rules.append((TOXIC, None))
        elif kind in (LOWEST, ESTIMATE, RANDOM) and n.isdigit() and int(n) >= 1:
            rules.append((kind, int(n)))
        else:
            raise ValueError(f"{part!r} is not toxic, lowest:N, estimate:N or random:N (N >= 1)")
    if not rules:
        raise ValueError("no rule given")
    return list(dict.fromkeys(rules))


def check(strategy: str, on: str, seeds: int) -> None:
    """ValueError where pruning cannot follow a credit run of ``strategy`` on ``on`` with ``seeds`` random
    removals per rule."""
    from critique.experiments.credit.deletion import STRATEGIES

    if on == "test":
        raise ValueError("pruning needs credit on train or test-half: pruning by credit measured on the test "
                         "questions and scoring it on them selects on the test set")
    if strategy not in STRATEGIES:
        raise ValueError(f"pruning removes episodic entries and scores {', '.join(STRATEGIES)}; {strategy}'s "
                         "notes are credited without pruning")
    if seeds < 1:
        raise ValueError(f"seeds must be at least 1, not {seeds}")


def checked_rules(text: str, strategy: str, on: str, seeds: int) -> list[tuple[str, int | None]]:
    """The rules of ``text`` (parse_rules) for a credit run of ``strategy`` on ``on``; ValueError where pruning
    cannot follow it (the CLI's --prune, a study file's ``[credit] prune``)."""
    rules = parse_rules(text)
    check(strategy, on, seeds)
    return rules


def random_label(n: int, seed: int) -> str:
    return f"{RANDOM}:{n}#{seed}"


def removal_sets(rows: list[dict], rules: list[tuple[str, int | None]], seeds: int, seed: int,
                 estimates: dict[str, float] | None = None) -> dict[str, list]:
    """Rule label -> the entry ids it removes: none, each rule, and budget-matched random removals;
    ``estimates``: entry id -> learned credit, for ``estimate:N``."""
    ids = sorted(r["id"] for r in rows)
    out: dict[str, list[str]] = {NONE: []}

    def randoms(n: int) -> None:
        for s in range(seeds):
            out.setdefault(random_label(n, s), random.Random(f"{seed}\0{s}\0{n}").sample(ids, min(n, len(ids))))

    for kind, n in rules:
        if kind == TOXIC:
            out[TOXIC] = sorted(r["id"] for r in rows if r["tier"] == "toxic")
            if out[TOXIC]:
                randoms(len(out[TOXIC]))
        elif kind == LOWEST:
            out[f"{LOWEST}:{n}"] = [r["id"] for r in sorted(rows, key=lambda r: (r["credit"], r["id"]))[:n]]
            randoms(n)
        elif kind == ESTIMATE:
            out[f"{ESTIMATE}:{n}"] = sorted(estimates or {}, key=lambda k: (estimates[k], k))[:n]
            randoms(n)
        else:
            randoms(n)
    return out


def removals(source_dir: Path, credit_dir: Path, rules: list, seeds: int, seed: int) -> dict[str, list]:
    """removal_sets from the credit run's measured credit (and, for ``estimate:N``, its learned estimates);
    UserError where the estimate cannot be fitted."""
    from critique.analysis.memory import credit as analysis
    from critique.base.errors import UserError

    estimates = None
    if any(kind == ESTIMATE for kind, _ in rules):
        from critique.analysis.memory import credit_model

        estimates = credit_model.cross_fitted(credit_dir)
        if not estimates:
            raise UserError("estimate:N: the credit run showed too few entries to fit the estimate on one half and "
                            "apply it to the other (at least 4 each)")
    return removal_sets(analysis.summary(credit_dir, source_dir)["rows"], rules, seeds, seed, estimates)


@dataclass
class Ask:
    item: object
    strategy: str  # STRATEGY|RULE
    prompt: object
    retrieved: list[str]
    pruned: int
    hash: str = ""


def held_out(run, on: str) -> list:
    from critique.experiments.credit.deletion import half_of

    if on == "train":
        return list(run.dataset.test)
    return [i for i in run.dataset.test if half_of(i.user, i.id, run.config.seed) == 1]


def no_held_out(source_dir: Path, on: str) -> str | None:
    """Why pruning the run at ``source_dir`` would have no held-out question to score (None where it has one, or
    where its logs cannot tell: no complete run there yet, or no test stage, as a stream's), told before any call
    from the run's test questions and seed: on test-half, the questions of the half credit does not see."""
    from critique.experiments.credit.deletion import half_of
    from critique.experiments.source_run import SourceRun

    run = SourceRun(source_dir)
    if not run.complete():
        return None
    seed = run.manifest["config"]["seed"]
    tests = {(p.get("user"), p["item_id"]) for p in run.predictions("test")}
    if on == "train" or not tests or any(half_of(user, item, seed) == 1 for user, item in tests):
        return None
    return _nothing_held_out(on, len(tests))


def _nothing_held_out(on: str, tests: int) -> str:
    return (f"no held-out question to score the pruned memories on (on {on}: {tests} test questions, none in the "
            "half credit did not see)")


def asks(run, source: dict, sets: dict[str, list[str]], on: str, skipped: list[str]) -> list[Ask]:
    """Each held-out question asked with each pruned strategy's own prompt (critique.engine.performance) over the
    source run's memory less each rule's entries: retrieved again from what is left, as the method would."""
    from critique.engine.memory.episodic import EpisodicMemory
    from critique.engine.memory.value import Memory
    from critique.engine.performance import performance_prompt

    memory = EpisodicMemory.load(source["path"] / rundir.MEMORY, lambda: run.encoder)
    items = held_out(run, on)
    encoded = run.encoder.encode([i.question for i in items]) if items else []
    out = []
    for label, removed in sets.items():
        pruned = Memory(memory.pruned(set(removed)), semantic=source["semantic"])
        for item, vector in zip(items, encoded):
            for strategy in PRUNED:
                found = performance_prompt(run, strategy, item, vector, item.id, pruned)
                if found is None:
                    skipped.append(f"{strategy} {item.id}: no semantic memory for its pool")
                    continue
                prompt, shown = found
                out.append(Ask(item, f"{strategy}{SEP}{label}", prompt, [e["id"] for e in shown], len(removed)))
    schema = run.dataset.card.response_schema
    for a in out:
        a.hash = run.request(a.prompt, schema)[1]
    return out


def prune_probe(strategy: str, on: str, source: Path, source_run_id: str, credit: Path, credit_run_id: str) -> dict:
    return {"name": CREDIT_PRUNE, "strategy": strategy, "on": on, "source": Path(source).name,
            "source_run_id": source_run_id, "credit": Path(credit).name, "credit_run_id": credit_run_id}


def execute(source_dir: Path, credit_dir: Path, strategy: str, on: str, rules: list, seeds: int, *,
            out: Path | None = None, progress: bool = True, say=print, run_options: dict | None = None,
            **changes) -> dict:
    """Score the pruned memories (resumable); says its cost in calls on stderr before the first call.
    ``run_options``: what a study gives each of its runs (critique.runner.execute_run's runner, and prepare's
    deployments, routing_strategy, limits, stop and spend)."""
    from critique.base.cost import print_cost
    from critique.base.errors import UserError
    from critique.engine.run_directory import pkey
    from critique.experiments import reuse
    from critique.experiments.source_run import SourceRun
    from critique.experiments.credit.source import read_source, refuse_unrebuildable, source_config
    from critique.runner import execute_run

    try:
        check(strategy, on, seeds)
    except ValueError as exc:
        raise UserError(f"--prune: {exc}") from None
    source = read_source(source_dir)
    manifest = source["manifest"]
    refuse_unrebuildable(manifest, source_dir)
    config = source_config(manifest, **changes)
    sets = removals(source_dir, credit_dir, rules, seeds, config.seed)
    credit_manifest = SourceRun(credit_dir).manifest
    out = Path(out) if out else Path(credit_dir).parent / f"{Path(credit_dir).name}__prune"
    probe = prune_probe(strategy, on, source_dir, manifest["run_id"], credit_dir, credit_manifest["run_id"])
    pool = reuse.matching_calls([str(source_dir)], config.model, manifest["dataset"]["checksum"], exclude=out)
    state: dict = {"counter": {"requested": 0}, "sets": sets}

    def setup(run) -> None:
        if not held_out(run, on):
            raise UserError(f"--prune: {_nothing_held_out(on, len(run.dataset.test))}")
        state["skipped"] = []
        state["asks"] = asks(run, source, sets, on, state["skipped"])
        todo = [a for a in state["asks"]
                if pkey(CREDIT_PRUNE, a.strategy, a.item.user, a.item.id) not in run.predictions]
        state["todo"] = todo
        state["cost"] = len({a.hash for a in todo if a.hash not in run.logged and a.hash not in run.reuse})
        say(f"prune: {len(sets)} memories ({', '.join(f'{k}: -{len(v)}' for k, v in sets.items())}) x "
            f"{len(held_out(run, on))} held-out questions x {', '.join(PRUNED)}")
        print_cost(state["cost"], "the pruned memories' requests still to make, identical ones once; the response "
                                  "cache may answer some", out, source_dir, exact=True)
        for line in dict.fromkeys(state["skipped"]):
            say(f"critique: warning: prune: left out: {line}")

    async def work(run) -> None:
        async def one(same: list[Ask]) -> None:  # identical requests (two rules removing the same): paid once
            for a in same:
                if a.hash not in run.logged and a.hash not in run.reuse:
                    state["counter"]["requested"] += 1
                await run.answer(CREDIT_PRUNE, a.strategy, a.item, a.prompt, seed=(CREDIT_PRUNE, a.strategy),
                                 retrieved=a.retrieved, extra={"pruned": a.pruned})

        groups: dict[str, list[Ask]] = {}
        for a in state["todo"]:
            groups.setdefault(a.hash, []).append(a)
        await run.each(list(groups.values()), one, "prune")

    outcome, _ = execute_run(config, out, probe=probe, reuse=pool, work=work, setup=setup, progress=progress,
                             **(run_options or {}))
    state.update(outcome=outcome, out=out)
    return state
