"""`critique audit RUN_DIR...`: is each episodic memory entry right, and is it used (docs/memory.md)?

Per entry: provenance (item, initial answer, gold, critique, the option the critique asserts, the
generator's truth such as pref-gen's flipped labels), test prompts that retrieved it per strategy and
how they turned out, similarity to each (when `retrieved_scores` was logged). Per run: entries never
retrieved, concentration of reuse, leniency and the Echo Gap, and, with a suggestibility run of the same
model and data, wrong EP_CRIT answers as retrieval or usage failures (the right note, the truthful critique,
states the gold label). Per advice line: its sources.
Reads logs (and the dataset folder) only: no LLM call, no embedding; importing this module is cheap."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from critique.base import rundir, vocab
from critique.analysis.reading import logs
from critique.analysis.study.cells import mean
# the reuse n (REUSE, REUSE_NOTE: one definition for the audit and the Echo table) and Pearson's r
from critique.analysis.memory.echo_stats import REUSE, REUSE_NOTE, corr_b_n, stored_right
from critique.analysis.memory.retrieval import count_gold_retrieved, gold_retrieved_shares, share
from critique.base.assertion import asserted_option
from critique.base.checksum import dataset_checksum
from critique.base.errors import UserError
from critique.base.truth import initial_right, stored_verdict

AUDIT_HELP = "audit the memory of run directories: each entry's verdict, reuse and outcome (reads logs only)"
EPILOG = """Each run that is not a probe is audited, and each stream (its notes); a suggestibility run of the same
model and data among the inputs is its partner (retrieval versus usage failures).
Exit status: 0, 1 when some input was left out (see stderr), 2 on a usage error."""
EPISODIC = (vocab.EP_LABEL, vocab.EP_CRIT, vocab.EP_SEM_CRIT)  # the strategies that put episodic entries in the prompt
TOP_SHARE = 0.10  # concentration: the share of retrievals taken by the top 10% of entries (at least one)


def register(sub) -> None:
    import argparse

    parser = sub.add_parser("audit", help=AUDIT_HELP, description=AUDIT_HELP, epilog=EPILOG,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", metavar="RUN_DIR",
                        help="run directories, or folders with run directories below them")
    parser.add_argument("--format", choices=("markdown", "json", "html"), default="markdown",
                        help="markdown (default), json (every entry and retrieval), or html (a self-contained page)")
    parser.add_argument("-o", "--output", metavar="FILE", help="write here instead of standard output")
    parser.add_argument("--rows", type=int, default=50, metavar="N",
                        help="markdown/html: show at most N entries and N failures per run, most reused first "
                             "(default 50; 0: all); JSON always holds all")
    parser.add_argument("--data", action="append", default=[], metavar="DIR",
                        help="where dataset folders are now (DIR/<name> or DIR), when not where the run read them: "
                             "for the generator's truth (pref-gen's flipped labels); repeatable")
    parser.set_defaults(func=run_audit)


def read_truth(manifest: dict, data_dirs: list[str]) -> tuple[dict, str]:
    """(user, item_id) -> the train item's meta, from the dataset folder the run read (where the manifest
    says, else DIR/<name> or DIR for each of `data_dirs`, else the data folder), when its checksum is the
    run's; and one line saying what is known."""
    from critique.base.paths import data_dir

    data = manifest.get("dataset") or {}
    name, want = str(data.get("name") or ""), data.get("checksum")
    looked = [Path(str(data.get("path") or "")), *(p for d in data_dirs for p in (Path(d) / name, Path(d))),
              data_dir() / name]
    places = [p for p in looked if str(p) != "." and (p / "dataset.json").is_file()]
    path = next((p for p in places if not want or dataset_checksum(p) == want), None)
    if path is None:
        return {}, (f"no dataset folder with the run's checksum in {', '.join(map(str, dict.fromkeys(looked)))} "
                    "(--data DIR names another): the generator's truth is not available")
    users = (data.get("users") or []) if data.get("kind") == "preference" else [None]
    metas = {}
    try:
        for user in users:
            for line in ((path / user if user else path) / "train.jsonl").read_text(encoding="utf-8").splitlines():
                if line.strip():
                    item = json.loads(line)
                    metas[(user, str(item["id"]))] = item.get("meta") or {}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return {}, f"dataset folder {path}: a train split is unreadable ({exc}): the generator's truth is not used"
    if not any("flipped" in m for m in metas.values()):
        return metas, f"dataset folder {path} read; its items carry no generator truth (meta.flipped)"
    return metas, f"dataset folder {path} read: meta.flipped and meta.rule_prefers of each train item"


