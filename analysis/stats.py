"""The study's statistics, from scipy: paired-difference summary and Spearman correlation."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

TIE_DECIMALS = 9  # differences equal to this many decimals are ties (float noise of per-user means)


def _number(value) -> float | None:
    value = float(value)
    return None if math.isnan(value) else value


def paired_summary(differences, confidence: float = 0.95) -> dict:
    """Mean, SD, t-interval, wins/losses/ties and the exact two-sided sign test of paired differences.

    Ties (zero differences) are left out of the sign test. Values that cannot be computed
    (SD of one point, a sign test without a win or a loss) are None.
    """
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


def spearman(x, y) -> dict:
    """Spearman's rho and its two-sided p-value; None for fewer than 3 points or a constant input.

    Values equal to TIE_DECIMALS decimals are ties (a mean over users carries float noise that
    would otherwise break ties at random).
    """
    x = np.round(np.asarray(x, dtype=float), TIE_DECIMALS)
    y = np.round(np.asarray(y, dtype=float), TIE_DECIMALS)
    out = {"n": int(x.size), "rho": None, "p": None}
    if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return out
    result = stats.spearmanr(x, y)
    out["rho"], out["p"] = _number(result.statistic), _number(result.pvalue)
    return out
