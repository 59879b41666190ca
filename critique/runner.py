"""The runner: opens one run directory (everything checked before any call or write),
executes its work, and closes it, and the LLM client with it. The command line, the
ablations, the probes, the study and the learner all run through here."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, replace
from pathlib import Path


def safe(text: str) -> str:
    """A name usable in a folder name."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in str(text))


def run_name(config, suffix: str | None = None) -> str:
    """<dataset>__<model>[__critic-<critic>][__admission-<A>][__train-budget-<N>][__settings-<S>][__<suffix>]: a run
    whose critic is not the gold one (--critic noisy:R|self, --label-budget F), whose memory admits only some
    critiques (--admission), whose methods' offline stages stop at --train-budget, or whose methods have settings
    of their own (--method-settings), never takes the folder of the run without."""
    parts = [safe(Path(config.dataset).name), safe(config.model)]
    if config.critic != "gold":
        budget = "" if config.label_budget is None else f"-budget-{config.label_budget:g}"
        parts.append(safe(f"critic-{config.critic}{budget}"))
    if config.admission != "all":
        parts.append(safe(f"admission-{config.admission}"))
    if getattr(config, "train_budget", None) is not None:
        parts.append(f"train-budget-{config.train_budget}")
    if getattr(config, "method_settings", None):
        parts.append(safe(f"settings-{config.method_settings}"))
    if suffix:
        parts.append(safe(suffix))
    return "__".join(parts)


def default_out(config) -> Path:
    return Path("runs") / run_name(config)


def prepare(config, out: Path, probe=None, ablation=None, progress=True, *, deployments: list[dict] | None = None,
            routing_strategy: str | None = None, limits=None, stop=None, spend=None, learner: bool = False):
    """Validate everything that can be checked before any call or write; return an opened Run.
    ``deployments`` (litellm Router entries), ``routing_strategy``, ``limits`` (provider limits
    shared with other runs, critique.llm.limits), ``stop`` (a function that says the run must
    stop) and ``spend`` (a dollar cap shared with other runs, critique.llm.spend; default: the config's
    max_cost, this run's own) are options of the run's LLM client; ``learner``: the work is critique.Learner's (it
    needs no test split, and a new run directory is marked as a Learner's, not a study run)."""
    from critique.base.errors import RunError, UserError
    from critique.datasets.registry import resolve
    from critique.engine.memory.embed import Encoder
    from critique.engine.method_settings import check as check_settings
    from critique.engine.pipeline import Run
    from critique.base.paths import cache_dir, check_cache_location
    from critique.llm.client import LLM, llm_config
    from critique.llm.model_check import check_model
    from critique.llm.spend import Spend, logged_cost

    check_settings(config)
    whole = resolve(config.dataset, config.data_dir)
    dataset = whole.limited(config.limit)
    warn_narrow_limit(whole, dataset, config.limit)
    if Path(out).resolve().is_relative_to(Path(dataset.path).resolve()):
        raise UserError(f"{out} is inside the dataset folder {dataset.path}: the run would change the data it is "
                        f"checked against (its checksum); use an --out outside it")
    if not learner and not dataset.test:
        raise UserError(f"{dataset.path}: the test split is empty (nothing to answer)")
    options = replace(llm_config(config), deployments=deployments, routing_strategy=routing_strategy)
    own_account = spend is None and config.max_cost is not None
    if own_account:
        spend = Spend(config.max_cost)
    try:
        check_model(options)
        if config.use_cache:
            check_cache_location(cache_dir(config.cache_dir))
        llm = LLM(options, limits=limits, stop=stop, spend=spend)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    encoder = Encoder(config.encoder, cache_dir(config.cache_dir) if config.use_cache else None)
    run = Run(out, config, dataset, llm, encoder,
              probe=probe, ablation=ablation, progress=progress, learner=learner)
    warn_small_pools(run)
    try:
        run.open()
    except RunError as exc:
        raise UserError(str(exc)) from None
    if own_account:  # the cap is the run's: what its logged calls cost counts (a study seeds its own account)
        spend.seed(logged_cost([out]))
    return run


def warn_small_pools(run) -> None:
    """Say so when a train pool holds no more than K items and a strategy retrieves examples:
    every test question of that pool then gets the whole pool (retrieval chooses nothing)."""
    import sys
    from collections import Counter

    from critique.base.vocab import EP_CRIT, EP_LABEL, EP_SEM_CRIT

    pools = Counter(item.user for item in run.dataset.train)
    retrieving = [s for s in run.config.strategies if s in (EP_LABEL, EP_CRIT, EP_SEM_CRIT)]
    if pools and retrieving and min(pools.values()) <= run.config.k:
        small = min(pools.values())
        where = "a user's train pool" if len(pools) > 1 or None not in pools else "the train pool"
        print(f"critique: warning: {where} holds {small} items and k = {run.config.k}: every test question of it "
              f"retrieves the whole pool ({', '.join(retrieving)} choose nothing by similarity); use a larger "
              "--limit or a smaller --k", file=sys.stderr)


def warn_narrow_limit(whole, dataset, limit: int | None) -> None:
    """Say so when --limit kept a test split with far fewer labels than as many random items would hold (the
    dataset is stored in an order that groups its labels: its first items are no sample of it;
    critique.datasets.order.narrowed). Single-pool data only: preference data is limited per user."""
    import sys

    from critique.datasets.order import narrowed

    if dataset.card.kind == "preference":  # a limit per user: each user's few items are not a split's first ones
        return
    found = narrowed(dataset.test, whole.test) if limit else None
    if found:
        have, of = found
        print(f"critique: warning: --limit {limit} keeps the first {len(dataset.test)} test items, which hold {have} "
              f"of the test split's {of} labels (the dataset's rows are grouped by label); import it with "
              "`critique datasets import ... --order interleaved` for first items that cover the labels",
              file=sys.stderr)


@dataclass
class Outcome:
    out: Path
    calls_made: int
    seconds: float
    errors: dict | None = None  # {calls, predictions} that ended in an error not redone since; None: none



async def execute(run) -> None:
    """All of a run: the train stage, then the test stage."""
    await run.execute()


def execute_run(config, out: Path, *, probe=None, ablation=None, reuse: dict | None = None, work=execute,
                setup=None, progress: bool = True, runner=asyncio.run, complete: bool | None = None,
                learner: bool = False, **llm_options) -> tuple[Outcome, dict]:
    """Open (validate), execute and close one run directory; returns the outcome and the
    calls it now holds (for the next run of a sweep to reuse).

    ``setup(run)`` runs once the run is open; ``work(run)`` is the coroutine, run to its end
    by ``runner`` (a study's threads share one event loop); ``complete``: the status the run
    is closed with (None: complete when the work ended without an error). A run that stops or fails raises,
    the exception holding the calls it made as ``calls_made``."""
    started = time.monotonic()
    run = prepare(config, out, probe=probe, ablation=ablation, progress=progress, learner=learner,
                  **llm_options)
    ended = False
    try:
        if reuse:
            run.reuse = reuse
        if setup is not None:
            setup(run)
        runner(work(run))
        ended = True
    except BaseException as exc:  # stopped (a cap, an interrupt) or failed: what it made is still its caller's to say
        exc.calls_made = run.llm.calls_made
        raise
    finally:
        run.close(ended if complete is None else complete)
        run.llm.close()
    errors = run.manifest.get("errors") if run.manifest.get("status") == "errors" else None
    return Outcome(Path(out), run.llm.calls_made, round(time.monotonic() - started, 2), errors), dict(run.logged)