def read_memory(path: Path, problems: list[str]) -> tuple[list[dict] | None, dict | None]:
    """The episodic entries and the semantic memory of a run (None where the file is absent)."""
    entries = logs.memory(path, problems)
    try:
        return entries, logs.memory_document(path, logs.SEMANTIC)
    except ValueError as exc:
        problems.append(f"{Path(path) / rundir.MEMORY / logs.SEMANTIC}: unreadable ({exc}); semantic memory left out")
        return entries, None


def counted(path: Path, stage: str | tuple[str, ...], problems: list[str]) -> list[dict]:
    """The final record per (stage, strategy, user, item) of one stage or several (a rerun's replaces a failed
    one)."""
    return logs.predictions(path, (stage,) if isinstance(stage, str) else stage, problems)


def prompts_read(predictions: list[dict], stages: tuple[str, ...], learner: bool) -> dict:
    """What the audit read of the run's prompts: their stages, how many have a gold label (the only ones accuracy
    counts) and how many have none (a Learner's predict prompts: reuse counts them, accuracy leaves them out)."""
    labeled = sum(logs.labeled(p) for p in predictions)
    note = ("a Learner: Learner.evaluate's prompts (stage test) have a gold label, Learner.predict's (stage "
            "predict) none; Learner.learn's steps (stage stream) and their notes (memory/notes.jsonl) are not "
            "audited here" if learner else None)
    return {"stages": list(stages), "labeled": labeled, "unlabeled": len(predictions) - labeled, "note": note}


def entry_rows(entries: list[dict], space: list[str], truth: dict) -> list[dict]:
    rows = []
    for e in entries:
        critique = e.get("critique") or {}
        asserted = asserted_option(critique.get("correct_answer"), space)
        u = initial_right(e)  # None: the entry has no gold label, its truth is unknown
        u = None if u is None else int(u)
        r = stored_verdict(e, asserted)
        meta = truth.get((e.get("user"), str(e.get("item_id"))), {})
        rows.append({"id": e.get("id"), "item_id": e.get("item_id"), "user": e.get("user"),
                     "question": e.get("question"), "initial_answer": e.get("initial_answer"), "gold": e.get("gold"),
                     "critique": critique, "assertion_mismatch": e.get("assertion_mismatch"),
                     "timeout": e.get("timeout"), "asserted": asserted,
                     "asserts_gold": None if asserted is None else asserted == e.get("gold"),
                     "U": u, "r": r, "b": None if r is None or u is None else r - u,
                     "flipped": meta.get("flipped"), "rule_prefers": meta.get("rule_prefers"),
                     "label": e.get("label", e.get("gold")), "label_flipped": e.get("label_flipped") is True,
                     "believed": e.get("believed"),
                     "n": 0, "labeled": 0, "correct": 0,
                     "reuse": {s: {"n": 0, "labeled": 0, "correct": 0} for s in EPISODIC},
                     "retrieved_by": [], "similarity": None})
    return rows


