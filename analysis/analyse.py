"""Every table the inputs allow (`analyse`): run directories and per-cell CSVs read, the study's tables built.
`critique tables`, `critique report` and `--mlflow` (analysis.mlflow_log) show what it builds."""

from __future__ import annotations

from dataclasses import dataclass, field


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
    from critique.analysis.reading.read import model_label, plain

    runs = logs.runs
    points = {(model_label(r), r["dataset"]) for r in runs if plain(r)}
    models, datasets = len({r["model"] for r in runs}), len({r["dataset"] for r in runs})
    return (f"From {len(runs)} run director{'y' if len(runs) == 1 else 'ies'} (listed under Inputs): {models} "
            f"model{'' if models == 1 else 's'}, {datasets} dataset{'' if datasets == 1 else 's'}, {len(points)} "
            f"(model, dataset) point{'' if len(points) == 1 else 's'} with plain runs; "
            f"{logs.records('predictions'):,} predictions, {logs.records('calls'):,} critique and summary calls.")


def _tested(runs: list[dict]) -> bool:
    """Whether a table of these runs may test something: Table 2 and the claims test the gains of plain runs (no
    probe, no ablation), with Student's t from scipy (analysis.stats.core's helper process, started only then); no other
    table of `critique tables` uses scipy."""
    from critique.analysis.reading.read import plain

    return any(map(plain, runs))


def analyse(args) -> Analysis:
    """Read the inputs named by `args` and build every table."""
    csvs = {"results": args.results, "suggestibility": args.suggestibility, "costs": args.costs}
    if not args.runs and not any(csvs.values()):
        raise _user_error("nothing to analyse: give run directories and/or --results/--suggestibility/--costs "
                          "CSV files (see `critique tables -h`)")
    if getattr(args, "inference", False) and not args.runs:
        raise _user_error("--inference needs run directories (item-level data); per-cell CSV numbers have none")
    from critique.analysis.stats import core as stats

    found = ahead = None
    if args.runs:
        from critique.analysis.reading import read

        found = read.found(args.runs, args.allow_mixed)
        if getattr(args, "inference", False):  # the helper works out the item-level tables meanwhile
            from critique.analysis.study import items

            ahead = (items.compute, (found[0],))
    if ahead is not None or any(csvs.values()) or (found is not None and _tested(found[0])):
        stats.start_helper(ahead)  # scipy loads in a helper process while this one reads and counts
    pending = None
    if args.runs:  # start reading the logs first: workers read while scipy loads in the helper
        pending = read.start(args.runs, allow_mixed=args.allow_mixed, workers=args.workers, found_=found)
    from critique.analysis.study import cells as cells_mod, csv_input, tables

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
    from critique.analysis.reading.load import wait

    logs = wait(pending)
    problems.extend(logs.problems)
    errors.extend(logs.errors)
    if not logs.runs:
        raise _user_error("no readable run directory among the inputs: " + "; ".join(errors or logs.problems))
    cells = cells_mod.from_logs(logs)
    result = tables.build(cells)
    from critique.analysis.study import answers

    problems.extend(answers.warnings(answers.rows(cells)))  # a strategy that gave one answer to all
    from critique.analysis.memory import echo

    result.tables.extend(echo.tables(logs.runs, cells, problems))  # per run: its memory and predictions
    from critique.analysis.memory import gate

    result.tables.append(gate.table(logs.runs, problems))  # the retrieval gate's sweep (critique ablate gate)
    from critique.analysis.memory import credit, deinflate, overturn

    result.tables.extend(credit.tables(logs.runs, problems))  # critique credit's runs and their pruning runs
    if any(m.get("probe") == "credit" for m in logs.runs):  # the estimate of credit learned from their logs
        from critique.analysis.memory import credit_model

        result.tables.extend(credit_model.tables(logs.runs, problems))

    if any(m.get("probe") == "deinflate" for m in logs.runs):  # critique deinflate's arms
        result.tables.append(deinflate.table(logs.runs, problems))
    if any(m.get("probe") == "overturn" for m in logs.runs):  # critique probe overturn
        result.tables.append(overturn.table(logs.runs, problems))
    if any(m.get("probe") == "conditioning" for m in logs.runs):  # critique probe conditioning
        from critique.analysis.memory import conditioning

        result.tables.append(conditioning.table(logs.runs, problems))
    from critique.analysis.memory import admission

    if any((m.get("settings") or {}).get("admission", "all") != "all" for m in logs.runs):  # --admission
        result.tables.append(admission.table(logs.runs, problems))
    if any(m.get("probe") == "dose" for m in logs.runs):  # critique probe dose
        from critique.analysis.memory import dose

        result.tables.append(dose.table(logs.runs, problems))
    if any(m.get("probe") == "priors" for m in logs.runs):  # critique probe priors
        from critique.analysis.memory import priors

        result.tables.append(priors.table(logs.runs, problems))
    if any(m.get("probe") == "stream" for m in logs.runs):  # critique stream: the online tables
        from critique.analysis.memory import online

        result.tables.extend(online.tables([m for m in logs.runs if m.get("probe") == "stream"], problems))
    from critique.analysis.field import methods

    result.tables.extend(methods.tables(logs.runs, problems))  # the field's methods beside ours
    from critique.analysis.reading.read import describe

    inputs["experiments"] = describe(logs.runs)
    analysis = Analysis(result, _logs_heading(logs), inputs, problems=problems, errors=errors)
    if getattr(args, "inference", False):
        from critique.analysis.study import items

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
