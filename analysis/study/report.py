"""`critique report`: every table, the headline claims and four plots in one HTML file.

The plots are PNGs embedded as base64, the style is inline: the file opens offline.
Plots are drawn from the tables' rows (nothing is recomputed here); a plot the inputs
cannot fill is replaced by one line saying why. matplotlib is imported only here.
"""

from __future__ import annotations

import base64
import html
import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from critique.analysis.study import defaults, render  # noqa: E402
from critique.base import vocab
from critique.analysis.study.cells import mean, name_key  # noqa: E402
from critique.analysis.study.points import gains, points  # noqa: E402
from critique.analysis.study.tables import Result, Table, strategy_order  # noqa: E402

STYLE = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:.85em}
th,td{border:1px solid #ccc;padding:.2em .5em;text-align:right}th{background:#f3f3f3}
td:first-child,th:first-child{text-align:left}.skip{color:#888;font-style:italic}
img{max-width:100%;border:1px solid #eee}"""


def data_uri(figure) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    plt.close(figure)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def rows(result: Result, key: str) -> list[dict]:
    table = result.table(key)
    return [] if table.skipped else table.rows


def grouped(rows_: list[dict], keys: tuple[str, ...], value: str) -> dict[tuple, list]:
    """key -> the values of `value` in the rows with that key (None left out)."""
    out: dict[tuple, list] = {}
    for row in rows_:
        if row[value] is not None:
            out.setdefault(tuple(row[k] for k in keys), []).append(row[value])
    return out


def _errored_points(table1_rows: list[dict]) -> tuple[list[dict], list[str]]:
    """Table 1's cells without an error, and what was left out: each (model, dataset) whose every prediction
    ended in an error (no answer of the model), else each cell with errors."""
    by_point: dict[tuple, list[dict]] = {}
    for row in table1_rows:
        by_point.setdefault((row["model"], row["dataset"]), []).append(row)
    left = []
    for (model, dataset), cells in by_point.items():
        if all(c.get("errors") and c["errors"] == c.get("n") for c in cells):
            left.append(f"{model} / {dataset} (every prediction ended in an error)")
        else:
            left += [f"{model} / {dataset} / {c['strategy']} ({c['errors']} errors)" for c in cells if c.get("errors")]
    return [r for r in table1_rows if not r.get("errors")], left


def plot_accuracy(result: Result):
    """Accuracy per strategy, one group of bars per experiment's (model, dataset) point as Table 1 shows it:
    critic conditions, prompt sets or limits are never averaged; a cell or point with errors is left out,
    and a line under the plot says which."""
    kept, left = _errored_points(rows(result, "table1"))
    cells = {(r["model"], r["dataset"], r["strategy"]): r["accuracy"] for r in kept if r["accuracy"] is not None}
    if not cells:
        return None, "no accuracy table" + (f" without errors (left out: {'; '.join(left)})" if left else "")
    groups = sorted({(m, d) for m, d, _ in cells}, key=lambda g: (name_key(g[1]), name_key(g[0])))
    strategies = strategy_order(s for _, _, s in cells)
    figure, axis = plt.subplots(figsize=(max(6.0, 1.3 * len(groups)), 4.4))
    width = 0.8 / len(strategies)
    for i, strategy in enumerate(strategies):
        axis.bar(np.arange(len(groups)) + i * width, [cells.get((m, d, strategy), np.nan) for m, d in groups],
                 width, label=strategy)
    axis.set_xticks(np.arange(len(groups)) + 0.4 - width / 2, [f"{m}\n{d}" for m, d in groups], rotation=20,
                    fontsize=7, ha="right")
    axis.set_ylabel("accuracy (%)")
    axis.legend(fontsize=8, ncol=len(strategies), loc="lower left", bbox_to_anchor=(0.0, 1.02), borderaxespad=0)
    if left:
        figure.text(0.01, -0.02, "left out: " + "; ".join(left), fontsize=7, va="top", wrap=True)
    return figure, None


def plot_suggestibility(result: Result):
    """Suggestibility versus the EP+SEM_CRIT gain, one point per (model, dataset)."""
    sugg, acc = rows(result, "table4"), rows(result, "table1")
    if not sugg or not acc:
        return None, "needs Table 1 and Table 4"
    claim = result.claims.get("C4") or {}
    if claim:
        sugg = [r for r in sugg if (r["attribution"] or "") == (claim.get("attribution") or "")]
    suggestible = {(r["model"], r["dataset"]): r["suggestibility"] for r in sugg if r["suggestibility"] is not None}
    accuracy = points(acc)
    gained = {baseline: gains(accuracy, vocab.BEST, baseline) for baseline in vocab.BASELINES}
    pairs = {baseline: [(p, s, gain[p]) for p, s in suggestible.items() if p in gain]
             for baseline, gain in gained.items()}
    points_ = {p for both in pairs.values() for p, _, _ in both}
    if not points_:
        return None, f"no (model, dataset) point has both suggestibility and the {vocab.BEST} gain"
    if len(points_) < 2:  # one point is a sentence, not a plot
        return None, "one (model, dataset) point, " + "; ".join(
            f"{m} / {d}: S = {s:.2f}, {vocab.BEST} gain over {baseline} {g:+.2f} points"
            for baseline, both in pairs.items() for (m, d), s, g in both) + " (a plot needs two points)"
    figure, axis = plt.subplots(figsize=(6, 4))
    for baseline, both in pairs.items():
        if both:
            axis.scatter([s for _, s, _ in both], [g for _, _, g in both], label=f"gain over {baseline}", alpha=0.8)
    axis.axhline(0, color="#999", lw=0.8)
    axis.set_xlabel("suggestibility S = Acc(truth) - Acc(lying), points")
    axis.set_ylabel(f"{vocab.BEST} gain, points")
    axis.legend(fontsize=8)
    return figure, None


def plot_tokens(result: Result):
    """Output tokens per question by strategy, over reasoning model x dataset cells."""
    tokens = grouped(rows(result, "table3"), ("strategy",), "tokens_per_question")
    if not tokens:
        return None, result.table("table3").skipped or "no token table"
    strategies = strategy_order(s for s, in tokens)
    figure, axis = plt.subplots(figsize=(6, 4))
    axis.boxplot([tokens[(s,)] for s in strategies])
    axis.set_xticks(range(1, len(strategies) + 1), strategies, rotation=15)
    axis.set_ylabel("output tokens per question (reasoning included)")
    return figure, None


def plot_per_user(result: Result):
    """Per-user accuracy for preference datasets: one panel per dataset and model as Table 10 shows it (critic
    conditions and other settings apart, never averaged), one dot per user, per strategy."""
    users = grouped(rows(result, "table10"), ("dataset", "model", "strategy", "user"), "accuracy")
    if not users:
        return None, result.table("table10").skipped or "no per-user table"
    panels = sorted({(d, m) for d, m, _, _ in users}, key=lambda p: tuple(map(name_key, p)))
    figure, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels), 3.6), sharey=True, squeeze=False)
    ordered = sorted(users.items(), key=lambda item: name_key(item[0][3]))
    for axis, (dataset, model) in zip(axes[0], panels):
        strategies = strategy_order(s for d, m, s, _ in users if (d, m) == (dataset, model))
        for i, strategy in enumerate(strategies):
            values = [v[0] for (d, m, s, _), v in ordered if (d, m, s) == (dataset, model, strategy)]
            axis.scatter(np.full(len(values), i) + np.linspace(-0.15, 0.15, len(values)), values, s=12, alpha=0.7)
            axis.plot([i - 0.25, i + 0.25], [mean(values)] * 2, color="black")
        axis.set_xticks(range(len(strategies)), strategies, rotation=45, fontsize=7)
        axis.set_title(f"{dataset}\n{model}", fontsize=8)
    axes[0][0].set_ylabel("accuracy (%) per user")
    return figure, None


