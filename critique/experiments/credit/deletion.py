"""Credit per memory entry by deletion (docs/memory.md section 3): `critique credit`.

For each evaluated prompt of an episodic strategy (EP_CRIT or EP+SEM_CRIT) and each entry retrieved
into it, the same prompt is answered with that entry left out (K-1 examples, the others in the same
order): ``D_i = R(with i) - R(without i)`` per prompt. An entry never retrieved gets credit 0 without
a call. The tiers (inert, duplicate, novel-unused, used-not-decisive, load-bearing, toxic) are
computed by critique.analysis.memory.credit from the run directory this writes.

Which prompts (``--on``):

- ``test``: the source run's test prompts of the strategy, rebuilt exactly from the ``retrieved`` ids
  its predictions logged and memory/episodic.jsonl (never retrieved again: the full prompt's request
  must be the logged one, and it is answered from the source run's log, at no cost). This selects on
  the test set (docs/memory.md section 3): use it to describe, not to prune.
- ``train``: leave-one-out over the train questions: each is answered with its K nearest *other*
  entries of its pool (its own entry left out); the test predictions are never read.
- ``test-half``: ``test`` on one seeded half of the test questions (``half_of``); the other half is
  held out for pruning (critique.experiments.credit.prune).

With EP+SEM_CRIT the advice is the source run's, distilled from every critique: on ``train`` it has
seen the very item answered (only the episodic entry is left out).

A credit run is an ordinary run directory (default ``<source>__credit-<STRATEGY>-<on>[-cite]``) whose
manifest ``probe`` is ``{name: credit, strategy, on, cite, null, source, source_run_id}``: calls and
predictions of stage ``credit``, strategy ``full`` (the whole prompt) or ``without:ENTRY_ID`` (one entry
left out; field ``removed``), and of stage ``credit_null``, strategy ``null`` (the null control).
Resumable and cached like every run.

``--cite``: every prompt (full and deletions) also asks which examples were used (parsing.cite_schema;
the instruction CITE_INSTRUCTION is added after the template's text, so without --cite the prompts are
the templates' own, with the source run's request hashes). Field ``cited``: the entry ids named.

A field method's notes (``--strategy ace``, ``dc``, ``expel``, ``dspy:...``; ``--on test`` or ``test-half``) are
credited the same way, each test prompt of the method asked without each note it showed: the memory is rebuilt
from the source run's calls first (critique.experiments.credit.method).

Null control (``--null N``): N full prompts, a seeded sample, are asked again of the model itself
(never the response cache, a matching run nor the log: critique.engine.policy.REPEAT): how often the provider flips
an identical prompt by itself.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

from critique.base import records, rundir
from critique.experiments.credit import method as credit_method, source as credit_source, stream as credit_stream
from critique.base.records import Field
from critique.engine.policy import REPEAT, SHARED
from critique.base.vocab import CREDIT, CREDIT_FULL as FULL, CREDIT_NULL, CREDIT_REPEAT as NULL, \
    CREDIT_WITHOUT as WITHOUT, EP_CRIT, EP_SEM_CRIT

STRATEGIES = (EP_CRIT, EP_SEM_CRIT)  # the strategies whose prompts hold episodic entries of memory/
ON = ("test", "train", "test-half")
# the fields of the deletion test's predictions (critique.base.records: record["experiment"]["credit"])
records.declare(CREDIT, (
    Field("removed", "string|null", "credit: the episodic entry left out of the prompt (strategy without:ID); "
          "null for the full prompt and the null control", required=False),
    Field("cited", "array|null", "credit --cite: ids of the prompt's entries the answer says it used; null when "
          "not asked or the reply named none validly", required=False),
    Field("nearest_other", "number|null", "credit: the removed entry's greatest similarity (cosine of question "
          "embeddings) to another entry of the same prompt; null when it was alone", required=False),
    Field("nearest_other_id", "string|null", "credit: that other entry's id", required=False),
))
CITE_INSTRUCTION = ('Also say which of the numbered examples above you used for your answer: "used_examples", a '
                    'list of their numbers ([] if none).')


def without(entry_id: str) -> str:
    return WITHOUT + entry_id


class Refused(ValueError):
    """A setting credit cannot run with: ``key`` names it (``strategy``, ``on`` or ``null``), the text says why."""

    def __init__(self, key: str, problem: str):
        super().__init__(problem)
        self.key = key


def check(strategy: str, on: str, null: int, *, methods: bool = True) -> None:
    """Refused unless credit can run with these settings; ``methods``: whether a field method's notes may be
    credited (``critique credit --strategy ace``; a study credits its critique strategies only)."""
    if strategy not in STRATEGIES and not (methods and credit_method.is_method(strategy)):
        raise Refused("strategy", f"one of {', '.join(STRATEGIES)} (the strategies whose prompts hold memory "
                                  "entries; a field method's notes, ace, dc, expel or dspy:..., with `critique credit "
                                  f"RUN --strategy METHOD`), not {strategy!r}")
    if on not in ON:
        raise Refused("on", f"one of {', '.join(ON)}, not {on!r}")
    if null < 0:
        raise Refused("null", f"must be at least 0, not {null}")


def credit_probe(strategy: str, on: str, cite: bool, null: int, source: Path, source_run_id: str) -> dict:
    return {"name": CREDIT, "strategy": strategy, "on": on, "cite": bool(cite), "null": int(null),
            "source": Path(source).name, "source_run_id": source_run_id}


def default_out(source: Path, strategy: str, on: str, cite: bool) -> Path:
    from critique.runner import safe

    source = Path(source)
    return source.parent / f"{source.name}__credit-{safe(strategy)}-{on}{'-cite' if cite else ''}"


def half_of(user: str | None, item_id: str, seed: int) -> int:
    """0 (the credit half) or 1 (held out): a seeded hash of the item, so halves never depend on order."""
    from critique.datasets.subsets import seeded_rank

    return int(seeded_rank(seed, user, item_id)[:2], 16) & 1


# ---- the plan: prompts and requests --------------------------------------------------------------
@dataclass
class Case:
    """One evaluated prompt: the item, its examples in prompt order, the advice (EP+SEM_CRIT)."""
    item: object
    examples: list[dict]
    advice: str | None
    source_hash: str | None = None  # test: the request hash the source run logged for this prompt


@dataclass
class Request:
    case: Case
    strategy: str  # FULL, without:ID or NULL
    examples: list[dict]
    removed: str | None = None
    nearest_other: float | None = None
    nearest_other_id: str | None = None
    repeat: bool = False  # the null control: asked of the model itself (critique.engine.policy.REPEAT)
    prompt: object = None
    schema: dict = field(default_factory=dict)
    hash: str = ""


def entry_vectors(folder: Path, entries: list[dict], encoder) -> dict:
    """Entry id -> its question's vector, for ``entries`` (those of memory/episodic.jsonl): the vectors
    EpisodicMemory.load gives (its FAISS indexes; the questions encoded again when an index is missing or
    does not match its pool)."""
    from critique.engine.memory.episodic import EpisodicMemory

    memory = EpisodicMemory.load(folder, encoder)
    found = dict(zip((e["id"] for e in memory.entries), memory.vectors()))
    return {e["id"]: found[e["id"]] for e in entries}


def _advice(semantic: dict, user: str | None, strategy: str) -> tuple[bool, str | None]:
    from critique.engine.memory.episodic import pool_of
    from critique.engine.strategies import STRATEGIES as ALL

    if not ALL[strategy].semantic:
        return True, None
    advice = (semantic.get(pool_of(user)) or {}).get("advice")
    return bool(advice), advice


def answered(run, predictions: list[dict], half: int | None, skipped: list[str], what: str):
    """(prediction, item) of each final prediction of a test item with an answer (``half``: of that half only);
    one left out says why in ``skipped`` (``what``: how it names the prediction)."""
    items = {(i.user, i.id): i for i in run.dataset.test}
    for p in rundir.latest(predictions):
        item = items.get((p.get("user"), p["item_id"]))
        if item is None or p.get("error") or p.get("request_hash") is None:
            skipped.append(f"{p['item_id']}: " + ("not in the dataset's test split" if item is None else
                                                  f"{what} has no answer (an error)"))
        elif half is None or half_of(item.user, item.id, run.config.seed) == half:
            yield p, item


def test_cases(run, source: dict, strategy: str, half: int | None, skipped: list[str]) -> list[Case]:
    """The source run's test prompts of ``strategy`` (``half``: only the test items of that half), each
    rebuilt from the entry ids its prediction logged."""
    by_id = {e["id"]: e for e in source["entries"]}
    from critique.experiments.source_run import SourceRun

    predictions = SourceRun(source["path"]).predictions("test", strategy)
    cases, empty = [], 0
    for p, item in answered(run, predictions, half, skipped, "its source prediction"):
        if not p.get("retrieved"):
            empty += 1
            continue
        missing = [i for i in p.get("retrieved") or [] if i not in by_id]
        if missing:
            skipped.append(f"{item.id}: retrieved {', '.join(missing)}, not in memory/episodic.jsonl")
            continue
        ok, advice = _advice(source["semantic"], item.user, strategy)
        if not ok:
            skipped.append(f"{item.id}: no semantic memory for its pool")
            continue
        cases.append(Case(item, [by_id[i] for i in p.get("retrieved") or []], advice, p["request_hash"]))
    if empty:
        skipped.append(f"{empty} prompts retrieved no entry (nothing to delete)")
    return cases


def train_cases(run, source: dict, strategy: str, skipped: list[str]) -> list[Case]:
    """Leave-one-out over train: each train question with the entries the strategy's own prompt shows it
    (critique.engine.performance) over the source run's memory, its own entry never among them."""
    from critique.engine.memory.episodic import EpisodicMemory
    from critique.engine.memory.value import Memory
    from critique.engine.performance import performance_prompt

    memory = Memory(EpisodicMemory.load(source["path"] / rundir.MEMORY, lambda: run.encoder),
                    semantic=source["semantic"])
    train = list(run.dataset.train)
    encoded = run.encoder.encode([i.question for i in train]) if train else []
    cases, empty = [], 0
    for item, vector in zip(train, encoded):
        found = performance_prompt(run, strategy, item, vector, item.id, memory)
        if found is None:
            skipped.append(f"{item.id}: no semantic memory for its pool")
        elif not found[1]:  # the memory-free prompt (an empty pool): nothing to delete, as test_cases skips it
            empty += 1
        else:
            cases.append(Case(item, list(found[1]), _advice(source["semantic"], item.user, strategy)[1]))
    if empty:
        skipped.append(f"{empty} prompts retrieved no entry (nothing to delete)")
    return cases


