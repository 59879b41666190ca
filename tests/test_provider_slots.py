"""Provider slots shared between processes (critique.llm.limits.SharedLimits): a call stopped
while it waits for a slot never keeps the slot. A kept slot is kept for good on a dask worker
(it refreshes its leases), and the next run of the study waits for it forever."""

from __future__ import annotations

import asyncio
import threading

import pytest

from critique.llm.limits import SharedLimits


class Semaphore:
    """A blocking semaphore that reports when a waiter starts waiting and when a slot comes back."""

    def __init__(self, slots: int):
        self.free, self._lock = slots, threading.Condition()
        self.waiting = threading.Event()

    def acquire(self) -> bool:
        with self._lock:
            self.waiting.set()
            self._lock.wait_for(lambda: self.free > 0)
            self.free -= 1
        return True

    def release(self) -> None:
        with self._lock:
            self.free += 1
            self._lock.notify_all()

    def wait_free(self, slots: int) -> None:
        with self._lock:
            self._lock.wait_for(lambda: self.free == slots)


def test_a_call_stopped_while_waiting_for_a_slot_gives_it_back_once_it_comes():
    semaphore = Semaphore(1)
    semaphore.acquire()  # another cell holds the only slot
    semaphore.waiting.clear()
    limits = SharedLimits({"openai": semaphore})

    async def call() -> None:
        async with limits.slot("openai"):
            raise AssertionError("a stopped call never sends")

    async def cell() -> None:  # the cell is stopped while its call waits, and its event loop ends
        task = asyncio.create_task(call())
        await asyncio.to_thread(semaphore.waiting.wait)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(cell())  # returns at once: the loop's shutdown does not wait for the slot
    semaphore.release()  # the other cell ends: the slot goes to the stopped call's thread, which gives it back
    semaphore.wait_free(1)


def test_a_call_holds_its_slot_while_it_runs_and_frees_it_after():
    semaphore = Semaphore(2)
    limits = SharedLimits({"openai": semaphore})
    seen = []

    async def call() -> None:
        async with limits.slot("openai"):
            seen.append(semaphore.free)
        seen.append(semaphore.free)

    asyncio.run(call())
    assert seen == [1, 2]


def test_a_dask_cell_that_has_ended_keeps_no_provider_slot(tmp_path):
    """Whatever a cell's calls left behind, its worker stops refreshing the cell's leases once the cell
    has returned: the scheduler takes them back and the next run gets its slots."""
    import pickle

    dask = pytest.importorskip("dask")
    distributed = pytest.importorskip("distributed")
    from critique.experiments.study.engines import Dask

    quick = {"distributed.scheduler.locks.lease-timeout": "1s",
             "distributed.scheduler.locks.lease-validation-interval": "100ms"}
    with dask.config.set(quick), distributed.LocalCluster(n_workers=1, processes=False, dashboard_address=None) \
            as cluster, distributed.Client(cluster):
        study = Dask({"openai": 1}, 1, tmp_path)
        try:
            cell = pickle.loads(pickle.dumps(study))  # as a worker gets it
            (slot,) = cell.limits.semaphores()
            assert slot.acquire()  # taken by a call that never gave it back
            cell.cell_ended()
            rerun = pickle.loads(pickle.dumps(Dask({"openai": 1}, 1, tmp_path)))
            (again,) = rerun.limits.semaphores()
            assert again.acquire()  # waits until the scheduler has taken the lost slot back
            again.release()
        finally:
            study.close()


def test_a_study_cluster_of_this_machine_listens_on_loopback_only():
    """--backend dask without --scheduler starts a cluster here: its scheduler and its dashboard are reached from
    this machine only, never on every interface."""
    pytest.importorskip("distributed")
    from urllib.parse import urlsplit

    from critique.experiments.study.execute import _backend

    client = _backend("dask", None, 2)
    try:
        scheduler = urlsplit(client.scheduler.address).hostname
        bound = {sock.getsockname()[0] for sock in client.cluster.scheduler.http_server._sockets.values()}
        assert scheduler == "127.0.0.1" and bound == {"127.0.0.1"}  # the dashboard's sockets, as bound
    finally:
        client.close()
        client.cluster.close()
