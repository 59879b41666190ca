"""Item-level statistics of the study: paired tests per cell, a pooled logit model, within-dataset
Spearman correlation, and the spread of accuracy across repeats.

Every function takes a pandas DataFrame ``frame`` of test predictions, one row per prediction,
with at least the columns ``model``, ``dataset``, ``strategy``, ``user`` ("" when the dataset has
no users), ``item_id`` and ``correct`` (bool; a missing answer, a timeout or an error is False).
A missing ``user`` counts as "", a missing ``correct`` as False. A (model, dataset, strategy,
user, item_id) key is assumed to occur once; later duplicates are ignored (`repeat_spread` adds
``repeat`` to the key). A (model, dataset) cell "has users" when any of its rows has a user other
than ""; its accuracy is then the mean over users of each user's accuracy, as in Table 1.
Accuracies and differences are in percent, not rounded. A number that cannot be computed is NaN
in a result frame; `records` turns a result frame into JSON-ready dicts with None in its place.

Load only when item-level inference is asked for: numpy, scipy, pandas and statsmodels take
about 1.5 s of CPU to import. From the project it imports only `critique.base.vocab`.
"""

from __future__ import annotations

import hashlib
import math
import warnings

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.genmod import families
from statsmodels.genmod.cov_struct import Independence
from statsmodels.genmod.generalized_estimating_equations import GEE
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.tools.sm_exceptions import ConvergenceWarning, PerfectSeparationWarning

from critique.analysis.stats.core import detectable_effect, holm
from critique.base.vocab import BASELINES, CRITIQUE_STRATEGIES, EP_LABEL, STRATEGIES, ZERO_SHOT

KEY = ["model", "dataset", "strategy", "user", "item_id"]
PAIRED_COLUMNS = ["model", "dataset", "strategy", "baseline", "n", "acc_strategy", "acc_baseline", "diff",
                  "ci_low", "ci_high", "discordant_wins", "discordant_losses", "p_mcnemar", "p_holm", "mde"]
POOLED_COLUMNS = ["strategy", "baseline", "odds_ratio", "ci_low", "ci_high", "p", "method"]
SPREAD_COLUMNS = ["model", "dataset", "strategy", "repeats", "mean", "sd", "min", "max"]
PAIRS = [(strategy, baseline) for strategy in CRITIQUE_STRATEGIES for baseline in BASELINES]
# What a control tests first: the label memory against no memory (the positive control: copying the nearest
# example's label is right; the negative control: it is not)
CONTROL_PAIRS = [(EP_LABEL, ZERO_SHOT)]
POOLED_CONFIDENCE = 0.95
GEE_MAXITER = 25


def _missing(value) -> bool:
    return value is None or (isinstance(value, (float, np.floating)) and math.isnan(value))


def mcnemar_exact(wins: int, losses: int) -> float | None:
    """Exact two-sided McNemar p-value on the discordant pairs: 2 * P(X <= min(wins, losses)) for
    X ~ Binomial(wins + losses, 1/2), capped at 1 (statsmodels mcnemar, exact=True).

    The concordant pairs do not enter the test. None when there is no discordant pair.
    """
    wins, losses = int(wins), int(losses)
    if wins + losses == 0:
        return None
    return float(mcnemar([[0, wins], [losses, 0]], exact=True).pvalue)


def _prepared(frame: pd.DataFrame, extra: tuple[str, ...] = ()) -> pd.DataFrame:
    """The columns the functions read, with user/item_id as str and correct as 0/1 floats."""
    missing = [c for c in ("model", "dataset", "strategy", "item_id", "correct", *extra) if c not in frame.columns]
    if missing:
        raise ValueError(f"frame lacks the column(s) {', '.join(missing)}")
    out = pd.DataFrame({c: frame[c].astype(str) for c in ("model", "dataset", "strategy", "item_id")})
    out["user"] = frame["user"].fillna("").astype(str) if "user" in frame.columns else ""
    correct = frame["correct"].astype(object)
    out["correct"] = correct.where(correct.notna(), False).astype(bool).astype(float)
    out[list(extra)] = frame[list(extra)].astype(str)
    return out.drop_duplicates(subset=KEY + list(extra), keep="first").reset_index(drop=True)


