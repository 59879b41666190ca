"""The write-back loop's statistics (shared/MEMORY.md section 1), from a stream's note versions and steps: who is
trusted, the leniency of what is written back, the share of the trusted notes a step was shown that are wrong
(the loop's p), the contamination slope (pooled, or within the memory-off arm's strata so that the questions'
difficulty is taken out) and the predicted attractor, where p = q(p). Reads nothing: analysis.online feeds it."""

from __future__ import annotations

from critique.analysis.echo_stats import point_sums, slope_of
from critique.analysis.stats import wilson


def trusted_wrong_rate(p: float, e0: float, kappa: float, leniency: float, s: float) -> float | None:
    """q(p): the share of a new note stored as right that is wrong, when a share p of the trusted notes is wrong:
    e*l / (e*l + (1-e)*s) with the error e = e0 + kappa*p (kept within [0, 1]); None when nothing is ever stored
    as right."""
    e = min(1.0, max(0.0, e0 + kappa * p))
    trusted = e * leniency + (1 - e) * s
    return e * leniency / trusted if trusted > 0 else None


def attractor(e0: float, kappa: float, leniency: float, s: float, grid: int = 10_000) -> float | None:
    """Where the write-back loop settles (MEMORY.md section 1): the least p in [0, 1] with p = q(p)
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
    """(leniency, its Wilson interval's ends, s) of notes with a known verdict and truth: the share of the wrong
    (U = 0) and of the right (U = 1) answers written back trusted (stored as right and not demoted; with nothing
    demoted the leniency is E[b | U=0] itself, b = r when U = 0)."""
    u0 = [n for n in notes if n["truth"] == 0 and n["verdict"] is not None]
    u1 = [n for n in notes if n["truth"] == 1 and n["verdict"] is not None]
    lenient = sum(is_trusted(n) for n in u0)
    low, high = wilson(lenient, len(u0))
    leniency = lenient / len(u0) if u0 else None
    return leniency, low, high, share([is_trusted(n) for n in u1])


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


def contamination(steps: list[dict], versions: dict[str, dict],
                   strata: dict[tuple, bool] | None = None) -> tuple[float | None, float | None]:
    """(kappa, e0): slope and intercept of a step's error on the share of the trusted notes it was shown that
    are wrong (steps shown no trusted note left out): the loop's e = e0 + kappa*p. ``strata``: item -> whether
    the memory-off arm answered it right; the slope is then the within-stratum one (hard questions retrieve
    wrong notes and fail anyway: that is not contamination), and e0 the intercept through the means."""
    groups: dict[object, list[tuple[float, float]]] = {}
    for step in steps:
        wrong = corruption(shown_versions(step, versions))
        if wrong is not None:
            key = (step.get("user"), step.get("item_id"))
            stratum = strata.get(key) if strata is not None else None
            groups.setdefault(stratum, []).append((wrong, float(step.get("correct") is not True)))
    if strata is not None:
        groups.pop(None, None)  # an item the memory-off arm did not answer
    points = [p for group in groups.values() for p in group]
    if not points:
        return None, None
    kappa = slope_of([point_sums(points)]) if strata is None else within_slope(list(groups.values()))
    if kappa is None:
        return None, None
    mean_x, mean_y = (sum(p[i] for p in points) / len(points) for i in (0, 1))
    return kappa, mean_y - kappa * mean_x


def within_slope(groups: list[list[tuple[float, float]]]) -> float | None:
    """The within-group least-squares slope (each group's own means taken out); None when x never varies."""
    sxx = sxy = 0.0
    for points in groups:
        n, sx, sy, sxx_g, sxy_g = point_sums(points)
        if n:
            sxx += sxx_g - sx * sx / n
            sxy += sxy_g - sx * sy / n
    return None if sxx <= 1e-12 else sxy / sxx
