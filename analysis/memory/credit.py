"""The tiers of credit per memory entry (docs/memory.md section 3) from a credit run directory
(critique.experiments.credit.deletion) and its source run. Reads logs only: no LLM call, no embedding.

Per prompt p and entry i retrieved into it: ``D = R(with i) - R(without i)`` (1: removing i turned a right
answer wrong; -1: a wrong answer right; 0: no change in correctness). Per entry, docs/memory.md's tiers, from
least to most useful:

- ``inert``: never retrieved into an evaluated prompt (credit 0, no call);
- ``duplicate``: retrieved, removing it never changed correctness, and in every prompt that retrieved it
  another entry of the same prompt is as good as the same (question similarity >= DUPLICATE_SIMILARITY);
- ``novel-unused``: retrieved, not decisive, no such twin, and never cited (--cite);
- ``used-not-decisive``: retrieved, not decisive, cited by the answer (--cite);
- ``load-bearing``: its removal flipped right answers to wrong more often than wrong to right;
- ``toxic``: its removal turned wrong answers right more often than right to wrong;
- ``mixed``: both flips, equally often (net credit 0; docs/memory.md names no tier for it).

Without --cite, "unused" and "used but not decisive" cannot be told apart: those entries get
``novel-not-decisive``, and the table says so. A flip is a change of correctness, whatever the
provider; the null control (the same prompt asked again) says how many flips the provider makes by itself.
"""

from __future__ import annotations

from pathlib import Path

from critique.analysis.reading import logs
from critique.analysis.field.methods import learned
from critique.base.ids import SHARED_POOL, version_entries
from critique.base.truth import initial_right
from critique.base.vocab import CREDIT, CREDIT_FULL as FULL, CREDIT_NULL, CREDIT_PRUNE, CREDIT_REPEAT as NULL, \
    CREDIT_WITHOUT as WITHOUT, STREAM

# Two entries "say the same" when their questions' embeddings (the memory's FAISS vectors, L2-normalised)
# have a cosine of at least this: near-paraphrases. Templated generated questions stay below it (the
# shipped mcr-gen memory: at most 0.75 between two entries).
DUPLICATE_SIMILARITY = 0.9
INERT, DUPLICATE, NOVEL_UNUSED, NOVEL = "inert", "duplicate", "novel-unused", "novel-not-decisive"
USED, LOAD_BEARING, TOXIC, MIXED = "used-not-decisive", "load-bearing", "toxic", "mixed"
TIERS = (INERT, DUPLICATE, NOVEL_UNUSED, NOVEL, USED, LOAD_BEARING, TOXIC, MIXED)
CALL_FIELDS = ("stage", "cached")  # of a credit run's calls: how many it paid for


def read(credit_dir: Path, source_dir: Path | None = None) -> dict:
    """The credit run, its probe settings, its latest credit predictions, and the source run's entries.
    The source is ``source_dir``, else the folder the probe names beside the credit run."""
    credit_dir = Path(credit_dir)
    probe = logs.manifest(credit_dir).get("probe") or {}
    if probe.get("name") != CREDIT:
        raise ValueError(f"{credit_dir}: not a credit run (its manifest's probe is {probe.get('name')!r})")
    source = Path(source_dir) if source_dir else credit_dir.parent / str(probe.get("source"))
    source_manifest = logs.manifest(source)
    if source_manifest.get("run_id") != probe.get("source_run_id"):
        raise ValueError(f"{source}: run {source_manifest.get('run_id')}, not the credit run's source "
                         f"{probe.get('source_run_id')}")
    if (source_manifest.get("probe") or {}).get("name") == STREAM:  # a stream: the note versions it showed
        entries = version_entries(logs.records(source, logs.NOTES))
    # a field method: its notes (analysis.field.methods)
    elif probe.get("strategy") in (methods := learned(source, [])):
        entries = method_notes(methods[probe["strategy"]])
    else:
        entries = logs.memory(source) or []
    predictions = logs.predictions(credit_dir, (CREDIT, CREDIT_NULL))
    calls = logs.rows(credit_dir, logs.CALLS, CALL_FIELDS)
    return {"credit": str(credit_dir), "source": str(source), "probe": probe, "entries": entries,
            "predictions": predictions, "calls": len(calls),
            "calls_paid": sum(not cached for stage, cached in calls if stage in (CREDIT, CREDIT_NULL))}


