"""`critique tables` and `critique report`: the study's tables from logs or per-cell CSVs.

Importing this module is cheap (argparse only): `critique` imports it for every command.
The tables need neither pandas nor numpy; scipy is loaded only when a table is asked for, in a
helper process (see analysis.stats), and matplotlib only for the report.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from critique.base.rundir import write_text_atomic

TABLES_HELP = "print every table and headline claim of the study that the given runs allow"
REPORT_HELP = "write the tables and plots into one self-contained HTML file"
EPILOG = """inputs:
  RUN_DIR ...        run directories, or folders with run directories below them; grouped by model and dataset
  --results CSV      model,dataset,strategy,accuracy[,tokens_per_question][,timeout_rate] (percent)
  --suggestibility CSV   model,dataset,acc_truth,acc_lying (percent)
  --costs CSV        model,dataset,init_tokens,critique_tokens,summary_tokens
Given both run directories and --results, the logs' numbers are compared with the CSV's.
Exit status: 0, 1 when some input was left out (see stderr), 2 on a usage error."""


def add_inputs(parser) -> None:
    parser.add_argument("runs", nargs="*", metavar="RUN_DIR",
                        help="run directories, or folders with run directories below them")
    parser.add_argument("--results", metavar="CSV", help="per-cell accuracies (and tokens, timeouts)")
    parser.add_argument("--suggestibility", metavar="CSV", help="per-cell suggestibility probe accuracies")
    parser.add_argument("--costs", metavar="CSV", help="per-cell offline token costs")
    parser.add_argument("--allow-mixed", action="store_true",
                        help="pool runs of one experiment (one model, dataset and settings) even when their prompt "
                             "templates differ; runs that differ in a setting (--prompts, --critic, ...) are other "
                             "experiments, always kept apart and named by what differs")
    parser.add_argument("--inference", action="store_true",
                        help="add the item-level tables: paired McNemar tests and bootstrap intervals per (model, "
                             "dataset), Holm adjustment, a pooled logistic model clustered by item, C4 within "
                             "dataset, run-to-run spread (loads pandas and statsmodels)")
    parser.add_argument("--workers", type=int, default=None, metavar="N",
                        help="processes that read logs (default: one per usable core but one, which loads scipy, "
                             "when the logs are large; else 1: this process)")


def register(sub) -> None:
    import argparse

    formatter = argparse.RawDescriptionHelpFormatter
    tables = sub.add_parser("tables", help=TABLES_HELP, description=TABLES_HELP, epilog=EPILOG,
                            formatter_class=formatter)
    add_inputs(tables)
    tables.add_argument("--format", choices=("markdown", "json"), default="markdown")
    tables.add_argument("-o", "--output", metavar="FILE", help="write here instead of standard output")
    tables.set_defaults(func=run_tables)
    report = sub.add_parser("report", help=REPORT_HELP, description=REPORT_HELP, epilog=EPILOG,
                            formatter_class=formatter)
    add_inputs(report)
    report.add_argument("-o", "--output", metavar="FILE", default="report.html", help="(default: report.html)")
    report.set_defaults(func=run_report)
    from critique.analysis import audit, export

    export.register(sub)
    audit.register(sub)


@dataclass
class Analysis:
    result: object  # tables.Result of the main input
    heading: str
    inputs: dict
    published: object | None = None  # tables.Result of the CSVs when logs are compared with them
    inference: object | None = None  # items.Inference, with --inference
    extra: list = field(default_factory=list)  # comparison tables
    problems: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _user_error(message: str) -> Exception:
    from critique.base.errors import UserError

    return UserError(message)


def _logs_heading(logs) -> str:
    from critique.analysis.read import model_label, plain

    runs = logs.runs
    points = {(model_label(r), r["dataset"]) for r in runs if plain(r)}
    models, datasets = len({r["model"] for r in runs}), len({r["dataset"] for r in runs})
    return (f"From {len(runs)} run director{'y' if len(runs) == 1 else 'ies'} (listed under Inputs): {models} "
            f"model{'' if models == 1 else 's'}, {datasets} dataset{'' if datasets == 1 else 's'}, {len(points)} "
            f"(model, dataset) point{'' if len(points) == 1 else 's'} with plain runs; "
            f"{logs.records('predictions'):,} predictions, {logs.records('calls'):,} critique and summary calls.")


def analyse(args) -> Analysis:
    """Read the inputs named by `args` and build every table."""
    csvs = {"results": args.results, "suggestibility": args.suggestibility, "costs": args.costs}
    if not args.runs and not any(csvs.values()):
        raise _user_error("nothing to analyse: give run directories and/or --results/--suggestibility/--costs "
                          "CSV files (see `critique tables -h`)")
    if getattr(args, "inference", False) and not args.runs:
        raise _user_error("--inference needs run directories (item-level data); per-cell CSV numbers have none")
    from critique.analysis import stats

    found = ahead = None
    if args.runs and getattr(args, "inference", False):  # the helper works out the item-level tables meanwhile
        from critique.analysis import items, read

        found = read.found(args.runs, args.allow_mixed)
        ahead = (items.compute, (found[0],))
    stats.start_helper(ahead)  # scipy.stats loads in a helper process while this one reads and counts
    pending = None
    if args.runs:  # start reading the logs first: workers read while scipy loads in the helper
        from critique.analysis import read

        pending = read.start(args.runs, allow_mixed=args.allow_mixed, workers=args.workers, found_=found)
    from critique.analysis import cells as cells_mod, csv_input, tables

    problems: list[str] = []
    errors: list[str] = []
    inputs = {"runs": list(args.runs), **{k: v for k, v in csvs.items() if v}}
    csv_result = None
    if any(csvs.values()):
        csv_cells = csv_input.read_cells(**csvs, errors=errors, problems=problems)
        csv_result = tables.build(csv_cells)
    if not args.runs:
        if all(t.skipped for t in csv_result.tables):
            raise _user_error("no usable CSV input: " + "; ".join(errors or ["every table is empty"]))
        heading = "From per-cell CSV numbers: " + ", ".join(f"{k} = {v}" for k, v in csvs.items() if v) + "."
        return Analysis(csv_result, heading, inputs, problems=problems, errors=errors)
    from critique.analysis.load import wait

    logs = wait(pending)
    problems.extend(logs.problems)
    errors.extend(logs.errors)
    if not logs.runs:
        raise _user_error("no readable run directory among the inputs: " + "; ".join(errors or logs.problems))
    cells = cells_mod.from_logs(logs)
    result = tables.build(cells)
    from critique.analysis import echo

    result.tables.extend(echo.tables(logs.runs, cells, problems))  # per run: its memory and predictions
    from critique.analysis import gate

    result.tables.append(gate.table(logs.runs, problems))  # the retrieval gate's sweep (critique ablate gate)
    from critique.analysis import credit, deinflate, overturn

    result.tables.extend(credit.tables(logs.runs, problems))  # critique credit's runs and their pruning runs

    if any(m.get("probe") == "deinflate" for m in logs.runs):  # critique deinflate's arms
        result.tables.append(deinflate.table(logs.runs, problems))
    if any(m.get("probe") == "overturn" for m in logs.runs):  # critique probe overturn
        result.tables.append(overturn.table(logs.runs, problems))
    if any(m.get("probe") == "stream" for m in logs.runs):  # critique stream: the online tables
        from critique.analysis import online

        result.tables.extend(online.tables([m for m in logs.runs if m.get("probe") == "stream"], problems))
    from critique.analysis import methods

    result.tables.extend(methods.tables(logs.runs, problems))  # the field's methods beside ours
    from critique.analysis.read import describe

    inputs["experiments"] = describe(logs.runs)
    analysis = Analysis(result, _logs_heading(logs), inputs, problems=problems, errors=errors)
    if getattr(args, "inference", False):
        from critique.analysis import items

        try:
            data = stats.call(items.finish, items.table2_p(result), items.c4_points(cells, result))
        except Exception as exc:  # noqa: BLE001 - the paper's tables stand; the item-level ones are left out
            errors.append(f"the item-level inference failed ({exc}); its tables are left out")
        else:
            errors.extend(e for e in data.get("errors", []) if e not in errors)
            analysis.inference = items.tables(data, result)
    if csv_result is not None:
        analysis.published = csv_result
        analysis.extra = tables.comparison(result, csv_result)
        analysis.heading += (" Compared with per-cell CSV numbers: "
                             + ", ".join(f"{k} = {v}" for k, v in csvs.items() if v) + ".")
    return analysis


def report_problems(analysis: Analysis) -> int:
    for line in analysis.problems:
        print(f"critique: warning: {line}", file=sys.stderr)
    for line in analysis.errors:
        print(f"critique: error: {line}", file=sys.stderr)
    return 1 if analysis.errors else 0


def write(text: str, output: str | None) -> None:
    if output:
        write_text_atomic(Path(output), text)
    else:
        sys.stdout.write(text)


def run_tables(args) -> int:
    from critique.analysis import render, stats

    try:
        analysis = analyse(args)
        if args.format == "json":
            text = render.to_json(analysis.result, analysis.inputs, analysis.problems, analysis.errors,
                                  analysis.published, analysis.extra, analysis.inference)
        else:
            text = render.markdown(analysis.result, analysis.heading, analysis.extra,
                                   analysis.inputs.get("experiments"), analysis.inference, analysis.problems,
                                   analysis.errors)
    finally:
        stats.stop_helper()  # no helper process outlives the command (a library caller's process goes on)
    write(text, args.output)
    return report_problems(analysis)


def run_report(args) -> int:
    from critique.analysis import report, stats

    try:
        analysis = analyse(args)
        page = report.html_report(analysis)
    finally:
        stats.stop_helper()
    write_text_atomic(Path(args.output), page)
    print(f"critique: wrote {args.output}", file=sys.stderr)
    return report_problems(analysis)
