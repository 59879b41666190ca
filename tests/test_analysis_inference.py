"""Item-level statistics (critique.analysis.stats.inference): numbers worked by hand, bootstrap coverage
by simulation, the pooled GEE against a statsmodels formula fit, and the module's limits."""

from __future__ import annotations

import ast
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from critique.analysis.stats import inference
from critique.base.vocab import BASELINES, CRITIQUE_STRATEGIES, STRATEGIES

MODULE = Path(inference.__file__)


def predictions(rows) -> pd.DataFrame:
    """A frame from (model, dataset, strategy, user, item_id, correct) tuples."""
    return pd.DataFrame(rows, columns=["model", "dataset", "strategy", "user", "item_id", "correct"])


def pairs(model, dataset, strategy, baseline, outcomes, user=""):
    """Rows for items with (strategy correct, baseline correct) outcomes, ids i0, i1, ..."""
    return [(model, dataset, name, user, f"{user}i{i}", bool(value))
            for i, both in enumerate(outcomes) for name, value in zip((strategy, baseline), both)]


def test_mcnemar_exact_by_hand():
    # 2 * P(X <= 2), X ~ Binomial(11, 1/2) = 2 * (1 + 11 + 55) / 2048
    assert inference.mcnemar_exact(9, 2) == pytest.approx(0.0654296875, abs=1e-15)
    assert inference.mcnemar_exact(2, 9) == pytest.approx(0.0654296875, abs=1e-15)
    assert inference.mcnemar_exact(0, 5) == pytest.approx(2 / 32)
    assert inference.mcnemar_exact(3, 3) == 1.0
    assert inference.mcnemar_exact(0, 0) is None


def test_holm_on_a_known_vector_keeps_none_out_of_the_family():
    assert inference.holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    out = inference.holm([0.01, None, 0.04, 0.03, float("nan"), 0.005])
    assert out[1] is None and out[4] is None
    assert [out[i] for i in (0, 2, 3, 5)] == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert inference.holm([None, None]) == [None, None] and inference.holm([]) == []


def test_holm_agrees_with_statsmodels():
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(0)
    for size in (1, 2, 7, 40):
        p = rng.random(size) ** 3
        p[rng.random(size) < 0.2] = p[0]  # ties
        assert inference.holm(p) == pytest.approx(list(multipletests(p, method="holm")[1]), abs=1e-15)


def test_paired_row_worked_by_hand():
    # 9 wins, 2 losses, 5 both right, 4 both wrong: n = 20
    outcomes = [(1, 0)] * 9 + [(0, 1)] * 2 + [(1, 1)] * 5 + [(0, 0)] * 4
    frame = predictions(pairs("m", "d", "EP_CRIT", "zero_shot", outcomes))
    table = inference.paired(frame, resamples=500)
    assert list(table.columns) == inference.PAIRED_COLUMNS
    assert len(table) == 1
    row = table.iloc[0]
    assert (row["model"], row["dataset"], row["strategy"], row["baseline"]) == ("m", "d", "EP_CRIT", "zero_shot")
    assert row["n"] == 20
    assert row["discordant_wins"] == 9 and row["discordant_losses"] == 2
    assert row["acc_strategy"] == pytest.approx(70.0)  # (9 + 5) / 20
    assert row["acc_baseline"] == pytest.approx(35.0)  # (2 + 5) / 20
    assert row["diff"] == pytest.approx(35.0)
    assert row["p_mcnemar"] == pytest.approx(0.0654296875, abs=1e-15)
    assert row["p_holm"] == pytest.approx(0.0654296875, abs=1e-15)  # a family of one
    assert row["ci_low"] < row["diff"] < row["ci_high"]


def test_only_matched_items_count():
    frame = predictions(pairs("m", "d", "SEM_CRIT", "EP_LABEL", [(1, 0), (1, 1)])
                        + [("m", "d", "SEM_CRIT", "", "extra", False), ("m", "d", "EP_LABEL", "", "other", True)])
    row = inference.paired(frame, resamples=100).iloc[0]
    assert row["n"] == 2 and row["acc_strategy"] == 100.0 and row["acc_baseline"] == 50.0


