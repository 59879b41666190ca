"""Ablations (SPEC section 4): K, train size, critique parts.

Each value of an ablation is an ordinary run directory (same contract as `critique run`)
with the ablated config field set (``k``, ``train_fraction`` or ``parts``) and
``{"name": ..., "value": ...}`` in the manifest's ``ablation`` and in every record:

    <parent>/<dataset>__<model>__k-3/              config.k = 3, strategies [EP_CRIT]
    <parent>/<dataset>__<model>__train_size-0.5/   config.train_fraction = 0.5, [EP_CRIT, EP+SEM_CRIT]
    <parent>/<dataset>__<model>__parts-local/      config.parts = "local", [EP_CRIT]

Nothing is paid twice. Every run executes its own train stage, but a request already
answered in a matching run directory (same model and data: the one-run directory
`<dataset>__<model>`, the other values of the sweep, any `--reuse` folder) is not sent
again: it is logged in the new run with ``cached: true`` and the usage of the original
answer (``Run.reuse``; the shared response cache does the same across machines' runs).
A K or parts sweep therefore pays its train stage once, and a train-size sweep pays the
initial predictions and critiques of the largest fraction plus one summary per fraction
(the subsets are nested, so every smaller fraction's items are among the larger ones).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from dataclasses import dataclass, replace
from pathlib import Path

from critique import logs

NAMES = ("k", "train_size", "parts")
CLI_NAMES = {"k": "k", "train-size": "train_size", "parts": "parts"}
STRATEGIES = {"k": ["EP_CRIT"], "parts": ["EP_CRIT"], "train_size": ["EP_CRIT", "EP+SEM_CRIT"]}
DEFAULT_VALUES = {"k": [1, 3, 5, 10], "train_size": [0.25, 0.5, 0.75, 1.0], "parts": ["local", "global", "full"]}


# ---- train-size subsets -----------------------------------------------------------------
def _rank(seed: int, user: str | None, item_id: str) -> str:
    return hashlib.sha256(f"{seed}\0{user or ''}\0{item_id}".encode()).hexdigest()


def subset_size(fraction: float, n: int) -> int:
    """round(fraction * n), at least one item of a non-empty pool; grows with the fraction."""
    return 0 if n == 0 else min(n, max(1, int(fraction * n + 0.5)))


def train_subset(items: list, fraction: float, seed: int) -> list:
    """The first ``fraction`` of each user's pool in a seeded order, in the original item order.

    The order depends only on (seed, user, item id), so the subset of a smaller fraction is
    always inside the subset of a larger one (nested), and fraction 1.0 is the whole list
    in its own order (its memory and summary are those of the plain run).
    """
    if not 0 < fraction <= 1:
        raise ValueError(f"a train fraction must be in (0, 1], not {fraction}")
    pools: dict[str | None, list] = {}
    for item in items:
        pools.setdefault(item.user, []).append(item)
    keep = set()
    for user, pool in pools.items():
        ordered = sorted(pool, key=lambda i: _rank(seed, user, i.id))
        keep.update((user, i.id) for i in ordered[:subset_size(fraction, len(pool))])
    return [i for i in items if (i.user, i.id) in keep]


# ---- values ------------------------------------------------------------------------------
def parse_values(name: str, text: str | list) -> list:
    """The values of one ablation from '1,3,5' (or a list); ValueError with the reason."""
    from critique.strategies import PARTS

    raw = [v.strip() for v in text.split(",") if v.strip()] if isinstance(text, str) else list(text)
    if not raw:
        raise ValueError(f"ablation {name}: no values given")
    values = []
    for v in raw:
        if name == "k":
            if isinstance(v, bool) or not str(v).strip().isdigit() or int(v) < 1:
                raise ValueError(f"ablation k: values must be whole numbers >= 1, not {v!r}")
            values.append(int(v))
        elif name == "train_size":
            try:
                f = float(v)
            except (TypeError, ValueError):
                f = -1.0
            if isinstance(v, bool) or not 0 < f <= 1:
                raise ValueError(f"ablation train_size: fractions must be in (0, 1], not {v!r}")
            values.append(f)
        elif name == "parts":
            if v not in PARTS:
                raise ValueError(f"ablation parts: values must be among {', '.join(PARTS)}, not {v!r}")
            values.append(v)
        else:
            raise ValueError(f"unknown ablation {name!r}; choose from {', '.join(NAMES)}")
    return list(dict.fromkeys(values))


def config_for(base, name: str, value):
    """The run config of one ablation value (``base`` gives model, data, decoding...)."""
    if name == "k":
        return replace(base, strategies=list(STRATEGIES[name]), k=int(value))
    if name == "parts":
        return replace(base, strategies=list(STRATEGIES[name]), parts=str(value))
    if name == "train_size":
        return replace(base, strategies=list(STRATEGIES[name]), train_fraction=float(value))
    raise ValueError(f"unknown ablation {name!r}")


def safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in str(text))


def run_name(config, suffix: str | None = None) -> str:
    base = f"{safe(Path(config.dataset).name)}__{safe(config.model)}"
    return f"{base}__{safe(suffix)}" if suffix else base


def value_label(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def run_dir(parent: Path, config, name: str, value) -> Path:
    return Path(parent) / run_name(config, f"{name}-{value_label(value)}")


# ---- reuse of matching runs ------------------------------------------------------------
def candidate_dirs(places: list[Path]) -> list[Path]:
    """Run directories among ``places`` (a folder of run directories counts as its runs)."""
    found: list[Path] = []
    for place in places:
        place = Path(place)
        if logs.is_run_dir(place):
            found.append(place)
        elif place.is_dir():
            found.extend(sorted(c for c in place.iterdir() if logs.is_run_dir(c)))
    unique: dict[Path, Path] = {}
    for path in found:
        unique.setdefault(path.resolve(), path)
    return list(unique.values())


def matching_calls(places: list[Path], model: str, checksum: str, exclude: Path | None = None) -> dict[str, dict]:
    """request hash -> call record, from run directories of the same model and data.

    A request hash covers everything that determines a response (model, messages,
    decoding, schema), so a hash found here is the very request a new run would send.
    """
    pool: dict[str, dict] = {}
    for path in candidate_dirs(places):
        if exclude is not None and path.resolve() == Path(exclude).resolve():
            continue
        try:
            manifest = json.loads((path / logs.MANIFEST).read_text(encoding="utf-8"))
            if manifest["config"]["model"] != model or manifest["dataset"]["checksum"] != checksum:
                continue
        except (OSError, ValueError, KeyError, TypeError):
            continue
        for record in logs.read_jsonl(path / logs.CALLS):
            if not record.get("error") and record.get("request_hash") and isinstance(record.get("response"), str):
                pool.setdefault(record["request_hash"], record)
    return pool


def default_places(config, parent: Path | None, extra: list[str] | None) -> list[Path]:
    """Where matching runs are looked for: --reuse folders, the output parent, runs/."""
    from critique.run_cli import default_out

    places = [Path(p) for p in (extra or [])]
    if parent is not None:
        places.append(Path(parent))
    places.append(default_out(config))
    return places


# ---- running one value ------------------------------------------------------------------
@dataclass
class Outcome:
    out: Path
    calls_made: int
    seconds: float


async def execute(run) -> None:
    """The train stage (the summary only when a strategy needs it), then the test stage."""
    from critique.strategies import STRATEGIES as ALL

    await run.initial_predictions()
    await run.critiques()
    if any(ALL[s].semantic for s in run.config.strategies):
        await run.summaries()
    await run.test_stage()


def execute_run(config, out: Path, *, probe=None, ablation=None, reuse: dict | None = None, work=execute,
                setup=None, progress: bool = True, runner=asyncio.run) -> tuple[Outcome, dict]:
    """Open (validate), execute and close one run directory; returns the outcome and the
    calls it now holds (for the next run of a sweep to reuse). ``runner`` runs the
    coroutine to its end (a study's threads share one event loop)."""
    from critique.run_cli import prepare

    started = time.monotonic()
    run = prepare(config, out, probe=probe, ablation=ablation, progress=progress)
    complete = False
    try:
        if reuse:
            run.reuse = reuse
        if setup is not None:
            setup(run)
        runner(work(run))
        complete = True
    finally:
        run.close(complete)
        run.llm.close()
    return Outcome(Path(out), run.llm.calls_made, round(time.monotonic() - started, 2)), dict(run.logged)


def sweep(base, name: str, values: list, parent: Path, *, reuse_places: list[str] | None = None,
          progress: bool = True, setup=None, pool: dict | None = None) -> list[Outcome]:
    """One run directory per value, in order; each reuses the calls of the runs before it."""
    from critique.datasets.registry import resolve

    checksum = resolve(base.dataset, base.data_dir).checksum
    if pool is None:
        pool = matching_calls(default_places(base, parent, reuse_places), base.model, checksum)
    outcomes = []
    with asyncio.Runner() as runner:  # one event loop for the whole sweep (litellm keeps loop-bound state)
        for value in values:
            config = config_for(base, name, value)
            outcome, logged = execute_run(config, run_dir(parent, config, name, value),
                                          ablation={"name": name, "value": value}, reuse=pool, setup=setup,
                                          progress=progress, runner=runner.run)
            pool.update({k: v for k, v in logged.items() if k not in pool})
            outcomes.append(outcome)
    return outcomes


# ---- the table printed after a sweep --------------------------------------------------------
def summary_rows(run_dirs: list[Path]) -> list[dict]:
    from critique.report import latest

    rows = []
    for path in run_dirs:
        data = logs.read_run(path)
        manifest, ablation = data["manifest"], data["manifest"].get("ablation") or {}
        predictions = latest(data["predictions"])
        offline = [c for c in data["calls"] if c["stage"] in ("train_predict", "critique", "summary")]
        for strategy in manifest["config"]["strategies"]:
            mine = [p for p in predictions if p["stage"] == "test" and p["strategy"] == strategy]
            if not mine:
                continue
            rows.append({"ablation": ablation.get("name"), "value": ablation.get("value"), "strategy": strategy,
                         "n": len(mine), "accuracy": 100.0 * sum(bool(p["correct"]) for p in mine) / len(mine),
                         "timeouts": sum(bool(p["timeout"]) for p in mine),
                         "offline_calls_paid": sum(not c["cached"] for c in offline),
                         "offline_tokens": sum(c["completion_tokens"] for c in offline), "run": str(path)})
    return rows


def print_summary(run_dirs: list[Path]) -> None:
    rows = summary_rows(run_dirs)
    if not rows:
        return
    print(f"\nablation {rows[0]['ablation']}\n")
    print("| value | strategy | n | accuracy % | timeouts | offline calls paid | offline tokens |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {value_label(r['value'])} | {r['strategy']} | {r['n']} | {r['accuracy']:.1f} | {r['timeouts']} "
              f"| {r['offline_calls_paid']} | {r['offline_tokens']} |")
    from critique.probes import stage_timeouts

    for path in run_dirs:
        timeouts = stage_timeouts(logs.read_jsonl(Path(path) / logs.CALLS))
        if timeouts:
            print(f"{Path(path).name}: timeouts per stage: "
                  + ", ".join(f"{k} {v}" for k, v in sorted(timeouts.items())))
    print()
