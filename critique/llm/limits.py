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
    Picklable as long as its semaphores are: it travels to the worker that runs a cell."""

    def __init__(self, semaphores: dict):
        self._semaphores = dict(semaphores)

    @contextlib.asynccontextmanager
    async def slot(self, provider: str):
        semaphore = self._semaphores.get(provider)
        if semaphore is None:
            yield
            return
        acquiring = asyncio.ensure_future(asyncio.to_thread(semaphore.acquire))
        try:
            await asyncio.shield(acquiring)
        except asyncio.CancelledError:  # the slot still comes: give it back once it has
            acquiring.add_done_callback(lambda done: _release_later(semaphore, done))
            raise
        try:
            yield
        finally:
            await asyncio.to_thread(semaphore.release)


def _release_later(semaphore, acquired: asyncio.Future) -> None:
    if not acquired.cancelled() and acquired.exception() is None:
        threading.Thread(target=semaphore.release, daemon=True).start()