def plot_forest(inference):
    """The paired differences of Table P per cell, with their bootstrap intervals: one panel per
    baseline, one row per (model, dataset, strategy)."""
    rows = [r for r in (inference.data["paired"] if inference is not None else []) if r["diff"] is not None]
    if not rows:
        return None, "no item-level paired differences (run with --inference, on runs with a critique strategy and a " \
                     "baseline)"
    baselines = [b for b in vocab.BASELINES if any(r["baseline"] == b for r in rows)]
    per = {b: [r for r in rows if r["baseline"] == b] for b in baselines}
    height = max(2.5, 0.22 * max(len(v) for v in per.values()) + 1.2)
    figure, axes = plt.subplots(1, len(baselines), figsize=(5.5 * len(baselines), height), sharey=True, squeeze=False)
    labels = list(dict.fromkeys(f"{r['model']} / {r['dataset']} / {r['strategy']}" for r in rows))
    for axis, baseline in zip(axes[0], baselines):
        mine = {f"{r['model']} / {r['dataset']} / {r['strategy']}": r for r in per[baseline]}
        for y, label in enumerate(labels):
            r = mine.get(label)
            if r is None:
                continue
            low = r["diff"] - (r["ci_low"] if r["ci_low"] is not None else r["diff"])
            high = (r["ci_high"] if r["ci_high"] is not None else r["diff"]) - r["diff"]
            colour = "#d62728" if r.get("flagged") else "#1f77b4"  # red: some predictions ended in errors
            axis.errorbar(r["diff"], y, xerr=[[low], [high]], fmt="o", color=colour, ms=4, capsize=2)
        axis.axvline(0, color="#999", lw=0.8)
        axis.set_title(f"over {baseline}", fontsize=9)
        axis.set_xlabel("paired difference (points), 95% bootstrap interval; red: with errors")
    axes[0][0].set_yticks(range(len(labels)), labels, fontsize=7)
    axes[0][0].invert_yaxis()
    return figure, None


