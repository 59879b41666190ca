"""Figures docs/results.md quotes from the shipped logs are the figures `critique tables logs --format json`
computes: each test below rebuilds a quoted sentence from the tables' JSON (or the run directories' memory)
and finds it in docs/results.md, so a change to the logs or to the analysis that moves a figure fails here until
docs/results.md says the new one."""

import json

import pytest

from critique.cli import main
from shipped import LOGS, QWEN, RESULTS, listed as _listed, pct as _pct, results


@pytest.fixture
def shipped(shipped_tables) -> dict:
    return shipped_tables


def gate_sentence(rows: list[dict]) -> str:
    """docs/results.md's sentence of one dataset's gate sweep (rows of the gate table, by threshold)."""
    rows = sorted(rows, key=lambda r: r["gate"])
    gates = ", ".join(f"{r['gate']:g}" for r in rows)
    tokens = _listed([f"{r['injected_tokens']:.0f}" for r in rows])
    empty = _listed([_pct(r["empty"]) for r in rows])
    accuracy = _listed([_pct(r["accuracy"]) for r in rows])
    return f"T = {gates} inject {tokens} example tokens per question, leave {empty} of the prompts memory-free, " \
           f"at {accuracy}"


@pytest.mark.parametrize("dataset", ["mcr-gen", "pref-gen"])
def test_the_gate_sweep_figures(shipped, dataset):
    rows = [r for r in shipped["gate"] if r["dataset"] == dataset and r["strategy"] == "EP_CRIT"]
    assert len(rows) == 3
    assert gate_sentence(rows) in results()


def test_the_gate_thresholds_are_the_train_quantiles_the_results_name():
    for dataset in ("mcr-gen", "pref-gen"):
        chosen = []
        for path in sorted(LOGS.glob(f"{dataset}__*__gate-*")):
            ablation = json.loads((path / "manifest.json").read_text(encoding="utf-8"))["ablation"]
            assert ablation["chosen"]["split"] == "train", path
            chosen.append((ablation["chosen"]["quantile"], ablation["value"]))
        assert [q for q, _ in sorted(chosen)] == [0.25, 0.5, 0.75]
        quoted = f"{dataset} {', '.join(f'{v:g}' for _, v in sorted(chosen))}"
        assert quoted in results(), quoted


def test_the_shipped_semantic_memory_is_as_described():
    pools = json.loads((LOGS / "pref-gen__local_smollm2" / "memory" / "semantic.json").read_text(encoding="utf-8"))
    options = "\n".join(f"- The answer is {o}" for o in "ABCDE")
    assert sum(pool["advice"] == options for pool in pools.values()) == 6 and len(pools) == 10
    assert "six of the ten users' advice is the five lines \"The answer is A\" ... \"The answer is E\"" in results()


@pytest.mark.parametrize("dataset", ["control-pos", "control-neg"])
def test_the_controls_table(shipped, dataset):
    rows = {r["strategy"]: r for r in shipped["table1"] if r["dataset"] == dataset}
    order = ["zero_shot", "EP_LABEL", "EP_CRIT", "SEM_CRIT", "EP+SEM_CRIT"]
    assert set(rows) == set(order) and all(rows[s]["n"] == 250 and not rows[s]["errors"] for s in order)
    cells = [f"{rows[order[0]]['majority']:.1f}"] + [f"{rows[s]['accuracy']:.1f}" for s in order]
    assert f"| {dataset} | " + " | ".join(cells) + " |" in RESULTS.read_text(encoding="utf-8")


def test_no_paired_test_of_a_control_has_a_discordant_item(tmp_path):
    """docs/results.md says so: the embedded model gives one answer everywhere, so the item-level tests find no
    difference in either control."""
    out = tmp_path / "inference.json"
    runs = [str(LOGS / f"{d}__local_smollm2") for d in ("control-pos", "control-neg")]
    assert main(["tables", *runs, "--inference", "--format", "json", "-o", str(out)]) == 0
    paired = json.loads(out.read_text(encoding="utf-8"))["inference"]["paired"]
    assert paired and all(r["diff"] == 0.0 and r["discordant_wins"] == r["discordant_losses"] == 0 for r in paired)
    assert "no paired test has a discordant item" in results()


def test_a_skipped_c4_says_how_many_points_have_both(shipped):
    """The gold critic's study has one point (mcr-gen) with a suggestibility probe and a gain, and so has the positive
    control on the model that learns (its own experiment); C4 needs three."""
    qwen_positive = "C4 [critic=gold, prompts=turns, example_order=nearest-last, answer_by=loglikelihood, " \
                    "control=positive]"
    assert shipped["skipped"]["C4"].endswith("; 1 has both")
    assert shipped["skipped"][qwen_positive].endswith("; 1 has both")
    assert all(shipped["skipped"][name].endswith("; 0 have both") for name in shipped["skipped"]
               if name.startswith("C4 [") and name != qwen_positive)


