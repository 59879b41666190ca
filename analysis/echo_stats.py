"""The Echo Gap's statistics (shared/MEMORY.md section 1) with what each rests on, for the Echo table
(critique.analysis.echo) and `critique audit`: Corr(b, n | U = 0) and the contamination slope kappa, each
with a seeded percentile bootstrap interval, the entries and prompts that carry it, the share of resamples
where it is undefined, and no interval (with the reason) when too few carry it.

Both rest on the wrong-but-trusted entries: U = 0 (the initial answer was wrong) and b = +1 (stored as right).
Corr(b, n | U = 0) over U = 0 entries varies only between those with b = +1 and those with b = 0, and kappa
only where a prompt retrieved a wrong-but-trusted entry. Pure Python: `critique audit` imports nothing heavy."""

from __future__ import annotations

import random
import statistics

from critique.base import vocab

# reuse n of an entry, one definition for `critique audit` and the Echo table (EP_LABEL's retrievals are listed
# per strategy by the audit, never counted in n)
REUSE = (vocab.EP_CRIT, vocab.EP_SEM_CRIT)
REUSE_NOTE = ("reuse n: the counted test prompts of EP_CRIT or EP+SEM_CRIT (the strategies whose prompts show an "
              "entry's stored critique and so its verdict; EP_LABEL shows a label only) whose retrieved entries "
              "include the entry")
BOOTSTRAP = 1000  # resamples of each interval
LEVEL = 0.95
SEED = 0
MIN_CARRIERS = 5  # fewer wrong-but-trusted reused entries (or U = 0 entries with b = 0): no interval
MIN_VARYING = 10  # fewer test prompts whose wrong-but-trusted share differs from the most common one: no interval
MAX_UNDEFINED = 0.05  # a larger share of undefined resamples: the interval would be conditional, so none is given


def pearson(xs: list[float], ys: list[float]) -> float | None:
    """Pearson's r; None with fewer than two points or when either variable is constant."""
    try:
        return statistics.correlation(xs, ys)
    except statistics.StatisticsError:
        return None


def bootstrap(groups: list, statistic, seed: int = SEED, resamples: int = BOOTSTRAP,
              level: float = LEVEL) -> tuple[float | None, float | None, float]:
    """(low, high, undefined share): the percentile interval of `statistic` (a function of a list of groups,
    None where undefined) over `resamples` seeded resamples of `groups` with replacement; the share of
    resamples where it was undefined, which are left out. (None, None, share) when none is defined."""
    rng = random.Random(seed)
    found = []
    for _ in range(resamples):
        value = statistic([groups[rng.randrange(len(groups))] for _ in groups])
        if value is not None:
            found.append(value)
    undefined = 1 - len(found) / resamples
    if not found:
        return None, None, undefined
    found.sort()
    tail = (1 - level) / 2
    return found[int(tail * (len(found) - 1))], found[int(round((1 - tail) * (len(found) - 1)))], undefined


def bootstrap_corr(xs: list[float], ys: list[float], seed: int = SEED,
                   resamples: int = BOOTSTRAP) -> tuple[float | None, float | None, float | None]:
    """(low, high, undefined share) of Pearson's r over resampled pairs; (None, None, None) under 3 pairs."""
    if len(xs) < 3:
        return None, None, None
    return bootstrap(list(zip(xs, ys)), lambda s: pearson([x for x, _ in s], [y for _, y in s]), seed, resamples)


def count_entries(count: int) -> str:
    return f"{count} entr{'y' if count == 1 else 'ies'}"


def _withheld(why: str | None, undefined: float | None) -> str | None:
    """The reason an interval is not given: `why`, or too many undefined resamples; None when it is given."""
    if why:
        return why
    if undefined is not None and undefined > MAX_UNDEFINED:
        return (f"{undefined:.1%} of the resamples undefined (over {MAX_UNDEFINED:.0%}): the interval would hold "
                "only for resamples that drew a carrying entry")
    return None