def plot_online(windows: Table):
    """Each stream over its windows of steps (the stream_windows table): one column of panels per (model, dataset,
    order), accuracy above with its 95% Wilson interval shaded (a window holds few steps) and the share of shown
    notes that were trusted but wrong below, one line per arm."""
    lines: dict[tuple, dict[str, list]] = {}
    for row in windows.rows:
        arm = f"{row['feedback']}/{row['start']}" + (f"+{row['demote']}" if row.get("demote") else "") \
            + ("" if row["conflicts"] == "append" else f" {row['conflicts']}") \
            + ("" if row["rank"] == "similarity" else f" rank {row['rank']}")
        lines.setdefault((row["model"], row["dataset"], row["order"]), {}).setdefault(arm, []).append(row)
    panels = sorted(lines, key=lambda p: tuple(map(name_key, map(str, p))))
    figure, axes = plt.subplots(2, len(panels), figsize=(4.5 * len(panels), 6), sharex="col", squeeze=False)
    for column, panel in enumerate(panels):
        for arm, rows_ in sorted(lines[panel].items()):
            x = [r["window"] for r in rows_]
            drawn = axes[0][column].plot(x, [r["accuracy"] for r in rows_], marker="o", label=arm)
            axes[0][column].fill_between(x, [r["ci_low"] for r in rows_], [r["ci_high"] for r in rows_],
                                         color=drawn[0].get_color(), alpha=0.15, linewidth=0)
            axes[1][column].plot(x, [r["trusted_wrong"] for r in rows_], marker="o", label=arm)
        axes[0][column].set_title(f"{panel[1]} / {panel[0]} (order {panel[2]})", fontsize=8)
        axes[1][column].set_xlabel("window of steps")
    axes[0][0].set_ylabel("accuracy (%, 95% interval)")
    axes[1][0].set_ylabel("shown notes trusted but wrong")
    axes[0][-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    return figure, None


PLOTS = (("Accuracy per strategy per dataset", plot_accuracy),
         ("Suggestibility versus gain", plot_suggestibility),
         ("Output tokens per question by strategy", plot_tokens),
         ("Per-user accuracy", plot_per_user))


def table_html(table: Table) -> str:
    if table.skipped:  # one line
        return f'<p class="skip">Skipped: <b>{html.escape(table.title)}</b>: {html.escape(table.skipped)}.</p>'
    parts = [f"<h2>{html.escape(table.title)}</h2>"]
    columns, body, default = render.table_view(table)
    parts.append("<table><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in columns) + "</tr>")
    for row in body:
        cells = (render.cell(c, row.get(c), default, table.formats).replace(chr(92) + "|", "|") for c in columns)
        parts.append("<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in cells) + "</tr>")
    parts.append("</table>")
    if table.note:
        parts.append(f"<p><small>{html.escape(table.note)}.</small></p>")
    return "".join(parts)


def html_page(result: Result, heading: str, extra: list[Table], problems: list[str], errors: list[str],
              experiments: list[dict] | None = None, inference=None) -> str:
    inputs = [render.inputs_table(experiments)] if experiments else []
    items = inference.tables if inference is not None else []
    body = [f"<h1>Study report</h1><p>{html.escape(heading)}</p>", "<h2>Headline claims</h2><ul>"]
    body += [f"<li><b>{name}</b> {html.escape(text)}</li>" for name, text in render.claim_texts(result)
             if name not in result.claim_skips]
    body += [f'<li class="skip"><b>{name}</b> {html.escape(text)}</li>' for name, text in render.skipped_claims(result)]
    body.append("</ul>")
    settings = defaults.lines(experiments)
    if settings:
        body.append(f"<h2>{html.escape(defaults.TITLE)}</h2><ul>"
                    + "".join(f"<li>{html.escape(line)}</li>" for line in settings) + "</ul>")
    plots = [(title, lambda draw=draw: draw(result)) for title, draw in PLOTS]
    if inference is not None:
        plots.append(("Item-level paired differences per cell (forest plot)", lambda: plot_forest(inference)))
    windows = next((t for t in result.tables if t.key == "stream_windows" and not t.skipped), None)
    if windows is not None:  # critique stream's runs among the inputs
        plots.append(("Online memory over each stream", lambda: plot_online(windows)))
    not_drawn = []
    for title, draw in plots:  # the plots drawn, then one line for each that could not be
        figure, why = draw()
        if figure is None:
            not_drawn.append(f'<p class="skip">Plot skipped: <b>{html.escape(title)}</b>: {html.escape(why)}.</p>')
        else:
            body += [f"<h2>{html.escape(title)}</h2>", f'<img alt="{html.escape(title)}" src="{data_uri(figure)}">']
    body += not_drawn
    tables = [*result.tables, *extra]  # the tables filled, then one line for each that could not be
    body += [table_html(t) for t in tables if not t.skipped]
    if items:
        body.append(f"<h1>Item-level inference</h1><p>{html.escape(inference.data['when'])}</p>")
    body += [table_html(t) for t in [*items, *inputs] if not t.skipped]
    body += [table_html(t) for t in [*tables, *items, *inputs] if t.skipped]
    if problems or errors:
        body.append("<h2>Input problems</h2><ul>" + "".join(
            f"<li>{html.escape(line)}</li>" for line in [*errors, *problems]) + "</ul>")
    return ("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>Study report</title>"
            f"<style>{STYLE}</style></head><body>{''.join(body)}</body></html>\n")


def html_report(analysis) -> str:
    """The report of an `analysis.analyse.Analysis`."""
    return html_page(analysis.result, analysis.heading, analysis.extra, analysis.problems, analysis.errors,
                     analysis.inputs.get("experiments"), analysis.inference)
