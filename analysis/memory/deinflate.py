"""The de-inflation table (docs/memory.md section 1): does demoting the entries a verifier flagged beat
demoting as many at random?

Reads the arms of `critique deinflate` (manifest probe {name: deinflate, mode, demote, verifier, seed, demoted,
source, ...}) and, per source run x mode x verifier x strategy (EP_CRIT, EP+SEM_CRIT), reports from their test
predictions:

- `accuracy` (%): the verifier's arm (its flagged entries demoted);
- `random_mean`, `random_sd`, `random_seeds`: the control, the arms that demoted as many entries (`demoted`) at
  random in the same mode, over their seeds (SD with n - 1; none with one seed);
- `control`: what the verifier arm is compared with: the random arms, or none possible when the verifier
  flagged every entry of the source's memory (as many chosen at random are the same entries, answered from
  the verifier arm's own log: no control, so random_* and vs_random are left empty);
- `vs_random`: accuracy - random_mean, in points; `source`: the source run's own accuracy (nothing demoted),
  `vs_source` likewise;
- `shown` (%): the verifier arm's prompts that show (doubt) or would have shown (drop: the source's prompt)
  at least one demoted entry.

An error, a timeout, a parse failure or a prompt that did not fit counts wrong, as in every table; `errors`
counts the verifier arm's. Preference data: accuracy per user, then the mean over users. Reads logs only.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from critique.analysis.reading import logs
from critique.analysis.study.cells import mean, over_users, percent_correct
from critique.analysis.memory.echo import critic_of
from critique.analysis.study.tabular import Table
from critique.base import vocab

KEY = "deinflate"
TITLE = "De-inflation: accuracy (%) with the flagged entries demoted, against as many demoted at random"
STRATEGIES = (vocab.EP_CRIT, vocab.EP_SEM_CRIT)
COLUMNS = ["model", "dataset", "critic", "mode", "verifier", "strategy", "demoted", "accuracy", "random_mean",
           "random_sd", "random_seeds", "vs_random", "control", "source", "vs_source", "shown", "n", "errors"]
NOTE = ("accuracy: the verifier's arm (its flagged entries demoted: doubt = shown as doubtful in EP prompts, drop = "
        "removed from memory); random_*: the budget-matched control, as many entries demoted at random, mean and SD "
        "over its seeds; control: the random arms, or why no control is possible (a verifier that flags every "
        "entry leaves no other entries to choose at random); vs_*: points; source: the run de-inflated, nothing "
        "demoted; shown: share of the verifier "
        "arm's prompts with a demoted entry (drop: in the source's prompt); errors, timeouts, parse failures count "
        "wrong")


def _manifest(path: Path) -> dict | None:
    try:
        return logs.manifest(path)
    except (OSError, ValueError):
        return None


def accuracy(predictions: list[dict], strategy: str, preference: bool) -> tuple[float | None, int, int]:
    """(accuracy %, predictions, errors) of one strategy's final test records (per user, then mean, when
    ``preference``)."""
    mine = [p for p in predictions if p.get("strategy") == strategy]
    if not mine:
        return None, 0, 0
    value = over_users(mine, percent_correct, preference)
    return value, len(mine), sum(bool(p.get("error")) for p in mine)


def _test(path: Path, problems: list[str]) -> list[dict]:
    return logs.predictions(path, (vocab.TEST,), problems)


def _demoted_ids(path: Path) -> set[str]:
    try:
        return set(logs.memory_document(path, logs.DEMOTED)["ids"])
    except (OSError, ValueError, KeyError, TypeError):
        return set()


def _shown(path: Path, source_predictions: list[dict], strategy: str, predictions: list[dict],
           mode: str) -> float | None:
    demoted = _demoted_ids(path)
    looked = predictions if mode == "doubt" else source_predictions
    mine = [p for p in looked if p.get("strategy") == strategy]
    if not mine:
        return None
    return 100.0 * mean(int(any(i in demoted for i in p.get("retrieved") or [])) for p in mine)


def control_text(arm: dict, source: Path | None, controls: list[dict], problems: list[str]) -> str | None:
    """None when the random arms are a control; else why none is possible (the verifier flagged every entry of
    the source's memory) or none was run."""
    entries = logs.memory(source, problems) if source is not None and source.is_dir() else None
    flagged = _demoted_ids(arm["path"])
    if entries and {e.get("id") for e in entries} <= flagged:
        return (f"none possible: the verifier flagged all {len(entries)} entries, so as many chosen at random are "
                "the same entries" + (f" (its {len(controls)} random arm{'s' if len(controls) > 1 else ''} "
                                      "repeat the verifier arm)" if controls else ""))
    return None if controls else "none run (critique deinflate --control random:N)"


def arms(paths: list[Path], problems: list[str]) -> list[dict]:
    """Each de-inflation arm read: its probe, path, predictions."""
    found = []
    for path in paths:
        manifest = _manifest(path)
        probe = (manifest or {}).get("probe") or {}
        if probe.get("name") != vocab.DEINFLATE:
            continue
        found.append({"path": Path(path), "probe": probe, "manifest": manifest, "predictions": _test(path, problems)})
    return found


def rows(found: list[dict], problems: list[str]) -> list[dict]:
    out = []
    sources: dict[Path, tuple] = {}

    def source_of(arm: dict) -> Path | None:  # stored beside the arm (an absolute path: old runs)
        source = arm["probe"].get("source")
        return (arm["path"].parent / str(source)).resolve() if source else None

    for arm in [a for a in found if a["probe"].get("demote") == "verifier"]:
        probe, manifest = arm["probe"], arm["manifest"]
        source = source_of(arm)
        if source not in sources:
            source_manifest = _manifest(source) if source else None
            if source_manifest is None:
                problems.append(f"{arm['path']}: its source run {source} cannot be read; no source column")
            sources[source] = (source_manifest, _test(source, problems) if source_manifest else [])
        source_manifest, source_predictions = sources[source]
        preference = (manifest.get("dataset") or {}).get("kind") == "preference"
        controls = [a for a in found if a["probe"].get("demote") == "random" and source_of(a) == source
                    and a["probe"].get("mode") == probe.get("mode")
                    and a["probe"].get("demoted") == probe.get("demoted")]
        config = (source_manifest or manifest).get("config") or {}
        why = control_text(arm, source, controls, problems)
        compared = [] if why else controls
        for strategy in STRATEGIES:
            value, n, errors = accuracy(arm["predictions"], strategy, preference)
            if n == 0:
                continue
            randoms = [v for c in compared for v in [accuracy(c["predictions"], strategy, preference)[0]]
                       if v is not None]
            base = accuracy(source_predictions, strategy, preference)[0] if source_predictions else None
            random_mean = mean(randoms) if randoms else None
            out.append({"model": config.get("model"), "dataset": (manifest.get("dataset") or {}).get("name"),
                        "critic": critic_of(config), "mode": probe.get("mode"), "verifier": probe.get("verifier"),
                        "strategy": strategy, "demoted": probe.get("demoted"), "accuracy": value,
                        "random_mean": random_mean,
                        "random_sd": statistics.stdev(randoms) if len(randoms) > 1 else None,
                        "random_seeds": len(randoms),
                        "vs_random": None if random_mean is None or value is None else value - random_mean,
                        "control": why or f"random, {len(randoms)} seed{'' if len(randoms) == 1 else 's'}",
                        "source": base, "vs_source": None if base is None or value is None else value - base,
                        "shown": _shown(arm["path"], source_predictions, strategy, arm["predictions"],
                                        probe.get("mode")),
                        "n": n, "errors": errors})
    return sorted(out, key=lambda r: (str(r["model"]), str(r["dataset"]), str(r["mode"]), str(r["verifier"]),
                                      STRATEGIES.index(r["strategy"])))


def table(metas: list[dict], problems: list[str]) -> Table:
    """The table of the de-inflation arms among the runs read (`critique tables`)."""
    found = arms([Path(m["path"]) for m in metas if m.get("probe") == vocab.DEINFLATE], problems)
    made = rows(found, problems)
    if not made:
        return Table(KEY, TITLE, skipped="no de-inflation arm of a verifier among the inputs (critique deinflate)")
    return Table(KEY, TITLE, COLUMNS, made, note=NOTE, formats={"random_sd": ".1f", "shown": ".1f"})


def text(paths: list[Path]) -> str:
    """The table of these arms as markdown (what `critique deinflate` prints)."""
    from critique.analysis.study.render import markdown_table

    problems: list[str] = []
    made = rows(arms(paths, problems), problems)
    if not made:
        return "no de-inflation numbers: " + "; ".join(problems or ["no verifier arm"])
    t = Table(KEY, TITLE, COLUMNS, made, note=NOTE, formats={"random_sd": ".1f", "shown": ".1f"})
    return "\n".join([f"\n{TITLE}\n", markdown_table(t), "", f"_{NOTE}._", *problems])
