"""The online tables (docs/memory.md section 1): what a stream (critique stream) did, over time and at its end.

Reads the runs whose manifest's probe is a stream: their predictions (stage ``stream``, one per step; a step whose
call failed is left out) and their notes (memory/notes.jsonl, every version). Per stream (its model labelled with
the variant that keeps other settings apart, as every table does):

- ``accuracy`` over the steps answered (``steps`` of ``of`` test questions) with a 95% Wilson interval, and per
  window of steps (WINDOWS windows, the ``stream_windows`` table);
- ``gain`` over the memory-off arm (a stream of the same model, dataset and order with ``--feedback none --start
  empty``: zero_shot's prompt at every step) when one is among the inputs: the difference in points with the
  exact McNemar test on the items answered differently (``wins``, ``losses``, ``p``);
- the notes the stream wrote and the write-back loop (analysis.memory.online_loop): ``l`` and ``s``, the shares of
  wrong and of right answers written back trusted (over every note of known truth), the share of shown notes
  trusted but wrong, the contamination slope ``kappa`` (pooled: confounded) and ``kappa_within`` (within the
  memory-off arm's strata), the **predicted attractor** with ``attractor_why`` (no test when the slope cannot be
  told from 0) beside ``corrupted``, the share the stream's trusted notes reached;
- ``revised``, ``revised_right``, ``disabled``, ``demoted``: what the conflict policy, the disabling test and a
  de-inflation arm changed; ``notes_end``, ``prompt_tokens`` per step, ``not_written``.

The ``stream_arms`` table compares the arms of one stream: the one that ends highest among the finished ones, and
the de-inflated arm against the random control of its budget. A stream whose steps gave one answer to (nearly)
everything is warned of, as a strategy is (analysis.study.answers). Reads logs only.
"""

from __future__ import annotations

from pathlib import Path

from critique.analysis.reading import logs
from critique.analysis.study.cells import mean
from critique.analysis.memory.online_loop import (attractor, contamination, is_trusted, is_trusted_wrong,
                                                  no_prediction, prediction_test, share, shown_versions,
                                                  slope_interval, trust_rates)
from critique.analysis.stats.core import MDE_NOTE, detectable_effect, sign_test, wilson
from critique.analysis.study.tabular import Table
from critique.base import vocab
from critique.base.ids import version_id

KEY, WINDOWS_KEY, ARMS_KEY = "stream", "stream_windows", "stream_arms"
ARMS_TITLE = "Online memory: the arms of one stream (which ends highest; de-inflation against its random control)"
ARMS_COLUMNS = ["model", "dataset", "order", "arms", "unfinished", "highest", "accuracy", "deinflated", "random",
                "diff", "wins", "losses", "p", "mde", "demoted"]
TITLE = "Online memory: each stream at its end (%, l, s and shares as fractions)"
WINDOWS_TITLE = "Online memory over the stream: each window of steps (%, shares as fractions)"
WINDOWS = 5
STREAM_STAGE = vocab.STREAM
FRACTIONS = {c: ".3f" for c in ("l", "l_low", "l_high", "s", "trusted_wrong", "kappa", "kappa_within", "e0",
                                "slope_low", "slope_high", "attractor", "corrupted")}  # shown to three decimals
LABEL = ["model", "dataset", "feedback", "start", "conflicts", "similarity", "rank", "order", "demote", "refresh",
         "disable"]
COLUMNS = [*LABEL, "status", "steps", "of", "accuracy", "ci_low", "ci_high", "gain", "wins", "losses", "p", "mde",
           "written", "l", "l_low", "l_high", "s", "trusted_wrong", "kappa", "kappa_within", "e0", "slope_low",
           "slope_high", "attractor", "attractor_why", "corrupted", "revised", "revised_right", "disabled", "demoted",
           "notes_end", "prompt_tokens", "not_written"]
WINDOW_COLUMNS = [*LABEL, "window", "steps", "accuracy", "ci_low", "ci_high", "written", "l", "trusted_wrong",
                  "notes_end"]
