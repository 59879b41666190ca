"""Ablations (docs/method.md section 4): K, train size, critique parts; and the retrieval gate (docs/memory.md
section 4).

Each value of an ablation is an ordinary run directory (same contract as `critique run`)
with the ablated config field set (``k``, ``train_fraction`` or ``parts``) and
``{"name": ..., "value": ...}`` in the manifest's ``ablation`` and in every record:

    <parent>/<dataset>__<model>__k-3/              config.k = 3, strategies [EP_CRIT]
    <parent>/<dataset>__<model>__train_size-0.5/   config.train_fraction = 0.5, [EP_CRIT, EP+SEM_CRIT]
    <parent>/<dataset>__<model>__parts-local/      config.parts = "local", [EP_CRIT]
    <parent>/<dataset>__<model>__gate-0.5/         config.gate = 0.5, [zero_shot, EP_CRIT]

The gate sweep runs zero_shot beside EP_CRIT: the memory-off arm its table (critique.analysis.memory.gate)
compares with, in the same run directory. Its requests are the plain run's zero_shot requests (the
gate does not change them), and an EP_CRIT prompt the gate leaves empty is that very request, so
neither costs a call once any run of the sweep (or the plain run) has made it. EP+SEM_CRIT is not
swept: its gated-empty prompt is SEM_CRIT's (the advice stays), so its memory-off arm would be SEM_CRIT
and two more strategies' test calls per value would be paid (`critique run --gate T --strategies
SEM_CRIT,EP+SEM_CRIT` runs it).

Nothing is paid twice. Every run executes its own train stage, but a request already
answered in a matching run directory (same model and data: the one-run directory
`<dataset>__<model>`, the other values of the sweep, any `--reuse` folder) is not sent
again: it is logged in the new run with ``cached: true`` and the usage of the original
answer (``Run.reuse``; the shared response cache does the same across machines' runs).
A K or parts sweep therefore pays its train stage once, and a train-size sweep pays the
initial predictions and critiques of the largest fraction plus one summary per fraction
(the subsets are nested, so every smaller fraction's items are among the larger ones).

Except the parts ablation's test stage (TEST_POLICY): each of its runs, ``full`` included, is an
independent trial, as the paper's Table 7 is: its test calls are made again, never taken from the
plain run's EP_CRIT calls, from the sweep, or from the response cache (critique.engine.policy.INDEPENDENT; the
run's own log still answers them when it resumes). Its train stage is reused as above.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import replace
from pathlib import Path

from critique.base.vocab import ABLATION_VALUES, CRITIQUE, SUMMARY, TRAIN
from critique.engine import policy
from critique.engine.memory.critic import RECRITIQUE
from critique.engine.scores import strategy_rows
from critique.experiments import reuse
from critique.experiments.probes import stage_timeouts
from critique.experiments.source_run import SourceRun
from critique.runner import Outcome, execute_run, run_name

OFFLINE = (TRAIN, CRITIQUE, RECRITIQUE, SUMMARY)  # the train stage's calls
# an ablation whose test calls each run makes itself (an independent trial; see the module's doc)
TEST_POLICY = {"parts": policy.INDEPENDENT}  # the others: policy.SHARED

NAMES = ("k", "train_size", "parts", "gate")
CLI_NAMES = {"k": "k", "train-size": "train_size", "parts": "parts", "gate": "gate"}
STRATEGIES = {"k": ["EP_CRIT"], "parts": ["EP_CRIT"], "train_size": ["EP_CRIT", "EP+SEM_CRIT"],
              "gate": ["zero_shot", "EP_CRIT"]}
DEFAULT_VALUES = ABLATION_VALUES


# ---- values ------------------------------------------------------------------------------
def parse_values(name: str, text: str | list) -> list:
    """The values of one ablation from '1,3,5' (or a list); ValueError with the reason."""
    from critique.engine.strategies import PARTS

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
        elif name == "gate":
            try:
                f = float(v)
            except (TypeError, ValueError):
                f = math.nan
            if isinstance(v, bool) or not -1 <= f <= 1:
                raise ValueError(f"ablation gate: thresholds must be similarities in [-1, 1], not {v!r}")
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
    if name == "gate":
        return replace(base, strategies=list(STRATEGIES[name]), gate=float(value))
    raise ValueError(f"unknown ablation {name!r}")


async def execute(run) -> None:
    """The train stage (the summary only when a strategy needs it), then the test stage over the memory it made."""
    from critique.engine.strategies import STRATEGIES as ALL

    summary = any(ALL[s].semantic for s in run.config.strategies)
    memory = await run.train_stage((TRAIN, CRITIQUE, SUMMARY) if summary else (TRAIN, CRITIQUE))
    await run.test_stage(memory, TEST_POLICY.get((run.ablation or {}).get("name"), policy.SHARED))


def value_label(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def run_dir(parent: Path, config, name: str, value) -> Path:
    return Path(parent) / run_name(config, f"{name}-{value_label(value)}")


def ablation_of(name: str, value, chosen: dict | None = None) -> dict:
    """The manifest's ``ablation`` of one run of a sweep; ``chosen``: how its value was chosen (a gate threshold
    from the train split: critique.experiments.gate_choice), when it was not given."""
    return {"name": name, "value": value, **({"chosen": chosen} if chosen else {})}


def gate_from_train(base, quantiles: list[float]) -> list[dict]:
    """Gate thresholds for ``base``'s dataset (its train split, as the run limits it): one {value, chosen} per
    quantile (critique.experiments.gate_choice); ValueError when none can be chosen."""
    from critique.base.paths import cache_dir
    from critique.datasets.registry import resolve
    from critique.engine.memory.embed import Encoder
    from critique.experiments import gate_choice

    dataset = resolve(base.dataset, base.data_dir).limited(base.limit)
    encoder = Encoder(base.encoder, cache_dir(base.cache_dir) if base.use_cache else None)
    return gate_choice.choose(dataset.train, encoder, quantiles)


def sweep(base, name: str, values: list, parent: Path, *, reuse_places: list[str] | None = None,
          progress: bool = True, setup=None, pool: dict | None = None, chosen: dict | None = None) -> list[Outcome]:
    """One run directory per value, in order; each reuses the calls of the runs before it. ``chosen``: value ->
    how it was chosen (ablation_of)."""
    from critique.datasets.registry import resolve

    checksum = resolve(base.dataset, base.data_dir).checksum
    if pool is None:
        pool = reuse.matching_calls(reuse.default_places(base, parent, reuse_places), base.model, checksum)
    outcomes = []
    with asyncio.Runner() as runner:  # one event loop for the whole sweep (litellm keeps loop-bound state)
        for value in values:
            config = config_for(base, name, value)
            outcome, logged = execute_run(config, run_dir(parent, config, name, value),
                                          ablation=ablation_of(name, value, (chosen or {}).get(value)),
                                          reuse=pool, work=execute,
                                          setup=setup,
                                          progress=progress, runner=runner.run)
            pool.update({k: v for k, v in logged.items() if k not in pool})
            outcomes.append(outcome)
    return outcomes


# ---- the table printed after a sweep --------------------------------------------------------
def summary_rows(run_dirs: list[Path]) -> list[dict]:
    rows = []
    for path in run_dirs:
        run = SourceRun(path)
        manifest, ablation = run.manifest, run.manifest.get("ablation") or {}
        offline = [c for c in run.calls() if c["stage"] in OFFLINE]
        for row in strategy_rows(run.predictions(latest=True), manifest["config"]["strategies"]):
            rows.append({"ablation": ablation.get("name"), "value": ablation.get("value"), **row,
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
    for path in run_dirs:
        timeouts = stage_timeouts(SourceRun(path).calls())
        if timeouts:
            print(f"{Path(path).name}: timeouts per stage: "
                  + ", ".join(f"{k} {v}" for k, v in sorted(timeouts.items())))
    print()
