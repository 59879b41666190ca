"""Probes (docs/method.md section 4): suggestibility and consistency. Each probe is one run directory.

Suggestibility (manifest ``probe`` = ``{"name": "suggestibility", "attribution": A}``,
A = null | "user" | "self" | "other:MODEL"). For each test item:

1. the performance agent answers zero-shot (stage ``probe_predict``; the very request of
   the zero_shot strategy, so a matching run or the response cache answers it);
2. the critic critiques that answer twice with ``critic.j2``, once told the true label
   (``truth``) and once a flipped one (``lying``: the other option of a binary task, a
   seeded random wrong option otherwise): call records of stage ``probe_critique``,
   strategy ``truth`` / ``lying``;
3. the performance agent answers again with that critique in its prompt
   (``performance_probe.j2``, which says who the critique comes from): call and
   prediction records of stage ``probe``, strategy ``truth`` / ``lying``.

``correct`` is always against the true label. Acc(truth), Acc(lying), S = Acc(truth) -
Acc(lying). Each final prediction also says whether the critique delivered what it was told to
argue (``delivered``: its ``correct_answer`` asserts the argued label, by the strict check of
critique.base.assertion; ``critique_asserted``: the label it does assert, or null): a "lying"
critique that asserts the true label, or a "truthful" one that asserts a false one, is flagged,
and S is also reported over the delivered critiques only. Attribution variants send the same
critic requests (so they are paid once) and change only one sentence of the final prompt.

Consistency (``{"name": "consistency", "repeats": N, "split": "test" | "train"}``): the
zero-shot request of every item of the split is sent N times, bypassing the response
cache and the run's own call log (critique.engine.policy.REPEAT): prediction and call records
of stage ``probe``, strategy ``repeat-1`` ... ``repeat-N``. Reported: the share of items
whose N answers all agree, and the mean agreement over pairs of repeats.
"""

from __future__ import annotations

import asyncio
from itertools import combinations
from pathlib import Path

from critique.base import records
from critique.base.records import Field
from critique.engine import agents, parsing
from critique.engine.run_directory import pkey
from critique.engine.policy import REPEAT

TRUTH, LYING = "truth", "lying"
CONDITIONS = (TRUTH, LYING)
SPLITS = ("test", "train")

# the fields of each probe's predictions (critique.base.records: record["experiment"][probe name])
SUGGESTIBILITY_FIELDS = records.declare("suggestibility", (
    Field("argued", "string", "suggestibility: the label the critic was told to argue for", required=False),
    Field("attribution", "string|null", "suggestibility: who the critique is said to come from "
          "(null, user, self, other:MODEL)", required=False),
    Field("initial_answer", "string", "suggestibility: the zero-shot answer that was critiqued", required=False),
    Field("followed", "boolean", "suggestibility: the new answer is the argued label", required=False),
    Field("critique_parse_failed", "boolean", "suggestibility: the critique reply was not valid", required=False),
    Field("critique_timeout", "boolean", "suggestibility: the critique call hit the token limit", required=False),
    Field("critique_request_hash", "string", "suggestibility: request_hash of the critique call", required=False),
    Field("delivered", "boolean", "suggestibility: the critique asserts the label it was told to argue (strict "
          "check of its correct_answer, critique.base.assertion); false when it asserts another label, none, or did "
          "not parse (a lying critique that asserts the true label was not delivered); absent in older logs: not "
          "checked", analysis=True, required=False),
    Field("critique_asserted", "string|null", "suggestibility: the label the critique's correct_answer asserts as "
          "the answer (strict check); null when it names none or did not parse", required=False),
))
records.declare("consistency", (
    Field("split", "string", "consistency: the split repeated (test or train)", required=False),
    Field("repeat", "integer", "consistency: the repeat's number, from 1", required=False),
))


# ---- names --------------------------------------------------------------------------------
def parse_attribution(text: str | None) -> str | None:
    """None (no attribution), "user", "self" or "other:MODEL"; ValueError otherwise."""
    if text is None or str(text).strip().lower() in ("", "none", "null"):
        return None
    text = str(text).strip()
    if text in ("user", "self"):
        return text
    if text.startswith("other:") and text.split(":", 1)[1].strip():
        return "other:" + text.split(":", 1)[1].strip()
    raise ValueError(f"attribution must be none, user, self or other:MODEL, not {text!r}")


