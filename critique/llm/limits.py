"""Provider limits: at most N calls in flight per provider, over every LLM client that shares
the limits object (the cells of a study). An LLM client takes one as an option and holds a
slot of its provider for each call it sends.

``ProviderLimits`` serves the clients of one process (threads); ``SharedLimits`` serves
clients in several processes or machines, over semaphores that live outside them (a
multiprocessing manager, or the dask scheduler): each acquire and release is a blocking
call, made in a thread so that the event loop of the cell goes on.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading


class ProviderLimits:
    """One ``threading.BoundedSemaphore`` per provider, taken without blocking the event loop."""

    def __init__(self, limits: dict[str, int]):
        self._slots = {p: threading.BoundedSemaphore(n) for p, n in limits.items()}

    @contextlib.asynccontextmanager
    async def slot(self, provider: str):
        slots = self._slots.get(provider)
        if slots is None:
            yield
            return
        delay = 0.002
        while not slots.acquire(blocking=False):
            await asyncio.sleep(delay)
            delay = min(0.05, delay * 2)
        try:
            yield
        finally:
            slots.release()


class SharedLimits:
    """Provider -> a semaphore shared by processes (its ``acquire()`` blocks, ``release()`` frees),
    such as a ``multiprocessing.Manager().BoundedSemaphore`` or a ``distributed.Semaphore``.
    Picklable as long as its semaphores are: it travels to the worker that runs a cell.

    A slot is acquired in a thread of its own, not in the event loop's executor: a call that is
    stopped while it waits (its cell was told to stop, the event loop ends) does not hold the
    loop's shutdown, and the slot, once it comes, is given back from that thread. A slot lost
    there would be kept by the worker for good (a dask worker refreshes its leases), and the
    next run of the study would wait for it forever."""

    def __init__(self, semaphores: dict):
        self._semaphores = dict(semaphores)

    def semaphores(self) -> list:
        return list(self._semaphores.values())

    @contextlib.asynccontextmanager
    async def slot(self, provider: str):
        semaphore = self._semaphores.get(provider)
        if semaphore is None:
            yield
            return
        acquired = _acquire_in_thread(semaphore)
        try:
            await asyncio.shield(asyncio.wrap_future(acquired))
        except BaseException:  # stopped while waiting: the slot still comes; its thread gives it back
            acquired.add_done_callback(lambda done: _give_back(semaphore, done))
            raise
        try:
            yield
        finally:
            await asyncio.to_thread(semaphore.release)


def _acquire_in_thread(semaphore) -> concurrent.futures.Future:
    acquired: concurrent.futures.Future = concurrent.futures.Future()
    acquired.set_running_or_notify_cancel()  # running: nothing can cancel it any more, it ends acquired or failed

    def acquire() -> None:
        try:
            semaphore.acquire()
        except BaseException as exc:  # noqa: BLE001 - the waiting call sees it
            acquired.set_exception(exc)
        else:
            acquired.set_result(True)

    threading.Thread(target=acquire, name="critique-provider-slot", daemon=True).start()
    return acquired


def _give_back(semaphore, acquired: concurrent.futures.Future) -> None:
    """In the thread that acquired the slot (or the caller's, if it already had): release it."""
    if acquired.exception() is None:
        threading.Thread(target=semaphore.release, name="critique-provider-slot-back", daemon=True).start()