# the strategies each control was run with on the model that learns (logs/control-*-qwen.toml)
QWEN_STRATEGIES = {"control-pos": ("zero_shot", "EP_LABEL", "EP_CRIT", "SEM_CRIT", "EP+SEM_CRIT"),
                   "control-neg": ("zero_shot", "EP_LABEL", "EP_CRIT", "SEM_CRIT", "EP+SEM_CRIT")}


def _cell(row: dict) -> str:
    return f"{row['accuracy']:.1f} [{row['ci_low']:.1f}, {row['ci_high']:.1f}]"


@pytest.mark.parametrize("dataset", ["control-pos", "control-neg"])
def test_the_controls_on_the_model_that_learns(shipped, dataset):
    """docs/results.md's row of each control on Qwen2.5-Coder-0.5B is Table 1's."""
    rows = {r["strategy"]: r for r in shipped["table1"] if r["model"] == QWEN and r["dataset"] == dataset}
    assert set(rows) == set(QWEN_STRATEGIES[dataset]) and all(r["n"] == 250 for r in rows.values())
    cells = " | ".join(_cell(rows[s]) for s in QWEN_STRATEGIES[dataset])
    line = f"| {dataset} | {rows['zero_shot']['majority']:.1f} | {cells} |"
    assert line in results(), line


def test_the_controls_paired_tests_on_the_model_that_learns(shipped_inference):
    """EP_LABEL over zero_shot on control-pos at p < 1e-6, and no strategy over zero_shot on control-neg after Holm,
    as docs/results.md's paired table says."""
    inference = shipped_inference["inference"]
    rows = [r for r in inference["controls"] + inference["paired"]
            if r["model"] == QWEN and r["baseline"] == "zero_shot" and r["dataset"].startswith("control-")]
    found = {(r["dataset"], r["strategy"]): r for r in rows}
    assert found[("control-pos", "EP_LABEL")]["p_mcnemar"] < 1e-6 and found[("control-pos", "EP_LABEL")]["diff"] > 50
    assert all(r["p_holm"] is None or r["p_holm"] >= 0.05 for (d, _), r in found.items() if d == "control-neg")
    for (dataset, strategy), r in found.items():
        control = "positive" if dataset == "control-pos" else "negative"
        line = (f"| {control} | {strategy} | zero_shot | {r['diff']:+.1f} [{r['ci_low']:.1f}, {r['ci_high']:.1f}] | "
                f"{r['discordant_wins']} / {r['discordant_losses']} | {r['p_mcnemar']:.3g} | {r['p_holm']:.3g} | "
                f"{r['mde']:.1f} |")
        assert line in results(), line


def test_what_the_critique_strategies_answer_on_the_positive_control(shipped):
    """docs/results.md's answer shares of each strategy on control-pos with Qwen2.5-Coder-0.5B are the answers
    table's."""
    rows = {r["strategy"]: r for r in shipped["answers"] if r["model"] == QWEN and r["dataset"] == "control-pos"}
    shares = {s: f"{rows[s]['distribution']['4']:.0f}%" for s in ("zero_shot", "EP_CRIT", "SEM_CRIT", "EP+SEM_CRIT")}
    spread = sorted(rows["EP_LABEL"]["distribution"].values())
    assert all(rows[s]["top_answer"] == "4" for s in shares) and len(spread) == 4
    assert (f'zero_shot answers "4" to {shares["zero_shot"]} of the questions, EP_CRIT to {shares["EP_CRIT"]}, '
            f'SEM_CRIT to {shares["SEM_CRIT"]}, EP+SEM_CRIT to {shares["EP+SEM_CRIT"]}, while EP_LABEL spreads its '
            f'answers over the four vaults ({spread[0]:.0f}-{spread[-1]:.0f}% each)') in results()


def test_the_suggestibility_probe_on_the_positive_control(shipped):
    """docs/results.md's sentence of the probe on control-pos with Qwen2.5-Coder-0.5B is Table 4's row."""
    from critique.analysis.reading import logs

    run = LOGS / "control-pos__local_qwen2.5-coder-0.5b__suggestibility"
    cached = [c for (c,) in logs.rows(run, logs.CALLS, ("cached",))]
    row, = [r for r in shipped["table4"] if r["model"] == QWEN and r["dataset"] == "control-pos"]
    assert row["n"] == 250 and not row["errors"] and row["delivered_truth"] == row["delivered_lying"]
    assert f"`logs/control-pos-qwen.toml`; {len(cached):,} calls, {cached.count(False):,} of them new) shows " \
           f"that this model does read a critique of the question it answers: with a truthful critique of its own " \
           f"zero-shot answer in the prompt it is right {row['acc_truth']:.1f}% of the time, with a lying one " \
           f"{row['acc_lying']:.1f}% (S = {row['suggestibility']:.1f}; {row['delivered_truth']:.1f}% of the " \
           f"critiques argued the label they were told to)" in results()