def _generator(seed: int, key: str) -> np.random.Generator:
    """A generator for one row: from ``seed`` and a stable hash of the row's key, so rows are independent."""
    digest = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "little")
    return np.random.default_rng([int(seed), digest])


def _unit_values(strategy: np.ndarray, baseline: np.ndarray, users: np.ndarray | None):
    """Per-unit (user, or item without users) accuracy of strategy and baseline, both as fractions."""
    if users is None:
        return strategy, baseline
    inverse = np.unique(users, return_inverse=True)[1]
    counts = np.bincount(inverse)
    return np.bincount(inverse, weights=strategy) / counts, np.bincount(inverse, weights=baseline) / counts


def _bootstrap(differences: np.ndarray, rng: np.random.Generator, resamples: int, confidence: float):
    """Percentile interval of the mean of per-unit differences, units drawn with replacement."""
    units = differences.size
    index = rng.integers(0, units, size=(resamples, units), dtype=np.int16 if units < 2**15 else np.int64)
    wins, losses = int((differences == 1).sum()), int((differences == -1).sum())
    if wins + losses + int((differences == 0).sum()) == units:  # items: the same resampling, with the units
        # relabelled wins first, then losses, so counting indices replaces gathering values (3x faster)
        means = (np.count_nonzero(index < wins, axis=1)
                 - np.count_nonzero((index >= wins) & (index < wins + losses), axis=1)) / units
    else:
        means = differences[index].mean(axis=1)
    low, high = np.quantile(means, [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(low), float(high)


def paired(frame: pd.DataFrame, seed: int = 0, resamples: int = 2000, confidence: float = 0.95,
           pairs: list[tuple[str, str]] = PAIRS) -> pd.DataFrame:
    """Each critique strategy against each baseline (or each of `pairs`), per (model, dataset) cell, paired per
    item.

    One row per cell, critique strategy (EP_CRIT, SEM_CRIT, EP+SEM_CRIT) and baseline (zero_shot,
    EP_LABEL) that both have predictions in that cell for at least one common item. Items are
    matched on (user, item_id); n counts the matched items, and only they enter the row.
    acc_strategy, acc_baseline and diff (= acc_strategy - acc_baseline) are in percent: in a cell
    with users, the mean over users of each user's accuracy on the matched items; otherwise the
    plain mean over items. ci_low/ci_high: percentile bootstrap interval of diff at ``confidence``
    with ``resamples`` resamples of whole users (a cell with users: users are the independent
    units, a user's items may be correlated) or of items (otherwise: items assumed independent).
    Each row's generator comes from ``seed`` and a hash of "model|dataset|strategy|baseline", so a
    row's interval does not depend on the other rows. discordant_wins: matched items the strategy
    got right and the baseline wrong; discordant_losses the reverse; p_mcnemar: exact McNemar
    (`mcnemar_exact`, items assumed independent; NaN without a discordant pair); p_holm: Holm over
    all rows of the result; mde: the difference (points) that test finds at 80% power given n and the
    discordant share (`stats.detectable_effect`; NaN without a discordant pair or when no difference
    would be found that often). Rows are sorted by model, dataset, then strategy and baseline in the
    study's order.
    """
    data = _prepared(frame)
    data = data[data["strategy"].isin(STRATEGIES)]
    rows = []
    if not data.empty:
        wide = data.pivot(index=["model", "dataset", "user", "item_id"], columns="strategy", values="correct")
        for (model, dataset), cell in wide.groupby(level=["model", "dataset"], sort=True):
            user_values = cell.index.get_level_values("user").to_numpy(dtype=str)
            has_users = bool((user_values != "").any())
            values = {name: column for name, column in zip(cell.columns, cell.to_numpy().T)}
            for strategy, baseline in pairs:
                if strategy not in values or baseline not in values:
                    continue
                matched = ~np.isnan(values[strategy]) & ~np.isnan(values[baseline])
                if not matched.any():
                    continue
                s, b = values[strategy][matched], values[baseline][matched]
                s_unit, b_unit = _unit_values(s, b, user_values[matched] if has_users else None)
                rng = _generator(seed, f"{model}|{dataset}|{strategy}|{baseline}")
                low, high = _bootstrap(s_unit - b_unit, rng, resamples, confidence)
                wins, losses = int(((s == 1) & (b == 0)).sum()), int(((s == 0) & (b == 1)).sum())
                n, p = int(matched.sum()), mcnemar_exact(wins, losses)
                mde = detectable_effect(n, wins + losses)
                rows.append({"model": model, "dataset": dataset, "strategy": strategy, "baseline": baseline,
                             "n": n, "acc_strategy": 100 * float(s_unit.mean()),
                             "acc_baseline": 100 * float(b_unit.mean()),
                             "diff": 100 * float(s_unit.mean() - b_unit.mean()), "ci_low": 100 * low,
                             "ci_high": 100 * high, "discordant_wins": wins, "discordant_losses": losses,
                             "p_mcnemar": math.nan if p is None else p,
                             "mde": math.nan if mde is None else mde})
    result = pd.DataFrame(rows, columns=PAIRED_COLUMNS)  # in order: cells sorted, pairs in the study's order
    adjusted = holm([None if math.isnan(p) else p for p in result["p_mcnemar"]])
    result["p_holm"] = np.array([math.nan if p is None else p for p in adjusted], dtype=float)
    return result.astype({"n": int, "discordant_wins": int, "discordant_losses": int})


def _pooled_failure(why: str) -> pd.DataFrame:
    return pd.DataFrame([{"strategy": s, "baseline": b, "odds_ratio": math.nan, "ci_low": math.nan,
                          "ci_high": math.nan, "p": math.nan, "method": f"not fitted: {why}"}
                         for s, b in PAIRS], columns=POOLED_COLUMNS)


class _GEE(GEE):
    """statsmodels' GEE, less GLM's SVD of the whole design at set-up (0.15-0.5 s on 50,000 rows):
    GEE replaces the degrees of freedom it computes by the column count anyway."""

    def initialize(self):
        self.wnobs = self.exog.shape[0]
        self.df_model, self.df_resid = self.exog.shape[1] - 1, self.wnobs - self.exog.shape[1]


def _fit_gee(y: np.ndarray, x: np.ndarray, groups: np.ndarray, pattern: np.ndarray):
    """GEE logit with independence working correlation; (params, robust covariance) or a reason it failed.

    The independence GEE's estimate is the logistic regression's, which depends on the data only
    through the right/total counts per covariate pattern (``pattern``: the row's (cell, strategy)
    code): Newton steps on those few counts give the estimate in milliseconds, and statsmodels
    starts there, checks convergence and computes the robust (sandwich) covariance by ``groups``.
    """
    codes, first, inverse = np.unique(pattern, return_index=True, return_inverse=True)
    xp = x[first]
    total = np.bincount(inverse, minlength=codes.size).astype(float)
    right = np.bincount(inverse, weights=y, minlength=codes.size)
    beta, converged = np.zeros(x.shape[1]), False
    for _ in range(50):
        mu = 1.0 / (1.0 + np.exp(-np.clip(xp @ beta, -30, 30)))
        try:
            step = np.linalg.solve((xp * (total * mu * (1 - mu))[:, None]).T @ xp, xp.T @ (right - total * mu))
        except np.linalg.LinAlgError:
            return None, None, "the design matrix is singular"
        beta = beta + step
        converged = bool(np.isfinite(beta).all() and np.max(np.abs(step)) < 1e-10)
        if converged or not np.isfinite(beta).all():
            break
    # a fitted probability within 3e-7 of 0 or 1: the estimate runs off to infinity
    if not converged or np.max(np.abs(xp @ beta)) > 15:
        return None, None, "perfect or quasi-complete separation (the logit estimates diverge)"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            # hasconst: the cell dummies sum to one (skips statsmodels' rank checks for a constant)
            model = _GEE(y, x, groups=groups, family=families.Binomial(), cov_struct=Independence(), hasconst=True)
            fit = model.fit(maxiter=GEE_MAXITER, start_params=beta, cov_type="robust")
        except Exception as exc:  # noqa: BLE001 - any failure of the fit is reported, never raised
            return None, None, f"the GEE fit failed ({type(exc).__name__}: {exc})"
    for warning in caught:
        if issubclass(warning.category, PerfectSeparationWarning):
            return None, None, "perfect separation"
        if issubclass(warning.category, ConvergenceWarning):
            return None, None, f"the GEE fit did not converge ({warning.message})"
    params, cov = np.asarray(fit.params, dtype=float), np.asarray(fit.cov_robust, dtype=float)
    if not (np.isfinite(params).all() and np.isfinite(cov).all()):
        return None, None, "the GEE fit gave non-finite estimates (separation or too little data)"
    return params, cov, None


def pooled(frame: pd.DataFrame) -> pd.DataFrame:
    """Odds ratio of each critique strategy against each baseline, pooled over all cells.

    A logistic model of per-item correctness on strategy with a fixed effect per (model, dataset)
    cell, fitted by statsmodels GEE (Binomial, logit, independence working correlation) with robust
    (sandwich) SEs clustered by item: one cluster per (dataset, user, item_id), the same item
    answered by every strategy and model. Assumes one common strategy effect on the log-odds scale
    in every cell. One fit, the first baseline present as reference; the other comparisons are
    contrasts of it (identical to a refit with that reference). Cells all right (or all wrong) carry
    no information on the strategy effect and are dropped. Columns: strategy, baseline, odds_ratio
    = exp(beta), 95% Wald CI (ci_low, ci_high), Wald p, and method (one sentence: what is assumed,
    or why a number is missing). Never raises on data it cannot fit: its numbers are then NaN.
    """
    data = _prepared(frame)
    data = data[data["strategy"].isin(STRATEGIES)].reset_index(drop=True)
    if data.empty:
        return _pooled_failure("no predictions of the study's strategies")
    cell_rate = data.groupby(["model", "dataset"])["correct"].transform("mean")
    informative = ((cell_rate > 0) & (cell_rate < 1)).to_numpy()
    dropped = int(data[~informative].groupby(["model", "dataset"]).ngroups)
    data = data[informative].reset_index(drop=True)
    if data.empty:
        return _pooled_failure("no variation in correctness (every cell all right or all wrong)")
    rates = data.groupby("strategy")["correct"].mean()
    constant = [s for s in STRATEGIES if s in rates.index and rates[s] in (0.0, 1.0)]
    if constant:  # perfect separation: these strategies are left out of the fit, the others are not
        data = data[~data["strategy"].isin(constant)].reset_index(drop=True)
        if data.empty:
            return _pooled_failure(f"perfect separation: {', '.join(constant)} all right or all wrong")
    seen = set(data["strategy"].unique())
    present = [s for s in STRATEGIES if s in seen]
    reference = next((b for b in BASELINES if b in present), None)
    if reference is None:
        return _pooled_failure("no baseline (zero_shot or EP_LABEL) in the data")
    cell_codes = data.groupby(["model", "dataset"], sort=True).ngroup().to_numpy()
    cells = int(cell_codes.max()) + 1
    groups = data.groupby(["dataset", "user", "item_id"], sort=False).ngroup().to_numpy()
    others = [s for s in present if s != reference]
    columns = cells + len(others)
    if len(data) <= columns or groups.max() + 1 < 2 or not others:
        return _pooled_failure(f"too few rows or clusters ({len(data)} rows, {groups.max() + 1} clusters, "
                               f"{len(present)} strategies)")
    x = np.zeros((len(data), columns))
    x[np.arange(len(data)), cell_codes] = 1.0
    strategy, pattern = data["strategy"].to_numpy(), cell_codes * (len(others) + 1)
    for j, name in enumerate(others):
        x[:, cells + j] = strategy == name
        pattern = pattern + (j + 1) * (strategy == name)
    params, cov, why = _fit_gee(data["correct"].to_numpy(), x, groups, pattern)
    if why is not None:
        return _pooled_failure(why)
    position = {name: cells + j for j, name in enumerate(others)}
    z = stats.norm.ppf(0.5 + POOLED_CONFIDENCE / 2)
    method = (f"GEE logit (Binomial), independence working correlation, robust sandwich SE clustered by item "
              f"(dataset, user, item_id; {groups.max() + 1} clusters); fixed effects per (model, dataset) "
              f"({cells} cells{f', {dropped} without variation in correctness dropped' if dropped else ''}); "
              f"Wald {POOLED_CONFIDENCE:.0%} CI; assumes a common strategy effect on the log-odds scale across cells")
    rows = []
    for s, b in PAIRS:
        row = {"strategy": s, "baseline": b, "odds_ratio": math.nan, "ci_low": math.nan,
               "ci_high": math.nan, "p": math.nan, "method": method}
        rows.append(row)
        separated = [name for name in (s, b) if name in constant]
        absent = [name for name in (s, b) if name not in present and name not in constant]
        if separated or absent:
            row["method"] = "not estimated: " + "; ".join(
                ([f"{' and '.join(separated)} all right or all wrong (perfect separation)"] if separated else [])
                + ([f"{' and '.join(absent)} not in the data (or only in dropped cells)"] if absent else []))
            continue
        contrast = np.zeros(columns)
        contrast[position[s]] = 1.0
        if b != reference:  # the reference's coefficient is 0: a contrast of the same fit
            contrast[position[b]] -= 1.0
        estimate, se = float(contrast @ params), float(math.sqrt(max(contrast @ cov @ contrast, 0.0)))
        row["odds_ratio"] = math.exp(estimate)
        row["ci_low"], row["ci_high"] = math.exp(estimate - z * se), math.exp(estimate + z * se)
        row["p"] = float(2 * stats.norm.sf(abs(estimate / se))) if se > 0 else math.nan
    return pd.DataFrame(rows, columns=POOLED_COLUMNS)


def _spearman_one(x: np.ndarray, y: np.ndarray) -> tuple[float | None, float | None]:
    if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None, None
    result = stats.spearmanr(x, y)
    return tuple(None if math.isnan(v) else float(v) for v in (result.statistic, result.pvalue))


def within_dataset_spearman(rows) -> dict:
    """Spearman correlation of suggestibility and gain within each dataset, and pooled within datasets.

    ``rows``: dicts with keys model, dataset, suggestibility, gain, one per (model, dataset) point;
    points with a missing or NaN number are left out. per_dataset: scipy's Spearman rho and
    two-sided p per dataset (datasets sorted by name; None for fewer than 3 points or a constant
    input). pooled_within: a partial Spearman correlation controlling for dataset: both variables
    are ranked within each dataset (average ranks for ties), each dataset's mean rank removed, and
    the residuals correlated (Pearson); its two-sided p comes from the t distribution with
    n - 2 - (datasets - 1) degrees of freedom (points assumed independent given the dataset).
    None where it cannot be computed (no degrees of freedom, or no within-dataset spread).
    """
    points = [r for r in rows if not _missing(r.get("suggestibility")) and not _missing(r.get("gain"))]
    by_dataset: dict[str, list[tuple[float, float]]] = {}
    for r in points:
        by_dataset.setdefault(str(r["dataset"]), []).append((float(r["suggestibility"]), float(r["gain"])))
    per_dataset, xs, ys = [], [], []
    for dataset in sorted(by_dataset):
        values = np.asarray(by_dataset[dataset], dtype=float)
        rho, p = _spearman_one(values[:, 0], values[:, 1])
        per_dataset.append({"dataset": dataset, "n": int(len(values)), "rho": rho, "p": p})
        for column, out in ((0, xs), (1, ys)):
            ranks = stats.rankdata(values[:, column])
            out.append(ranks - ranks.mean())
    n, groups = len(points), len(by_dataset)
    method = ("partial Spearman controlling for dataset: ranks within each dataset, centred on the dataset's "
              "mean rank, correlated by Pearson; p from the t distribution with n - 2 - (datasets - 1) degrees "
              "of freedom, points assumed independent given the dataset")
    pooled_within = {"rho": None, "p": None, "n": n, "method": method}
    dof = n - 2 - (groups - 1)
    if n >= 3 and dof >= 1:
        x, y = np.concatenate(xs), np.concatenate(ys)
        sxx, syy = float(x @ x), float(y @ y)
        if sxx > 0 and syy > 0:
            rho = max(-1.0, min(1.0, float(x @ y) / math.sqrt(sxx * syy)))
            t = math.inf if abs(rho) >= 1.0 else abs(rho) * math.sqrt(dof / (1.0 - rho * rho))
            pooled_within["rho"], pooled_within["p"] = rho, float(2 * stats.t.sf(t, dof))
    return {"per_dataset": per_dataset, "pooled_within": pooled_within}


def repeat_spread(frame: pd.DataFrame) -> pd.DataFrame:
    """Accuracy (%) across repeats, per (model, dataset, strategy) with at least 2 distinct repeats.

    ``frame`` has a column ``repeat`` (int or str naming a consistency-probe repeat or a seed;
    compared as text). Each repeat's accuracy is computed like Table 1: the mean over users of
    each user's accuracy when the (model, dataset) cell has users, else the mean over items.
    Columns: model, dataset, strategy, repeats (the number of distinct repeats), mean, sd (sample
    SD, ddof=1), min, max. Sorted by model, dataset, then strategy in the study's order.
    """
    data = _prepared(frame, extra=("repeat",))
    if data.empty:
        return pd.DataFrame(columns=SPREAD_COLUMNS)
    has_users = (data["user"] != "").groupby([data["model"], data["dataset"]]).transform("any")
    data = data.assign(user=data["user"].where(has_users, ""))
    per_user = data.groupby(["model", "dataset", "strategy", "repeat", "user"], sort=False)["correct"].mean()
    per_repeat = 100 * per_user.groupby(level=["model", "dataset", "strategy", "repeat"], sort=False).mean()
    spread = per_repeat.groupby(level=["model", "dataset", "strategy"], sort=False).agg(
        repeats="count", mean="mean", sd="std", min="min", max="max").reset_index()  # std: ddof=1
    spread = spread[spread["repeats"] >= 2]
    rank = {name: i for i, name in enumerate(STRATEGIES)}
    spread = spread.assign(_s=spread["strategy"].map(lambda name: rank.get(name, len(STRATEGIES))))
    spread = spread.sort_values(["model", "dataset", "_s", "strategy"], kind="stable").drop(columns="_s")
    return spread.reset_index(drop=True)[SPREAD_COLUMNS].astype({"repeats": int, "mean": float, "sd": float,
                                                                  "min": float, "max": float})


def _plain(value):
    if isinstance(value, np.generic):
        value = value.item()
    missing = value is pd.NA or value is pd.NaT or (isinstance(value, float) and math.isnan(value))
    return None if missing else value


def records(df: pd.DataFrame) -> list[dict]:
    """A result frame as JSON-ready dicts: NaN becomes None, numpy scalars Python numbers."""
    return [{str(k): _plain(v) for k, v in row.items()} for row in df.to_dict("records")]


__all__ = ["holm", "mcnemar_exact", "paired", "pooled", "within_dataset_spearman", "repeat_spread", "records"]
