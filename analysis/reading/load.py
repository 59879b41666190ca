"""Run directories -> experiments, each with its records counted per (stage, strategy, user).

An experiment is what a run did: model, dataset, probe, attribution, ablation and its value.
Runs are numbered in start order; when several runs did one experiment, the later run's
record of an item replaces the earlier run's. Inputs that cannot be read are in
`Logs.errors` (left out); warnings (a cut last line, an unfinished run, repeated records)
are in `Logs.problems`. Calls are read for plain runs only, and only those without a
prediction (critiques, summaries): a prediction carries its call's tokens, and no table uses
the calls of a probe or an ablation.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from critique.analysis.reading import read, tally

CALL_KEY = 3  # a call row starts with stage, user, item_id (see analysis.reading.read.CALL_FIELDS)


@dataclass
class Experiment:
    meta: dict  # the identity of its runs (see analysis.reading.read.run_meta), from the latest of them
    predictions: dict  # (stage, strategy, user) -> tally (see analysis.reading.tally)
    calls: dict  # stage -> tally: the answered critique and summary calls of a plain run
    memory: tuple = (0, 0)  # a plain run's episodic entries, and those whose critique contradicts the gold

    @property
    def plain(self) -> bool:
        return read.plain(self.meta)


@dataclass
class Logs:
    runs: list[dict]  # every run directory read (see analysis.reading.read.run_meta), in start order
    experiments: list[Experiment]
    problems: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def records(self, what: str) -> int:
        """How many prediction ("predictions") or call ("calls") records the tables count."""
        return sum(t[tally.RECORDS] for e in self.experiments for t in getattr(e, what).values())


def _latest_calls(group: list[list]) -> tuple[list, int]:
    """The call rows of several runs (oldest first): per (stage, user, item) those of the latest
    run that has one; and how many older ones that left out."""
    chosen: dict[tuple, list] = {}
    for rows in group:
        mine: dict[tuple, list] = {}
        for row in rows:
            mine.setdefault(tuple(map(tally.label, row[:CALL_KEY])), []).append(row)
        chosen.update(mine)
    kept = [row for rows in chosen.values() for row in rows]
    return kept, sum(map(len, group)) - len(kept)


def _latest_predictions(group: list[dict]) -> tuple[dict, int]:
    """The predictions of several runs (oldest first, as tally.latest_per_item keeps them): per item
    the latest run's; and how many older ones that left out."""
    chosen: dict[tuple, tuple] = {}
    for items in group:
        chosen.update(items)
    return chosen, sum(map(len, group)) - len(chosen)


def merge(metas: list[dict], reads: list[tuple]) -> tuple[Experiment, int, int]:
    """One experiment from the record rows of its runs (oldest first), and how many prediction
    and call records a later run replaced."""
    meta = metas[-1]
    predictions, old_predictions = _latest_predictions([r[0] for r in reads])
    calls, old_calls = _latest_calls([r[1] for r in reads])
    counted = tally.predictions(predictions, read.plain(meta))
    return Experiment(meta, counted, tally.calls(calls)), old_predictions, old_calls


def experiments(metas: list[dict], reads: list[tuple], problems: list[str]) -> list[Experiment]:
    """The experiments of the runs read (`reads[i]` is `metas[i]`'s, see analysis.reading.read.read_records)."""
    shared = read.shared(metas)  # those runs were read as records, the others as counts
    groups: dict[tuple, list[int]] = {}
    for i, meta in enumerate(metas):
        if not reads[i][3]:  # a run whose logs could not be read is left out
            groups.setdefault(read.experiment(meta), []).append(i)
    out, old = [], [0, 0]
    for members in groups.values():
        meta = metas[members[-1]]
        if not shared[members[0]]:
            out.append(Experiment(meta, reads[members[0]][0], reads[members[0]][1]))
            continue
        experiment, old_predictions, old_calls = merge([metas[i] for i in members], [reads[i] for i in members])
        out.append(experiment)
        old[0] += old_predictions
        old[1] += old_calls
    for count, what in zip(old, ("prediction", "call")):
        if count:
            problems.append(f"{count} {what} records repeat an item that a later run of the same experiment "
                            "also has; the later run's records are used")
    return out


def wait(pending: read.Pending) -> Logs:
    """Wait for the records of `pending` and count them per experiment."""
    reads = pending.records()
    problems, errors = list(pending.problems), list(pending.errors)
    for _, _, run_problems, run_errors in reads:
        problems.extend(run_problems)
        errors.extend(run_errors)
    found = experiments(pending.metas, reads, problems)
    for experiment in found:
        if experiment.plain:
            experiment.memory = read.memory_counts(experiment.meta["path"], problems)
    return Logs(list(pending.metas), found, problems, errors)


def load(paths: list[str], allow_mixed: bool = False, workers: int | None = None) -> Logs:
    """Read every run directory among `paths` (folders of runs count as their runs)."""
    return wait(read.start(paths, allow_mixed, workers))
