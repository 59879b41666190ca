"""The study's statistics, from scipy: paired-difference summary and Spearman correlation.

`import scipy.stats` takes about 1.4 s of CPU on a 2-core machine (it loads most of scipy and
numpy), as long as all the rest of `critique tables` on a whole study's logs. So `critique tables` calls `start_helper()` first: a
forked helper process imports scipy.stats while this process reads the logs and builds the
cells, and then computes the statistics this process sends it. Without the helper (tests,
library use, a platform without fork) scipy.stats is imported here; the numbers are the same.
"""

from __future__ import annotations

import atexit
import math

TIE_DECIMALS = 9  # differences equal to this many decimals are ties (float noise of per-user means)


def _number(value) -> float | None:
    value = float(value)
    return None if math.isnan(value) else value


_helper = None  # (process, connection) while a helper serves
_ahead = None  # (function, args) of the work done ahead, where it is done (see start_helper)


def start_helper(ahead: tuple | None = None) -> None:
    """Fork a process that imports scipy.stats now and computes the statistics asked of it later.

    ``ahead`` = (function, args): work the helper does as soon as scipy is loaded, while this
    process goes on (the item-level inference: analysis.items.compute); `call` then runs a
    function on its result. Without a helper that work is done here, when first needed."""
    global _helper, _ahead
    import multiprocessing

    _ahead = (ahead, None) if ahead is not None else None
    if _helper is not None or "fork" not in multiprocessing.get_all_start_methods():
        return
    mine, theirs = multiprocessing.Pipe()
    process = multiprocessing.get_context("fork").Process(target=_serve, args=(theirs, ahead), daemon=True)
    process.start()
    theirs.close()
    _helper = (process, mine)
    atexit.register(stop_helper)


def stop_helper() -> None:
    global _helper
    if _helper is None:
        return
    process, connection = _helper
    _helper = None
    try:
        connection.send(None)
    except OSError:
        pass
    connection.close()
    process.join(timeout=5)


def _serve(connection, ahead: tuple | None = None) -> None:
    from scipy import stats  # noqa: F401 - the import is the work done ahead

    state = _run_ahead(ahead)
    while True:
        try:
            request = connection.recv()
        except EOFError:
            return
        if request is None:
            return
        name, args = request
        try:
            if name == "call":
                function, rest = args
                if isinstance(state, BaseException):
                    raise state
                connection.send((True, function(state, *rest)))
                continue
            connection.send((True, _LOCAL[name](*args)))
        except Exception as exc:  # noqa: BLE001 - the caller computes it again and sees the error itself
            connection.send((False, repr(exc)))


def _ask(name: str, *args):
    """The helper's answer, or this process's own when there is no helper (or it failed)."""
    if _helper is not None:
        try:
            _helper[1].send((name, args))
            ok, value = _helper[1].recv()
            if ok:
                return value
        except (OSError, EOFError):
            stop_helper()
    return _LOCAL[name](*args)


def _run_ahead(ahead: tuple | None):
    """The result of the work `ahead`, or the exception it raised (given to whoever asks for it)."""
    if ahead is None:
        return None
    try:
        function, args = ahead
        return function(*args)
    except Exception as exc:  # noqa: BLE001 - raised again in the caller's process by `call`
        return exc


def call(function, *args):
    """`function(result of the work ahead, *args)`, in the helper when there is one (`function`
    must be importable by name), else here."""
    global _ahead
    if _helper is not None:
        try:
            _helper[1].send(("call", (function, args)))
            ok, value = _helper[1].recv()
        except (OSError, EOFError):
            stop_helper()
        else:
            if ok:
                return value
            raise RuntimeError(f"the analysis helper failed: {value}")
    if _ahead is None:
        raise RuntimeError("no work was started ahead (start_helper(ahead=...))")
    work, state = _ahead
    if state is None:
        state = _run_ahead(work)
        _ahead = (work, state)
    if isinstance(state, BaseException):
        raise state
    return function(state, *args)


def paired_summary(differences, confidence: float = 0.95) -> dict:
    """Mean, SD, t-interval, wins/losses/ties and the exact two-sided sign test of paired differences.

    Ties (zero differences) are left out of the sign test. Values that cannot be computed
    (SD of one point, a sign test without a win or a loss) are None.
    """
    return _ask("paired_summary", [float(d) for d in differences], confidence)


def spearman(x, y) -> dict:
    """Spearman's rho and its two-sided p-value; None for fewer than 3 points or a constant input.

    Values equal to TIE_DECIMALS decimals are ties (a mean over users carries float noise that
    would otherwise break ties at random).
    """
    return _ask("spearman", [float(v) for v in x], [float(v) for v in y])


def _paired_summary(differences, confidence: float = 0.95) -> dict:
    import numpy as np
    from scipy import stats

    d = np.round(np.asarray(differences, dtype=float), TIE_DECIMALS)
    n = int(d.size)
    wins, losses = int((d > 0).sum()), int((d < 0).sum())
    out = {"n": n, "mean": None, "sd": None, "ci_low": None, "ci_high": None,
           "wins": wins, "losses": losses, "ties": n - wins - losses, "p_sign": None}
    if n == 0:
        return out
    out["mean"] = float(d.mean())
    if n >= 2:
        sd = float(d.std(ddof=1))
        out["sd"] = sd
        if sd > 0:
            low, high = stats.t.interval(confidence, n - 1, loc=d.mean(), scale=stats.sem(d))
            out["ci_low"], out["ci_high"] = float(low), float(high)
        else:
            out["ci_low"] = out["ci_high"] = out["mean"]
    if wins + losses:
        out["p_sign"] = float(stats.binomtest(wins, wins + losses, 0.5, alternative="two-sided").pvalue)
    return out


def _spearman(x, y) -> dict:
    import numpy as np
    from scipy import stats

    x = np.round(np.asarray(x, dtype=float), TIE_DECIMALS)
    y = np.round(np.asarray(y, dtype=float), TIE_DECIMALS)
    out = {"n": int(x.size), "rho": None, "p": None}
    if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return out
    result = stats.spearmanr(x, y)
    out["rho"], out["p"] = _number(result.statistic), _number(result.pvalue)
    return out


_LOCAL = {"paired_summary": _paired_summary, "spearman": _spearman}
