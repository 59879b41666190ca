"""Running a study: cells in parallel with joblib (threads by default; ``--backend
loky|dask|ray`` for users with several machines, the output folder then shared), each cell
its run directories in order through the runner. A cell whose run directories are all
complete is skipped, and a cell killed at any moment continues where it stopped.

Concurrency: each cell has at most its model's ``concurrency`` calls in flight, all cells of
one provider together at most ``[providers] <name> = N``, and at most ``jobs`` cells run at
once, on every backend: the limits are shared objects that every cell's LLM client takes as
an option (threads: in this process; loky, ray: a multiprocessing manager; dask: the
scheduler; see critique.experiments.study.engines). An interrupted study (Ctrl-C) tells its
cells to stop and waits until they have; a killed one is noticed by its cells, which stop.

Several endpoints serving the same model (several vLLM servers) are declared under
``[[router.model_list]]``; that model's calls then go through one litellm ``Router`` over
those deployments, an option of the LLM client too.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path

from critique.base.config import setting_problem
from critique.base.errors import Stopped
from critique.base.rundir import redact
from critique.experiments import ablations, probes, reuse
from critique.experiments.study import credit_table, engines
from critique.experiments.study.fields import error
from critique.experiments.study.file import Cell, check, load
from critique.experiments.study.plan import blocked, plan, resolved, task_state
from critique.llm.spend import SpendCapReached, logged_cost
from critique.runner import execute, execute_run

STOP_WAIT_S = 120.0  # how long an interrupted study waits for its cells to stop their calls

# ---- running ----------------------------------------------------------------------------------
_PRINT = threading.Lock()


class SharedLoop:
    """One event loop in a thread of its own, for all the cells of this process.

    Cells run in joblib threads, but their coroutines all run on this one loop: litellm
    keeps process-wide async state (its logging worker, client caches) that breaks when
    several event loops run at once in one process.
    """

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="critique-study-loop", daemon=True)
        self._thread.start()

    def run(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    def close(self) -> None:
        """Cancel what is left on the loop (litellm's background tasks), then stop and close it."""

        async def cancel_the_rest() -> None:
            rest = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in rest:
                task.cancel()
            await asyncio.gather(*rest, return_exceptions=True)
            await self.loop.shutdown_asyncgens()

        try:
            asyncio.run_coroutine_threadsafe(cancel_the_rest(), self.loop).result(timeout=10)
        except Exception:  # noqa: BLE001  (best effort: the loop is going away)
            pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self.loop.close()


_PROCESS_LOOP: tuple[int, SharedLoop] | None = None  # (pid, loop): the one loop of a worker process
_PROCESS_LOOP_LOCK = threading.Lock()


def process_loop() -> SharedLoop:
    """The event loop of this worker process (dask, loky, ray), made on its first cell: every cell the
    process runs, at once in several threads (a dask worker) or one after another (loky), runs on it,
    as the threads backend's cells run on the study's SharedLoop. A loop per cell (``asyncio.run``)
    breaks litellm's process-wide async state: its logging worker is bound to the first loop."""
    global _PROCESS_LOOP
    with _PROCESS_LOOP_LOCK:
        if _PROCESS_LOOP is None or _PROCESS_LOOP[0] != os.getpid():  # a forked child makes its own
            _PROCESS_LOOP = (os.getpid(), SharedLoop())
        return _PROCESS_LOOP[1]


def say(text: str) -> None:
    with _PRINT:
        print(text, flush=True)


def run_cell(cell: Cell, total: int, out: str, routing_strategy: str | None, shared_objects,
             loop: SharedLoop | None = None) -> dict:
    """Every run directory of one cell, in order. Never raises: a failure or a stop is reported.
    ``shared_objects``: the study's coordinator (critique.experiments.study.engines); ``loop``: the
    study's event loop (threads backend), else this worker process's (``process_loop``)."""
    started = time.monotonic()
    head = f"[{cell.index}/{total}] {cell.label}"
    calls, done, errors, held = 0, [], {}, {}
    with shared_objects.running():
        if shared_objects.stop_requested():  # the study was stopped before this cell began: touch nothing
            say(f"{head}: not started (the study was stopped); rerun the study to run it")
            return {"cell": cell.index, "label": cell.label, "status": "stopped", "calls": 0, "error": None}
        watchdog = engines.Watchdog(shared_objects)
        try:
            pool = reuse.matching_calls([Path(out)], cell.model.name, cell.checksum)
            for task in cell.tasks:
                task = resolved(task)
                why = blocked(task)
                if why is not None:
                    held[task.label] = why
                    continue
                if task_state(task) == "complete":
                    continue
                options = dict(runner=(loop or process_loop()).run, deployments=cell.model.deployments,
                               routing_strategy=routing_strategy, limits=shared_objects.limits, stop=watchdog,
                               spend=shared_objects.spend)
                if task.credit is not None:  # its own run directory, made as `critique credit` makes it
                    outcome, logged = credit_table.execute(task, say, options), {}
                else:
                    if task.probe is not None:
                        work = probes.work_for(task.probe)
                    elif task.ablation is not None:
                        work = ablations.execute
                    else:
                        work = execute
                    outcome, logged = execute_run(task.config, task.out, probe=task.probe, ablation=task.ablation,
                                                  reuse=pool, work=work, progress=False, **options)
                pool.update({k: v for k, v in logged.items() if k not in pool})
                calls += outcome.calls_made
                done.append(task.label)
                if outcome.errors:
                    errors[task.label] = (f"{outcome.errors['calls']} calls and {outcome.errors['predictions']} "
                                          "predictions ended in an error")
                say(f"{head}: {task.label} done ({outcome.calls_made} calls, {outcome.seconds:.1f}s"
                    + (f"; {errors[task.label]}" if outcome.errors else "") + ")")
        except Stopped as exc:
            calls += getattr(exc, "calls_made", 0)  # the stopped run's calls were made, and paid for, too
            capped = str(exc) if isinstance(exc, SpendCapReached) else None  # said in the study's summary too
            say(f"{head}: stopped after {time.monotonic() - started:.1f}s"
                + (f" ({capped})" if capped else "; rerun the study to resume it"))
            shared_objects.stopped(watchdog.gone)
            return {"cell": cell.index, "label": cell.label, "status": "stopped", "calls": calls, "error": capped}
        except Exception as exc:  # noqa: BLE001  (one failed cell does not stop the others)
            calls += getattr(exc, "calls_made", 0)
            message = redact(f"{type(exc).__name__}: {exc}")
            say(f"{head}: FAILED after {time.monotonic() - started:.1f}s: {message}")
            shared_objects.stopped(watchdog.gone)
            return {"cell": cell.index, "label": cell.label, "status": "failed", "calls": calls, "error": message}
        finally:
            watchdog.close()
            shared_objects.cell_ended()
    if errors or held:
        message = cell_errors(held, errors)
        say(f"{head}: finished with errors ({message})")
        return {"cell": cell.index, "label": cell.label, "status": "errors", "calls": calls, "error": message}
    say(f"{head}: complete ({len(done)} run directories written, {calls} calls, "
        f"{time.monotonic() - started:.1f}s)")
    return {"cell": cell.index, "label": cell.label, "status": "done", "calls": calls, "error": None}


def cell_errors(held: dict[str, str], errors: dict[str, str]) -> str:
    """A cell's errors as its line says them: the tasks not run, each with its own reason, then those whose calls
    or predictions ended in an error, pointed to their logs."""
    said = [f"{label}: {why}" for label, why in held.items()]
    if errors:
        said.append("; ".join(f"{label}: {what}" for label, what in errors.items()) + " (see the error field of "
                    "their calls.jsonl and predictions.jsonl); rerun the study to retry them")
    return "; ".join(said)


LOOPBACK = "127.0.0.1"


class _RayCluster:
    """The study's connection to ray (a cluster of this machine ends with it)."""

    def close(self) -> None:
        import ray

        ray.shutdown()


def _backend(backend: str, scheduler: str | None, jobs: int):
    """Prepare a cluster backend for ``jobs`` cells at once; returns what to close at the end (a dask client, ray)."""
    if backend == "ray":
        try:
            import ray
            from ray.util.joblib import register_ray
        except ImportError:
            from critique.base.distribution import install

            raise error(f"--backend ray needs the package ray: {install('ray')}") from None
        register_ray()
        if scheduler:
            ray.init(address=scheduler)
        else:  # a cluster of this machine with a slot for each cell at once, and no dashboard; ray's own servers
            # take its token authentication (on by default) and bind every interface, which ray does not let us narrow
            ray.init(include_dashboard=False, num_cpus=max(jobs, os.cpu_count() or 1))
        return _RayCluster()
    if backend == "dask":
        try:
            from distributed import Client
        except ImportError:
            raise error("--backend dask needs the packages dask and distributed") from None
        if scheduler:
            return Client(scheduler)
        # a cluster of this machine listens on loopback only: its scheduler and its dashboard
        return Client(host=LOOPBACK, dashboard_address=f"{LOOPBACK}:0")
    return None


def main(args) -> int:
    import joblib

    study = load(args.file)
    if args.out:
        study.out = Path(args.out)
    jobs = args.jobs or study.jobs
    backend = args.backend or study.backend
    if jobs < 1:
        raise error(f"--jobs must be at least 1, not {jobs}")
    checksums = check(study)
    cells = plan(study, checksums)
    states = {c.index: [task_state(resolved(t)) for t in c.tasks] for c in cells}
    todo = [c for c in cells if any(s != "complete" for s in states[c.index])]
    say(f"study {study.path}: {len(cells)} cells ({len(study.models)} models x {len(study.datasets)} datasets), "
        f"{sum(len(c.tasks) for c in cells)} run directories under {study.out}; "
        f"{len(cells) - len(todo)} complete, {len(todo)} to run; backend {backend}, {jobs} at once")
    if args.dry_run:
        for cell in cells:
            say(f"[{cell.index}/{len(cells)}] {cell.label}: "
                + ", ".join(f"{t.label} ({s})" for t, s in zip(cell.tasks, states[cell.index])))
        return 0
    for cell in cells:
        if cell not in todo:
            say(f"[{cell.index}/{len(cells)}] {cell.label}: complete, skipped")
    study.out.mkdir(parents=True, exist_ok=True)
    keep = _backend(backend, args.scheduler, jobs)
    max_cost = args.max_cost if getattr(args, "max_cost", None) is not None else study.settings.get("max_cost")
    problem = setting_problem("max_cost", max_cost)
    if problem:
        raise error(f"--max-cost {problem}")
    shared_objects = engines.coordinator(backend, study.providers, jobs, study.out, max_cost)
    if shared_objects.spend is not None:  # the cap is the study's: what its run directories' calls cost counts
        shared_objects.spend.seed(logged_cost(resolved(t).out for c in cells for t in c.tasks))
    loop = SharedLoop() if backend == "threading" else None
    results, pending = [], None
    try:
        with joblib.parallel_config(backend=backend, n_jobs=min(jobs, max(1, len(todo)))):
            # held in a name: on Ctrl-C the cells are told to stop, and have stopped, before joblib's
            # clean-up of the generator cancels their tasks (ray gives results as a list only)
            pending = joblib.Parallel(return_as="list" if backend == "ray" else "generator_unordered")(
                joblib.delayed(run_cell)(cell, len(cells), str(study.out), study.routing_strategy, shared_objects,
                                         loop)
                for cell in todo)
            for result in pending:
                results.append(result)
    except BaseException:  # Ctrl-C, or a backend that failed: the cells stop their calls, then we go
        shared_objects.request_stop()
        idle = shared_objects.wait_idle(STOP_WAIT_S)
        say("study: interrupted; " + ("every cell stopped its calls" if idle else
                                      f"cells still running after {STOP_WAIT_S:.0f}s")
            + "; rerun the same command to resume")
        raise
    finally:
        pending = None
        if loop is not None:
            loop.close()
        spent = shared_objects.spend.spent() if shared_objects.spend is not None else None
        shared_objects.close()
        if keep is not None:
            keep.close()
    failed = [r for r in results if r["status"] != "done"]
    stopped = sum(r["status"] == "stopped" for r in results)  # a stopped cell is no failure: say which
    with_errors = sum(r["status"] == "errors" for r in results)
    say(f"study: {len(results) - len(failed)} cells done, {len(cells) - len(todo)} skipped, "
        f"{len(failed) - stopped - with_errors} failed, {with_errors} with errors, {stopped} stopped; "
        f"{sum(r['calls'] for r in results)} LLM calls made. Tables: critique tables {study.out}")
    for r in failed:
        say(f"  {r['status']}: {r['label']}" + (f": {r['error']}" if r["error"] else ""))
    if spent is not None:
        say(f"study: ${spent:.4f} spent of --max-cost ${max_cost:g} (calls answered by a cache cost nothing)")
    if getattr(args, "mlflow", None) is not None:
        from critique.analysis import mlflow_log

        mlflow_log.log_and_say([study.out], args.mlflow)
    return 1 if failed else 0