def test_users_mean_accuracy_by_hand():
    # user a: strategy 2/2, baseline 1/2; user b: strategy 1/4, baseline 2/4
    frame = predictions(pairs("m", "pref", "EP+SEM_CRIT", "zero_shot", [(1, 1), (1, 0)], user="a")
                        + pairs("m", "pref", "EP+SEM_CRIT", "zero_shot", [(1, 0), (0, 1), (0, 0), (0, 1)], user="b"))
    row = inference.paired(frame, resamples=200).iloc[0]
    assert row["n"] == 6
    assert row["acc_strategy"] == pytest.approx((100 + 25) / 2)  # 62.5, not the item mean 50
    assert row["acc_baseline"] == pytest.approx((50 + 50) / 2)
    assert row["diff"] == pytest.approx(12.5)
    assert (row["discordant_wins"], row["discordant_losses"]) == (2, 2)
    assert row["p_mcnemar"] == 1.0


def test_bootstrap_resamples_whole_users():
    # every user's difference is 20 points although item differences vary: resampling users
    # gives a degenerate interval, resampling items would not
    outcomes = [(1, 0), (1, 0), (1, 1), (0, 1), (0, 0)]
    rows = []
    for u in range(6):
        rows += pairs("m", "pref", "EP_CRIT", "EP_LABEL", outcomes, user=f"u{u}")
    row = inference.paired(predictions(rows), resamples=300).iloc[0]
    assert row["diff"] == pytest.approx(20.0)
    assert row["ci_low"] == pytest.approx(20.0) and row["ci_high"] == pytest.approx(20.0)
    plain = inference.paired(predictions([r[:3] + ("",) + r[4:] for r in rows]), resamples=300).iloc[0]
    assert plain["ci_high"] - plain["ci_low"] > 10  # the same items without users: items resampled


def test_counting_bootstrap_of_items_equals_gathering():
    # the item path counts drawn indices below thresholds (wins first, then losses): on the same
    # index matrix it gives exactly what gathering the values gives
    d = np.array([1.0] * 30 + [-1.0] * 10 + [0.0] * 60)
    counted = inference._bootstrap(d, np.random.default_rng(1), 4000, 0.9)
    gathered = inference._bootstrap(d + 1e-12, np.random.default_rng(1), 4000, 0.9)  # not 0/1/-1: gathers
    assert counted == pytest.approx(gathered, abs=1e-9)


def test_duplicate_predictions_count_once():
    rows = pairs("m", "d", "EP_CRIT", "zero_shot", [(1, 0), (0, 0)])
    row = inference.paired(predictions(rows + [("m", "d", "EP_CRIT", "", "i1", True)]), resamples=50).iloc[0]
    assert (row["n"], row["discordant_wins"], row["acc_strategy"]) == (2, 1, 50.0)


def full_cell(model, dataset, rng, items=40):
    rows = []
    for strategy in STRATEGIES:
        for i in range(items):
            rows.append((model, dataset, strategy, "", f"i{i}", bool(rng.random() < 0.6)))
    return rows


def test_rows_order_columns_and_holm_family():
    rng = np.random.default_rng(1)
    frame = predictions(full_cell("zeta", "b", rng) + full_cell("alpha", "b", rng) + full_cell("alpha", "a", rng))
    table = inference.paired(frame, resamples=200)
    expected_pairs = [(s, b) for s in CRITIQUE_STRATEGIES for b in BASELINES]
    expected = [(m, d, s, b) for m, d in (("alpha", "a"), ("alpha", "b"), ("zeta", "b")) for s, b in expected_pairs]
    assert list(zip(table["model"], table["dataset"], table["strategy"], table["baseline"])) == expected
    raw = [None if math.isnan(p) else p for p in table["p_mcnemar"]]
    assert [None if math.isnan(p) else p for p in table["p_holm"]] == inference.holm(raw)
    assert table["n"].tolist() == [40] * len(table)


