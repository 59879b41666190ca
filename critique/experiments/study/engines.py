"""What the cells of a study share on each joblib backend: the provider limits, the dollar cap
(``spend``: critique.llm.spend, with --max-cost), how many cells run at once, and the word to stop.

- threads (the default): everything lives in the study process.
- loky, and ray on this machine: semaphores and an event in a multiprocessing manager that the
  study process owns; a cell's watchdog also stops it when the study process is gone.
- dask: semaphores, an event and a heartbeat on the dask scheduler, so the limit holds over
  every worker of the cluster, on any machine; a cell stops when the study asks it to, or when
  the study's heartbeat has stopped (the study process was killed) or the scheduler is gone.

A stopped cell makes no further call (``critique.base.errors.Stopped``); its run directories
resume with the same command.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import threading
import time
import uuid
from pathlib import Path

from critique.llm.limits import ProviderLimits, SharedLimits
from critique.llm.spend import SharedSpend, Spend

POLL_S = 0.25  # how often a cell's watchdog asks
HEARTBEAT_S = 1.0  # how often the study process says it is alive (dask)
GONE_AFTER_S = 15.0  # a heartbeat this old: the study process is gone


def study_id(out: Path) -> str:
    """The name of a study's shared objects: one per output folder, so a rerun finds them."""
    return hashlib.sha256(str(Path(out).resolve()).encode()).hexdigest()[:16]


