"""Credit by deletion on a field method's memory (critique.experiments.credit.deletion with ``--strategy`` one of
the field's methods: ace, ace:nolabel, dc, expel, dspy:knn, dspy:mipro, dspy:gepa, dspy:simba).

A method's memory is its notes (memory/METHOD.json: ACE's bullets, DC's cheatsheet, ExpeL's rules and trials, a
DSPy program's instructions and demos), and a test prompt lists the notes it showed (``retrieved``). The credit
run rebuilds the method's memory by replaying its offline stage from the source run's calls (every request is
answered from them, logged as cached: no model call), then asks each test prompt of the method again in full
(the source's very request, answered from its log) and once without each note it showed (the method's
``without``: everything else as shown). The tiers are critique.analysis.memory.credit's, over the method's notes.

Only ``--on test`` and ``--on test-half`` (a method's notes are not questions: there is no leave-one-out over
train), without ``--cite`` (a method's prompt does not number its notes); an online method (``ace:online``,
``dc:online``) is refused: its memory changed as it answered."""

from __future__ import annotations

from pathlib import Path

from critique.base.errors import UserError
from critique.base.vocab import CREDIT_FULL as FULL, CREDIT_REPEAT as NULL


def is_method(strategy: str) -> bool:
    """``strategy`` is a memory method whose notes credit can delete (it has ``without``)."""
    from critique.engine.methods import METHODS, hook, load_installed

    load_installed()
    return strategy in METHODS and hook(METHODS[strategy], "without") is not None


def refuse(manifest: dict, source: Path, strategy: str, on: str, cite: bool) -> None:
    """UserError for what credit cannot do with a field method's memory."""
    from critique.engine.method_memory import file_of
    from critique.engine.methods import hook, method, version

    if hook(method(strategy), "test"):
        raise UserError(f"{strategy} learns as it answers: its memory changed at every test question, and credit "
                        "rebuilds the memory the test prompts saw only for a method that learns offline")
    if on == "train":
        raise UserError(f"{strategy}'s notes are not train questions: credit them on its test prompts "
                        "(--on test or test-half)")
    if cite:
        raise UserError(f"--cite asks which numbered examples were used; {strategy}'s prompt does not number its "
                        "notes")
    if strategy not in manifest["config"].get("strategies", []):
        raise UserError(f"{source}: the run has no {strategy} test predictions to credit")
    made = (manifest.get("method_versions") or {}).get(strategy, 1)
    if made != version(method(strategy)):
        raise UserError(f"{source}: its {strategy} was made by version {made} of the method, not version "
                        f"{version(method(strategy))}: its memory cannot be rebuilt by replaying its offline stage")
    if not file_of(source, strategy).exists():
        raise UserError(f"{source}: no {file_of(source, strategy).relative_to(source)} (the method kept no memory)")


def read(source: Path, manifest: dict, strategy: str) -> dict:
    """What credit reads of the source run for a method: its manifest and the method's memory document."""
    from critique.experiments.source_run import SourceRun

    document = SourceRun(source).method_memory(strategy)  # absent: refused (``refuse``) before it is needed
    return {"path": source, "manifest": manifest, "method": strategy, "document": document}


def cases(run, source: dict, strategy: str, answered, skipped: list[str], case) -> list:
    """Each answered test prompt of the method that showed a note (``answered``: (prediction, item) pairs,
    credit.answered; ``case``: credit.Case), with the notes it showed, as dicts with their ids."""
    found, empty = [], 0
    for p, item in answered:
        shown = p.get("retrieved") or []
        if not shown:
            empty += 1
            continue
        found.append(case(item, [{"id": note} for note in shown], None, p["request_hash"]))
    if empty:
        skipped.append(f"{empty} prompts showed no note (nothing to delete)")
    return found


def note_vectors(run, source: dict) -> dict:
    """Note id -> its text's vector (the run's encoder), for each note of the method's memory."""
    notes = [n for pool in source["document"]["pools"].values() for n in pool.get("notes") or []]
    encoded = run.encoder.encode([n["text"] for n in notes]) if notes else []
    return dict(zip((n["id"] for n in notes), encoded))


def prompts(run, strategy: str, requests: list, vectors: dict) -> None:
    """Each request's prompt, schema and hash: the method's full prompt, or its prompt without the note removed
    (the request's examples: the notes still shown); and each deletion's nearest other note of the prompt."""
    from critique.engine.methods import hook, method
    from critique.engine.memory.episodic import entry_id

    found = method(strategy)
    schema = hook(found, "schema")(run) if hook(found, "schema") else run.dataset.card.response_schema
    questions = {entry_id(r.case.item): r.case.item.question for r in requests}
    encoded = dict(zip(questions, run.encoder.encode(list(questions.values())))) if questions else {}
    for r in requests:
        vector = encoded[entry_id(r.case.item)]
        if r.removed is None:
            r.prompt = found.prompt(run, r.case.item, vector, r.case.item.id)[0]
        else:
            r.prompt = found.without(run, r.case.item, vector, r.removed)
            r.nearest_other, r.nearest_other_id = _nearest_other(r.removed, r.examples, vectors)
        r.schema = schema
        r.hash = run.request(r.prompt, r.schema)[1]


def _nearest_other(removed: str, kept: list[dict], vectors: dict) -> tuple[float | None, str | None]:
    import numpy as np

    sims = [(float(np.dot(vectors[removed], vectors[o["id"]])), o["id"]) for o in kept
            if removed in vectors and o["id"] in vectors]
    return max(sims) if sims else (None, None)


def requests(run, cases: list, strategy: str, vectors: dict, null: int, request, without) -> list:
    """Per case the full prompt and one without each note it showed; then the null control's repeats
    (``request``: credit.Request; ``without``: credit.without)."""
    import random

    out = []
    for case in cases:
        out.append(request(case, FULL, case.examples))
        for n, note in enumerate(case.examples):
            out.append(request(case, without(note["id"]), case.examples[:n] + case.examples[n + 1:], note["id"]))
    sample = random.Random(run.config.seed).sample(cases, min(int(null), len(cases))) if null else []
    out += [request(case, NULL, case.examples, repeat=True) for case in sample]
    prompts(run, strategy, out, vectors)
    return out


def source_predictions(source: dict, strategy: str) -> list[dict]:
    from critique.experiments.source_run import SourceRun

    return SourceRun(source["path"]).predictions("test", strategy)