NOTE = ("similarity: with --conflicts revise, how similar a shown note must be to be revised; refresh: every how "
        "many steps the stream's advice is refreshed (it answers with EP+SEM_CRIT), - when it keeps none (EP_CRIT); "
        "disable: verification by disabling; status: the run's; steps: the steps answered (a step whose call failed "
        "left out), of: the test questions; accuracy over the steps answered with its 95% Wilson interval; gain: "
        "against the memory-off stream of the same model, dataset and order (--feedback none --start empty), in "
        "points, with the exact McNemar p on the items answered differently (wins, losses) and its mde (below); "
        "written: notes the stream wrote; l: docs/memory.md's l, the share of wrong answers (U=0) written back trusted "
        "(stored as right and not demoted; a note whose critique names no verdict is not trusted and stays in the "
        "denominator) with its Wilson interval: with --feedback self the critic's leniency (it is shown no label), "
        "with --feedback gold the critic contradicting the gold label it was shown; s: the same of right answers; "
        "trusted_wrong: share of the notes shown that were trusted but wrong; kappa: slope of a step's error on the "
        "share of the trusted notes it was shown that are wrong (steps shown a trusted note), pooled, so confounded "
        "with the questions' difficulty; kappa_within: the same within the items the memory-off arm answered right "
        "and within those it answered wrong (the questions' difficulty taken out); e0: the intercept of the slope "
        "the attractor uses (kappa_within when there is one, else kappa), slope_low/high: that slope's 95% "
        "percentile interval over resampled steps; attractor: the predicted share of wrong notes among trusted ones "
        "where the write-back loop settles (docs/memory.md: p = e*l/(e*l+(1-e)*s), e = e0 + kappa*p), attractor_why: "
        "why it is no test (a slope that cannot be told from 0: with kappa = 0 the prediction is e*l/(e*l+(1-e)*s) of "
        "the notes the stream wrote, the same ratio of the same notes as corrupted) or why there is no prediction "
        "(no note written back, none trusted, no answer of one truth written back, or no slope), - when it is one; "
        "corrupted: "
        "the share the stream's own trusted notes reached; revised, disabled: notes the conflict policy or the "
        "disabling test changed, "
        "revised_right: revised notes that now assert their own question's gold label (a near-duplicate's label "
        "can differ); demote: the de-inflation arm (reorder: the verifier marks the new notes it flags doubtful, "
        "random: as many chosen at random), demoted: how many (a doubtful note is not trusted); notes_end: notes "
        "retrievable in the last step's pool; not_written: steps answered without a note (feedback still due at "
        "the end, or a critique that did not parse); " + MDE_NOTE)


ARMS_NOTE = ("arms: streams of this model, dataset and order (feedback/start, +reorder: de-inflated by the reorder "
             "verifier, +random: its budget-matched random control); unfinished: arms that have not answered every "
             "question, left out of the comparison; highest: the arm with the highest accuracy, named only when it "
             "alone has it and its 95% Wilson interval is clear of every other finished arm's (else none apart, "
             "and which arms tie or overlap), accuracy: the highest accuracy; "
             "deinflated, random: the two de-inflation arms' accuracy, diff: deinflated - random in points with the "
             "exact McNemar p on the items they answered differently (wins, losses), against the random control "
             "that demoted as many as the verifier did (none when the verifier demoted every note: the control then "
             "demotes the same ones); demoted: notes each demoted (verifier / random); " + MDE_NOTE)


# ---- one stream ---------------------------------------------------------------------------------
def _stream(meta: dict, problems: list[str]) -> dict | None:
    """A stream run's label (its model as the tables show it, with the variant that keeps other settings apart,
    and its stream options), steps answered (in order; a step whose call failed is left out) and note
    versions; None when it is not a stream."""
    from critique.analysis.reading.read import model_label

    path = Path(meta["path"])
    try:
        manifest = logs.manifest(path)
    except (OSError, ValueError) as exc:
        problems.append(f"{path}: unreadable manifest ({exc}); no online rows")
        return None
    probe = manifest.get("probe") or {}
    if probe.get("name") != STREAM_STAGE:
        return None
    found = logs.predictions(path, (STREAM_STAGE,), problems)
    steps = sorted((r for r in found if not r.get("error")), key=lambda r: r.get("step", 0))
    if len(steps) < len(found):
        problems.append(f"{path}: {len(found) - len(steps)} steps ended in an error (the stream stopped there; "
                        "rerun it): left out of the online tables")
    label = {"model": model_label(meta), "dataset": (manifest.get("dataset") or {}).get("name"),
             **{k: probe.get(k) for k in ("feedback", "start", "conflicts", "rank", "order", "demote")},
             "refresh": probe.get("refresh_every"), "disable": bool(probe.get("disable")),
             "similarity": probe.get("conflict_similarity") if probe.get("conflicts") == "revise" else None}
    return {"path": path, "label": label, "steps": steps, "versions": logs.records(path, logs.NOTES, problems),
            "n_test": (manifest.get("dataset") or {}).get("n_test"), "status": manifest.get("status"),
            "demote_count": probe.get("demote_count")}


