"""Every paired test says what it could have seen: its minimum detectable effect at 80% power (analysis.stats.core.
detectable_effect, beside each McNemar p in the tables and in `critique run`'s lines), and `critique plan` says how
many paired items a difference needs (analysis.stats.core.items_needed) and, from a pilot run, what they would cost."""

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats
from statsmodels.stats.power import normal_sample_size_one_tail

from critique.analysis import synthetic
from critique.analysis.stats.core import ALPHA, POWER, detectable_effect, items_needed
from critique.base.price import Price
from critique.cli import main

STRATEGIES = ["zero_shot", "EP_LABEL", "EP_CRIT", "SEM_CRIT", "EP+SEM_CRIT"]
SCENARIOS = [(250, 92), (250, 40), (1000, 200)]  # (paired items, discordant items)


def connor_items(diff: float, discordance: float) -> float:
    """Connor's (1987) sample size through statsmodels: the one-tail normal approximation of the two-sided test."""
    d = diff / 100
    return float(normal_sample_size_one_tail(d, POWER, ALPHA / 2, std_null=math.sqrt(discordance),
                                             std_alternative=math.sqrt(discordance - d * d)))


@pytest.mark.parametrize("diff, discordance", [(10, 0.3), (5, 0.1), (20, 0.5), (2.4, 0.368), (30, 0.3)])
def test_the_items_needed_are_connors_as_statsmodels_computes_them(diff, discordance):
    assert items_needed(diff, discordance) == math.ceil(connor_items(diff, discordance))


@pytest.mark.parametrize("n, discordant", [(25, 18), (50, 15), *SCENARIOS, (5000, 100)])
def test_the_detectable_effect_is_the_difference_whose_items_are_n(n, discordant):
    mde = detectable_effect(n, discordant)
    assert connor_items(mde, discordant / n) == pytest.approx(n, rel=1e-9)
    assert items_needed(mde * 1.001, discordant / n) <= n < items_needed(mde * 0.999, discordant / n)


def simulated_power(n: int, discordant: int, diff: float, rng: np.random.Generator, draws: int = 4000):
    """The share of `draws` simulated studies of n paired items, discordance discordant / n and true difference
    `diff` points, that the asymptotic McNemar test ((wins - losses) / sqrt(wins + losses) against the normal) and the
    exact one (scipy's binomtest on the discordant items) find at ALPHA."""
    psi, d = discordant / n, diff / 100
    counts = rng.multinomial(n, [(psi + d) / 2, (psi - d) / 2, 1 - psi], size=draws)
    wins, losses = counts[:, 0], counts[:, 1]
    z = (wins - losses) / np.sqrt(np.maximum(wins + losses, 1))
    asymptotic = float(np.mean(2 * scipy_stats.norm.sf(np.abs(z)) < ALPHA))
    exact_p = {pair: scipy_stats.binomtest(pair[0], sum(pair), 0.5).pvalue
               for pair in set(zip(wins.tolist(), losses.tolist())) if sum(pair)}
    exact = float(np.mean([exact_p.get(pair, 1.0) < ALPHA for pair in zip(wins.tolist(), losses.tolist())]))
    return asymptotic, exact


@pytest.mark.parametrize("n, discordant", SCENARIOS)
def test_a_study_with_the_detectable_effect_finds_it_about_80_percent_of_the_time(n, discordant):
    """Simulated, seeded: the normal-approximation test finds the mde at 80% power; the exact test the tables print
    is a little more conservative, as the notes say."""
    asymptotic, exact = simulated_power(n, discordant, detectable_effect(n, discordant), np.random.default_rng(n))
    assert asymptotic == pytest.approx(POWER, abs=0.03)
    assert 0.74 <= exact <= POWER + 0.01


def test_a_smaller_difference_is_found_less_often():
    rng = np.random.default_rng(7)
    n, discordant = 250, 92
    _, at_mde = simulated_power(n, discordant, detectable_effect(n, discordant), rng)
    _, at_half = simulated_power(n, discordant, detectable_effect(n, discordant) / 2, rng)
    assert at_half < 0.4 < at_mde


def test_what_cannot_be_stated_is_none():
    assert detectable_effect(250, 0) is None  # no discordant item: nothing to test
    assert detectable_effect(0, 0) is None
    assert detectable_effect(250, 3) is None  # 3 discordant items: even 3 to 0 gives p = 0.25
    # by hand: sqrt(0.08) * (1.95996 * sqrt(250) + 0.84162 * sqrt(250 - 1.95996^2 + 0.84162^2)) / (250 + 0.84162^2)
    assert detectable_effect(250, 20) == pytest.approx(4.988, abs=1e-3)
    assert items_needed(10, 0.05) is None  # a 10-point difference needs at least 10% of the items discordant
    with pytest.raises(ValueError):
        items_needed(0, 0.3)
    with pytest.raises(ValueError):
        items_needed(10, 0)


