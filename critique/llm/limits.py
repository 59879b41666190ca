"""Provider limits: at most N calls in flight per provider, over all the LLM clients (the
cells of a study) of this process. An LLM client takes one as an option."""

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
