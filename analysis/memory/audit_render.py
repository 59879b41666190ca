"""`critique audit` as markdown, JSON or a self-contained HTML page (analysis.memory.audit computes it).

JSON keys (one object): `audits` (one per audited run), `inputs` (`runs`, `audited`, `partners`),
`problems`, `errors`. Each audit: `run`, `model`, `dataset`, `kind`, `experiment`, `strategies`,
`answer_space`, `memory` (false: no episodic memory, `note` says so), `truth` (what the dataset
folder told), `prompts` (what was read of the run's prompts: `stages`, `labeled` (with a gold label: accuracy counts
these only), `unlabeled` (a Learner's predict prompts: counted in reuse, left out of accuracy), `note`), `summary`,
`reuse`, `entries`, `failures`, `semantic`, `methods`.
- `summary`: `reuse_definition` (what the reuse n counts: EP_CRIT and EP+SEM_CRIT prompts, never
  EP_LABEL's), `entries`, `retrievals` (the sum of n), `never_retrieved` (entries with n = 0),
  `never_retrieved_share`, `top_entries`, `top10_share`, `u0_entries`, `u0_verdict_known`,
  `verdict_unknown`, `leniency` (P(r=1 | U=0) over the entries whose critic was shown no label),
  `leniency_low` / `leniency_high` (its 95% Wilson interval), `leniency_entries`, `contradiction`,
  `contradiction_low`, `contradiction_high`, `contradiction_entries` (the same over the entries whose
  critic was shown their gold label: the critic contradicting it), `mean_b_u0` (E[b | U=0]), `corr_b_n_u0`
  (Pearson Corr(b, n | U=0), null when undefined),
  `corr_b_n_u0_interval` (`entries`, `lenient_reused`: the U=0, b=+1 entries with n > 0 that carry it,
  `undefined`: share of bootstrap resamples where it is undefined, `low`, `high`, `why`: the reason no
  interval is given, null when one is), `assertion_mismatch`, `asserts_other_than_gold`,
  `wrong_verdict` / `right_verdict` / `flipped`
  (`entries`, `retrievals`, `share_of_retrievals`, `mean_n`; `flipped` also `retrieved_entries`, null
  without the generator's truth), `similarity_logged`.
- `reuse`: strategy -> `prompts`, `labeled`, `unlabeled`, `accuracy` (over the labeled prompts), `prompts_with_memory`
  (prompts that had entries), `labeled_with_memory`, `correct_with_memory`, `accuracy_with_memory`,
  `labeled_without_memory`, `correct_without_memory`, `accuracy_without_memory` (each accuracy over labeled prompts
  only; null over none), `retrievals`, `entries_reached`; `label_judged` (labeled prompts with memory whose
  entries carry a label), `gold_retrieved` (of those, the prompts that retrieved an entry labeled with the
  question's gold label), `gold_retrieved_share`, `accuracy_gold_retrieved`, `accuracy_gold_not_retrieved`.
- `entries[]`: `id`, `item_id`, `user`, `question`, `initial_answer`, `gold`, `critique`,
  `assertion_mismatch` (null: no label shown, --critic self), `timeout`, `asserted`, `asserts_gold`, `U`,
  `r`, `b` (`U` and `b` null when the entry has no gold label), `flipped`, `rule_prefers`, `n` (the reuse),
  `labeled` (the prompts of n with a gold label), `correct` (of those), `reuse` (every strategy that retrieved it,
  EP_LABEL included -> `n`, `labeled`, `correct`), `retrieved_by[]`
  (`strategy`, `user`, `item_id`, `rank`, `correct` (null: no gold label), `score`), `similarity` (`mean`, `min`, `max`,
  `count`; null: not logged); a stream's (`experiment` stream, its notes' latest versions, reuse over its own
  prompts) also `status`, `version`, `confidence`, `sources`, `step`, `feedback`, `why`.
- `failures`: `partner`, `note`, `wrong`, `retrieval`, `usage`, `unclassified`, `items[]` (`user`,
  `item_id`, `answer`, `gold`, `truth_answer`, `class` (retrieval / usage / null), `why`,
  `retrieved`, `retrieved_wrong_verdict`).
- `semantic`: `present`, `note`, `pools[]` (`pool`, `format` (lines / advice), `note`, `error`,
  `source_ids`, `lines[]`: `text`, `source_ids`, `sources`, `traced` (cited: the sources the summary named
  for the line, checked; chunk: every critique of the calls that wrote it), `wrong_verdict`, `unknown_verdict`,
  `assertion_mismatch`, `not_in_memory`).
- `methods[]` (the field's methods' memories, memory/METHOD.json; analysis.memory.audit_methods): `method`, `pool`,
  `offline_calls`, `offline_tokens`, `train_budget`, `stopped`, `skipped` (steps whose reply was not used),
  `prompts` (its test prompts), `labeled` (those with a gold label), `right`, `notes[]` (`id`, `text`, `sources`,
  `shown`: its method's test prompts that showed it, `labeled`, `right`: how many of them were answered right).
"""