def _written(stream: dict, latest: bool) -> list[dict]:
    """The notes the stream wrote (not the train memory's): as the write-back left them (the last version of the
    step that wrote it: after a de-inflation arm's demotion), or their latest versions."""
    mine = [v for v in stream["versions"] if v["note"].startswith(STREAM_STAGE + ":")]
    if latest:
        return list({v["note"]: v for v in mine}.values())
    first = {v["note"]: v["step"] for v in mine if v["version"] == 1}
    return list({v["note"]: v for v in mine if v["step"] == first.get(v["note"])}.values())


def _by_version(stream: dict) -> dict[str, dict]:
    return {version_id(v["note"], v["version"]): v for v in stream["versions"]}


def _accuracy(steps: list[dict]) -> tuple:
    right = sum(s.get("correct") is True for s in steps)
    low, high = wilson(right, len(steps))
    return (100 * right / len(steps), 100 * low, 100 * high) if steps else (None, None, None)


def _gain(stream: dict, off: dict | None) -> dict:
    if off is None or off is stream:
        return {"gain": None, "wins": None, "losses": None, "p": None, "mde": None}
    theirs = {(s.get("user"), s.get("item_id")): s.get("correct") is True for s in off["steps"]}
    pairs = [(s.get("correct") is True, theirs[(s.get("user"), s.get("item_id"))]) for s in stream["steps"]
             if (s.get("user"), s.get("item_id")) in theirs]
    wins, losses = sum(a and not b for a, b in pairs), sum(b and not a for a, b in pairs)
    gain = 100 * (wins - losses) / len(pairs) if pairs else None
    return {"gain": gain, "wins": wins, "losses": losses, "p": sign_test(wins, losses),
            "mde": detectable_effect(len(pairs), wins + losses)}


def _strata(stream: dict, off: dict | None) -> dict | None:
    """item -> whether the memory-off arm answered it right (the difficulty strata); None without that arm."""
    if off is None or off is stream:
        return None
    return {(r.get("user"), r.get("item_id")): r.get("correct") is True for r in off["steps"]}


def loop(stream: dict, off: dict | None) -> dict:
    """The write-back loop's columns: l and s (one denominator), the pooled and within-strata slopes, the
    intercept and interval of the one the attractor uses, the predicted attractor, whether it is a test, and the
    corrupted share the stream's trusted notes reached."""
    steps, versions = stream["steps"], _by_version(stream)
    l_share, l_low, l_high, s = trust_rates(_written(stream, latest=False))
    pooled = contamination(steps, versions)
    strata = _strata(stream, off)
    within = contamination(steps, versions, strata) if strata else {"kappa": None}
    used = within if within["kappa"] is not None else pooled
    low = high = why = predicted = None
    if None not in (used["kappa"], l_share, s):
        predicted = attractor(min(1.0, max(0.0, used["e0"])), used["kappa"], l_share, s)
        low, high, why = slope_interval(used["groups"])
    trusted = [v for v in _written(stream, latest=True) if is_trusted(v) and v["truth"] is not None]
    why_not = prediction_test(predicted, low, high, why) if predicted is not None else no_prediction(l_share, s, used)
    return {"l": l_share, "l_low": l_low, "l_high": l_high, "s": s, "kappa": pooled["kappa"],
            "kappa_within": within["kappa"], "e0": used["e0"], "slope_low": low, "slope_high": high,
            "attractor": predicted, "attractor_why": why_not,
            "corrupted": share([v["truth"] == 0 for v in trusted])}


def summary(stream: dict, off: dict | None) -> dict:
    """The stream's row of the online table (``off``: the memory-off arm of its model, dataset and order)."""
    steps, versions = stream["steps"], _by_version(stream)
    accuracy, low, high = _accuracy(steps)
    shown = [v for step in steps for v in shown_versions(step, versions)]
    latest = list({v["note"]: v for v in stream["versions"]}.values())
    revised = [v for v in latest if v["status"] == "revised"]
    return {**stream["label"], "status": stream.get("status"), "steps": len(steps), "of": stream.get("n_test"),
            "accuracy": accuracy, "ci_low": low, "ci_high": high, **_gain(stream, off),
            "written": len(_written(stream, latest=False)),
            "trusted_wrong": share([is_trusted_wrong(v) for v in shown]), **loop(stream, off),
            "revised": len(revised),
            "revised_right": sum(v["entry"].get("asserted") == v["entry"].get("gold") for v in revised),
            "disabled": sum(v["status"] == "disabled" for v in latest),
            "demoted": _demoted(stream),
            "notes_end": steps[-1].get("memory_notes") if steps else None,
            "prompt_tokens": mean(s["prompt_tokens"] for s in steps if s.get("prompt_tokens") is not None),
            "not_written": _not_written(stream)}