def count_reuse(rows: list[dict], predictions: list[dict], problems: list[str], where: str) -> dict:
    """Fill each entry's reuse n (REUSE's prompts only: REUSE_NOTE) and its retrievals per strategy (each of the
    five's; a field method's notes are audited on their own, analysis.memory.audit_methods) from the counted test
    predictions; the retrievals per strategy. Reuse counts every prompt; right and accuracy only those with a gold
    label (``logs.labeled``: a Learner's predict prompts have none, and are neither right nor wrong)."""
    by_id = {row["id"]: row for row in rows}
    per: dict[str, dict] = {}
    unknown = 0
    for p in predictions:
        strategy, retrieved = p.get("strategy"), p.get("retrieved") or []
        if strategy not in vocab.STRATEGIES:  # a field method: its notes, audited on their own (audit_methods)
            continue
        stats = per.setdefault(strategy, {"prompts": 0, "labeled": 0, "unlabeled": 0, "prompts_with_memory": 0,
                                          "labeled_with_memory": 0, "correct_with_memory": 0,
                                          "labeled_without_memory": 0, "correct_without_memory": 0,
                                          "retrievals": 0, "entries_reached": set(), "label_judged": 0,
                                          "gold_retrieved": 0, "correct_gold_retrieved": 0,
                                          "correct_gold_not_retrieved": 0})
        judged = logs.labeled(p)
        ok = p.get("correct") is True if judged else None
        stats["prompts"] += 1
        stats["labeled" if judged else "unlabeled"] += 1
        if judged:
            memory = "with" if retrieved else "without"
            stats[f"labeled_{memory}_memory"] += 1
            stats[f"correct_{memory}_memory"] += ok
        if not retrieved:
            continue
        stats["prompts_with_memory"] += 1
        if judged:
            count_gold_retrieved(stats, p["gold"], [by_id[i]["label"] for i in retrieved if i in by_id], ok)
        scores = p.get("retrieved_scores")
        scores = [x if isinstance(x, (int, float)) and math.isfinite(x) else None for x in scores] \
            if isinstance(scores, list) and len(scores) == len(retrieved) else None
        for rank, entry_id in enumerate(retrieved):
            row = by_id.get(entry_id)
            if row is None:
                unknown += 1
                continue
            stats["retrievals"] += 1
            stats["entries_reached"].add(entry_id)
            slots = ([row] if strategy in REUSE else []) + [row["reuse"].setdefault(strategy, {"n": 0, "labeled": 0,
                                                                                              "correct": 0})]
            for slot in slots:
                slot["n"] += 1
                slot["labeled"] += judged
                slot["correct"] += bool(ok)
            row["retrieved_by"].append({"strategy": strategy, "user": p.get("user"), "item_id": p.get("item_id"),
                                        "rank": rank + 1, "correct": ok,
                                        "score": None if scores is None else scores[rank]})
    if unknown:
        problems.append(f"{where}: {unknown} retrieved ids are not in memory/episodic.jsonl; not counted")
    for row in rows:
        scores = [r["score"] for r in row["retrieved_by"] if r["score"] is not None and r["strategy"] in REUSE]
        if scores:
            row["similarity"] = {"mean": mean(scores), "min": min(scores), "max": max(scores), "count": len(scores)}
    return {s: {**v, "entries_reached": len(v["entries_reached"]),
                "accuracy": share(v["correct_with_memory"] + v["correct_without_memory"], v["labeled"]),
                "accuracy_with_memory": share(v["correct_with_memory"], v["labeled_with_memory"]),
                "accuracy_without_memory": share(v["correct_without_memory"], v["labeled_without_memory"]),
                **gold_retrieved_shares(v)}
            for s, v in sorted(per.items(), key=lambda kv: (_rank(kv[0]), str(kv[0])))}


def _rank(strategy) -> int:
    return vocab.STRATEGIES.index(strategy) if strategy in vocab.STRATEGIES else len(vocab.STRATEGIES)


def _group(rows: list[dict], total: int) -> dict:
    n = sum(r["n"] for r in rows)
    return {"entries": len(rows), "retrievals": n, "share_of_retrievals": share(n, total),
            "mean_n": mean(r["n"] for r in rows)}


def summary(rows: list[dict]) -> dict:
    total = sum(r["n"] for r in rows)
    top = max(1, math.ceil(TOP_SHARE * len(rows))) if rows else 0
    ranked = sorted((r["n"] for r in rows), reverse=True)
    wrong_start = [r for r in rows if r["U"] == 0]
    known = [r for r in wrong_start if r["r"] is not None]
    flipped = [r for r in rows if r["flipped"] is True]
    has_truth = any(r["flipped"] is not None for r in rows)
    rates = stored_right(known)  # leniency (no label shown) and contradiction (the gold label shown)
    corr = corr_b_n(known)
    return {
        "reuse_definition": REUSE_NOTE, "entries": len(rows), "retrievals": total,
        "never_retrieved": sum(r["n"] == 0 for r in rows),
        "never_retrieved_share": share(sum(r["n"] == 0 for r in rows), len(rows)),
        "top_entries": top, "top10_share": share(sum(ranked[:top]), total),
        "u0_entries": len(wrong_start), "u0_verdict_known": len(known),
        "verdict_unknown": sum(r["r"] is None for r in rows),
        **{f"{name}{end}": rates[name][key] for name in rates
           for end, key in (("", "value"), ("_low", "low"), ("_high", "high"), ("_entries", "entries"))},
        "mean_b_u0": mean(r["b"] for r in known),
        "corr_b_n_u0": corr.pop("value"), "corr_b_n_u0_interval": corr,
        "assertion_mismatch": sum(r["assertion_mismatch"] is True for r in rows),
        "asserts_other_than_gold": sum(r["asserts_gold"] is False for r in rows),
        "wrong_verdict": _group([r for r in rows if r["b"] not in (None, 0)], total),
        "right_verdict": _group([r for r in rows if r["b"] == 0], total),
        "flipped": _group(flipped, total) | {"retrieved_entries": sum(r["n"] > 0 for r in flipped)}
        if has_truth else None,
        "similarity_logged": any(r["similarity"] for r in rows),
    }