from __future__ import annotations

import json

from critique.analysis.memory.audit_methods import right_text
from critique.analysis.memory.echo_stats import CONTRADICTION, LENIENCY, REUSE_NOTE, STORED_RIGHT_NOTE, count_entries
from critique.analysis.study.render import short
from critique.analysis.study.tabular import Table

NOTES = {
    "summary": "U = 1: the initial answer was right; r = 1: the critique asserts the initial answer (the option its "
               "correct_answer names, parsed strictly; unknown when it names none or several); b = r - U; "
               + REUSE_NOTE + "; " + STORED_RIGHT_NOTE + ", each with its 95% Wilson interval; Corr(b, n) with its "
               "95% percentile bootstrap "
               "interval (seeded), given only when at least 5 wrong-but-trusted (U = 0, b = +1) reused entries and "
               "5 U = 0 entries with b = 0 carry it",
    "entries": "mismatch -: no label was shown (--critic self); n, right: " + REUSE_NOTE + ", and how many of them "
               "were answered right (\"R of L\": of the L with a gold label, when some had none); per strategy: "
               "retrievals (answers right) of every strategy that retrieves, EP_LABEL included; similarity: "
               "retrieved_scores of the prompts counted in n",
}


def _num(value, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _pct(value) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _group_text(group: dict | None) -> str:
    if not group or not group["entries"]:
        return "none"
    return (f"{count_entries(group['entries'])}, mean n {_num(group['mean_n'], 2)}, {group['retrievals']} retrievals "
            f"({_pct(group['share_of_retrievals'])} of all)")


def _stored_right_text(s: dict, name: str) -> str:
    """leniency or contradiction with its interval and the entries it is over ("-" over none)."""
    if s[name] is None:
        return "-"
    return (f"{_num(s[name])} [{_num(s[name + '_low'])}, {_num(s[name + '_high'])}] over "
            f"{count_entries(s[name + '_entries'])}")


def _corr_text(value, rests: dict) -> str:
    """Corr(b, n | U = 0) with what it rests on, and its interval or why none is given."""
    if value is None:
        return f"- ({rests['why']})"
    head = (f"{_num(value)} over {rests['entries']} entries, {rests['lenient_reused']} of them wrong-but-trusted "
            "and reused")
    if rests["low"] is None:
        return f"{head}; {rests['why']}"
    return f"{head}; [{_num(rests['low'])}, {_num(rests['high'])}], {_pct(rests['undefined'])} of resamples undefined"


def summary_table(audit: dict) -> Table:
    s = audit["summary"]
    rows = [("entries", s["entries"]), ("reuse: retrievals into EP_CRIT / EP+SEM_CRIT prompts", s["retrievals"]),
            ("never reused (n = 0)", f"{s['never_retrieved']} ({_pct(s['never_retrieved_share'])})"),
            (f"share of the reuse taken by the top 10% of entries ({s['top_entries']})", _pct(s["top10_share"])),
            ("entries with a wrong initial answer (U = 0)", s["u0_entries"]),
            ("verdict unknown (no single option asserted)", s["verdict_unknown"]),
            ("leniency: P(r = 1) over U = 0 entries whose critic was shown no label", _stored_right_text(s, LENIENCY)),
            ("contradiction: P(r = 1) over U = 0 entries whose critic was shown the gold label",
             _stored_right_text(s, CONTRADICTION)),
            ("E[b] over U = 0 entries", _num(s["mean_b_u0"])),
            ("Corr(b, n) over U = 0 entries (Pearson)", _corr_text(s["corr_b_n_u0"], s["corr_b_n_u0_interval"])),
            ("assertion_mismatch (as logged)", s["assertion_mismatch"]),
            ("critique asserts an option other than gold (strict parse)", s["asserts_other_than_gold"]),
            ("reuse of entries with a wrong verdict (b != 0)", _group_text(s["wrong_verdict"])),
            ("reuse of entries with a right verdict (b = 0)", _group_text(s["right_verdict"])),
            ("entries whose gold label was flipped by the generator",
             "unknown: " + audit["truth"] if s["flipped"] is None else
             _group_text(s["flipped"]) + (f"; {s['flipped']['retrieved_entries']} of them retrieved"
                                          if s["flipped"]["entries"] else "")),
            ("similarity to the retrieving questions", "logged" if s["similarity_logged"] else "not logged")]
    return Table("summary", "Summary", ["measure", "value"],
                 [{"measure": m, "value": str(v)} for m, v in rows], note=NOTES["summary"])


def reuse_table(audit: dict) -> Table:
    columns = ["strategy", "prompts", "labeled", "with memory", "retrievals", "entries reached", "accuracy",
               "accuracy with memory", "accuracy without memory", "gold label retrieved",
               "accuracy: gold retrieved / not"]
    rows = [dict(zip(columns, [s, str(v["prompts"]), str(v["labeled"]), str(v["prompts_with_memory"]),
                               str(v["retrievals"]), str(v["entries_reached"]), _pct(v["accuracy"]),
                               _pct(v["accuracy_with_memory"]), _pct(v["accuracy_without_memory"]),
                               _pct(v["gold_retrieved_share"]),
                               f"{_pct(v['accuracy_gold_retrieved'])} / {_pct(v['accuracy_gold_not_retrieved'])}"]))
            for s, v in audit["reuse"].items()]
    return Table("reuse", "Reuse per strategy", columns, rows,
                 note="counted predictions (the latest per item): " + prompts_text(audit["prompts"]) + "; accuracy "
                      "over the labeled prompts, with memory over those that had entries, without over those that "
                      "had none; gold label retrieved: the share of the labeled prompts with memory that retrieved an "
                      "entry whose label (the one its critic was shown) is the question's gold label (prompts whose "
                      "entries carry no label are left out), with the accuracy of those and of the others: with many "
                      "labels, whether retrieval brings the right label at all")


def prompts_text(prompts: dict) -> str:
    """What the audit read of a run's prompts, in words."""
    text = f"stage {', '.join(prompts['stages'])}: {prompts['labeled']} prompts with a gold label"
    if prompts["unlabeled"]:
        text += (f", {prompts['unlabeled']} unlabeled predict prompts (no gold label) left out of accuracy and "
                 "counted in reuse")
    return text


def _right(slot: dict) -> str:
    """An entry's (or one strategy's) right answers among its reuse n (audit_methods.right_text)."""
    return right_text(slot["n"], slot["labeled"], slot["correct"])


def _similarity(row: dict) -> str:
    s = row["similarity"]
    if s is None:
        return "not logged" if row["n"] else "-"
    return f"{s['mean']:.3f} ({s['min']:.3f}-{s['max']:.3f})"


def _shown(value) -> str:
    return "?" if value is None else str(value)


def _mismatch(value: bool | None) -> str:
    """An entry's assertion_mismatch: "-" when null (a --critic self entry was shown no label to mismatch)."""
    return "-" if value is None else "yes" if value else "no"


def entries_table(audit: dict, limit: int) -> Table:
    truth = audit["summary"]["flipped"] is not None
    strategies = [s for s in audit["reuse"] if any(r["reuse"].get(s, {}).get("n") for r in audit["entries"])]
    notes = any("status" in r for r in audit["entries"])  # a stream's notes: their status and version
    columns = (["id"] + (["status", "version"] if notes else []) + ["initial", "gold", "asserted", "U", "r", "b",
                                                                     "mismatch"] + (["flipped"] if truth else [])
               + ["n", "right"] + strategies + ["similarity", "correct_answer"])
    ranked = sorted(audit["entries"], key=lambda r: (-r["n"], str(r["id"])))
    shown = ranked[:limit] if limit else ranked
    rows = []
    for r in shown:
        values = [r["id"]] + ([r["status"], r["version"]] if notes else []) + [
            r["initial_answer"], r["gold"], r["asserted"], r["U"], r["r"], r["b"], _mismatch(r["assertion_mismatch"])
        ] + ([r["flipped"]] if truth else [])
        reuse = [r["reuse"].get(s) or {"n": 0, "labeled": 0, "correct": 0} for s in strategies]
        values += [r["n"], _right(r)] + [f"{x['n']} ({_right(x)})" for x in reuse]
        values += [_similarity(r), short(r["critique"].get("correct_answer"))]
        rows.append(dict(zip(columns, [_shown(v) for v in values])))
    more = f"; {len(ranked) - len(shown)} more entries in --format json" if len(shown) < len(ranked) else ""
    return Table("entries", f"Entries, most reused first ({len(shown)} of {len(ranked)})", columns, rows,
                 note=NOTES["entries"] + more)


def failures_table(audit: dict, limit: int) -> Table:
    f = audit["failures"]
    title = (f"Wrong EP_CRIT answers: {f['wrong']}; retrieval failures {f['retrieval']} (made right by a note that "
             f"states the gold label), usage failures {f['usage']}, not classified {f['unclassified']}")
    if f["partner"] is None:
        return Table("failures", title, skipped=f["note"])
    columns = ["user", "item", "answer", "gold", "truth arm", "class", "retrieved (wrong verdict)"]
    items = f["items"][:limit] if limit else f["items"]
    rows = [dict(zip(columns, [_shown(i["user"]) if i["user"] else "-", i["item_id"], _shown(i["answer"]),
                               _shown(i["gold"]), _shown(i["truth_answer"]), i["class"] or f"- ({i['why']})",
                               f"{len(i['retrieved'])} ({i['retrieved_wrong_verdict']})"])) for i in items]
    more = f"; {len(f['items']) - len(items)} more in --format json" if len(items) < len(f["items"]) else ""
    return Table("failures", title, columns, rows, note=f["note"] + more)


def semantic_table(audit: dict) -> Table:
    sem = audit["semantic"]
    if not sem["present"]:
        return Table("semantic", "Semantic memory", skipped=sem["note"])
    columns = ["pool", "line", "sources", "wrong verdict", "assertion_mismatch", "verdict unknown"]
    rows, notes = [], []
    for pool in sem["pools"]:
        if not pool["lines"]:
            rows.append(dict(zip(columns, [pool["pool"], pool["note"], "-", "-", "-", "-"])))
        for line in pool["lines"]:
            sources = str(line["sources"]) + (" cited" if line["traced"] == "cited" else " (chunk)")
            rows.append(dict(zip(columns, [pool["pool"], short(line["text"], 100), sources,
                                           str(line["wrong_verdict"]), str(line["assertion_mismatch"]),
                                           str(line["unknown_verdict"])])))
        if pool["format"] == "advice" and pool["lines"]:
            notes.append(pool["pool"])
    note = ("sources: the critiques a line descends from (ids in --format json): \"cited\", those the summary "
            "named for the line and the run checked (--advice-sources cited); \"(chunk)\", every critique of the "
            "summary calls that wrote it, the line traced no closer")
    if notes:
        note += (f"; older log in pool{'s' if len(notes) > 1 else ''} {', '.join(notes)}: no per-line sources, "
                 "so every line's sources are all of the pool's source_ids")
    return Table("semantic", "Semantic memory: each advice line and its sources", columns, rows, note=note)


def sections(result: dict, limit: int) -> list[tuple[str, list]]:
    """(heading, [paragraph text or Table, ...]) per audited run."""
    out = []
    for audit in result["audits"]:
        heading = f"{audit['model']} / {audit['dataset']}: {audit['experiment']} ({audit['run']})"
        if not audit["memory"]:
            out.append((heading, [audit["note"] + ".", semantic_table(audit), *_methods(audit, limit)]))
            continue
        f = audit["failures"]
        lead = (f"{audit['summary']['entries']} episodic entries; generator truth: {audit['truth']}. "
                f"Prompts read: {prompts_text(audit['prompts'])}"
                + (f" ({audit['prompts']['note']})" if audit["prompts"]["note"] else "") + ". "
                f"Suggestibility partner: {f['partner'] or 'none'}." + (f" Notes: {audit['note']}." if audit["note"]
                                                                         else ""))
        out.append((heading, [lead, summary_table(audit), reuse_table(audit), entries_table(audit, limit),
                              failures_table(audit, limit), semantic_table(audit), *_methods(audit, limit)]))
    return out


def _methods(audit: dict, limit: int) -> list[Table]:
    """The field's methods' stages and notes (analysis.memory.audit_methods), when the run has any."""
    from critique.analysis.memory import audit_methods

    if not audit["methods"]:
        return []
    notes = audit_methods.notes_table(audit, limit)
    return [audit_methods.stage_table(audit)] + ([notes] if notes is not None else [])


def _intro(result: dict) -> str:
    inputs = result["inputs"]
    return (f"{len(inputs['audited'])} run director{'y' if len(inputs['audited']) == 1 else 'ies'} audited, "
            f"{len(inputs['partners'])} suggestibility run{'' if len(inputs['partners']) == 1 else 's'} as "
            "partners. Read from the logs only: no model was called and no embedding computed.")


def markdown(result: dict, limit: int = 50) -> str:
    from critique.analysis.study.render import markdown_table

    parts = ["# Memory audit", _intro(result)]
    for heading, blocks in sections(result, limit):
        parts.append(f"## {heading}")
        for block in blocks:
            if isinstance(block, str):
                parts.append(block)
            elif block.skipped:
                parts.append(f"### {block.title}\n\n{block.skipped}.")
            else:
                parts.append(f"### {block.title}\n\n{markdown_table(block)}\n\n_{block.note}._")
    if result["problems"] or result["errors"]:
        parts.append("## Input problems\n\n" + "\n".join(f"- {line}" for line in
                                                       [*result["errors"], *result["problems"]]))
    return "\n\n".join(parts) + "\n"


def to_json(result: dict, limit: int = 0) -> str:
    """Every entry and retrieval, whatever `limit` (the keys: this module's docstring)."""
    return json.dumps(result, indent=2, allow_nan=False, ensure_ascii=False) + "\n"


def html_page(result: dict, limit: int = 50) -> str:
    import html

    from critique.analysis.study.report import STYLE, table_html

    body = [f"<h1>Memory audit</h1><p>{html.escape(_intro(result))}</p>"]
    for heading, blocks in sections(result, limit):
        body.append(f"<h1>{html.escape(heading)}</h1>")
        body += [f"<p>{html.escape(b)}</p>" if isinstance(b, str) else table_html(b) for b in blocks]
    if result["problems"] or result["errors"]:
        body.append("<h2>Input problems</h2><ul>" + "".join(
            f"<li>{html.escape(line)}</li>" for line in [*result["errors"], *result["problems"]]) + "</ul>")
    return ("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>Memory audit</title>"
            f"<style>{STYLE}</style></head><body>{''.join(body)}</body></html>\n")


def write(result: dict, form: str, output: str | None, limit: int) -> int:
    """Write the audit in `form` to `output` (standard output when None); report the input problems;
    the exit status."""
    import sys
    from pathlib import Path

    from critique.base.rundir import write_text_atomic

    text = {"json": to_json, "html": html_page}.get(form, markdown)(result, limit)
    if output:
        write_text_atomic(Path(output), text)
    else:
        sys.stdout.write(text)
    for line in result["problems"]:
        print(f"critique: warning: {line}", file=sys.stderr)
    for line in result["errors"]:
        print(f"critique: error: {line}", file=sys.stderr)
    return 1 if result["errors"] else 0
