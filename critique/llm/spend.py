"""A cap in dollars over every LLM client that shares it (``--max-cost``): before each call the client reserves
what the call could cost at most (its prompt's tokens and the token limit, at the model's price), and a call
whose reservation would take the spend past the cap is not made: the client raises ``SpendCapReached`` and the
run stops cleanly (what is logged stays valid; the same command with a higher cap resumes). A call reserves only
once it has its turn (a concurrency slot), so calls queued behind others hold nothing. Once answered, the
reservation is replaced by what the call cost, as the provider reported its usage; once the spend has passed the
cap, no call that is still waiting, and no retry, is made. The cap is the run's, not the command's: the account
starts from what the run's logged calls cost (``logged_cost``; a study's, from all its run directories).

The account lives where the clients can reach it: a lock and a number in this process (``Spend``), or in a
multiprocessing manager or on a dask scheduler for a study's workers (``SharedSpend``, given the lock and the
value's store)."""

from __future__ import annotations

import threading

from critique.base.errors import Stopped


class SpendCapReached(Stopped):
    """The next call could take the spend past --max-cost: no further call is made."""


class Spend:
    """The account of one process: spent and reserved dollars under a lock."""

    def __init__(self, cap: float):
        self.cap = float(cap)
        self._lock = threading.Lock()
        self._spent = 0.0
        self._reserved = 0.0

    def _read(self) -> tuple[float, float]:
        return self._spent, self._reserved

    def _write(self, spent: float, reserved: float) -> None:
        self._spent, self._reserved = spent, reserved

    def reserve(self, bound: float) -> bool:
        """Reserve ``bound`` dollars for a call; False (nothing reserved) when that could pass the cap."""
        with self._lock:
            spent, reserved = self._read()
            if spent + reserved + bound > self.cap:
                return False
            self._write(spent, reserved + bound)
            return True

    def take(self, price, prompt_tokens: int, max_tokens: int) -> float:
        """Reserve what a call could cost at most (its prompt and a reply of ``max_tokens`` at ``price``,
        critique.llm.price.Price) and return it; SpendCapReached when that could pass the cap."""
        bound = price.cost(prompt_tokens, max_tokens)
        if not self.reserve(bound):
            raise SpendCapReached(
                f"--max-cost ${self.cap:g} reached: ${self.spent():.4f} spent, and the next call could cost up to "
                f"${bound:.4f} (its prompt and --max-tokens at {price.shown()}); no further call is made. What is "
                "logged stays; the same command with a higher --max-cost resumes")
        return bound

    def seed(self, dollars: float) -> None:
        """Count ``dollars`` already spent (a run's logged calls, made by an earlier command) against the cap."""
        with self._lock:
            spent, reserved = self._read()
            self._write(spent + float(dollars), reserved)

    def check(self) -> None:
        """SpendCapReached when the spend has already passed the cap (a provider reported more than was
        reserved): a call that waited for its turn, or a retry, is not made then."""
        spent = self.spent()
        if spent > self.cap:
            raise SpendCapReached(f"--max-cost ${self.cap:g} passed: ${spent:.4f} spent (a provider reported more "
                                  "usage than its calls' bounds); no further call is made. What is logged stays; the "
                                  "same command with a higher --max-cost resumes")

    def settle(self, bound: float, cost: float) -> None:
        """A reserved call has ended: its reservation becomes what it cost."""
        with self._lock:
            spent, reserved = self._read()
            self._write(spent + cost, max(0.0, reserved - bound))

    def spent(self) -> float:
        with self._lock:
            return self._read()[0]

    def __getstate__(self):
        raise TypeError("a process's Spend does not travel to another process; use SharedSpend")


class SharedSpend(Spend):
    """The account of a study's workers: ``lock`` (a manager's Lock, a distributed.Lock) guards ``store``, which
    holds [spent, reserved] under the key "spend" (a manager's dict) or as its value (a distributed.Variable)."""

    def __init__(self, cap: float, lock, store):
        self.cap = float(cap)
        self._lock = lock
        self._store = store

    def _read(self) -> tuple[float, float]:
        value = self._store["spend"] if hasattr(self._store, "__getitem__") else self._store.get()
        return tuple(value) if value is not None else (0.0, 0.0)

    def _write(self, spent: float, reserved: float) -> None:
        if hasattr(self._store, "__setitem__"):
            self._store["spend"] = [spent, reserved]
        else:
            self._store.set([spent, reserved])

    def __getstate__(self) -> dict:
        return dict(self.__dict__)

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)


def logged_cost(folders) -> float:
    """Dollars the calls logged in these run directories cost when they were made (``cost_usd`` of every call
    that the model answered; a call answered by a cache or a matching run cost nothing again)."""
    from pathlib import Path

    from critique.base import rundir

    total = 0.0
    for folder in folders:
        for call in rundir.read_jsonl(Path(folder) / rundir.CALLS):
            if not call.get("cached") and isinstance(call.get("cost_usd"), (int, float)):
                total += float(call["cost_usd"])
    return total