def test_seeded_and_independent_of_other_cells():
    rng = np.random.default_rng(2)
    one = predictions(full_cell("m", "d", rng))
    other = predictions(full_cell("m2", "d2", rng))
    first = inference.paired(one, seed=7, resamples=400)
    again = inference.paired(one, seed=7, resamples=400)
    pd.testing.assert_frame_equal(first, again)
    both = inference.paired(pd.concat([other, one], ignore_index=True), seed=7, resamples=400)
    mine = both[both["model"] == "m"].reset_index(drop=True)
    pd.testing.assert_frame_equal(first[["ci_low", "ci_high"]], mine[["ci_low", "ci_high"]])
    shifted = inference.paired(one, seed=8, resamples=400)
    assert not np.allclose(first[["ci_low", "ci_high"]], shifted[["ci_low", "ci_high"]])


def test_bootstrap_coverage_items():
    # 200 simulated studies, each its own cell: 200 items, baseline right w.p. 0.5, strategy right
    # w.p. 0.6, independently: the expected difference is exactly 10 points
    rng = np.random.default_rng(20240601)
    sims, items = 200, 200
    base = rng.random((sims, items)) < 0.5
    strat = rng.random((sims, items)) < 0.6
    models = np.repeat([f"sim{k:03d}" for k in range(sims)], items)
    item_ids = np.tile([f"i{i}" for i in range(items)], sims)
    frame = pd.concat([pd.DataFrame({"model": models, "dataset": "d", "strategy": name, "user": "",
                                     "item_id": item_ids, "correct": values.ravel()})
                       for name, values in (("EP_CRIT", strat), ("zero_shot", base))], ignore_index=True)
    table = inference.paired(frame, seed=3, resamples=500)
    assert len(table) == sims
    covered = ((table["ci_low"] <= 10.0) & (10.0 <= table["ci_high"])).mean()
    assert 0.88 <= covered <= 0.99


def test_bootstrap_coverage_users():
    # 10 users x 25 items per simulated study; user ability varies, and so does the user's gain
    # (uniform on 0..20 points): the population difference is 10 points
    rng = np.random.default_rng(99)
    sims, users, items = 200, 10, 25
    parts = []
    for k in range(sims):
        base_p = rng.uniform(0.3, 0.6, users)[:, None]
        gain = rng.uniform(0.0, 0.2, users)[:, None]
        base = rng.random((users, items)) < base_p
        strat = rng.random((users, items)) < base_p + gain
        user = np.repeat([f"u{u}" for u in range(users)], items)
        item = np.tile([f"i{i}" for i in range(items)], users)
        for name, values in (("SEM_CRIT", strat), ("EP_LABEL", base)):
            parts.append(pd.DataFrame({"model": f"sim{k:03d}", "dataset": "pref", "strategy": name, "user": user,
                                       "item_id": item, "correct": values.ravel()}))
    table = inference.paired(pd.concat(parts, ignore_index=True), seed=5, resamples=500)
    covered = ((table["ci_low"] <= 10.0) & (10.0 <= table["ci_high"])).mean()
    assert 0.8 <= covered <= 0.99  # 10 clusters: the percentile interval runs a little narrow


def test_paired_empty_and_records_are_json_ready():
    empty = inference.paired(predictions([]))
    assert list(empty.columns) == inference.PAIRED_COLUMNS and empty.empty
    frame = predictions(pairs("m", "d", "EP_CRIT", "zero_shot", [(1, 1), (0, 0)]))
    table = inference.paired(frame, resamples=50)
    assert math.isnan(table.iloc[0]["p_mcnemar"])  # no discordant pair
    out = inference.records(table)
    assert out[0]["p_mcnemar"] is None and out[0]["p_holm"] is None
    assert type(out[0]["n"]) is int and type(out[0]["diff"]) is float
    json.dumps(out)


EFFECTS = {"zero_shot": 0.0, "EP_LABEL": 0.2, "EP_CRIT": 0.4, "SEM_CRIT": 0.5, "EP+SEM_CRIT": 0.8}


