"""The write-back loop's statistics (docs/memory.md section 1), from a stream's note versions and steps: who is
trusted, the loop's l and s (the shares of wrong and of right answers written back trusted), the share of the
trusted notes a step was shown that are wrong (the loop's p), the contamination slope (pooled, or within the
memory-off arm's strata so that the questions' difficulty is taken out) with its interval, and the predicted
attractor, where p = q(p), with whether it tests anything: with a slope that cannot be told from 0 it is the
bank's own share of wrong notes among the trusted ones, which the stream reached by construction. Reads nothing:
analysis.memory.online feeds it."""

from __future__ import annotations

from critique.analysis.memory.echo_stats import bootstrap, point_sums, withheld, within_slope
from critique.analysis.stats.core import wilson


def trusted_wrong_rate(p: float, e0: float, kappa: float, leniency: float, s: float) -> float | None:
    """q(p): the share of a new note stored as right that is wrong, when a share p of the trusted notes is wrong:
    e*l / (e*l + (1-e)*s) with the error e = e0 + kappa*p (kept within [0, 1]); None when nothing is ever stored
    as right."""
    e = min(1.0, max(0.0, e0 + kappa * p))
    trusted = e * leniency + (1 - e) * s
    return e * leniency / trusted if trusted > 0 else None


def attractor(e0: float, kappa: float, leniency: float, s: float, grid: int = 10_000) -> float | None:
    """Where the write-back loop settles (docs/memory.md section 1): the least p in [0, 1] with p = q(p)
    (trusted_wrong_rate), which a bank that starts clean reaches; within [0, 1] while e0 + kappa*p is, it is the
    root of kappa*(l-s)*p^2 + (e0*(l-s) + s - kappa*l)*p - e0*l = 0. Found on a grid of ``grid`` steps, then by
    bisection; None when nothing is ever stored as right."""
    def gap(p: float) -> float | None:
        q = trusted_wrong_rate(p, e0, kappa, leniency, s)
        return None if q is None else q - p

    if gap(0.0) is None:
        return None
    low = 0.0
    for n in range(1, grid + 1):  # gap(0) >= 0 and gap(1) <= 0: the first crossing
        high = n / grid
        if gap(high) is None or gap(high) <= 0:
            break
        low = high
    if gap(high) is None:
        return None
    for _ in range(60):
        middle = (low + high) / 2
        if gap(middle) > 0:
            low = middle
        else:
            high = middle
    return high


def share(values: list[bool]) -> float | None:
    return sum(values) / len(values) if values else None


def trust_rates(notes: list[dict]) -> tuple:
    """(l, its Wilson interval's ends, s): the shares of the wrong (U = 0) and of the right (U = 1) answers written
    back trusted (stored as right and not demoted), over every note of known truth: a note whose critique names
    no verdict is not trusted and counts so here, as in ``corruption`` and the corrupted share. One denominator:
    with kappa = 0, e*l / (e*l + (1-e)*s) over these notes is the share of the trusted ones that are wrong."""
    u0 = [is_trusted(n) for n in notes if n["truth"] == 0]
    u1 = [is_trusted(n) for n in notes if n["truth"] == 1]
    low, high = wilson(sum(u0), len(u0))
    return share(u0), low, high, share(u1)


def shown_versions(step: dict, versions: dict[str, dict]) -> list[dict]:
    return [versions[v] for v in step.get("retrieved_versions") or [] if v in versions]


def is_trusted(version: dict) -> bool:
    """Stored as right and not marked doubtful (a de-inflation arm's demotion)."""
    return version["verdict"] == 1 and not (version.get("entry") or {}).get("doubtful")


def is_trusted_wrong(version: dict) -> bool:
    return is_trusted(version) and version["truth"] == 0


def corruption(shown: list[dict]) -> float | None:
    """The share of the trusted notes (stored as right and not demoted, truth known) among ``shown`` that are
    wrong: the loop's p in one prompt; None when none is trusted."""
    trusted = [v for v in shown if is_trusted(v) and v["truth"] is not None]
    return sum(v["truth"] == 0 for v in trusted) / len(trusted) if trusted else None


def contamination(steps: list[dict], versions: dict[str, dict], strata: dict[tuple, bool] | None = None) -> dict:
    """{kappa, e0, groups}: slope and intercept of a step's error on the share of the trusted notes it was shown
    that are wrong (steps shown no trusted note left out): the loop's e = e0 + kappa*p; ``groups``: each step's
    (stratum, point_sums), for ``slope_interval``. ``strata``: item -> whether the memory-off arm answered it
    right; the slope is then the within-stratum one (hard questions retrieve wrong notes and fail anyway: that
    is not contamination; an item the memory-off arm did not answer is left out), and e0 the intercept through
    the means. Without strata, the pooled slope (one stratum)."""
    groups = []
    for step in steps:
        wrong = corruption(shown_versions(step, versions))
        stratum = None if strata is None else strata.get((step.get("user"), step.get("item_id")))
        if wrong is not None and (strata is None or stratum is not None):
            groups.append((stratum, point_sums([(wrong, float(step.get("correct") is not True))])))
    kappa = within_slope(groups) if groups else None
    if kappa is None:
        return {"kappa": None, "e0": None, "groups": groups}
    n, sx, sy = (sum(sums[i] for _, sums in groups) for i in range(3))
    return {"kappa": kappa, "e0": sy / n - kappa * sx / n, "groups": groups}


def no_prediction(leniency: float | None, s: float | None, slope: dict) -> str:
    """Why the loop has no predicted attractor: the stream wrote nothing back, nothing it wrote back is trusted
    (the loop cannot grow a wrong trusted note), no answer of one truth was written back, no slope
    (``slope``: `contamination`'s), or a bank that would at some point store nothing as right."""
    if leniency is None and s is None:
        return "no prediction: the stream wrote no note back"
    if leniency == 0 and s == 0:
        return "no prediction: no note the stream wrote is trusted, so none can be trusted but wrong"
    if leniency is None or s is None:
        return f"no prediction: the stream wrote back no {'wrong' if leniency is None else 'right'} answer"
    if slope["kappa"] is None and not slope["groups"]:
        return "no prediction: no slope, no step was shown a trusted note"
    if slope["kappa"] is None:
        return "no prediction: no slope, every step was shown the same share of trusted notes that are wrong"
    return ("no prediction: with this slope the loop would store nothing as right at some share of wrong notes "
            "(e*l + (1-e)*s = 0)")


def slope_interval(groups: list[tuple]) -> tuple[float | None, float | None, str | None]:
    """(low, high, why none): the slope's percentile interval over resampled steps (echo_stats.bootstrap: the
    Echo table's resamples, seed and level), withheld when too many resamples leave it undefined."""
    low, high, undefined = bootstrap(groups, within_slope)
    why = withheld(None, undefined)
    return (None, None, why) if why else (low, high, None)


def prediction_test(predicted: float | None, low: float | None, high: float | None, why: str | None) -> str | None:
    """Why the predicted attractor is no test of the loop (None when it is one: the slope's interval excludes
    0). With kappa = 0 it is e*l / (e*l + (1-e)*s) of the notes the stream wrote, the very ratio the corrupted
    share is of the same notes, so predicted and reached agree by construction."""
    if predicted is None:
        return None
    if why is not None:
        return f"no test: the slope has no interval ({why}), so it cannot be told from 0"
    if low <= 0 <= high:
        return (f"no test: the slope's interval [{low:.3f}, {high:.3f}] holds 0, and with kappa = 0 predicted and "
                "reached are one ratio of the same notes")
    return None
