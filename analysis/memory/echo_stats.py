"""The Echo Gap's statistics (docs/memory.md section 1) with what each rests on, for the Echo table
(critique.analysis.memory.echo) and `critique audit`: Corr(b, n | U = 0) and the contamination slope kappa, each
with a seeded percentile bootstrap interval, the entries and prompts that carry it, the share of resamples
where it is undefined, and no interval (with the reason) when too few carry it.

Both rest on the wrong-but-trusted entries: U = 0 (the initial answer was wrong) and b = +1 (stored as right).
Corr(b, n | U = 0) over U = 0 entries varies only between those with b = +1 and those with b = 0, and kappa
only where a prompt retrieved a wrong-but-trusted entry. kappa is taken within difficulty strata (the
memory-off answer right or wrong), as docs/memory.md's slope is; pooled over the strata it is confounded with the
questions' difficulty. P(r = 1 | U = 0) is named by what the critic saw (`stored_right`): leniency without a
label, contradiction of the gold label it was shown. Pure Python: `critique audit` imports nothing heavy."""

from __future__ import annotations

import random
import statistics

from critique.analysis.stats.core import wilson
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


# what a critic was shown when it stored a verdict, and the name of P(r = 1 | U = 0) over such entries
LENIENCY, CONTRADICTION = "leniency", "contradiction"
STORED_RIGHT_NOTE = ("leniency: P(r=1 | U=0) over the entries whose critic was shown no label (--critic self: "
                     "docs/memory.md's label-free leniency); contradiction: the same over the entries whose critic was "
                     "shown their gold label (gold, noisy:R's unflipped ones, a label budget's): the critic "
                     "contradicting the label it was shown; an entry shown a flipped label (label noise) is in "
                     "neither")


def shown(row: dict) -> str | None:
    """LENIENCY when the entry's critic was shown no label, CONTRADICTION when it was shown the gold label, None
    when it was shown a flipped one (an entry row of critique.analysis.memory.audit: `label`, `label_flipped`)."""
    if row["label"] is None:
        return LENIENCY
    return None if row["label_flipped"] or row["label"] != row["gold"] else CONTRADICTION


def stored_right(u0: list[dict]) -> dict:
    """P(r = 1 | U = 0) over the U = 0 entries of known verdict, per what their critic was shown (`shown`):
    name -> {value, low, high (Wilson, LEVEL), entries}; value and ends None with no such entry."""
    out = {}
    for name in (LENIENCY, CONTRADICTION):
        mine = [r["r"] for r in u0 if shown(r) == name]
        low, high = wilson(sum(mine), len(mine), LEVEL)
        out[name] = {"value": sum(mine) / len(mine) if mine else None, "low": low, "high": high,
                     "entries": len(mine)}
    return out


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


def withheld(why: str | None, undefined: float | None) -> str | None:
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
    out["why"] = withheld(None, out["undefined"])
    if out["why"]:
        out["low"] = out["high"] = None
    return out


def point_sums(points: list[tuple[float, float]]) -> tuple:
    """(count, sum x, sum y, sum x^2, sum xy) of a question's (x, y) points: a slope adds these up."""
    return (len(points), sum(x for x, _ in points), sum(y for _, y in points), sum(x * x for x, _ in points),
            sum(x * y for x, y in points))


def settled(slope: float) -> float:
    """A slope with its float noise taken off (a y constant within strata leaves 1e-17, printed -0.000): to 12
    decimals."""
    return round(slope, 12) + 0.0


def centred(groups: list[tuple]) -> tuple[float, float, float]:
    """(x's sum of squares about its mean, the cross-products about the means, x's raw sum of squares) of the
    groups' summed `point_sums`."""
    n, sx, sy, sxx, sxy = (sum(g[i] for g in groups) for i in range(5))
    return (sxx - sx * sx / n, sxy - sx * sy / n, sxx) if n else (0.0, 0.0, sxx)


def slope_of(groups: list[tuple]) -> float | None:
    """The least-squares slope of y on x from the groups' summed `point_sums`; None when x is constant."""
    spread, cross, raw = centred(groups)
    return None if spread <= 1e-12 * max(1.0, raw) else settled(cross / spread)


