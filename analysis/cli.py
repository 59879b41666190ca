"""`critique tables` and `critique report`: the study's tables from logs or per-cell CSVs.

Importing this module is cheap (argparse only): `critique` imports it for every command.
The tables need neither pandas nor numpy; scipy is loaded only when a table is asked for, in a
helper process (see analysis.stats.core), and matplotlib only for the report.
"""

from __future__ import annotations

import sys
from pathlib import Path

from critique.analysis.analyse import Analysis, analyse  # noqa: F401 - Analysis: what run_tables/run_report read
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
                        help="processes that read logs (default: one per usable core when the logs to read are "
                             "large; else 1: this process)")


def register(sub) -> None:
    import argparse

    formatter = argparse.RawDescriptionHelpFormatter
    tables = sub.add_parser("tables", help=TABLES_HELP, description=TABLES_HELP, epilog=EPILOG,
                            formatter_class=formatter)
    add_inputs(tables)
    tables.add_argument("--format", choices=("markdown", "json"), default="markdown")
    tables.add_argument("-o", "--output", metavar="FILE", help="write here instead of standard output")
    from critique.analysis import mlflow_log

    mlflow_log.add_option(tables)
    tables.set_defaults(func=run_tables)
    report = sub.add_parser("report", help=REPORT_HELP, description=REPORT_HELP, epilog=EPILOG,
                            formatter_class=formatter)
    add_inputs(report)
    report.add_argument("-o", "--output", metavar="FILE", default="report.html", help="(default: report.html)")
    report.set_defaults(func=run_report)
    from critique.analysis import export, plan
    from critique.analysis.memory import audit

    export.register(sub)
    audit.register(sub)
    plan.register(sub)


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
    from critique.analysis.stats import core as stats
    from critique.analysis.study import render

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
    if args.mlflow is not None and args.runs:
        from critique.analysis import mlflow_log

        mlflow_log.log_and_say(args.runs, args.mlflow)
    return report_problems(analysis)


def run_report(args) -> int:
    from critique.analysis.stats import core as stats
    from critique.analysis.study import report

    try:
        analysis = analyse(args)
        page = report.html_report(analysis)
    finally:
        stats.stop_helper()
    write_text_atomic(Path(args.output), page)
    print(f"critique: wrote {args.output}", file=sys.stderr)
    return report_problems(analysis)