def _not_written(stream: dict) -> int:
    """Steps answered whose episode has no note (feedback still due at the end of a delayed stream, or a
    critique that did not parse); 0 for --feedback none, which writes nothing by design."""
    if stream["label"].get("feedback") == "none":
        return 0
    noted = {(v.get("entry") or {}).get("item_id", v["note"].split(":", 1)[1]) for v in stream["versions"]
             if v["note"].startswith(STREAM_STAGE + ":")}
    return sum(step.get("item_id") not in noted for step in stream["steps"])


def windows(stream: dict) -> list[dict]:
    """The stream's rows of the windows table: its steps in WINDOWS windows of equal size (to one step), in order
    (fewer steps than that: one window each)."""
    steps, versions, notes = stream["steps"], _by_version(stream), _written(stream, latest=False)
    count = min(WINDOWS, len(steps))
    bounds = [round(i * len(steps) / count) for i in range(count + 1)] if count else []
    rows = []
    for number, (first, end) in enumerate(zip(bounds, bounds[1:]), start=1):
        part = steps[first:end]
        last = part[-1].get("step", first + len(part) - 1)
        mine = [n for n in notes if part[0].get("step", first) <= (n.get("step") or 0) <= last]
        accuracy, low, high = _accuracy(part)
        shown = [v for step in part for v in shown_versions(step, versions)]
        rows.append({**stream["label"], "window": number, "steps": f"{part[0].get('step', first)}-{last}",
                     "accuracy": accuracy, "ci_low": low, "ci_high": high, "written": len(mine),
                     "l": trust_rates(mine)[0], "trusted_wrong": share([is_trusted_wrong(v) for v in shown]),
                     "notes_end": part[-1].get("memory_notes")})
    return rows


def _arm(label: dict) -> str:
    """An arm's name: feedback/start, and its de-inflation."""
    name = f"{label['feedback']}/{label['start']}"
    return name + (f"+{label['demote']}" if label.get("demote") else "")


def _demoted(stream: dict) -> int:
    return sum(v.get("why", "").startswith("demoted") for v in stream["versions"])


def arms(streams: list[dict]) -> list[dict]:
    """Per model, dataset and order with at least two arms (the same conflict policy, ranking and refresh): the
    arm that ends highest among those that answered every question (``unfinished``: the others), and the reorder
    de-inflation arm against the random control of its budget (the count it demoted), paired item by item
    (exact McNemar)."""
    groups: dict[tuple, list[dict]] = {}
    for one in streams:
        label = one["label"]
        key = (label["model"], label["dataset"], label["order"], label["conflicts"], label["rank"], label["refresh"],
               label["disable"])
        groups.setdefault(key, []).append(one)
    rows = []
    for (model, dataset, order, *_), group in groups.items():
        if len(group) < 2:
            continue
        done = [g for g in group if len(g["steps"]) == g["n_test"]]
        final = {_arm(g["label"]): _accuracy(g["steps"]) for g in done}
        highest, best = _highest(final)
        verifier = next((g for g in done if g["label"].get("demote") == "reorder"), None)
        control = next((g for g in done if g["label"].get("demote") == "random"
                        and verifier is not None and g["demote_count"] == _demoted(verifier)), None)
        every = verifier is not None and _demoted(verifier) >= len(_written(verifier, latest=False))
        paired = _gain(verifier, control) if verifier and control and not every else _gain(group[0], None)
        rows.append({"model": model, "dataset": dataset, "order": order, "arms": len(group),
                     "unfinished": ", ".join(sorted(_arm(g["label"]) for g in group if g not in done)) or None,
                     "highest": highest, "accuracy": best,
                     "deinflated": _accuracy(verifier["steps"])[0] if verifier else None,
                     "random": _accuracy(control["steps"])[0] if control else None,
                     "diff": paired["gain"], "wins": paired["wins"], "losses": paired["losses"], "p": paired["p"],
                     "mde": paired["mde"],
                     "demoted": (f"{_demoted(verifier)} / {_demoted(control)}"
                                 + (": every note, no control possible" if every else "")) if verifier and control
                     else None})
    return rows