def logit_frame(seed=11, items=300):
    """3 models x 2 datasets, intercepts -1..1, a common strategy effect on the log-odds scale."""
    rng = np.random.default_rng(seed)
    parts, intercepts = [], iter(np.linspace(-1, 1, 6))
    for model in ("m1", "m2", "m3"):
        for dataset in ("d1", "d2"):
            intercept = next(intercepts)
            for strategy, effect in EFFECTS.items():
                p = 1 / (1 + math.exp(-(intercept + effect)))
                parts.append(pd.DataFrame({"model": model, "dataset": dataset, "strategy": strategy, "user": "",
                                           "item_id": [f"i{i}" for i in range(items)],
                                           "correct": rng.random(items) < p}))
    return pd.concat(parts, ignore_index=True)


def test_pooled_recovers_a_known_odds_ratio():
    table = inference.pooled(logit_frame())
    assert list(table.columns) == inference.POOLED_COLUMNS
    assert list(zip(table["strategy"], table["baseline"])) == [(s, b) for s in CRITIQUE_STRATEGIES for b in BASELINES]
    for row in table.itertuples():
        true = math.exp(EFFECTS[row.strategy] - EFFECTS[row.baseline])
        assert row.ci_low <= true <= row.ci_high, row
        assert abs(math.log(row.odds_ratio) - math.log(true)) < 0.2
        assert "GEE" in row.method and "clustered by item" in row.method
    best = table[(table["strategy"] == "EP+SEM_CRIT") & (table["baseline"] == "zero_shot")].iloc[0]
    assert best["odds_ratio"] == pytest.approx(math.exp(0.8), rel=0.15) and best["p"] < 1e-8


def test_pooled_matches_a_statsmodels_formula_fit_with_each_reference():
    import statsmodels.api as sm
    import statsmodels.formula.api as smf

    frame = logit_frame(seed=4, items=120)
    table = inference.pooled(frame)
    data = frame.assign(y=frame["correct"].astype(float), cell=frame["model"] + "_" + frame["dataset"],
                        group=frame["dataset"] + "|" + frame["user"] + "|" + frame["item_id"])
    for reference in BASELINES:
        fit = smf.gee(f"y ~ 0 + C(cell) + C(strategy, Treatment('{reference}'))", "group", data,
                      family=sm.families.Binomial(), cov_struct=sm.cov_struct.Independence()).fit()
        ci = fit.conf_int()
        for strategy in CRITIQUE_STRATEGIES:
            name = f"C(strategy, Treatment('{reference}'))[T.{strategy}]"
            row = table[(table["strategy"] == strategy) & (table["baseline"] == reference)].iloc[0]
            assert row["odds_ratio"] == pytest.approx(math.exp(fit.params[name]), rel=1e-5)
            assert row["ci_low"] == pytest.approx(math.exp(ci.loc[name, 0]), rel=1e-4)
            assert row["ci_high"] == pytest.approx(math.exp(ci.loc[name, 1]), rel=1e-4)
            assert row["p"] == pytest.approx(fit.pvalues[name], rel=1e-3, abs=1e-12)


def test_pooled_clusters_by_dataset_user_and_item(monkeypatch):
    # the same item_id under two users or two datasets is two clusters; models and strategies share one
    frame = logit_frame(items=30)
    number = frame["item_id"].str[1:].astype(int)
    frame = frame.assign(user=np.where(number < 15, "u1", "u2"), item_id="i" + (number % 15).astype(str))
    seen = {}
    real = inference._GEE

    def spy(*args, groups=None, **kwargs):
        seen["groups"] = np.asarray(groups)
        return real(*args, groups=groups, **kwargs)

    monkeypatch.setattr(inference, "_GEE", spy)
    table = inference.pooled(frame)
    assert np.isfinite(table["odds_ratio"]).all()
    expected = frame.groupby(["dataset", "user", "item_id"]).ngroups
    assert expected == 2 * 30 and len(np.unique(seen["groups"])) == expected  # 30 if users were ignored
    assert f"{expected} clusters" in table["method"].iloc[0]