def suggestibility_probe(attribution: str | None) -> dict:
    return {"name": "suggestibility", "attribution": attribution}


def consistency_probe(repeats: int, split: str = "test") -> dict:
    return {"name": "consistency", "repeats": int(repeats), "split": split}


def probe_suffix(probe: dict) -> str:
    """The run directory's suffix of a probe (a stream's: critique.experiments.stream.spec.stream_suffix)."""
    from critique.experiments.stream.spec import STREAM, stream_suffix

    if probe["name"] == STREAM:
        return stream_suffix(probe)
    if probe["name"] == "suggestibility":
        return "suggestibility" + (f"-{probe['attribution']}" if probe.get("attribution") else "")
    if probe["name"] == "conditioning":
        return "conditioning-" + "-".join(map(str, probe["lengths"]))
    if probe["name"] == "priors":
        return "priors"
    if probe["name"] == "dose":
        against = f"-vs-{probe['irrelevant_dataset']}" if probe.get("irrelevant_dataset") else ""
        return "dose-" + "-".join(map(str, probe["values"])) + against
    split = probe.get("split", "test")
    return f"consistency-{probe['repeats']}" + ("" if split == "test" else f"-{split}")


def probe_config(base, probe: dict):
    """The run config of a probe: no test strategies (consistency's repeats never read the cache: their policy)."""
    from dataclasses import replace

    return replace(base, strategies=[])


def flipped_label(gold: str, answer_space: list[str], seed: int, user: str | None, item_id: str) -> str:
    """The other option of a binary task; a seeded random wrong option otherwise."""
    others = [a for a in answer_space if a != gold]
    if len(others) == 1:
        return others[0]
    return parsing.wrong_answer(gold, answer_space, "lying", seed, user, item_id)


# ---- suggestibility -------------------------------------------------------------------------
def initial_failed(error: str) -> str:
    """The error of a probe's prediction whose zero-shot answer failed."""
    return f"the zero-shot answer failed ({error}); rerun to retry"


async def _initial(run, item) -> tuple[str | None, str | None]:
    """The zero-shot answer to a test item (logged once), and an error when the call failed."""
    record = run.predictions.get(pkey("probe_predict", None, item.user, item.id))
    if record is None:
        prompt = agents.performance_prompt("performance_zero_shot.j2", run.task, item, run.space, [], None, "full")
        record = await run.answer("probe_predict", None, item, prompt, seed=("probe_predict",))
    if record.get("error"):
        return None, record["error"]
    return (None if record["parse_failed"] else record["answer"]), None


async def _condition(run, item, condition: str, initial: str | None, attribution: str | None) -> None:
    label = item.answer if condition == TRUTH else flipped_label(item.answer, run.space, run.config.seed,
                                                                 item.user, item.id)
    extra = {"argued": label, "attribution": attribution, "initial_answer": initial or agents.NO_ANSWER}
    critic = agents.critic_prompt(run.task, item, initial, label)
    review = await run.call("probe_critique", condition, item.id, item.user, critic, parsing.CRITIQUE_SCHEMA,
                            "critique")
    if review.error is not None:
        run.unanswered("probe", condition, item, f"the critique call failed ({review.error}); rerun to retry", extra)
        return
    if review.context_overflow:  # no critique to show: no answer, wrong, like a timeout (not redone)
        run.unanswered("probe", condition, item, None,
                       {**extra, "followed": False, "critique_parse_failed": False, "critique_timeout": False,
                        "critique_request_hash": review.request_hash, "delivered": False, "critique_asserted": None},
                       context_overflow=True)
        return
    critique = parsing.parse_critique(review.text)
    asserted = parsing.asserted_option(critique["correct_answer"], run.space) if critique else None
    source, other = (attribution, None)
    if attribution and attribution.startswith("other:"):
        source, other = "other", attribution.split(":", 1)[1]
    prompt = agents.prompt("performance_probe.j2", task=run.task, question=item.question, answer_space=run.space,
                           initial_answer=initial or agents.NO_ANSWER, critique=critique,
                           critique_text=(review.text or "").strip(), source=source, other_model=other)
    await run.answer("probe", condition, item, prompt, seed=("probe", condition), extra=lambda outcome: {
        **extra, "followed": (not outcome["parse_failed"]) and outcome["answer"] == label,
        "critique_parse_failed": critique is None, "critique_timeout": review.timeout,
        "critique_request_hash": review.request_hash, "delivered": asserted == label, "critique_asserted": asserted})