def method_notes(document: dict) -> list[dict]:
    """A field method's notes as the credit rows' entries (their pool as the user; no item, no initial answer)."""
    return [{"id": note["id"], "user": None if pool == SHARED_POOL else pool, "item_id": None, "method_note": True}
            for pool, record in sorted(document["pools"].items()) for note in record.get("notes") or []]


def pairs(predictions: list[dict]) -> tuple[list[dict], list[str]]:
    """One row per (prompt, removed entry) with both answers; ``problems``: pairs left out and why."""
    full = {(p.get("user"), p["item_id"]): p for p in predictions if p["strategy"] == FULL}
    rows, problems = [], []
    for p in predictions:
        if not str(p["strategy"]).startswith(WITHOUT):
            continue
        base = full.get((p.get("user"), p["item_id"]))
        if base is None or base.get("error") or p.get("error"):
            problems.append(f"{p['item_id']} without {p['removed']}: " + (
                "no full answer" if base is None else "a call failed") + " (rerun the credit command to retry)")
            continue
        d = int(bool(base["correct"])) - int(bool(p["correct"]))
        rows.append({"item_id": p["item_id"], "user": p.get("user"), "entry": p["removed"], "D": d,
                     "answer_changed": base.get("answer") != p.get("answer"),
                     "cited": None if base.get("cited") is None else p["removed"] in base["cited"],
                     "nearest_other": p.get("nearest_other"), "nearest_other_id": p.get("nearest_other_id")})
    return rows, problems


def tier(row: dict, cite: bool) -> str:
    if row["retrieved"] == 0:
        return INERT
    if row["helped"] or row["hurt"]:
        return LOAD_BEARING if row["helped"] > row["hurt"] else TOXIC if row["hurt"] > row["helped"] else MIXED
    if row["twinned"] == row["retrieved"]:
        return DUPLICATE
    if not cite:
        return NOVEL
    return USED if row["cited"] else NOVEL_UNUSED


def entry_rows(entries: list[dict], rows: list[dict], cite: bool, full: list[dict]) -> list[dict]:
    """Per entry: ``retrieved`` counts the full prompts (``full``: the FULL predictions) that showed it, so an
    entry whose deletion call failed is never taken for inert; the flips come from the deletion pairs."""
    shown: dict[str, int] = {}
    for p in full:
        for i in p.get("retrieved") or []:
            shown[i] = shown.get(i, 0) + 1
    out = []
    for e in entries:
        mine = [r for r in rows if r["entry"] == e["id"]]
        row = {"id": e["id"], "item_id": e.get("item_id"), "user": e.get("user"), "retrieved": shown.get(e["id"], 0),
               "helped": sum(r["D"] == 1 for r in mine), "hurt": sum(r["D"] == -1 for r in mine),
               "credit": sum(r["D"] for r in mine), "answer_changed": sum(r["answer_changed"] for r in mine),
               "cited": sum(bool(r["cited"]) for r in mine),
               "twinned": sum((r["nearest_other"] or 0) >= DUPLICATE_SIMILARITY for r in mine),
               "initial_right": None if e.get("method_note") else initial_right(e)}
        row["tier"] = tier(row, cite)
        out.append(row)
    return out


def null_control(predictions: list[dict]) -> dict:
    """The null control: identical full prompts asked again; flipped when correctness changed (as a deletion's
    D), so the rate compares with the deletions that changed correctness. A failed call (either side) is left
    out, as the deletion pairs leave it out."""
    full = {(p.get("user"), p["item_id"]): p for p in predictions if p["strategy"] == FULL and not p.get("error")}
    nulls = [p for p in predictions if p["strategy"] == NULL and not p.get("error")]
    compared = [(p, full[(p.get("user"), p["item_id"])]) for p in nulls if (p.get("user"), p["item_id"]) in full]
    flipped = sum(bool(a.get("correct")) != bool(b.get("correct")) for a, b in compared)
    return {"asked": len(compared), "flipped": flipped, "rate": flipped / len(compared) if compared else None}