def failures(predictions: list[dict], partner: dict | None, rows: list[dict], problems: list[str]) -> dict:
    """Each counted wrong EP_CRIT answer (judged against a gold label: an unlabeled one is never wrong), classed by
    the partner's truth arm on the same item."""
    wrong = [p for p in predictions
             if p.get("strategy") == vocab.EP_CRIT and logs.labeled(p) and p.get("correct") is not True]
    out = {"partner": partner["path"] if partner else None, "wrong": len(wrong), "retrieval": 0, "usage": 0,
           "unclassified": len(wrong), "items": []}
    if partner is None:
        out["note"] = ("no suggestibility run of this model and dataset among the inputs: the wrong EP_CRIT answers "
                       "are not classified")
        return out
    truth = {(p.get("user") or None, p.get("item_id")): p
             for p in counted(Path(partner["path"]), vocab.PROBE, problems) if p.get("strategy") == vocab.TRUTH}
    verdicts = {row["id"]: row["b"] for row in rows}
    out["unclassified"] = 0
    for p in sorted(wrong, key=lambda p: (str(p.get("user") or ""), str(p.get("item_id")))):
        arm = truth.get((p.get("user") or None, p.get("item_id")))
        if arm is None or arm.get("error"):
            kind, why = None, "no truth-arm answer" if arm is None else f"truth arm failed: {arm['error']}"
        else:
            kind, why = ("retrieval", None) if arm.get("correct") is True else ("usage", None)
        out[kind or "unclassified"] += 1
        retrieved = p.get("retrieved") or []
        out["items"].append({"user": p.get("user"), "item_id": p.get("item_id"), "answer": p.get("answer"),
                             "gold": p.get("gold"), "truth_answer": None if arm is None else arm.get("answer"),
                             "class": kind, "why": why, "retrieved": retrieved,
                             "retrieved_wrong_verdict": sum(verdicts.get(i) not in (None, 0) for i in retrieved)})
    out["note"] = (f"truth arm (stage probe, strategy truth) of {partner['path']}, whose right note is the item's "
                   "truthful critique and states its gold label: right -> retrieval failure (the note that states "
                   "the gold label made it right), wrong -> usage failure")
    return out


def semantic_audit(pools: dict | None, rows: list[dict]) -> dict:
    if pools is None:
        return {"present": False, "note": "no memory/semantic.json: no semantic memory", "pools": []}
    by_id = {row["id"]: row for row in rows}
    out = []
    for pool, record in sorted(pools.items()):
        record = record if isinstance(record, dict) else {}
        ids = list(record.get("source_ids") or [])
        if isinstance(record.get("lines"), list):
            fmt, note = "lines", "each line with the critiques it descends from"
            lines = [(str(x.get("text", "")), list(x.get("source_ids") or []), x.get("cited") is True)
                     for x in record["lines"] if isinstance(x, dict)]
        else:
            fmt, note = "advice", ("older log: no per-line sources, so every line's sources are all of the pool's "
                                   "source_ids")
            texts = (re.sub(r"^\s*[-*\u2022]\s+", "", t).strip() for t in str(record.get("advice") or "").splitlines())
            lines = [(text, ids, False) for text in texts if text]
        if record.get("advice") is None and not lines:
            note = f"no advice ({record.get('error') or 'none written'})"
        shown = []
        for text, sources, cited in lines:
            found = [by_id[i] for i in sources if i in by_id]
            shown.append({"text": text, "source_ids": sources, "sources": len(sources),
                          "traced": "cited" if cited else "chunk",
                          "wrong_verdict": sum(r["b"] not in (None, 0) for r in found),
                          "unknown_verdict": sum(r["r"] is None for r in found),
                          "assertion_mismatch": sum(r["assertion_mismatch"] is True for r in found),
                          "not_in_memory": len(sources) - len(found)})
        out.append({"pool": pool, "format": fmt, "note": note, "error": record.get("error"), "source_ids": ids,
                    "lines": shown})
    return {"present": True, "note": None, "pools": out}