def _highest(final: dict[str, tuple]) -> tuple[str | None, float | None]:
    """The arm that ends highest, named only when it alone has the top accuracy and its 95% Wilson interval is
    clear of every other finished arm's (else which arms tie or overlap), and the top accuracy."""
    scored = {arm: values for arm, values in final.items() if values[0] is not None}
    if not scored:
        return None, None
    best = max(values[0] for values in scored.values())
    top = sorted(arm for arm, values in scored.items() if values[0] == best)
    if len(top) == len(scored) > 1:
        return "none apart: every arm ends at the same accuracy", best
    if len(top) > 1:
        return f"none apart: {', '.join(top)} tie", best
    overlapping = sorted(arm for arm, values in scored.items() if arm != top[0] and values[2] >= scored[top[0]][1])
    if overlapping:
        return f"none apart: {top[0]} overlaps {', '.join(overlapping)}", best
    return top[0], best


def one_answer(streams: list[dict]) -> list[str]:
    """The warning analysis.study.answers gives a strategy, for each stream whose steps gave one answer to
    (nearly) everything: its accuracy is then about that label's share of the questions, whatever it was shown."""
    from critique.analysis.reading.tally import answer_pair
    from critique.analysis.study import answers

    found = []
    for one in streams:
        users: dict = {}
        for s in (s for s in one["steps"] if s.get("gold") is not None):  # as the confusion counts are kept
            pair = answer_pair(s["gold"], s.get("answer"), s.get("timeout"), s.get("parse_failed"), s.get("error"),
                               s.get("context_overflow"))
            counts = users.setdefault(s.get("user") or "", {})
            counts[pair] = counts.get(pair, 0) + 1
        label = one["label"]
        found.append({"model": label["model"], "dataset": label["dataset"],
                      "strategy": f"the stream arm {_arm(label)}", **answers.cell(users, [])})
    return answers.warnings([row for row in found if row["n"]])


def _memory_off(streams: list[dict], stream: dict) -> dict | None:
    """The memory-off stream (feedback none, start empty) of ``stream``'s model, dataset and order."""
    same = ("model", "dataset", "order")
    return next((o for o in streams if o["label"]["feedback"] == "none" and o["label"]["start"] == "empty"
                 and all(o["label"][k] == stream["label"][k] for k in same)), None)


def tables(metas: list[dict], problems: list[str]) -> list[Table]:
    """The online table, the arms' comparison and the windows (`critique tables`; ``metas``: the runs read, as
    critique.analysis.reading.read gives them): skipped without a stream among them."""
    streams = [one for one in (_stream(meta, problems) for meta in metas) if one is not None]
    if not streams:
        why = "no stream among the inputs (critique stream)"
        return [Table(KEY, TITLE, skipped=why), Table(WINDOWS_KEY, WINDOWS_TITLE, skipped=why)]
    rows = [summary(one, _memory_off(streams, one)) for one in streams]
    problems.extend(one_answer(streams))
    compared = arms(streams)
    return [Table(KEY, TITLE, COLUMNS, rows, note=NOTE, formats=FRACTIONS),
            Table(ARMS_KEY, ARMS_TITLE, ARMS_COLUMNS, compared, note=ARMS_NOTE) if compared else
            Table(ARMS_KEY, ARMS_TITLE, skipped="no two arms of one stream (critique stream --arms)"),
            Table(WINDOWS_KEY, WINDOWS_TITLE, WINDOW_COLUMNS, [r for one in streams for r in windows(one)],
                  formats=FRACTIONS,
                  note=f"the steps in {WINDOWS} equal windows; written: notes written in the window; l: "
                       "theirs; trusted_wrong: share of the notes shown in the window stored as right but wrong; "
                       "notes_end: notes retrievable in the pool of the window's last step")]


def text(paths: list) -> str:
    """The online tables of ``paths`` as markdown (what `critique stream` prints)."""
    from critique.analysis.study.render import markdown_table

    from critique.analysis.reading import read

    metas, errors, problems = read.found([str(p) for p in paths])
    out = []
    found = tables(metas, problems)
    if found[0].skipped:
        return f"no online numbers: {found[0].skipped}"
    for table in found:
        if not table.skipped:
            out += [f"\n{table.title}\n", markdown_table(table), "", f"_{table.note}._"]
    return "\n".join(out + errors + problems)