def citation(rows: list[dict]) -> dict | None:
    """Citation against the deletion flips, over (prompt, entry) pairs: precision = cited pairs whose
    deletion flipped correctness (either way) / cited pairs; recall = flipped pairs that were cited / flipped
    pairs; ``precision_load_bearing`` = cited pairs whose deletion turned a right answer wrong (D = 1, as
    docs/memory.md's figure) / cited pairs."""
    asked = [r for r in rows if r["cited"] is not None]
    if not asked:
        return None
    cited = [r for r in asked if r["cited"]]
    flipped = [r for r in asked if r["D"] != 0]
    both = sum(r["cited"] and r["D"] != 0 for r in asked)
    bearing = sum(r["cited"] and r["D"] == 1 for r in asked)
    return {"pairs": len(asked), "cited": len(cited), "flipped": len(flipped),
            "precision": both / len(cited) if cited else None, "recall": both / len(flipped) if flipped else None,
            "precision_load_bearing": bearing / len(cited) if cited else None}


def summary(credit_dir: Path, source_dir: Path | None = None) -> dict:
    data = read(credit_dir, source_dir)
    cite = bool(data["probe"].get("cite"))
    rows, problems = pairs(data["predictions"])
    entries = entry_rows(data["entries"], rows, cite, [p for p in data["predictions"] if p["strategy"] == FULL])
    full = [p for p in data["predictions"] if p["strategy"] == FULL and not p.get("error")]
    counts = {t: sum(e["tier"] == t for e in entries) for t in TIERS}
    null = null_control(data["predictions"])
    decisive = sum(r["D"] != 0 for r in rows)
    return {"credit_run": data["credit"], "source_run": data["source"], "probe": data["probe"],
            "prompts": len(full), "accuracy_full": sum(bool(p["correct"]) for p in full) / len(full) if full else None,
            "deletions": len(rows), "decisive_deletions": decisive, "entries": len(entries), "tiers": counts,
            "null": {**null, "expected_flips": None if null["rate"] is None else null["rate"] * len(rows)},
            "citation": citation(rows), "calls_paid": data["calls_paid"], "problems": problems,
            "rows": entries, "pairs": rows}