def test_pooled_cannot_fit_and_says_why():
    frame = logit_frame(items=20)
    no_variation = inference.pooled(frame.assign(correct=True))
    assert no_variation["odds_ratio"].isna().all() and no_variation["p"].isna().all()
    assert no_variation["method"].str.contains("no variation").all()
    assert all(r["odds_ratio"] is None and r["ci_low"] is None for r in inference.records(no_variation))

    # a strategy always right is left out of the fit (its rows say why); the others are still estimated
    separated = inference.pooled(frame.assign(correct=np.where(frame["strategy"] == "EP_CRIT", True,
                                                               frame["correct"])))
    mine = separated["strategy"] == "EP_CRIT"
    assert separated[mine]["method"].str.contains("EP_CRIT all right or all wrong").all()
    assert separated[mine]["odds_ratio"].isna().all() and separated[~mine]["odds_ratio"].notna().all()

    # quasi-complete separation no single strategy shows: in cell A zero_shot and EP+SEM_CRIT are all
    # right, EP_CRIT half; in cell B EP_CRIT is all wrong, the others half: (cell A up, EP_CRIT down) separates
    counts = {("A", "zero_shot"): 10, ("A", "EP+SEM_CRIT"): 10, ("A", "EP_CRIT"): 5,
              ("B", "zero_shot"): 5, ("B", "EP+SEM_CRIT"): 5, ("B", "EP_CRIT"): 0}
    quasi = predictions([("m", cell, strategy, "", f"i{i}", i < right)
                         for (cell, strategy), right in counts.items() for i in range(10)])
    result = inference.pooled(quasi)
    assert result["odds_ratio"].isna().all() and result["method"].str.contains("separation").all()

    no_baseline = inference.pooled(frame[~frame["strategy"].isin(BASELINES)])
    assert no_baseline["odds_ratio"].isna().all() and no_baseline["method"].str.contains("no baseline").all()

    tiny = predictions([("m", "d", "EP_CRIT", "", "i", True), ("m", "d", "zero_shot", "", "i", False)])
    assert inference.pooled(tiny)["method"].str.contains("perfect separation|too few").all()  # one item each: constant
    assert inference.pooled(predictions([]))["method"].str.startswith("not fitted").all()


def test_pooled_without_one_baseline_fits_the_other():
    table = inference.pooled(logit_frame()[lambda f: f["strategy"] != "EP_LABEL"])
    against_label = table[table["baseline"] == "EP_LABEL"]
    assert against_label["odds_ratio"].isna().all()
    assert against_label["method"].str.contains("EP_LABEL not in the data").all()
    against_zero = table[table["baseline"] == "zero_shot"]
    assert np.isfinite(against_zero["odds_ratio"]).all() and against_zero["method"].str.contains("GEE").all()


def confounded_points():
    # across datasets both variables rise together; within each dataset gain falls with suggestibility
    gains = {"A": [5, 4, 3, 1, 2], "B": [5, 4, 3, 1, 2], "C": [3, 5, 4, 1, 2]}
    return [{"model": f"m{i}", "dataset": d, "suggestibility": 10 * k + i + 1, "gain": 10 * k + g}
            for k, (d, values) in enumerate(gains.items()) for i, g in enumerate(values)]


def test_within_dataset_spearman_undoes_a_dataset_confound():
    points = confounded_points()
    naive = stats.spearmanr([p["suggestibility"] for p in points], [p["gain"] for p in points]).statistic
    assert naive > 0.8
    out = inference.within_dataset_spearman(points)
    rhos = {r["dataset"]: r["rho"] for r in out["per_dataset"]}
    assert rhos == pytest.approx({"A": -0.9, "B": -0.9, "C": -0.6})
    assert all(r["n"] == 5 and r["p"] is not None for r in out["per_dataset"])
    pooled = out["pooled_within"]
    # centred ranks: x.y = -9 - 9 - 6, x.x = y.y = 30 -> rho = -0.8; dof = 15 - 2 - 2 = 11
    assert pooled["rho"] == pytest.approx(-0.8) and pooled["n"] == 15
    t = -0.8 * math.sqrt(11 / (1 - 0.64))
    assert pooled["p"] == pytest.approx(2 * stats.t.sf(abs(t), 11))
    assert "dataset" in pooled["method"]