def by_stratum(pairs) -> dict[object, list]:
    """stratum -> its values, from (stratum, value) pairs in their order."""
    found: dict[object, list] = {}
    for stratum, value in pairs:
        found.setdefault(stratum, []).append(value)
    return found


def within_slope(groups: list[tuple]) -> float | None:
    """The within-strata least-squares slope of (stratum, `point_sums`) groups: each stratum's own means taken
    out, one slope for all (a regression with one intercept per stratum); None when x never varies within a
    stratum."""
    parts = [centred(members) for members in by_stratum(groups).values()]
    spread, cross, raw = (sum(part[i] for part in parts) for i in range(3))
    return None if spread <= 1e-12 * max(1.0, raw) else settled(cross / spread)


def varying(xs: list[float]) -> int:
    """How many of `xs` differ from the most common value (the prompts that carry a slope)."""
    counts: dict[float, int] = {}
    for x in xs:
        counts[round(x, 9)] = counts.get(round(x, 9), 0) + 1
    return len(xs) - max(counts.values()) if counts else 0


def question_points(rows: list[dict], predictions: list[dict], strategies: tuple) -> tuple[dict, set]:
    """((user, item) -> its prompts' (x, y) points, the wrong-but-trusted entries they retrieved): x the share
    of a prompt's retrieved entries of known verdict that are wrong-but-trusted (b = +1), y its error
    (1 - correct), over the prompts of `strategies` with at least one entry of known verdict."""
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
    return questions, carriers




def contamination(rows: list[dict], predictions: list[dict], strategies: tuple, strata: dict | None) -> dict:
    """kappa within difficulty strata: the least-squares slope of a test prompt's error on the share of its
    retrieved entries of known verdict that are wrong-but-trusted (`question_points`), with one intercept per
    stratum; `strata`: (user, item) -> whether the memory-off answer (zero_shot's) was right, so that hard
    questions, which retrieve wrong entries and fail anyway, do not pass for contamination (None: no memory-off
    answers, no strata). Also `right`/`wrong` (the slope in each stratum), `confounded` (pooled over the
    strata), `prompts`, `varying` (prompts whose share is not their stratum's most common one),
    `trusted_wrong`, `low`/`high` over resampled test questions (a question's prompts drawn together),
    `undefined`, `why`. Questions without a stratum are left out when there are strata."""
    questions, carriers = question_points(rows, predictions, strategies)
    if strata is not None:
        questions = {q: points for q, points in questions.items() if q in strata}
    groups = [((strata or {}).get(q), point_sums(points)) for q, points in questions.items()]
    shares = by_stratum(((strata or {}).get(q), x) for q, points in questions.items() for x, _ in points)
    per = {stratum: slope_of(sums) for stratum, sums in by_stratum(groups).items()} if strata is not None else {}
    out = {"within": within_slope(groups) if strata is not None and groups else None, "right": per.get(True),
           "wrong": per.get(False), "confounded": slope_of([g for _, g in groups]) if groups else None,
           "prompts": sum(len(xs) for xs in shares.values()), "varying": sum(varying(xs) for xs in shares.values()),
           "trusted_wrong": len(carriers), "low": None, "high": None, "undefined": None}
    out["why"] = _slope_withheld(out, strategies, strata is None)
    if out["why"] is None:
        out["low"], out["high"], out["undefined"] = bootstrap(groups, within_slope)
        out["why"] = withheld(None, out["undefined"])
        if out["why"]:
            out["low"] = out["high"] = None
    return out


def _slope_withheld(out: dict, strategies: tuple, no_strata: bool) -> str | None:
    """Why kappa within strata has no value or no interval; None when an interval is to be drawn."""
    if no_strata:
        return "undefined: no zero_shot answers, so no difficulty strata"
    if not out["prompts"]:
        return "undefined: no prompt of " + " or ".join(strategies) + " retrieved an entry of known verdict"
    if out["within"] is None:
        return "undefined: within each stratum every prompt has the same wrong-but-trusted share"
    if out["trusted_wrong"] < MIN_CARRIERS or out["varying"] < MIN_VARYING:
        return (f"no interval: wrong-but-trusted entries retrieved {out['trusted_wrong']}, prompts whose share "
                f"varies within their stratum {out['varying']} (an interval needs {MIN_CARRIERS} and {MIN_VARYING})")
    return None