class Threads:
    """Cells in threads of the study process (joblib runs ``jobs`` of them at once)."""

    def __init__(self, providers: dict[str, int], jobs: int, max_cost: float | None = None):
        self.limits = ProviderLimits(providers)
        self.spend = Spend(max_cost) if max_cost is not None else None
        self._stop = threading.Event()
        self._running = 0
        self._lock = threading.Condition()

    def stop_requested(self) -> bool:
        return self._stop.is_set()

    def study_gone(self) -> bool:
        return False

    def request_stop(self) -> None:
        self._stop.set()

    def stopped(self, gone: bool) -> None:
        """In the process of a cell that stopped: nothing to do for threads or dask workers."""

    def noticed(self) -> None:
        """A cell's watchdog saw the word to stop (from now on that cell sends no call)."""

    def cell_ended(self) -> None:
        """In the process of a cell that has returned: nothing to do but for dask workers."""

    @contextlib.contextmanager
    def running(self):
        with self._lock:
            self._running += 1
        try:
            yield
        finally:
            with self._lock:
                self._running -= 1
                self._lock.notify_all()

    def running_count(self) -> int:
        return self._running

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no cell runs (the cells report it); False if ``timeout`` passed first."""
        with self._lock:
            return self._lock.wait_for(lambda: self._running == 0, timeout)

    def close(self) -> None:
        pass


class Processes(Threads):
    """Cells in worker processes of this machine (loky, a local ray)."""

    def __init__(self, providers: dict[str, int], jobs: int, max_cost: float | None = None):
        from multiprocessing.managers import SyncManager

        self._manager = SyncManager()
        self._manager.start(_exit_with_parent, (os.getpid(),))  # no orphan if the study is killed
        self.limits = SharedLimits({p: self._manager.BoundedSemaphore(n) for p, n in providers.items()})
        self.spend = None if max_cost is None else \
            SharedSpend(max_cost, self._manager.Lock(), self._manager.dict({"spend": [0.0, 0.0]}))
        self._stop = self._manager.Event()
        self._cells = self._manager.dict()  # cell token -> pid of the process that runs it
        self._pid, self._host = os.getpid(), socket.gethostname()

    def __reduce__(self):
        """To a worker process: the manager's key, then the shared objects. A loky worker is the study's child and
        has that key already; a ray worker is not, and its manager proxies would be refused without it. Pickle
        rebuilds a tuple's items in order, so the key (``_Authkey``) is taken before any proxy is rebuilt."""
        import multiprocessing

        state = {k: v for k, v in self.__dict__.items() if k != "_manager"}
        return _processes_in_worker, (_Authkey(bytes(multiprocessing.current_process().authkey)), state)

    def study_gone(self) -> bool:
        if socket.gethostname() != self._host:
            return False
        try:
            os.kill(self._pid, 0)
        except ProcessLookupError:
            return True
        return False

    @contextlib.contextmanager
    def running(self):
        token = f"{os.getpid()}-{threading.get_ident()}-{time.monotonic_ns()}"
        self._cells[token] = os.getpid()
        try:
            yield
        finally:
            self._cells.pop(token, None)

    def running_count(self) -> int:
        return len(self._cells)

    def stopped(self, gone: bool) -> None:
        """A worker whose study process is gone ends here: it would wait for tasks for good (loky
        keeps its task pipe open itself), an orphan. Asked again here: a cell can fail (its provider slots
        lived in the study's manager) before its watchdog has seen the study go."""
        if gone or self.study_gone():
            os._exit(0)

    def wait_idle(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while self.running_count() and time.monotonic() < deadline:
            time.sleep(POLL_S)
        return self.running_count() == 0

    def close(self) -> None:
        self._manager.shutdown()


class _Authkey:
    """The study manager's key, taken by the process that unpickles it (before what is pickled after it)."""

    def __init__(self, key: bytes):
        self.key = key

    def __reduce__(self):
        return _take_authkey, (self.key,)


def _take_authkey(key: bytes) -> None:
    import multiprocessing

    multiprocessing.current_process().authkey = key


def _processes_in_worker(_key: None, state: dict) -> Processes:
    """The study's Processes in a worker process (Processes.__reduce__): the key is taken by now."""
    shared = Processes.__new__(Processes)
    shared.__dict__.update(state)
    return shared


def _exit_with_parent(parent: int) -> None:
    """In the manager's process: end it when the study process that started it is gone."""
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(POLL_S)
        os._exit(0)

    threading.Thread(target=watch, name="critique-manager-watch", daemon=True).start()


class Dask(Threads):
    """Cells on the workers of a dask cluster; the shared objects live on its scheduler."""

    def __init__(self, providers: dict[str, int], jobs: int, out: Path, max_cost: float | None = None):
        from distributed import Event, Lock, Semaphore, Variable

        name = f"critique-{study_id(out)}"
        # shared by every run of the study (a rerun's cells wait for the lease of an interrupted run's cell)
        self.limits = SharedLimits({p: Semaphore(max_leases=n, name=f"{name}-provider-{p}")
                                    for p, n in providers.items()})
        self._cells = Semaphore(max_leases=jobs, name=f"{name}-cells")
        self._noticed = Event(f"{name}-noticed")  # a cell saw the stop: what a test waits for
        self._noticed.clear()
        # this run's own: a cell of an interrupted run that starts late still sees its run's stop,
        # which a rerun of the study never clears
        this = f"{name}-{uuid.uuid4().hex[:12]}"
        self.spend = None
        if max_cost is not None:  # this run's own account: a rerun's cap counts what the rerun spends
            spent = Variable(f"{this}-spend")
            spent.set([0.0, 0.0])
            self.spend = SharedSpend(max_cost, Lock(f"{this}-spend-lock"), spent)
        self._stop = Event(f"{this}-stop")
        self._alive = Variable(f"{this}-alive")
        self._alive.set(time.time())
        self._beating = threading.Event()
        self._heart = threading.Thread(target=self._beat, name="critique-study-heartbeat", daemon=True)
        self._heart.start()
        self._seen: tuple[object, float] | None = None
        self._here, self._here_lock = 0, threading.Lock()  # cells of this process running with this object

    def __getstate__(self) -> dict:
        return {k: self.__dict__[k] for k in ("limits", "spend", "_cells", "_stop", "_noticed", "_alive")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state, _seen=None, _here=0, _here_lock=threading.Lock())

    def _beat(self) -> None:
        beat = 0
        while not self._beating.wait(HEARTBEAT_S):
            beat += 1
            try:
                self._alive.set(beat)
            except Exception:  # noqa: BLE001 - the scheduler is gone: the cells stop by themselves
                return

    def study_gone(self) -> bool:
        """The heartbeat has not changed for GONE_AFTER_S (as this watcher saw it)."""
        value, now = self._alive.get(timeout=10), time.monotonic()
        if self._seen is None or self._seen[0] != value:
            self._seen = (value, now)
        return now - self._seen[1] > GONE_AFTER_S

    @contextlib.contextmanager
    def running(self):
        self._cells.acquire()
        with self._here_lock:  # a worker may run several cells with this one object: their leases are refreshed
            self._here += 1
            for semaphore in self.limits.semaphores():
                semaphore.refresh_leases = True
        try:
            yield
        finally:
            self._cells.release()

    def running_count(self) -> int:
        return int(self._cells.get_value())

    wait_idle = Processes.wait_idle

    def noticed(self) -> None:
        self._noticed.set()

    def cell_ended(self) -> None:
        """The cell's provider semaphores stop refreshing their leases. A worker outlives its cells and
        refreshes every lease its semaphore objects hold, so a slot that a stopped call never gave back
        would be kept for good and the next run of the study would wait for it; unrefreshed, the
        scheduler takes it back after distributed's ``scheduler.locks.lease-timeout``. Only once no other cell of
        this process runs with these semaphores: its calls' leases would expire mid-call, and the provider's limit
        would be passed."""
        with self._here_lock:
            self._here -= 1
            if self._here > 0:
                return
            for semaphore in self.limits.semaphores():
                semaphore.refresh_leases = False

    def close(self) -> None:
        self._beating.set()


class Watchdog:
    """In the process that runs a cell: asks every POLL_S whether the cell must stop, so that
    the cell's LLM client (``stop=watchdog``) asks a thread-local flag, not the cluster."""

    def __init__(self, coordinator):
        self._coordinator, self._flag, self._done = coordinator, threading.Event(), threading.Event()
        self.gone = False  # the study process is gone (not only told to stop)
        self._thread = threading.Thread(target=self._watch, name="critique-cell-watchdog", daemon=True)
        self._thread.start()

    def __call__(self) -> bool:
        return self._flag.is_set()

    def _watch(self) -> None:
        while not self._done.wait(POLL_S):
            try:
                self.gone = self._coordinator.study_gone()
                stop = self.gone or self._coordinator.stop_requested()
            except Exception:  # noqa: BLE001 - the study's shared objects are unreachable: it is gone
                self.gone = stop = True
            if stop:
                self._flag.set()
                try:
                    self._coordinator.noticed()
                except Exception:  # noqa: BLE001 - only a report
                    pass
                return

    def close(self) -> None:
        self._done.set()


def coordinator(backend: str, providers: dict[str, int], jobs: int, out: Path, max_cost: float | None = None):
    if backend == "threading":
        return Threads(providers, jobs, max_cost)
    if backend == "dask":
        return Dask(providers, jobs, out, max_cost)
    return Processes(providers, jobs, max_cost)
