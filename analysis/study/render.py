"""Results as markdown (for reading) or JSON (for machines)."""

from __future__ import annotations

import json

from critique.analysis.study import defaults
from critique.analysis.reading.read import settings_text
from critique.analysis.study.tables import Result, Table

FORMATS = {
    "tokens_per_question": ",.0f", "total_tokens_per_question": ",.0f", "offline_tokens": ",.0f",
    "saving_per_query": ",.0f", "break_even": ",.0f",
    "init_tokens": ",.0f", "critique_tokens": ",.0f", "summary_tokens": ",.0f", "total": ",.0f",
    "prompt_tokens_per_question": ",.0f", "init_prompt_tokens": ",.0f", "critique_prompt_tokens": ",.0f",
    "summary_prompt_tokens": ",.0f", "prompt_total": ",.0f", "offline_total_tokens": ",.0f",
    "saving_total_per_query": ",.0f", "break_even_total": ",.0f",
    "p_sign": ".3g", "logs": ".3g", "published": ".3g", "p_holm": ".3g", "p_mcnemar": ".3g", "p": ".3g",
    "odds_ratio": ".2f", "rho": ".3f",
    "dollars": ",.4f", "offline_dollars": ",.4f", "dollars_per_question": ".3g",  # cents and below stay visible
}
VIEW_FORMATS = {"table3": ",.0f"}  # the wide view of Table 3 holds tokens, not percentages
DEFAULT_FORMAT = ".1f"


def short(text, width: int = 60) -> str:
    """A text on one line, cut to ``width`` characters (an ellipsis says where)."""
    text = " ".join(str(text or "").split())
    return text if len(text) <= width else text[:width - 3] + "..."


def cell(column: str, value, default: str = DEFAULT_FORMAT, formats: dict | None = None) -> str:
    """A value as a reader sees it; `formats`: a table's own formats of some columns."""
    chosen = (formats or {}).get(column) or FORMATS.get(column)
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) and chosen is None:
        return str(value)
    if isinstance(value, (int, float)):
        return format(float(value), chosen or default)
    return str(value).replace("|", "\\|").replace("\n", " ")


def table_view(table: Table) -> tuple[list[str], list[dict], str]:
    """Columns, rows and the default number format that a reader sees."""
    if table.view_rows is not None:
        return table.view_columns, table.view_rows, VIEW_FORMATS.get(table.key, DEFAULT_FORMAT)
    return table.columns, table.rows, DEFAULT_FORMAT


def markdown_table(table: Table) -> str:
    columns, rows, default = table_view(table)
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        lines.append("| " + " | ".join(cell(c, row.get(c), default, table.formats) for c in columns) + " |")
    return "\n".join(lines)


def claim_text(claim: str, x: dict) -> str:
    """One sentence of a computed claim (C1-C4), naming its condition when the inputs hold several."""
    pairs = (("zero_shot", "zero_shot"), ("EP_LABEL", "ep_label"))
    if claim == "C1":
        text = (f"mean gain of EP+SEM_CRIT: {_pts(x['vs_zero_shot'])} over zero_shot "
                f"({counted(x['points_vs_zero_shot'], 'point')}), {_pts(x['vs_ep_label'])} over EP_LABEL "
                f"({counted(x['points_vs_ep_label'], 'point')}).")
    elif claim == "C2":
        text = "EP+SEM_CRIT " + "; ".join(
            f"vs {name}: {x[f'wins_vs_{s}']} wins, {x[f'losses_vs_{s}']} losses, {x[f'ties_vs_{s}']} ties, "
            f"sign test p = {cell('p_sign', x[f'p_vs_{s}'])}" for name, s in pairs) + "."
    elif claim == "C3":
        cells = counted(x["cells"], "reasoning-model x dataset x strategy cell")
        text = (f"the critique strategies use {x['mean_token_reduction_pct']:.1f}% fewer output tokens per question "
                f"than EP_LABEL (mean relative reduction over {cells}; negative: more tokens).")
    else:
        who = f", critique attributed to: {x['attribution']}" if x.get("attribution") else ""
        text = "Spearman between suggestibility and the EP+SEM_CRIT gain" + who + ": " + "; ".join(
            f"over {name}: rho = {cell('rho', x[f'spearman_vs_{s}'], '.3f')} (p = {cell('p_sign', x[f'p_vs_{s}'])}, "
            f"{counted(x[f'points_vs_{s}'], 'point')})" for name, s in pairs) + "."
    return f"{x['condition']}: {text}" if x.get("condition") else text