def test_within_dataset_spearman_none_where_it_cannot_compute():
    points = [{"model": "a", "dataset": "X", "suggestibility": 1, "gain": 2},
              {"model": "b", "dataset": "X", "suggestibility": 2, "gain": 1},
              {"model": "a", "dataset": "Y", "suggestibility": 1, "gain": 3},
              {"model": "b", "dataset": "Y", "suggestibility": 2, "gain": 3},
              {"model": "c", "dataset": "Y", "suggestibility": 3, "gain": 3},
              {"model": "d", "dataset": "Y", "suggestibility": None, "gain": 3}]
    out = inference.within_dataset_spearman(points)
    assert out["per_dataset"] == [{"dataset": "X", "n": 2, "rho": None, "p": None},
                                  {"dataset": "Y", "n": 3, "rho": None, "p": None}]
    # 5 points, 2 datasets: 2 degrees of freedom; centred ranks x = (-.5, .5 | -1, 0, 1), y = (.5, -.5 | 0, 0, 0)
    rho = -0.5 / math.sqrt(2.5 * 0.5)
    assert out["pooled_within"]["rho"] == pytest.approx(rho) and out["pooled_within"]["n"] == 5
    assert out["pooled_within"]["p"] == pytest.approx(2 * stats.t.sf(abs(rho) * math.sqrt(2 / (1 - rho**2)), 2))
    flat = inference.within_dataset_spearman([dict(p, gain=1) for p in points[:5]])
    assert flat["pooled_within"]["rho"] is None and flat["pooled_within"]["p"] is None
    assert inference.within_dataset_spearman([])["pooled_within"]["rho"] is None
    json.dumps(out)


def test_repeat_spread_by_hand():
    rows = []
    for repeat, right in ((1, 2), (2, 3), (3, 4)):  # 50, 75, 100 percent of 4 items
        rows += [("m", "d", "EP_CRIT", "", f"i{i}", i < right, repeat) for i in range(4)]
    rows += [("m", "d", "zero_shot", "", f"i{i}", True, 1) for i in range(4)]  # one repeat: left out
    # users: repeat s1: a 2/2, b 1/4 -> 62.5; repeat s2: a 1/2, b 2/4 -> 50
    for repeat, a, b in (("s1", [1, 1], [1, 0, 0, 0]), ("s2", [1, 0], [1, 1, 0, 0])):
        rows += [("m", "pref", "SEM_CRIT", "a", f"a{i}", bool(v), repeat) for i, v in enumerate(a)]
        rows += [("m", "pref", "SEM_CRIT", "b", f"b{i}", bool(v), repeat) for i, v in enumerate(b)]
    frame = pd.DataFrame(rows, columns=["model", "dataset", "strategy", "user", "item_id", "correct", "repeat"])
    table = inference.repeat_spread(frame)
    assert list(table.columns) == inference.SPREAD_COLUMNS
    assert list(zip(table["dataset"], table["strategy"])) == [("d", "EP_CRIT"), ("pref", "SEM_CRIT")]
    first, second = inference.records(table)
    assert first == {"model": "m", "dataset": "d", "strategy": "EP_CRIT", "repeats": 3, "mean": 75.0,
                     "sd": pytest.approx(25.0), "min": 50.0, "max": 100.0}
    assert second["repeats"] == 2 and second["mean"] == pytest.approx(56.25)
    assert second["sd"] == pytest.approx(12.5 / math.sqrt(2))
    assert (second["min"], second["max"]) == (pytest.approx(50.0), pytest.approx(62.5))
    assert inference.repeat_spread(frame.iloc[:0]).empty


def test_module_is_short_and_imports_only_what_it_may():
    source = MODULE.read_text()
    assert len(source.splitlines()) < 400
    allowed = {"numpy", "scipy", "pandas", "statsmodels", "critique", "__future__", "hashlib", "math", "warnings"}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        else:
            continue
        for name in names:
            assert name.split(".")[0] in allowed, name
            mine = ("critique.base.vocab", "critique.analysis.stats.core")
            assert not name.startswith("critique.") or name in mine, name