def _prompt(run, strategy: str, case: Case, examples: list[dict], cite: bool):
    """The strategy's prompt for the case showing ``examples`` (critique.engine.performance.rendered), with the
    citation instruction under --cite."""
    from critique.engine import agents, parsing
    from critique.engine.performance import rendered
    from critique.engine.strategies import STRATEGIES as ALL

    prompt = rendered(run, ALL[strategy].template, case.item, examples, case.advice)
    schema = run.dataset.card.response_schema
    if cite:
        messages = [dict(m) for m in prompt.messages]
        messages[-1]["content"] = messages[-1]["content"].rstrip("\n") + "\n" + CITE_INSTRUCTION + "\n"
        prompt = agents.Prompt(prompt.template, prompt.template_hash, messages)
        schema = parsing.cite_schema(schema, len(examples))
    return prompt, schema


def requests(run, cases: list[Case], strategy: str, vectors: dict, cite: bool, null: int) -> list[Request]:
    """Every request of the credit test: per case the full prompt and one per retrieved entry; then the
    null control's re-asked full prompts (a seeded sample of ``null`` cases)."""
    import numpy as np

    out = []
    for case in cases:
        out.append(Request(case, FULL, case.examples))
        for n, entry in enumerate(case.examples):
            others = case.examples[:n] + case.examples[n + 1:]
            sims = [(float(np.dot(vectors[entry["id"]], vectors[o["id"]])), o["id"]) for o in others
                    if entry["id"] in vectors and o["id"] in vectors]
            best = max(sims) if sims else (None, None)
            out.append(Request(case, without(entry["id"]), others, entry["id"], best[0], best[1]))
    sample = random.Random(run.config.seed).sample(cases, min(int(null), len(cases))) if null else []
    out += [Request(case, NULL, case.examples, repeat=True) for case in sample]
    for r in out:
        r.prompt, r.schema = _prompt(run, strategy, r.case, r.examples, cite)
        r.hash = run.request(r.prompt, r.schema)[1]
    return out


