"""The study's statistics: paired-difference summary (t-interval, exact sign test) and Spearman correlation.

Student's t comes from scipy.special (`stdtrit`, `stdtr`: the functions scipy.stats.t itself calls), so the
numbers are scipy.stats's (tests/test_analysis_stats.py holds them equal) without `import scipy.stats`, which
takes about 1.4 s of CPU on a 2-core machine (it loads most of scipy), as long as all the rest of `critique
tables` on a whole study's logs; numpy and scipy.special take about 0.3 s. `critique tables` calls
`start_helper()` first when a table may test something (plain runs: Table 2 and the claims; analysis.analyse):
a forked helper process imports them while this process reads the logs and builds the cells, and then computes
the statistics this process sends it. Without the helper (tests, library use, a platform without fork, a table
that tests nothing after all) they are imported here when first asked for; the numbers are the same.
"""

from __future__ import annotations

import atexit
import math
import os

TIE_DECIMALS = 9  # differences equal to this many decimals are ties (float noise of per-user means)


def _number(value) -> float | None:
    value = float(value)
    return None if math.isnan(value) else value


_helper = None  # (process, connection) while a helper serves
_ahead = None  # (function, args) of the work done ahead, where it is done (see start_helper)


def start_helper(ahead: tuple | None = None) -> None:
    """Fork a process that imports scipy.stats now and computes the statistics asked of it later.

    ``ahead`` = (function, args): work the helper does as soon as scipy is loaded, while this
    process goes on (the item-level inference: analysis.study.items.compute); `call` then runs a
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
    if ahead is None:  # a few small statistics: numpy loads faster with one BLAS thread than with one per core
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from scipy import special  # noqa: F401 - the import is the work done ahead

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


def sign_test(wins: int, losses: int) -> float | None:
    """The exact two-sided sign test's p-value of ``wins`` against ``losses`` (ties left out): twice the smaller
    tail of Bin(wins + losses, 1/2), at most 1, from the binomial coefficients as whole numbers (one rounding);
    None without a win or a loss."""
    n = wins + losses
    if n == 0:
        return None
    if 2 * wins == n:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(wins, losses) + 1))
    return min(1.0, 2 * tail / 2 ** n)


POWER, ALPHA = 0.80, 0.05  # what a paired test's detectable effect and a plan's items are computed at
MDE_NOTE = ("mde: the minimum detectable effect, the difference in points (either way) the McNemar test finds with "
            f"{POWER:.0%} power at alpha {ALPHA:g} given n and the share of discordant items (Connor's normal "
            "approximation; the exact test's power there is a little lower): a p above "
            f"{ALPHA:g} on a row is no evidence against a difference smaller than its mde; - where no item is "
            "discordant, or too few for any difference to be found that often")  # the tables' note on their column mde


def _quantiles(power: float, alpha: float) -> tuple[float, float]:
    """z of the two-sided test's critical value and z of the power (standard normal quantiles)."""
    from statistics import NormalDist

    return NormalDist().inv_cdf(1 - alpha / 2), NormalDist().inv_cdf(power)


def items_needed(diff: float, discordance: float, power: float = POWER, alpha: float = ALPHA) -> int | None:
    """Paired items a two-sided McNemar test needs to find a difference of ``diff`` accuracy points at ``power``,
    when a share ``discordance`` of the items is answered right by one arm only: Connor's (1987) normal
    approximation, n = (z_a * sqrt(psi) + z_b * sqrt(psi - d^2))^2 / d^2 with psi the discordance, d = diff / 100,
    z_a the normal quantile at 1 - alpha/2 and z_b at ``power`` (R. J. Connor, "Sample size for testing
    differences in proportions for the paired-sample design", Biometrics 43:207-211; statsmodels'
    normal_sample_size_one_tail with std_null sqrt(psi) and std_alternative sqrt(psi - d^2) gives the same number,
    tests/test_detectable_effect.py holds them equal; the normal quantiles come from the standard library, so the
    default tables import nothing heavy for it). The exact McNemar test the tables print is a little more
    conservative: its power there is about 0.75-0.80 in that test's simulations. None when no such difference can occur
    (``diff`` above the discordance: the arms differ on fewer items than that)."""
    d = diff / 100
    if not 0 < discordance <= 1 or d <= 0:
        raise ValueError(f"needs a difference above 0 points and a discordance in (0, 1], not {diff}, {discordance}")
    if d > discordance:
        return None
    z_alpha, z_power = _quantiles(power, alpha)
    n = (z_alpha * math.sqrt(discordance) + z_power * math.sqrt(discordance - d * d)) ** 2 / (d * d)
    return math.ceil(round(n, 9))


