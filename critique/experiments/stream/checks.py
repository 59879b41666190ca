"""A stream's checks of its notes (critique.experiments.stream.loop): de-inflation (each new note checked by the
reorder verifier before it is trusted, or its budget-matched random control) and verification by disabling (a
wrong answer asked again without each note it was shown). Each takes the Stream and one step."""

from __future__ import annotations

from critique.base.vocab import EP_CRIT
from critique.engine.memory.episodic import entry_id
from critique.experiments.stream.spec import RANDOM, STREAM, STREAM_DISABLE, STREAM_VERIFY



async def demote(stream, note: dict, step, now: int) -> bool:
    """A de-inflation arm: the new note checked before it is trusted (reorder) or chosen at random (the
    control), and marked doubtful when flagged; False when the verifier's call failed."""
    from critique.experiments import deinflate

    if stream.probe["demote"] == RANDOM:
        flagged, why = entry_id(step.item) in stream.random_picks, "demoted: chosen at random (the control)"
    else:
        flagged, why = await check(stream, note, step), "demoted: the reorder verifier flagged it"
        if flagged is None:
            return stream.stopped is None
    if flagged:
        doubtful = deinflate.marked(stream.notes.latest()[note["id"]]["entry"], stream.run.config.prompts)
        stream.notes.change(note["id"], status="active", step=now, feedback=str(stream.feedback), why=why,
                            evidence=step.item.id, entry=doubtful)
    return True


async def check(stream, note: dict, step) -> bool | None:
    """The reorder verifier on a new note (critique.experiments.verify): True when its answer does not
    survive the question with its options permuted (flagged); None when the question's options cannot be
    permuted or the call failed (then ``stopped`` says so)."""
    from critique.datasets.splits import Item
    from critique.engine import agents
    from critique.experiments import verify

    run, item = stream.run, step.item
    shown = verify.reordered(item.question, run.space)
    if shown is None:
        stream.unchecked += 1
        return None
    question, back = shown
    forward = {original: label for label, original in back.items()}
    asked = Item(item.id, question, forward[item.answer], item.user, item.meta)
    prompt = agents.performance_prompt("performance_zero_shot.j2", run.task, asked, run.space, [], None, "full")

    def judge(result, _item) -> dict:
        outcome = agents.answer_record(result, asked, run.space, STREAM_VERIFY)
        return {**outcome, "answer": back.get(outcome["answer"]), "gold": item.answer}

    def extra(outcome) -> dict:
        valid = not (outcome["parse_failed"] or outcome["timeout"] or outcome.get("context_overflow"))
        return {"checked_answer": note["initial_answer"], "step": step.number,
                "survives": bool(valid and outcome["answer"] == note["initial_answer"])}

    record = await run.answer(STREAM_VERIFY, verify.REORDER, asked, prompt, seed=(STREAM_VERIFY,), judge=judge,
                              extra=extra, keep_same=True, experiment=STREAM)
    if record.get("error"):
        stream.stopped = f"the verifier of step {step.number} ({item.id}): {record['error']}"
        return None
    return not record["survives"]


async def disable_test(stream, step, note: dict, now: int) -> bool:
    """Verification by disabling: a step whose answer the feedback's label says is wrong is asked again with
    each note it was shown left out (the others in order, K-1); a note whose removal makes it the label is
    disabled. Both answers are logged (stage stream, and stream_disable with strategy without:NOTE); False
    when a call failed."""
    from critique.engine import agents
    from critique.engine.performance import in_order
    from critique.engine.strategies import STRATEGIES

    run, item = stream.run, step.item
    for shown in step.shown:
        rest = [e for e in step.shown if e["id"] != shown["id"]]
        prompt = agents.performance_prompt(STRATEGIES[EP_CRIT].template, run.task, item, run.space,
                                           in_order(run.config, rest), None, run.config.parts)
        record = await run.answer(STREAM_DISABLE, f"without:{shown['id']}", item, prompt,
                                  seed=(STREAM_DISABLE, shown["id"]), retrieved=[e["id"] for e in rest],
                                  extra={"step": step.number}, keep_same=True, experiment=STREAM)
        if record.get("error"):
            stream.stopped = f"the disabling test of step {step.number} ({item.id}): {record['error']}"
            return False
        if record["answer"] == note["label"] and stream.notes.latest()[shown["id"]]["status"] != "disabled":
            stream.notes.change(shown["id"], status="disabled", step=now, feedback=str(stream.feedback),
                                why=f"disabled: without it step {step.number} answers {note['label']}, the "
                                    "feedback's label", evidence=item.id)
    return True