def done(run, r: Request) -> bool:
    from critique.engine.run_directory import pkey

    return pkey(stage(r), r.strategy, r.case.item.user, r.case.item.id) in run.predictions


def stage(r: Request) -> str:
    return CREDIT_NULL if r.repeat else CREDIT


def costs(run, todo: list[Request]) -> int:
    """Calls the credit test will request: every request not yet answered in this run directory nor in the
    source run's log (a null control's always; the response cache may still answer some)."""
    return sum(1 for r in todo if not done(run, r) and (r.repeat or (r.hash not in run.logged
                                                                   and r.hash not in run.reuse)))


# ---- answering ---------------------------------------------------------------------------------
async def answer(run, r: Request, cite: bool, counter: dict) -> dict:
    """One request, through the run's one step (Run.answer), with the examples its reply cites."""
    from critique.engine import parsing

    item = r.case.item
    if r.repeat or (r.hash not in run.logged and r.hash not in run.reuse):
        counter["requested"] += 1

    def cited(result) -> dict:
        if not cite or result.error is not None or result.context_overflow:
            return {"cited": None}
        numbers = parsing.parse_cited(result.text, len(r.examples))
        return {"cited": None if numbers is None else [r.examples[n - 1]["id"] for n in numbers]}

    return await run.answer(stage(r), r.strategy, item, r.prompt, seed=(stage(r), r.strategy), schema=r.schema,
                            retrieved=[e["id"] for e in r.examples], policy=REPEAT if r.repeat else SHARED,
                            from_reply=cited,
                            extra={"removed": r.removed, "nearest_other": r.nearest_other,
                                   "nearest_other_id": r.nearest_other_id})


