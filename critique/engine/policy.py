"""Where the answer to one request may come from: a per-request policy of the run's one step
(``Run.call`` / ``Run.answer``), never a flag on the run or a replaced method.

A request is answered, in this order, by
1. this run's own call log (a resumed run: the reply it already logged for that request hash);
2. a matching run's logged call (``Run.reuse``: a sweep pays its shared stages once), logged as cached;
3. the shared response cache (read, and written with the model's reply);
4. the model itself.
A policy says which of 1-3 may answer it, and the request's own seed and temperature.
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Policy:
    log: bool = True  # this run's own call log answers a request it already logged (and logs its reply for later)
    shared: bool = True  # a matching run's call and the response cache may answer it (and the cache stores its reply)
    seed: int | None = None  # the request's own seed (default: the run's), so that samples are distinct requests
    temperature: float | None = None  # the request's own temperature (default: the run's; a DSPy bootstrap round's)

    def seeded(self, seed: int) -> "Policy":
        return replace(self, seed=seed)


# the study's calls: any earlier answer to the same request is the answer
SHARED = Policy()
# an independent trial: asked of the model, never answered by a matching run or the response cache; a resumed
# run still takes its own logged reply (the parts ablation's test stage, verify's samples)
INDEPENDENT = Policy(shared=False)
# a repetition: always asked of the model, even when this run logged the same request (the consistency probe's
# repeats, credit's null control); its reply never answers another request of that hash
REPEAT = Policy(log=False, shared=False)