def detectable_effect(n: int, discordant: int, power: float = POWER, alpha: float = ALPHA) -> float | None:
    """The minimum detectable effect (accuracy points, either direction) of a two-sided McNemar test on ``n`` paired
    items of which ``discordant`` were answered right by one arm only: the difference it finds with probability
    ``power`` at level ``alpha``, given that discordance. Connor's relation of `items_needed` solved for the
    difference: d = sqrt(psi) * (z_a * sqrt(n) + z_b * sqrt(n - z_a^2 + z_b^2)) / (n + z_b^2). None without a
    discordant item (nothing to test: no difference can be stated), or when even a difference as large as the
    discordance (every discordant item one way) would be found less often than ``power``."""
    if n <= 0 or discordant <= 0:
        return None
    z_alpha, z_power = _quantiles(power, alpha)
    spare = n - z_alpha ** 2 + z_power ** 2
    if spare <= 0:
        return None
    psi = discordant / n
    d = math.sqrt(psi) * (z_alpha * math.sqrt(n) + z_power * math.sqrt(spare)) / (n + z_power ** 2)
    return None if d > psi else 100 * d


def holm(pvalues) -> list[float | None]:
    """Holm-adjusted p-values, in the input's order: the i-th smallest of m times (m - i + 1), made non-decreasing,
    capped at 1 -- the numbers of statsmodels' multipletests(method="holm") (tested equal), without importing it
    (it runs a full gc.collect() per call). None (or NaN) entries stay None and are left out of the family."""
    values = list(pvalues)
    present = [i for i, p in enumerate(values) if p is not None and not (isinstance(p, float) and math.isnan(p))]
    order = sorted(present, key=lambda i: float(values[i]))  # stable: ties keep their input order
    out: list[float | None] = [None] * len(values)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, float(values[i]) * (len(order) - rank)))
        out[i] = running
    return out


def wilson(successes: int, n: int, level: float = 0.95) -> tuple[float | None, float | None]:
    """The Wilson score interval of the proportion successes / n (statsmodels' proportion_confint with
    method="wilson": tests/test_echo.py holds the two equal), the normal quantile from the standard library
    (nothing heavy is imported: `critique audit` uses it); (None, None) when n is 0."""
    if n <= 0:
        return None, None
    from statistics import NormalDist

    z = NormalDist().inv_cdf(0.5 + level / 2)
    p = successes / n
    scale = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / scale
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / scale
    return (0.0 if successes == 0 else max(0.0, centre - half),  # exact at the ends (no float noise)
            1.0 if successes == n else min(1.0, centre + half))


def _paired_summary(differences, confidence: float = 0.95) -> dict:
    import numpy as np
    from scipy import special

    d = np.round(np.asarray(differences, dtype=float), TIE_DECIMALS)
    n = int(d.size)
    wins, losses = int((d > 0).sum()), int((d < 0).sum())
    out = {"n": n, "mean": None, "sd": None, "ci_low": None, "ci_high": None,
           "wins": wins, "losses": losses, "ties": n - wins - losses, "p_sign": sign_test(wins, losses)}
    if n == 0:
        return out
    out["mean"] = float(d.mean())
    if n >= 2:
        sd = float(d.std(ddof=1))
        out["sd"] = sd
        if sd > 0:  # Student's t quantiles (scipy.stats.t.interval's, from the same scipy.special function)
            scale = sd / n ** 0.5
            low, high = (special.stdtrit(n - 1, q) * scale + out["mean"] for q in ((1 - confidence) / 2,
                                                                                    (1 + confidence) / 2))
            out["ci_low"], out["ci_high"] = float(low), float(high)
        else:
            out["ci_low"] = out["ci_high"] = out["mean"]
    return out


def _ranks(values):
    """Ranks from 1, a tie's values all given the mean of the ranks they share (scipy.stats.rankdata's)."""
    import numpy as np

    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    sizes = np.diff(np.r_[starts, values.size])
    ranks = np.empty(values.size)
    ranks[order] = np.repeat(starts + (sizes + 1) / 2.0, sizes)
    return ranks


def _spearman(x, y) -> dict:
    """Spearman's rho and its two-sided p-value from Student's t on n - 2 degrees of freedom, as
    scipy.stats.spearmanr computes them (tests/test_analysis_stats.py holds the two equal)."""
    import numpy as np
    from scipy import special

    x = np.round(np.asarray(x, dtype=float), TIE_DECIMALS)
    y = np.round(np.asarray(y, dtype=float), TIE_DECIMALS)
    out = {"n": int(x.size), "rho": None, "p": None}
    if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return out
    rho = np.corrcoef(_ranks(x), _ranks(y))[1, 0]
    dof = x.size - 2
    with np.errstate(divide="ignore"):
        t = rho * np.sqrt((dof / ((rho + 1.0) * (1.0 - rho))).clip(0))
    out["rho"], out["p"] = _number(rho), _number(2 * special.stdtr(dof, -np.abs(t)))
    return out


_LOCAL = {"paired_summary": _paired_summary, "spearman": _spearman}