def work_for(plan: dict):
    async def work(run) -> None:
        todo = [r for r in plan["requests"] if not done(run, r)]
        await run.each(todo, lambda r: answer(run, r, plan["cite"], plan["counter"]), "credit")
    return work


def plan(run, source: dict, strategy: str, on: str, cite: bool, null: int) -> dict:
    """The credit test's requests for an opened credit run; ``skipped``: prompts left out, and why."""
    skipped: list[str] = []
    half = 0 if on == "test-half" else None
    if source.get("method"):  # a field method's notes (critique.experiments.credit.method)
        vectors = credit_method.note_vectors(run, source)
        answers = answered(run, credit_method.source_predictions(source, strategy), half, skipped,
                           "its source prediction")
        cases = credit_method.cases(run, source, strategy, answers, skipped, Case)
        todo = credit_method.requests(run, cases, strategy, vectors, null, Request, without)
    else:
        if source.get("stream"):
            vectors = credit_stream.vectors(run, source["entries"])
            steps = credit_stream.steps(source)
            cases = credit_stream.cases(source, answered(run, steps, half, skipped, "its step"), skipped, Case)
        else:
            vectors = entry_vectors(source["path"] / rundir.MEMORY, source["entries"], lambda: run.encoder)
            cases = train_cases(run, source, strategy, skipped) if on == "train" else \
                test_cases(run, source, strategy, half, skipped)
        todo = requests(run, cases, strategy, vectors, cite, null)
    mismatched = [r.case.item.id for r in todo
                  if r.strategy == FULL and r.case.source_hash and not cite and r.hash != r.case.source_hash]
    return {"requests": todo, "cases": cases, "skipped": skipped, "cite": cite, "counter": {"requested": 0},
            "mismatched": mismatched}


def execute(source_dir: Path, strategy: str, on: str = "test", *, cite: bool = False, null: int = 0,
            out: Path | None = None, progress: bool = True, say=print, run_options: dict | None = None,
            **changes) -> dict:
    """Run the credit test (resumable); says its cost in calls on stderr before the first call. Returns the plan
    (with ``cost`` and ``counter['requested']``, the calls requested) and the outcome. ``run_options``: what a
    study gives each of its runs (critique.runner.execute_run's runner, and prepare's deployments,
    routing_strategy, limits, stop and spend)."""
    from critique.base.cost import print_cost
    from critique.base.errors import UserError
    from critique.experiments import reuse
    from critique.runner import execute_run

    try:
        check(strategy, on, null)
    except Refused as exc:
        raise UserError(f"--{exc.key}: {exc}") from None
    method = credit_method.is_method(strategy)
    source = credit_source.read_source(source_dir, strategy if method else None)
    manifest = source["manifest"]
    credit_source.refuse(source, source_dir, strategy, on, cite)
    config = credit_source.source_config(manifest, **changes)
    out = Path(out) if out else default_out(source_dir, strategy, on, cite)
    probe = credit_probe(strategy, on, cite, null, source_dir, manifest["run_id"])
    pool = reuse.matching_calls([str(source_dir)], config.model, manifest["dataset"]["checksum"], exclude=out)
    state: dict = {}

    def setup(run) -> None:
        if run.dataset.checksum != manifest["dataset"]["checksum"]:
            raise UserError(f"{source_dir}: its dataset ({manifest['dataset']['name']}) is not the data found now "
                            "(checksum differs); credit needs the very items the run answered")
        if not method:  # a method's plan needs its memory: made by the work, once the method has learned
            announce(run)

    def announce(run) -> None:
        state.update(plan(run, source, strategy, on, cite, null))
        state["cost"] = costs(run, state["requests"])
        n_del = sum(r.strategy.startswith(WITHOUT) for r in state["requests"])
        say(f"credit {strategy} on {on}: {len(state['cases'])} prompts, {n_del} deletions, "
            f"{sum(r.strategy == NULL for r in state['requests'])} null-control repeats")
        print_cost(state["cost"], "the credit test's requests still to make, a null-control repeat even when "
                                  "logged; the response cache may answer some", out, source_dir, exact=True)
        for line in state["skipped"]:
            say(f"critique: warning: credit: prompt left out: {line}")
        if state["mismatched"]:
            say(f"critique: warning: {len(state['mismatched'])} rebuilt full prompts differ from the source run's "
                f"logged requests ({', '.join(state['mismatched'][:5])}...): templates or settings changed since")

    async def work(run) -> None:
        if method:  # its offline stage again, every call answered from the source run's (logged as cached)
            from critique.engine.methods import learn

            await learn(run, strategy)
            announce(run)
        await work_for(state)(run)

    outcome, _ = execute_run(config, out, probe=probe, reuse=pool, work=work, setup=setup, progress=progress,
                             **(run_options or {}))
    state["outcome"] = outcome
    state["out"] = out
    return state