def frame(wins: int, losses: int, n: int):
    """n items answered by EP_LABEL and zero_shot: `wins` right under EP_LABEL only, `losses` under zero_shot only,
    the rest alike (half right, half wrong)."""
    import pandas as pd

    alike = [(True, True), (False, False)] * ((n - wins - losses) // 2)
    pairs = [(True, False)] * wins + [(False, True)] * losses + alike
    return pd.DataFrame([{"model": "m", "dataset": "d", "strategy": strategy, "item_id": f"t{i}", "correct": right}
                         for i, pair in enumerate(pairs) for strategy, right in zip(("EP_LABEL", "zero_shot"), pair)])


def test_each_paired_row_has_its_detectable_effect():
    from critique.analysis.stats import inference

    rows = inference.records(inference.paired(frame(20, 12, 200), pairs=inference.CONTROL_PAIRS, resamples=50))
    row, = rows
    assert (row["n"], row["discordant_wins"], row["discordant_losses"]) == (200, 20, 12)
    assert row["mde"] == pytest.approx(detectable_effect(200, 32))
    none, = inference.records(inference.paired(frame(0, 0, 50), pairs=inference.CONTROL_PAIRS, resamples=50))
    assert none["mde"] is None


def test_the_methods_and_online_comparisons_carry_it_too():
    from critique.analysis.field import methods
    from critique.analysis.memory import online

    mine = {f"t{i}": {"correct": i < 30} for i in range(100)}
    theirs = {f"t{i}": {"correct": 10 <= i < 40} for i in range(100)}
    row = methods._paired(mine, theirs)
    assert (row["wins"], row["losses"]) == (10, 10) and row["mde"] == pytest.approx(detectable_effect(100, 20))
    stream, off = ({"steps": [{"user": None, "item_id": k, **v} for k, v in arm.items()]} for arm in (mine, theirs))
    assert online._gain(stream, off)["mde"] == pytest.approx(detectable_effect(100, 20))


def plain_run(path, right, n=25, price=None):
    """A synthetic run of n test items: per strategy the first right[i] items answered right, and one call per
    prediction."""
    head = synthetic.manifest("m", "d", run_id=path.name)
    head["dataset"]["n_test"] = n
    head["price"] = price.to_json() if price else None
    predictions = [synthetic.prediction("test", s, f"t{i}", i < k) for s, k in zip(STRATEGIES, right)
                   for i in range(n)]
    calls = [synthetic.call("test", s, f"t{i}", completion_tokens=100, prompt="q" * 4000) for s in STRATEGIES
             for i in range(n)]
    return synthetic.write_run(path, head, calls, predictions)


def test_the_run_table_says_what_each_test_could_have_seen(tmp_path, capsys):
    from critique.analysis.study.run_table import print_table

    print_table(plain_run(tmp_path / "pos", right=(2, 20, 2, 7, 2)))
    out = capsys.readouterr().out
    assert f"it had 80% power for a difference of {detectable_effect(25, 18):.1f} points or more" in out
    assert "EP_CRIT vs zero_shot on the same 25 items: +0.0 points (0 right only under EP_CRIT, 0 only under " \
           "zero_shot; no discordant item); the smallest detectable difference is undefined without a discordant " \
           "item" in out
    assert "SEM_CRIT vs zero_shot on the same 25 items: +20.0 points (5 right only under SEM_CRIT, 0 only under " \
           f"zero_shot; exact McNemar p = {0.0625:.2g}); too few discordant items for any difference to reach 80% " \
           "power" in out


def test_the_inference_tables_show_the_detectable_effect(tmp_path, capsys):
    plain_run(tmp_path / "pos", right=(2, 20, 2, 7, 2))
    assert main(["tables", str(tmp_path), "--inference"]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("| model | dataset | strategy | baseline"))
    assert "| p_holm | mde |" in header
    assert "mde: the minimum detectable effect" in out


def test_plan_says_the_items_a_difference_needs(capsys):
    assert main(["plan", "--detect", "10", "--discordance", "0.3"]) == 0
    out = capsys.readouterr().out
    assert "at 80% power and alpha 0.05" in out
    assert f"at discordance 0.3: {items_needed(10, 0.3)} paired test items" in out
    assert main(["plan", "--detect", "10", "--discordance", "0.05"]) == 0
    assert "none: a 10-point difference cannot occur when only 5% of the items are answered differently" in \
        capsys.readouterr().out


def test_plan_from_a_pilot_says_what_the_items_would_cost(tmp_path, capsys):
    price = Price(1.0, 2.0, "--price")  # $ per million: 1,000 prompt + 100 completion tokens a call = $0.0012
    run = plain_run(tmp_path / "pilot", right=(5, 15, 5, 5, 10), price=price)
    assert main(["plan", "--detect", "20", str(run)]) == 0
    out = capsys.readouterr().out
    items = items_needed(20, 10 / 25)
    calls, dollars = 5 * items, 5 * items * price.cost(1000, 100)
    assert (f"EP_LABEL vs zero_shot (discordance 0.4: 10 of the pilot's 25 items): {items} paired test items; about "
            f"{calls:,} calls, ${dollars:,.4f} (the pilot's 5.0 calls per test item)") in out
    assert "EP_CRIT vs zero_shot: undefined: the two answered none of the pilot's 25 items differently" in out


@pytest.mark.parametrize("argv", [["--detect", "10"], ["--detect", "0", "--discordance", "0.3"],
                                  ["--detect", "10", "--discordance", "1.5"]])
def test_plan_refuses_what_it_cannot_answer(argv, capsys):
    assert main(["plan", *argv]) == 2
    assert capsys.readouterr().err.startswith("critique: error: ")


def test_the_docs_quote_the_plan():
    from shipped import CLI, page

    assert f"critique plan --detect 10 --discordance 0.3 # at discordance 0.3: {items_needed(10, 0.3)} paired " \
           "test items" in page(CLI)
