"""The statistics pinned against values computed by hand."""

import math

import pytest

from critique.analysis.stats.core import paired_summary, spearman

T_975_DF3 = 3.182446305284263  # the 97.5% quantile of Student's t with 3 degrees of freedom (tables)


def test_paired_summary_of_four_differences():
    s = paired_summary([2, -1, 3, 0])
    sd = math.sqrt((1 + 4 + 4 + 1) / 3)  # deviations from the mean 1.0: 1, -2, 2, -1
    assert s["n"] == 4
    assert s["mean"] == pytest.approx(1.0)
    assert s["sd"] == pytest.approx(sd)
    assert s["ci_low"] == pytest.approx(1.0 - T_975_DF3 * sd / 2)
    assert s["ci_high"] == pytest.approx(1.0 + T_975_DF3 * sd / 2)
    assert (s["wins"], s["losses"], s["ties"]) == (2, 1, 1)
    # the tie is left out: 2 wins of 3; P(X=k), X ~ Bin(3, 1/2) = 1/8, 3/8, 3/8, 1/8: every outcome counts
    assert s["p_sign"] == pytest.approx(1.0)


def test_sign_test_is_exact_and_two_sided():
    # 6 wins, 1 loss: p = 2 * P(X >= 6), X ~ Bin(7, 1/2) = 2 * (7 + 1) / 128
    assert paired_summary([1, 2, 3, 4, 5, 6, -1])["p_sign"] == pytest.approx(16 / 128)
    # 5 wins of 5: p = 2 / 32
    s = paired_summary([5, 5, 5, 5, 5])
    assert s["p_sign"] == pytest.approx(2 / 32)
    assert s["sd"] == 0 and s["ci_low"] == s["ci_high"] == 5


def test_ties_are_found_through_float_noise():
    s = paired_summary([77.77777777777777 - 66.66666666666667, 11.111111111111114, 0.1 + 0.2 - 0.3])
    assert (s["wins"], s["losses"], s["ties"]) == (2, 0, 1)


def test_degenerate_inputs_give_none_not_nan():
    assert paired_summary([]) == {"n": 0, "mean": None, "sd": None, "ci_low": None, "ci_high": None,
                                  "wins": 0, "losses": 0, "ties": 0, "p_sign": None}
    one = paired_summary([3.0])
    assert one["mean"] == 3.0 and one["sd"] is None and one["ci_low"] is None and one["p_sign"] == 1.0
    assert paired_summary([0, 0])["p_sign"] is None  # no win and no loss: no sign test


def test_spearman_with_a_tie():
    # ranks of y = [5, 6, 7, 8, 7]: 1, 2, 3.5, 5, 3.5; Pearson on ranks = 8 / sqrt(10 * 9.5)
    result = spearman([1, 2, 3, 4, 5], [5, 6, 7, 8, 7])
    assert result["rho"] == pytest.approx(8 / math.sqrt(95))
    # t = rho * sqrt(3 / (1 - rho^2)) = 2.4887 on 3 df: two-sided p = 0.0886
    assert result["p"] == pytest.approx(0.0886, abs=5e-4)
    assert result["n"] == 5


def test_spearman_needs_three_varying_points():
    assert spearman([1, 2], [2, 1])["rho"] is None
    assert spearman([1, 1, 1], [1, 2, 3])["rho"] is None
    assert spearman([1, 2, 3], [3, 2, 1])["rho"] == pytest.approx(-1.0)


def test_the_helper_process_gives_the_same_numbers():
    from critique.analysis.stats import core as stats

    cases = [("paired_summary", ([2, -1, 3, 0],)), ("paired_summary", ([5, 5, 5, 5, 5],)),
             ("paired_summary", ([],)), ("spearman", ([1, 2, 3, 4], [2, 1, 4, 3])), ("spearman", ([1, 2], [3, 4]))]
    local = [getattr(stats, name)(*args) for name, args in cases]
    stats.start_helper()
    try:
        assert stats._helper is not None and stats._helper[0].is_alive()
        assert [getattr(stats, name)(*args) for name, args in cases] == local
        pid = stats._helper[0].pid
        assert stats.paired_summary([1.0, 2.0])["n"] == 2 and stats._helper[0].pid == pid  # the same helper
    finally:
        stats.stop_helper()
    assert stats._helper is None


def test_a_dead_helper_falls_back_to_this_process():
    from critique.analysis.stats import core as stats

    stats.start_helper()
    try:
        stats._helper[0].kill()
        stats._helper[0].join()
        assert stats.paired_summary([2, -1, 3, 0]) == stats._paired_summary([2, -1, 3, 0])
        assert stats._helper is None  # given up, not asked again
    finally:
        stats.stop_helper()


def test_the_numbers_are_scipy_statss():
    """Student's t comes from scipy.special (what scipy.stats.t calls): the intervals and Spearman's rho and p
    are scipy.stats's to the bit; the sign test, from whole binomial coefficients, agrees with binomtest."""
    import random

    import numpy as np
    from scipy import stats as scipy_stats

    from critique.analysis.stats import core as stats

    rng = random.Random(7)
    for _ in range(300):
        n = rng.randint(2, 30)
        d = np.round(np.array([round(rng.gauss(0.5, 3), rng.choice([0, 2])) for _ in range(n)]), stats.TIE_DECIMALS)
        mine = stats._paired_summary(list(d))
        if d.std(ddof=1) > 0:
            low, high = scipy_stats.t.interval(0.95, n - 1, loc=d.mean(), scale=scipy_stats.sem(d))
            assert (mine["ci_low"], mine["ci_high"]) == (float(low), float(high))
        if mine["wins"] + mine["losses"]:
            reference = scipy_stats.binomtest(mine["wins"], mine["wins"] + mine["losses"]).pvalue
            assert mine["p_sign"] == pytest.approx(reference, rel=1e-12)
        x = [rng.choice([1.0, 2.0, rng.random()]) for _ in range(n + 1)]
        y = [v * rng.random() + rng.choice([0, 1]) for v in x]
        found = stats._spearman(x, y)
        if found["rho"] is not None:
            reference = scipy_stats.spearmanr(np.round(x, stats.TIE_DECIMALS), np.round(y, stats.TIE_DECIMALS))
            assert (found["rho"], found["p"]) == (float(reference.statistic), float(reference.pvalue))
