"""Experiments that differ in a setting (a critic condition, a prompt set) are kept apart in Table 2, the
claims, the item-level families and the report's charts; an all-error experiment is in none of the pooled
figures, and every skip or omission names the condition it is about."""

import json
from types import SimpleNamespace

import pytest

from critique.analysis import synthetic
from critique.analysis.__main__ import main as analysis_main
from critique.analysis.study.tabular import skip

STRATEGIES = ["zero_shot", "EP_LABEL", "EP_CRIT", "SEM_CRIT", "EP+SEM_CRIT"]


def tables(capsys, *argv):
    code = analysis_main(["tables", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def plain_run(path, model="m", dataset="d", right=(1, 1, 2, 2, 3), n=5, error=False, probe=None, ablation=None,
              templates=None, **config):
    """A synthetic run: per strategy `right[i]` of `n` test items correct (every prediction an error: `error`)."""
    head = synthetic.manifest(model, dataset, probe=probe, ablation=ablation, templates=templates, run_id=path.name)
    head["config"].update(config)
    if probe:
        predictions = [synthetic.prediction("probe", arm, f"t{i}", i < k) for arm, k in (("truth", 4), ("lying", 1))
                       for i in range(n)]
    else:
        predictions = [synthetic.prediction("test", s, f"t{i}", i < k and not error, error="boom" if error else None)
                       for s, k in zip(STRATEGIES, right) for i in range(n)]
    return synthetic.write_run(path, head, [], predictions)


def row(model, dataset, strategy, accuracy, errors=0, n=10):
    return {"model": model, "dataset": dataset, "strategy": strategy, "accuracy": accuracy, "n": n, "errors": errors}


def about(model, critic):
    return {"model": model, "settings": {"k": 5, "critic": critic, "seed": 0}}


def cells_of(accuracy, labels):
    return SimpleNamespace(accuracy=accuracy, labels=labels, suggestibility=[], tokens=[])


def test_every_skip_message_names_the_condition_that_caused_it():
    from critique.analysis.study import claims

    gold, self_ = "m [critic=gold]", "m [critic=self]"
    accuracy = [row(gold, "d", "zero_shot", 50.0),  # gold: a baseline, no critique strategy
                *(row(self_, "d", s, 0.0, errors=10) for s in STRATEGIES)]  # self: every prediction failed
    cells = cells_of(accuracy, {(gold, "d"): about("m", "gold"), (self_, "d"): about("m", "self")})
    table = claims.table2(cells)
    assert table.skipped
    parts = table.skipped.split("; ")
    assert "critic=gold: no (model, dataset) point has both a critique strategy and a baseline" in parts
    assert "critic=self: no (model, dataset) point has both a critique strategy and a baseline" in parts
    assert any(p.startswith("critic=self: m [critic=self] / d: left out, all 50 of its predictions ended in an "
                            "error") for p in parts)
    found, why = claims.claims(cells, skip("table3", "none"), [])
    assert set(why) == {f"C{i}{suffix}" for i in range(1, 5) for suffix in ("", " [critic=self]")}
    for name, text in why.items():
        condition = "critic=self" if "[critic=self]" in name else "critic=gold"
        assert text.startswith(f"{condition}: "), (name, text)


def test_table2_and_the_claims_are_computed_per_critic_condition_the_gold_one_first():
    from critique.analysis.study import claims

    a_gold, a_self, b = "a [critic=gold]", "a [critic=self]", "b"
    accuracy = []
    for model, gains in ((a_gold, 10.0), (a_self, -10.0), (b, 20.0)):  # b ran the gold critic alone
        accuracy += [row(model, "d", "zero_shot", 50.0), row(model, "d", "EP_LABEL", 50.0),
                     row(model, "d", "EP+SEM_CRIT", 50.0 + gains)]
    labels = {(a_gold, "d"): about("a", "gold"), (a_self, "d"): about("a", "self"), (b, "d"): about("b", "gold")}
    cells = cells_of(accuracy, labels)
    rows = {(r["condition"], r["critique"], r["baseline"]): r for r in claims.table2(cells).rows}
    assert rows[("critic=gold", "EP+SEM_CRIT", "zero_shot")]["n"] == 2
    assert rows[("critic=gold", "EP+SEM_CRIT", "zero_shot")]["mean"] == pytest.approx(15.0)
    assert rows[("critic=self", "EP+SEM_CRIT", "zero_shot")]["mean"] == pytest.approx(-10.0)
    found, why = claims.claims(cells, skip("table3", "none"), [])
    assert found["C1"]["condition"] == "critic=gold" and found["C1"]["vs_zero_shot"] == pytest.approx(15.0)
    assert found["C1 [critic=self]"]["vs_zero_shot"] == pytest.approx(-10.0)
    assert found["C2"]["wins_vs_zero_shot"] == 2 and found["C2 [critic=self]"]["losses_vs_zero_shot"] == 1


def test_shipped_style_critic_runs_print_table2_and_c1(tmp_path, capsys):
    plain_run(tmp_path / "gold", critic="gold", right=(1, 1, 2, 2, 3))
    plain_run(tmp_path / "gold2", dataset="e", critic="gold", right=(1, 1, 2, 2, 2))
    plain_run(tmp_path / "self", critic="self", right=(1, 1, 1, 1, 1))
    code, out, err = tables(capsys, tmp_path)
    assert code == 0, err
    assert "C1 skipped" not in out and "- **C1** critic=gold: mean gain of EP+SEM_CRIT: +30.00 points" in out
    assert "| critic=gold | EP+SEM_CRIT | zero_shot | 2 |" in out


def test_an_all_error_experiment_is_left_out_of_every_pooled_figure_saying_so(tmp_path, capsys):
    plain_run(tmp_path / "ok", right=(1, 1, 2, 2, 3))
    plain_run(tmp_path / "bad", dataset="e", error=True)
    code, out, err = tables(capsys, tmp_path, "--format", "json", "--inference")
    data = json.loads(out)
    best = {(r["critique"], r["baseline"]): r for r in data["table2"]}[("EP+SEM_CRIT", "zero_shot")]
    assert best["n"] == 1 and best["ties"] == 0  # no tie from the all-error point
    assert "m / e: left out, all 25 of its predictions ended in an error" in data["notes"]["table2"]
    assert data["claims"]["C2"]["ties_vs_zero_shot"] == 0
    assert sorted(data["inference"]["pooled_left_out"]) == [f"m / e / {s}" for s in sorted(STRATEGIES)]


def test_the_item_level_families_and_pooled_fits_are_one_per_critic_condition(tmp_path, capsys):
    from critique.analysis.stats.inference import holm

    plain_run(tmp_path / "gold", critic="gold", right=(1, 1, 2, 2, 5), n=6)
    plain_run(tmp_path / "self", critic="self", right=(1, 1, 1, 2, 2), n=6)
    code, out, err = tables(capsys, tmp_path, "--format", "json", "--inference")
    inference = json.loads(out)["inference"]
    for condition in ("critic=gold", "critic=self"):
        mine = [r for r in inference["paired"] if r["condition"] == condition]
        assert len(mine) == 6 and [r["p_holm"] for r in mine] == holm([r["p_mcnemar"] for r in mine])
        pooled = [r for r in inference["pooled"] if r["condition"] == condition]
        assert len(pooled) == 6  # one fit per condition: zero_shot's answers enter each once
    holm_rows = inference["table2_holm"]
    assert {r["condition"] for r in holm_rows} == {"critic=gold", "critic=self"}


def test_a_compact_run_among_paper_runs_is_kept_apart_not_dropped(tmp_path, capsys):
    compact = {name: "c" * 64 for name in synthetic.TEMPLATES}
    plain_run(tmp_path / "paper", prompts="paper")
    plain_run(tmp_path / "k1", prompts="paper", k=1, ablation={"name": "k", "value": 1})
    plain_run(tmp_path / "probe", prompts="paper", probe={"name": "suggestibility", "attribution": ""})
    plain_run(tmp_path / "compact", prompts="compact", templates=compact, right=(1, 1, 1, 1, 1))
    code, out, err = tables(capsys, tmp_path, "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert {r["model"] for r in data["table1"]} == {"m [prompts=paper]", "m [prompts=compact]"}
    assert data["table4"] and data["table8"]  # the probe and the ablation are still read
    assert {r["condition"] for r in data["table2"]} == {"prompts=paper", "prompts=compact"}
    assert data["claims"]["C1"]["condition"] == "prompts=paper"


def test_the_report_keeps_experiments_apart_and_its_legend_off_the_bars(tmp_path, capsys):
    from critique.analysis.study import cells, report, tables as study_tables
    from critique.analysis.reading.load import load

    plain_run(tmp_path / "gold", critic="gold", right=(5, 5, 5, 5, 5))
    plain_run(tmp_path / "self", critic="self", right=(0, 0, 0, 0, 0))
    plain_run(tmp_path / "bad", dataset="e", critic="gold", error=True)
    result = study_tables.build(cells.from_logs(load([str(tmp_path)])))
    figure, why = report.plot_accuracy(result)
    axis = figure.axes[0]
    heights = sorted({round(bar.get_height(), 6) for bar in axis.patches})
    assert heights == [0.0, 100.0]  # the two critics are not averaged into 50
    labels = " ".join(t.get_text() for t in axis.get_xticklabels())
    assert "critic=gold" in labels and "critic=self" in labels and "\ne" not in labels
    texts = " ".join(t.get_text() for t in figure.texts)
    assert "m / e (every prediction ended in an error)" in texts
    figure.canvas.draw()
    legend = axis.get_legend().get_window_extent()
    assert legend.y0 >= axis.get_window_extent().y1 - 1  # above the plot, not over the tallest bars


def test_a_control_dataset_is_its_own_experiment_never_pooled_with_the_study(tmp_path, capsys):
    """The positive control, built so that memory is right, would lift any pooled gain: its point is the
    experiment control=positive, beside the study's datasets, never among them."""
    plain_run(tmp_path / "a", dataset="d1", right=(1, 1, 2, 2, 2))
    plain_run(tmp_path / "b", dataset="d2", right=(1, 1, 1, 1, 2))
    plain_run(tmp_path / "pos", dataset="control-pos", right=(1, 5, 5, 1, 5))
    code, out, _ = tables(capsys, tmp_path, "--format", "json")
    data = json.loads(out)
    study = [r for r in data["table2"] if not r.get("condition")]
    control = [r for r in data["table2"] if r.get("condition") == "control=positive"]
    best = {r["baseline"]: r for r in study if r["critique"] == "EP+SEM_CRIT"}
    assert best["zero_shot"]["n"] == 2 and best["zero_shot"]["mean"] == pytest.approx(20.0)  # d1, d2 only
    assert {r["n"] for r in control} == {1}
    assert [r for r in control if r["critique"] == "EP+SEM_CRIT" and r["baseline"] == "zero_shot"][0]["mean"] == 80.0


def test_two_models_asked_in_two_layouts_are_two_experiments(tmp_path, capsys):
    """One model in the paper's layout and another in the turns layout, on one dataset: a setting that differs
    from model to model parts the experiments too, named where it is not the default."""
    plain_run(tmp_path / "small", model="small", dataset="control-pos", right=(1, 1, 1, 1, 1))
    plain_run(tmp_path / "big", model="big", dataset="control-pos", right=(1, 5, 5, 5, 5), prompts="turns",
              templates={name: "t" * 64 for name in synthetic.TEMPLATES})
    code, out, err = tables(capsys, tmp_path, "--format", "json")
    assert code == 0, err
    conditions = {r["condition"] for r in json.loads(out)["table2"]}
    assert conditions == {"control=positive", "prompts=turns, control=positive"}


def test_each_control_tests_the_label_memory_against_no_memory_item_by_item(tmp_path, capsys):
    from critique.analysis.stats.inference import mcnemar_exact

    plain_run(tmp_path / "pos", dataset="control-pos", right=(2, 20, 20, 20, 20), n=25)
    plain_run(tmp_path / "neg", dataset="control-neg", right=(6, 6, 6, 6, 6), n=25)
    code, out, err = tables(capsys, tmp_path, "--format", "json", "--inference")
    assert code == 0, err
    rows = {r["condition"]: r for r in json.loads(out)["inference"]["controls"]}
    positive, negative = rows["control=positive"], rows["control=negative"]
    assert (positive["strategy"], positive["baseline"]) == ("EP_LABEL", "zero_shot")
    assert (positive["discordant_wins"], positive["discordant_losses"]) == (18, 0)
    assert positive["p_mcnemar"] == pytest.approx(mcnemar_exact(18, 0)) and positive["p_mcnemar"] < 1e-5
    assert negative["diff"] == 0 and negative["discordant_wins"] == negative["discordant_losses"] == 0


def test_the_run_table_says_each_strategy_against_zero_shot_item_by_item(tmp_path, capsys):
    from critique.analysis.stats.inference import mcnemar_exact
    from critique.analysis.study.run_table import print_table

    plain_run(tmp_path / "pos", dataset="control-pos", right=(2, 20, 2, 2, 2), n=25)
    print_table(tmp_path / "pos")
    out = capsys.readouterr().out
    assert (f"EP_LABEL vs zero_shot on the same 25 items: +72.0 points (18 right only under EP_LABEL, 0 only under "
            f"zero_shot; exact McNemar p = {mcnemar_exact(18, 0):.2g})") in out
    assert "EP_CRIT vs zero_shot on the same 25 items: +0.0 points (0 right only under EP_CRIT, 0 only under " \
           "zero_shot; no discordant item)" in out
    assert "over the 4 comparisons, Holm's" in out