def corr_b_n(u0: list[dict]) -> dict:
    """Corr(b, n | U = 0) over the U = 0 entries with a known verdict (rows with b and the reuse n): the
    value, `lenient_reused` (b = +1 and n > 0: the entries that carry it), `undefined` (share of resamples),
    `low`/`high`, and `why` no interval is given (None when one is)."""
    b, n = [r["b"] for r in u0], [r["n"] for r in u0]
    value = pearson(b, n)
    carriers = sum(r["b"] == 1 and r["n"] > 0 for r in u0)
    others = sum(r["b"] == 0 for r in u0)
    out = {"value": value, "entries": len(u0), "lenient_reused": carriers, "undefined": None, "low": None,
           "high": None}
    if value is None:
        out["why"] = ("undefined: no U=0 entry of known verdict" if not u0 else
                      f"undefined: every U=0 entry has b = {'+1' if b[0] == 1 else '0'}" if len(set(b)) == 1 else
                      "undefined: every U=0 entry has the same reuse n")
        return out
    if carriers < MIN_CARRIERS or others < MIN_CARRIERS:
        out["why"] = (f"no interval: wrong-but-trusted reused entries {carriers}, U=0 entries with b=0 {others} "
                      f"(an interval needs {MIN_CARRIERS} of each)")
        return out
    out["low"], out["high"], out["undefined"] = bootstrap_corr(b, n)
    out["why"] = _withheld(None, out["undefined"])
    if out["why"]:
        out["low"] = out["high"] = None
    return out


def point_sums(points: list[tuple[float, float]]) -> tuple:
    """(count, sum x, sum y, sum x^2, sum xy) of a question's (x, y) points: a slope adds these up."""
    return (len(points), sum(x for x, _ in points), sum(y for _, y in points), sum(x * x for x, _ in points),
            sum(x * y for x, y in points))


def slope_of(groups: list[tuple]) -> float | None:
    """The least-squares slope of y on x from the groups' summed `point_sums`; None when x is constant."""
    n, sx, sy, sxx, sxy = (sum(g[i] for g in groups) for i in range(5))
    spread = sxx - sx * sx / n if n else 0.0
    return None if spread <= 1e-12 * max(1.0, sxx) else (sxy - sx * sy / n) / spread


def varying(xs: list[float]) -> int:
    """How many of `xs` differ from the most common value (the prompts that carry a slope)."""
    counts: dict[float, int] = {}
    for x in xs:
        counts[round(x, 9)] = counts.get(round(x, 9), 0) + 1
    return len(xs) - max(counts.values()) if counts else 0


def contamination(rows: list[dict], predictions: list[dict], strategies: tuple) -> dict:
    """kappa: the least-squares slope of a test prompt's error (1 - correct) on the share of its retrieved
    entries of known verdict that are wrong-but-trusted (b = +1), over the prompts of `strategies` with at
    least one entry of known verdict. Also `prompts`, `varying` (prompts whose share is not the most common
    one), `trusted_wrong` (the distinct wrong-but-trusted entries those prompts retrieved), `low`/`high` over
    resampled test questions (a question's prompts of every strategy drawn together), `undefined`, `why`."""
    verdict = {row["id"]: row["b"] for row in rows}
    questions: dict[tuple, list] = {}
    carriers = set()
    for p in predictions:
        known = [i for i in p.get("retrieved") or [] if verdict.get(i) is not None]
        if p.get("strategy") not in strategies or not known:
            continue
        carriers.update(i for i in known if verdict[i] == 1)
        point = (sum(verdict[i] == 1 for i in known) / len(known), 0.0 if p.get("correct") is True else 1.0)
        questions.setdefault((p.get("user"), p.get("item_id")), []).append(point)
    xs = [x for points in questions.values() for x, _ in points]
    groups = [point_sums(points) for points in questions.values()]
    out = {"kappa": slope_of(groups) if groups else None, "prompts": len(xs), "varying": varying(xs),
           "trusted_wrong": len(carriers), "low": None, "high": None, "undefined": None}
    if out["kappa"] is None:
        out["why"] = ("undefined: no prompt of " + " or ".join(strategies) + " retrieved an entry of known verdict"
                      if not xs else "undefined: every prompt has the same wrong-but-trusted share")
    elif len(carriers) < MIN_CARRIERS or out["varying"] < MIN_VARYING:
        out["why"] = (f"no interval: wrong-but-trusted entries retrieved {len(carriers)}, prompts whose share varies "
                      f"{out['varying']} (an interval needs {MIN_CARRIERS} and {MIN_VARYING})")
    else:
        out["low"], out["high"], out["undefined"] = bootstrap(groups, slope_of)
        out["why"] = _withheld(None, out["undefined"])
        if out["why"]:
            out["low"] = out["high"] = None
    return out