def audit_run(meta: dict, partner: dict | None, problems: list[str], data_dirs: list[str] = ()) -> dict:
    from critique.analysis.reading.read import model_label

    from critique.analysis.memory import audit_methods, audit_notes

    path = Path(meta["path"])
    manifest = logs.manifest(path)
    space = [str(a) for a in (manifest.get("dataset") or {}).get("answer_space") or []]
    entries, pools = read_memory(path, problems)
    learner = bool(meta.get("learner"))  # a Learner's folder: its prompts are evaluate's (test) and predict's
    stages = (vocab.TEST, vocab.PREDICT) if learner else (vocab.TEST,)
    stream = meta["probe"] == vocab.STREAM
    if stream:  # its memory is the notes store, its prompts the stream's
        (entries, latest), pools = audit_notes.latest_entries(path, problems), None
        stages = (vocab.STREAM,)
    predictions = counted(path, stages, problems)
    out = {"run": meta["path"], "model": model_label(meta), "dataset": meta["dataset"], "kind": meta["kind"],
           "experiment": "stream" if stream else "Learner" if learner else "plain run" if meta["ablation"] is None else
           f"ablation {meta['ablation']} = {meta['ablation_value']}",
           "strategies": (manifest.get("config") or {}).get("strategies") or [], "answer_space": space,
           "memory": entries is not None, "note": None, "truth": None,
           "prompts": prompts_read(predictions, stages, learner), "summary": None, "reuse": None,
           "entries": [], "failures": None, "semantic": semantic_audit(pools, []),
           "methods": audit_methods.audit(path, predictions, problems)}
    if entries is None:
        out["note"] = (f"no episodic memory (memory/episodic.jsonl absent; strategies run: "
                       f"{', '.join(out['strategies']) or 'none'})")
        return out
    truth, out["truth"] = read_truth(manifest, list(data_dirs))
    rows = entry_rows(entries, space, truth)
    if stream:
        audit_notes.add_note_fields(rows, latest)
        out["note"] = audit_notes.NOTE
    out["reuse"] = count_reuse(rows, predictions, problems, meta["path"])
    out.update(summary=summary(rows), entries=rows, failures=failures(predictions, partner, rows, problems),
               semantic=semantic_audit(pools, rows))
    return out


def partner_of(meta: dict, probes: list[dict]) -> tuple[dict | None, list[dict]]:
    """The suggestibility run of the same model and data (no attribution preferred, then the latest)."""
    same = [p for p in probes if p["model"] == meta["model"] and p["dataset"] == meta["dataset"]
            and p["settings"]["data"] == meta["settings"]["data"]]
    same.sort(key=lambda p: (p["attribution"] == "", p["started"], p["path"]))
    return (same[-1] if same else None), same


def audit(paths: list[str], data_dirs: list[str] = ()) -> dict:
    """The audit of every run among `paths` that is not a probe (the JSON document)."""
    from critique.analysis.reading import read

    errors: list[str] = []
    problems: list[str] = []
    metas = read.runs(paths, True, errors, problems, learners=True)  # each run's memory, a Learner's too
    probes = [m for m in metas if m["probe"] == vocab.SUGGESTIBILITY]
    audited = [m for m in metas if m["probe"] in (None, vocab.STREAM)]
    if not audited:
        raise UserError("nothing to audit: no run among the inputs that is not a probe run"
                        + (f" ({'; '.join(errors)})" if errors else ""))
    audits = []
    for meta in audited:
        partner, same = partner_of(meta, probes)
        if len(same) > 1:
            problems.append(f"{meta['path']}: {len(same)} suggestibility runs match; {partner['path']} is used")
        if meta["status"] != "complete":
            problems.append(f"{meta['path']}: run status is {meta['status']!r}, not 'complete'")
        audits.append(audit_run(meta, partner, problems, data_dirs))
    return {"audits": audits, "inputs": {"runs": list(paths), "audited": [m["path"] for m in audited],
                                         "partners": [m["path"] for m in probes]},
            "problems": problems, "errors": errors}


def run_audit(args) -> int:
    from critique.analysis.memory import audit_render

    if args.rows < 0:
        raise UserError("--rows: give 0 (all) or a positive number")
    return audit_render.write(audit(args.runs, args.data), args.format, args.output, args.rows)