def counted(n, word: str) -> str:
    """``n`` and ``word``, plural unless n is 1 ("1 point", "3 points")."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def claim_texts(result: Result) -> list[tuple[str, str]]:
    """(claim, one sentence) for every headline claim, the computed ones first, then the skipped ones (what can be
    filled before what cannot); a claim of another condition than the first is named with it (analysis.study.claims)."""
    computed = sorted((name, claim_text(name.split(" [")[0], x)) for name, x in result.claims.items() if x)
    return computed + sorted((name, f"skipped: {why}.") for name, why in result.claim_skips.items())


def skipped_claims(result: Result) -> list[tuple[str, str]]:
    """(claim, why) once per claim skipped in every condition where it is skipped for one reason: "C3" with "in
    all 5 conditions: no reasoning-model tokens ..."; a claim skipped for other reasons in other conditions keeps
    one line per condition."""
    by_claim: dict[str, list[tuple[str, str]]] = {}
    for name, why in sorted(result.claim_skips.items()):
        by_claim.setdefault(name.split(" [")[0], []).append((name, _without_condition(why)))
    out = []
    for claim, skips in by_claim.items():
        reasons = {why for _, why in skips}
        if len(skips) > 1 and len(reasons) == 1:
            out.append((claim, f"skipped in all {len(skips)} conditions: {reasons.pop()}."))
        else:
            out += [(name, f"skipped: {why}.") for name, why in skips]
    return out


def _without_condition(why: str) -> str:
    """A skip's reason without the condition it starts with ("critic=gold, control=negative: ...")."""
    head, sep, rest = why.partition(": ")
    return rest if sep and "=" in head and " " not in head.replace(", ", ",") else why


def claim_lines(result: Result) -> list[str]:
    return [f"- **{name}** {text}" for name, text in claim_texts(result)]


def _pts(value) -> str:
    return "-" if value is None else f"{value:+.2f} points"


def _what(experiment: dict) -> str:
    if experiment["probe"] is not None:
        by = f" (attributed to {experiment['attribution']})" if experiment["attribution"] else ""
        return f"probe {experiment['probe']}{by}"
    if experiment["ablation"] is not None:
        return f"ablation {experiment['ablation']} = {experiment['ablation_value']}"
    return "plain run"


def inputs_table(experiments: list[dict]) -> Table:
    """What was read: one row per experiment, its settings and its run directories."""
    columns = ["model", "dataset", "experiment", "settings", "run directories"]
    rows = [dict(zip(columns, [e["shown_as"], e["dataset"], _what(e), settings_text(e["settings"]),
                               " ".join(e["runs"])])) for e in experiments]
    note = ("an experiment is its model, dataset, probe or ablation and these settings; runs of one experiment are "
            "pooled (a later run's record of an item replaces an earlier one's), runs of different experiments never")
    return Table("inputs", "Inputs: the experiments read", columns, rows, note=note)


def _markdown_tables(tables: list[Table]) -> list[str]:
    parts = []
    for table in tables:
        parts.append(f"## {table.title}")
        if table.skipped:
            parts.append(f"Skipped: {table.skipped}.")
            continue
        parts.append(markdown_table(table))
        if table.note:
            parts.append(f"_{table.note}._")
    return parts


def markdown(result: Result, heading: str, extra: list[Table] | None = None,
             experiments: list[dict] | None = None, inference=None, problems: list[str] | None = None,
             errors: list[str] | None = None) -> str:
    parts = [f"# Study tables\n\n{heading}", *_markdown_tables([*result.tables, *(extra or [])]),
             "## Headline claims\n\n" + "\n".join(claim_lines(result))]
    if inference is not None:
        parts += ["# Item-level inference\n\n" + inference.data["when"], *_markdown_tables(inference.tables)]
    settings = defaults.markdown(experiments)
    if settings:
        parts.append(settings)
    if experiments:
        parts += _markdown_tables([inputs_table(experiments)])
    if problems or errors:
        parts.append("## Input problems\n\n" + "\n".join([*(f"- error: {e}" for e in errors or []),
                                                           *(f"- warning: {w}" for w in problems or [])]))
    return "\n\n".join(parts) + "\n"


def as_dict(result: Result) -> dict:
    out: dict = {"source": result.source}
    skipped, titles, notes = {}, {}, {}
    for table in result.tables:
        out[table.key] = None if table.skipped else table.rows
        titles[table.key] = table.title
        if table.skipped:
            skipped[table.key] = table.skipped
        if table.note:
            notes[table.key] = table.note
    out["claims"] = result.claims
    skipped.update(result.claim_skips)
    out.update(titles=titles, skipped=skipped, notes=notes)
    return out


def to_json(result: Result, inputs: dict, problems: list[str], errors: list[str],
            published: Result | None = None, extra: list[Table] | None = None, inference=None) -> str:
    out = as_dict(result)
    if inference is not None:
        out["inference"] = inference.data
        if out["claims"].get("C4") is not None:
            out["claims"]["C4"] = {**out["claims"]["C4"], "within_dataset": inference.c4_within}
    out["inputs"] = inputs
    out["nondefault_settings"] = defaults.lines(inputs.get("experiments"))  # analysis.study.defaults
    if published is not None:
        out["published"] = as_dict(published)
    for table in extra or []:
        out[table.key] = None if table.skipped else table.rows
        if table.skipped:
            out["skipped"][table.key] = table.skipped
    out["problems"], out["errors"] = problems, errors
    return json.dumps(out, indent=2, allow_nan=False) + "\n"