def shown_tiers(counts: list[dict], cite: bool) -> list[str]:
    """The tiers a table shows for runs with these tier ``counts``: those that can occur (the cited ones only
    with --cite, novel-not-decisive only without it) and any that did (mixed only then)."""
    hidden = {MIXED} | ({NOVEL} if cite else {NOVEL_UNUSED, USED})
    return [t for t in TIERS if t not in hidden or any(c[t] for c in counts)]


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def markdown(s: dict) -> str:
    p = s["probe"]
    lines = [f"## Credit by deletion: {p.get('strategy')} on {p.get('on')}{' (--cite)' if p.get('cite') else ''}",
             "", f"Read: {s['credit_run']} (source {s['source_run']}); {s['prompts']} prompts (accuracy "
                 f"{_pct(s['accuracy_full'])}% with every entry), {s['deletions']} deletions, "
                 f"{s['decisive_deletions']} changed correctness; {s['calls_paid']} calls paid.", "",
             "| tier | entries | share % |", "|---|---:|---:|"]
    for t in shown_tiers([s["tiers"]], bool(p.get("cite"))):
        n = s["tiers"][t]
        lines.append(f"| {t} | {n} | {_pct(n / s['entries'] if s['entries'] else None)} |")
    if not p.get("cite"):
        lines.append(f"\n{NOVEL}: without --cite, unused and used-but-not-decisive entries cannot be told apart.")
    n = s["null"]
    if n["asked"]:
        lines.append(f"\nNull control: {n['flipped']} of {n['asked']} identical prompts changed correctness "
                     f"(rate {_pct(n['rate'])}%); at that rate {n['expected_flips']:.1f} of the {s['deletions']} "
                     f"deletions would change by chance, against {s['decisive_deletions']} that changed correctness.")
    else:
        lines.append("\nNull control: not run (--null N); the provider's own flip rate is unknown.")
    c = s["citation"]
    if c:
        lines.append(f"\nCitation vs deletion flips: {c['cited']} of {c['pairs']} (prompt, entry) pairs cited, "
                     f"{c['flipped']} flipped; precision {_pct(c['precision'])}% "
                     f"(against load-bearing deletions, D = 1: {_pct(c['precision_load_bearing'])}%), "
                     f"recall {_pct(c['recall'])}%.")
    lines += ["", f"Duplicate: question similarity >= {DUPLICATE_SIMILARITY} to another entry of the same prompt.",
              "", "| entry | tier | retrieved | credit | helped | hurt | cited | twinned | initial right |",
              "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    order = sorted(s["rows"], key=lambda r: (-r["retrieved"], r["id"]))
    for r in order:
        right = "-" if r["initial_right"] is None else "yes" if r["initial_right"] else "no"  # "-": a method's note,
        # or an entry without a gold label (critique.base.truth.initial_right)
        lines.append(f"| {r['id']} | {r['tier']} | {r['retrieved']} | {r['credit']} | {r['helped']} | {r['hurt']} "
                     f"| {r['cited']} | {r['twinned']} | {right} |")
    for problem in s["problems"]:
        lines.append(f"\nleft out: {problem}")
    return "\n".join(lines) + "\n"


# ---- pruning (critique.experiments.credit.prune) --------------------------------------------------
def prune_rows(prune_dir: Path) -> list[dict]:
    """Per strategy and rule: accuracy on the held-out questions and entries removed; the random rules'
    seeds (``random:N#S``) pooled into one row per N (mean, min and max of the seeds' accuracies)."""
    predictions = logs.predictions(prune_dir, (CREDIT_PRUNE,))
    cells: dict[tuple, dict] = {}
    for p in predictions:
        strategy, _, label = str(p["strategy"]).partition("|")
        rule, _, seed = label.partition("#")
        cell = cells.setdefault((strategy, rule), {"seeds": {}, "removed": p.get("pruned"), "errors": 0})
        if p.get("error"):
            cell["errors"] += 1
            continue
        cell["seeds"].setdefault(seed, []).append(bool(p["correct"]))
    rows = []
    for (strategy, rule), cell in cells.items():
        accuracies = [sum(v) / len(v) for v in cell["seeds"].values() if v]
        rows.append({"strategy": strategy, "rule": rule, "removed": cell["removed"], "seeds": len(accuracies),
                     "n": max((len(v) for v in cell["seeds"].values()), default=0), "errors": cell["errors"],
                     "accuracy": sum(accuracies) / len(accuracies) if accuracies else None,
                     "accuracy_min": min(accuracies, default=None), "accuracy_max": max(accuracies, default=None)})
    from critique.base.vocab import STRATEGIES

    def order(r: dict) -> tuple:  # none, the rules, then their random controls; strategies in the study's order
        rank = STRATEGIES.index(r["strategy"]) if r["strategy"] in STRATEGIES else len(STRATEGIES)
        return r["rule"] != "none", r["rule"].startswith("random"), r["rule"], rank

    return sorted(rows, key=order)


def _probe(run_dir: Path) -> dict:
    """The probe settings a run directory's manifest records."""
    return logs.manifest(run_dir).get("probe") or {}


def prune_markdown(prune_dir: Path) -> str:
    probe = _probe(prune_dir)
    rows = prune_rows(prune_dir)
    strategies = list(dict.fromkeys(r["strategy"] for r in rows))
    by = {(r["rule"], r["strategy"]): r for r in rows}
    held = "the test questions" if probe.get("on") == "train" else "the held-out half of test"
    lines = [f"## Pruning by credit ({probe.get('strategy')} credit on {probe.get('on')}), scored on {held}", "",
             f"Read: {prune_dir}. random:N rows: the mean over seeds (min-max), N = the rule's entries removed "
             "(budget-matched control).", "",
             "| rule | entries removed | seeds | n | " + " | ".join(f"{s} accuracy %" for s in strategies) + " |",
             "|---|---:|---:|---:|" + "---:|" * len(strategies)]
    for rule in dict.fromkeys(r["rule"] for r in rows):
        first = next(by[(rule, s)] for s in strategies if (rule, s) in by)
        cells = []
        for s in strategies:
            r = by.get((rule, s))
            if r is None or r["accuracy"] is None:
                cells.append("-")
            elif r["seeds"] > 1:
                cells.append(f"{_pct(r['accuracy'])} ({_pct(r['accuracy_min'])}-{_pct(r['accuracy_max'])})")
            else:
                cells.append(_pct(r["accuracy"]))
        lines.append(f"| {rule} | {first['removed']} | {first['seeds']} | {first['n']} | " + " | ".join(cells) + " |")
    errors = sum(r["errors"] for r in rows)
    if errors:
        lines.append(f"\n{errors} answers failed (left out of the accuracies; rerun the command to retry)")
    return "\n".join(lines) + "\n"


# ---- the tables of `critique tables` (credit and pruning runs among its inputs) ---------------------------
TIERS_KEY, PRUNE_KEY = "credit", "credit_prune"
TIERS_TITLE = "Credit by deletion: memory entries per tier (critique credit)"
PRUNE_TITLE = ("Pruning by credit: accuracy (%) on held-out questions with entries removed by a rule, against as "
               "many removed at random")
TIERS_COLUMNS = ["model", "dataset", "critic", "strategy", "on", "cite", "prompts", "accuracy_full", "deletions",
                 "decisive", "null_asked", "null_flipped", "entries", *TIERS]
PRUNE_COLUMNS = ["model", "dataset", "critic", "credit", "on", "rule", "removed", "strategy", "accuracy",
                 "accuracy_min", "accuracy_max", "seeds", "n", "errors"]
TIERS_NOTE = ("per credit run: its prompts answered with every entry (accuracy_full %, pooled over prompts), the "
              "deletions (one call per retrieved entry) and those that changed correctness (decisive), the null "
              "control (identical prompts asked again, and how many changed correctness), and the entries per tier "
              "(analysis/memory/credit.py: without --cite, novel-not-decisive stands for unused and used-not-decisive)")
PRUNE_NOTE = ("rule: none (nothing removed), toxic, lowest:N (the N of lowest credit), estimate:N (the N of lowest "
              "credit learned from the logs: analysis/memory/credit_model.py, fitted on the other half of the "
              "entries) and random:N (as many at "
              "random: the budget-matched control; mean over seeds, min and max beside); accuracy pooled over "
              "the held-out questions; an error, a timeout or a parse failure counts wrong; errors: failed answers")


def tables(metas: list[dict], problems: list[str]) -> list:
    """The credit and pruning tables of the credit runs (and their pruning runs) among the runs read."""
    from critique.analysis.memory.echo import run_label
    from critique.analysis.study.tabular import Table

    out = []
    credit_runs = [m for m in metas if m.get("probe") == CREDIT]
    if credit_runs:
        rows = []
        for meta in credit_runs:
            try:
                s = summary(Path(meta["path"]))
            except (OSError, ValueError) as exc:
                problems.append(f"{meta['path']}: no credit figures ({exc})")
                continue
            problems.extend(f"{meta['path']}: {p}" for p in s["problems"])
            probe = s["probe"]
            rows.append({**run_label(meta), "strategy": probe.get("strategy"), "on": probe.get("on"),
                         "cite": bool(probe.get("cite")), "prompts": s["prompts"],
                         "accuracy_full": None if s["accuracy_full"] is None else 100 * s["accuracy_full"],
                         "deletions": s["deletions"], "decisive": s["decisive_deletions"],
                         "null_asked": s["null"]["asked"], "null_flipped": s["null"]["flipped"],
                         "entries": s["entries"], **s["tiers"]})
        rows.sort(key=lambda r: (r["model"], r["dataset"], r["critic"], str(r["strategy"]), str(r["on"])))
        shown = shown_tiers(rows, any(r["cite"] for r in rows))
        columns = [c for c in TIERS_COLUMNS if c not in TIERS or c in shown]
        out.append(Table(TIERS_KEY, TIERS_TITLE, columns, rows, note=TIERS_NOTE) if rows else
                   Table(TIERS_KEY, TIERS_TITLE, skipped="no readable credit run among the inputs"))
    prune_runs = [m for m in metas if m.get("probe") == CREDIT_PRUNE]
    if prune_runs:
        rows = []
        for meta in prune_runs:
            probe = _probe(Path(meta["path"]))
            for r in prune_rows(Path(meta["path"])):
                rows.append({**run_label(meta), "credit": probe.get("strategy"), "on": probe.get("on"),
                             "rule": r["rule"], "removed": r["removed"], "strategy": r["strategy"],
                             **{k: None if r[k] is None else 100 * r[k]
                                for k in ("accuracy", "accuracy_min", "accuracy_max")},
                             "seeds": r["seeds"], "n": r["n"], "errors": r["errors"]})
        out.append(Table(PRUNE_KEY, PRUNE_TITLE, PRUNE_COLUMNS, rows, note=PRUNE_NOTE) if rows else
                   Table(PRUNE_KEY, PRUNE_TITLE, skipped="no answer in the pruning runs among the inputs"))
    return out