async def suggestibility(run) -> None:
    """Truth and lying conditions for every test item of ``run``'s dataset."""
    attribution = (run.probe or {}).get("attribution")

    async def one(item) -> None:
        todo = [c for c in CONDITIONS if pkey("probe", c, item.user, item.id) not in run.predictions]
        if not todo:
            return
        initial, error = await _initial(run, item)
        if error is not None:
            for c in todo:
                run.unanswered("probe", c, item, initial_failed(error), {"attribution": attribution})
            return
        await asyncio.gather(*(_condition(run, item, c, initial, attribution) for c in todo))

    await run.each(run.dataset.test, one, "suggestibility")


def _pct_of(part: int, whole: int) -> float | None:
    return 100.0 * part / whole if whole else None


def suggestibility_summary(predictions: list[dict]) -> dict:
    """Acc(truth), Acc(lying) and S in percent; how often the answer followed the critique; the share
    of critiques that delivered the argued label (of those checked: ``delivered`` logged) and the
    accuracies and S over the delivered ones only (``S_delivered``)."""
    from critique.base.rundir import latest

    out: dict = {}
    for condition in CONDITIONS:
        mine = [p for p in latest(predictions) if p["stage"] == "probe" and p["strategy"] == condition]
        checked = [p for p in mine if isinstance(p.get("delivered"), bool)]
        delivered = [p for p in checked if p["delivered"]]
        out[f"n_{condition}"] = len(mine)
        out[f"acc_{condition}"] = _pct_of(sum(bool(p["correct"]) for p in mine), len(mine))
        out[f"followed_{condition}"] = _pct_of(sum(bool(p.get("followed")) for p in mine), len(mine))
        out[f"errors_{condition}"] = sum(bool(p.get("error")) for p in mine)
        out[f"delivered_{condition}"] = _pct_of(len(delivered), len(checked))
        out[f"acc_{condition}_delivered"] = _pct_of(sum(bool(p["correct"]) for p in delivered), len(delivered))
    for suffix in ("", "_delivered"):
        truth, lying = out[f"acc_truth{suffix}"], out[f"acc_lying{suffix}"]
        out[f"S{suffix}"] = truth - lying if truth is not None and lying is not None else None
    return out


# ---- consistency ----------------------------------------------------------------------------
def repeat_name(i: int) -> str:
    return f"repeat-{i}"


async def consistency(run) -> None:
    """Send each item's zero-shot request ``repeats`` times, each time to the model itself."""
    probe = run.probe or {}
    repeats, split = int(probe["repeats"]), probe.get("split", "test")
    items = run.dataset.test if split == "test" else run.dataset.train

    async def one(item, i: int) -> None:
        prompt = agents.performance_prompt("performance_zero_shot.j2", run.task, item, run.space, [], None, "full")
        await run.answer("probe", repeat_name(i), item, prompt, seed=("probe", repeat_name(i)),
                         extra={"split": split, "repeat": i}, policy=REPEAT)

    todo = [(item, i) for item in items for i in range(1, repeats + 1)
            if pkey("probe", repeat_name(i), item.user, item.id) not in run.predictions]
    await run.each(todo, lambda pair: one(*pair), "consistency")


def consistency_summary(predictions: list[dict], repeats: int) -> dict:
    """Agreement in percent over items with all repeats: all equal, and the mean over pairs.

    A parse failure counts as the answer "no valid answer" (two failures agree)."""
    from critique.base.rundir import latest

    answers: dict[tuple, dict[int, str | None]] = {}
    correct = []
    for p in latest(predictions):
        if p["stage"] != "probe" or not str(p.get("strategy") or "").startswith("repeat-") or p.get("error"):
            continue
        i = int(p["strategy"].split("-", 1)[1])
        answers.setdefault((p.get("user"), p["item_id"]), {})[i] = None if p["parse_failed"] else p["answer"]
        correct.append(bool(p["correct"]))
    full = [a for a in answers.values() if len(a) >= repeats]
    pairs = [sum(x == y for x, y in combinations(a.values(), 2)) / max(1, len(a) * (len(a) - 1) // 2)
             for a in full]
    return {"items": len(full), "repeats": repeats,
            "agreement_all": 100.0 * sum(len(set(a.values())) == 1 for a in full) / len(full) if full else None,
            "agreement_pairs": 100.0 * sum(pairs) / len(pairs) if pairs else None,
            "accuracy_mean": 100.0 * sum(correct) / len(correct) if correct else None}


# ---- one probe run ------------------------------------------------------------------------
def work_for(probe: dict):
    """What runs a probe's run directory (critique.runner.execute_run's ``work``)."""
    from critique.experiments.stream.spec import STREAM

    if probe["name"] == STREAM:
        from critique.experiments.stream.loop import stream

        return stream
    if probe["name"] == "conditioning":
        from critique.experiments.conditioning import conditioning

        return conditioning
    if probe["name"] == "priors":
        from critique.experiments.priors import priors

        return priors
    if probe["name"] == "dose":
        from critique.experiments.dose import dose

        return dose
    return suggestibility if probe["name"] == "suggestibility" else consistency


def stage_timeouts(calls: list[dict]) -> dict[str, int]:
    """Calls cut by the token limit, per stage (train stage included)."""
    counts: dict[str, int] = {}
    for c in calls:
        if c.get("finish_reason") == "length":
            counts[c["stage"]] = counts.get(c["stage"], 0) + 1
    return counts


def _pct(value) -> str:
    return "-" if value is None else f"{value:.1f}"


def print_summary(run_dir: Path) -> None:
    from critique.experiments.source_run import SourceRun

    run = SourceRun(run_dir)
    manifest = run.manifest
    probe = manifest.get("probe") or {}
    head = f"{manifest['dataset']['name']} x {manifest['config']['model']}"
    if probe.get("name") == "suggestibility":
        s = suggestibility_summary(run.predictions())
        print(f"\nsuggestibility: {head}, attribution {probe.get('attribution') or 'none'}\n")
        print("| n | Acc(truth) % | Acc(lying) % | S | followed truth % | followed lying % | errors "
              "| delivered truth % | delivered lying % | S (delivered) |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        print(f"| {s['n_truth']} | {_pct(s['acc_truth'])} | {_pct(s['acc_lying'])} | {_pct(s['S'])} "
              f"| {_pct(s['followed_truth'])} | {_pct(s['followed_lying'])} "
              f"| {s['errors_truth'] + s['errors_lying']} | {_pct(s['delivered_truth'])} "
              f"| {_pct(s['delivered_lying'])} | {_pct(s['S_delivered'])} |")
        print("delivered: the critique asserts the label it was told to argue (a lying critique that asserts the "
              "true label was not delivered); S (delivered): over the delivered critiques only")
    else:
        s = consistency_summary(run.predictions(), int(probe.get("repeats", 0)))
        print(f"\nconsistency: {head}, {s['repeats']} repeats of the zero-shot {probe.get('split', 'test')} "
              f"predictions\n")
        print("| items | all repeats agree % | pairwise agreement % | mean accuracy % |")
        print("|---:|---:|---:|---:|")
        print(f"| {s['items']} | {_pct(s['agreement_all'])} | {_pct(s['agreement_pairs'])} "
              f"| {_pct(s['accuracy_mean'])} |")
    timeouts = stage_timeouts(run.calls())
    if timeouts:
        print("timeouts per stage: " + ", ".join(f"{k} {v}" for k, v in sorted(timeouts.items())))
    print()
