"""The figures of "Noisy and self-graded critics, the Echo Gap" in docs/results.md (the README's shipped findings
moved there) are the figures the shipped logs give: each test below rebuilds a quoted sentence from the JSON of
`critique tables logs` (the echo, echo_accuracy, eia and deinflate tables), of `critique tables logs --inference`,
of `critique audit logs --data datasets` (its entry rows: U, r, b, the reuse n, the generator's truth), or from
the run directories through critique.analysis.reading.logs (the calls a run made, its memory, its predictions), and
finds it in docs/results.md, so a change to the logs or to the analysis that moves a figure fails here until the
page says the new one. Two tests read docs/experiments.md, where the commands are described: the noisy critic's
share of flipped labels in its command line, and the Echo table's interval rules (the analysis' constants)."""

from pathlib import Path

import pytest

from critique.analysis.memory import echo
from critique.analysis.reading import logs
from critique.analysis.memory.echo_stats import BOOTSTRAP, LEVEL, MAX_UNDEFINED, MIN_CARRIERS, MIN_VARYING, SEED
from shipped import EXPERIMENTS, LOGS, listed, page, pct, results

MODEL = "local_smollm2"
NOISY, SELF, GOLD = "noisy:0.2", "self", "gold"
SUFFIX = {GOLD: "", NOISY: "__critic-noisy_0.2", SELF: "__critic-self"}
STUDY = {NOISY: "critic-noisy", SELF: "critic-self"}  # logs/<dataset>-<this>.toml
WORDS = {0: "no", 1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}


def run_dir(dataset: str, critic: str) -> Path:
    return LOGS / f"{dataset}__{MODEL}{SUFFIX[critic]}"


def one(rows: list[dict], **where) -> dict:
    """The one row of a table with these values."""
    found = [r for r in rows if all(r.get(k) == v for k, v in where.items())]
    assert len(found) == 1, (where, found)
    return found[0]


def echo_row(tables: dict, dataset: str, critic: str) -> dict:
    """The Echo Gap row of the SmolLM2 run of ``dataset`` with ``critic`` (the critics' figures are that model's)."""
    smollm2 = [r for r in tables["echo"] if r["model"].startswith("local/smollm2")]
    return one(smollm2, dataset=dataset, critic=critic)


def accuracy(tables: dict, dataset: str, critic: str, strategy: str) -> dict:
    return one(tables["echo_accuracy"], dataset=dataset, critic=critic, strategy=strategy)


def audit_entries(audit: dict, dataset: str, critic: str) -> list[dict]:
    """The audit's entry rows of a run (U, r, b, n, believed, label_flipped, rule_prefers)."""
    name = run_dir(dataset, critic).name
    found = [a for a in audit["audits"] if Path(a["run"]).name == name]
    assert len(found) == 1, name
    return found[0]["entries"]


def items(points: float, n: int) -> int:
    """Test items a difference in points stands for."""
    return round(abs(points) * n / 100)


def zero(value: float) -> str:
    """A rate as docs/results.md writes it where it is nothing: 0 (else 6.6%)."""
    return "0" if value == 0 else pct(value)


def whole(value: float) -> str:
    """100% (a whole percentage without its decimal), else 98.4%."""
    return f"{value:.0f}%" if value == round(value) else pct(value)


def new_calls(run: Path) -> int:
    """Calls the run made itself: its calls.jsonl records not taken from a cache or an earlier run's log."""
    return sum(not cached for (cached,) in logs.rows(run, logs.CALLS, ("cached",)))


# --- the critic runs: what they cost, and that they reuse the gold run's identical requests --------------------

def test_the_critic_runs_reuse_every_request_of_the_gold_run():
    """"each reusing the gold run's identical requests": a call whose request the gold run made is never made
    again; and each critic run is the study file's (its critic, the gold run's other settings)."""
    for dataset in ("pref-gen", "mcr-gen"):
        gold = {h for (h,) in logs.rows(run_dir(dataset, GOLD), logs.CALLS, ("request_hash",))}
        gold_config = logs.manifest(run_dir(dataset, GOLD))["config"]
        for critic in (NOISY, SELF):
            run = run_dir(dataset, critic)
            calls = logs.rows(run, logs.CALLS, ("request_hash", "cached"))
            assert calls and all(cached for h, cached in calls if h in gold), run
            config = logs.manifest(run)["config"]
            assert config["critic"] == critic
            # the gold run's settings (a later run's manifest also records newer settings, at their defaults)
            assert {k: config.get(k) for k in gold_config if k != "critic"} == \
                   {k: v for k, v in gold_config.items() if k != "critic"}, run
            study = (LOGS / f"{dataset}-{STUDY[critic]}.toml").read_text(encoding="utf-8")
            assert f'critic = "{critic}"' in study and f'datasets = ["{dataset}"]' in study


def test_pref_gen_noisy_run_flips_and_calls(shipped_tables):
    row = echo_row(shipped_tables, "pref-gen", NOISY)
    calls = new_calls(run_dir("pref-gen", NOISY))
    quoted = f"With `noisy:0.2` ({row['label_flipped']} of {row['entries']} labels flipped, {calls:,} new calls)"
    assert quoted in results(), quoted


def test_noisy_critic_flips_a_fifth_of_the_train_labels(shipped_tables):
    """"--critic noisy:0.2   # a seeded 20% of the train labels flipped first": both shipped noisy runs."""
    for dataset in ("pref-gen", "mcr-gen"):
        row = echo_row(shipped_tables, dataset, NOISY)
        quoted = f"--critic noisy:0.2 # a seeded {row['label_flipped'] / row['entries']:.0%} of the train labels " \
                 "flipped first"
        assert quoted in page(EXPERIMENTS), (dataset, quoted)


def test_pref_gen_self_run_calls():
    calls = new_calls(run_dir("pref-gen", SELF))
    quoted = f"With `self` ({calls:,} new calls) the critic calls every answer right"
    assert quoted in results(), quoted


def test_mcr_gen_noisy_run_calls():
    calls = new_calls(run_dir("mcr-gen", NOISY))
    quoted = f"On mcr-gen (`logs/mcr-gen-critic-noisy.toml`, {calls:,} new calls)"
    assert quoted in results(), quoted


def test_mcr_gen_self_run_calls():
    calls = new_calls(run_dir("mcr-gen", SELF))
    quoted = f"With `self` (`logs/mcr-gen-critic-self.toml`, {calls:,} new calls)"
    assert quoted in results(), quoted


# --- pref-gen ---------------------------------------------------------------------------------------------------

def test_pref_gen_noisy_contradiction_and_specificity(shipped_tables, shipped_audit):
    """Contradiction of the gold label shown (over the entries whose label was not flipped), the share of wrong
    answers stored as right against the generator's truth (meta.rule_prefers, read by the audit from the shipped
    datasets/ folder, so it does not depend on the machine's data folder), and specificity."""
    gold, noisy = echo_row(shipped_tables, "pref-gen", GOLD), echo_row(shipped_tables, "pref-gen", NOISY)
    generator = {}
    for critic in (GOLD, NOISY):
        entries = audit_entries(shipped_audit, "pref-gen", critic)
        assert all(e["rule_prefers"] in ("A", "B") for e in entries)
        truth = {(e["user"], str(e["item_id"])): {"rule_prefers": e["rule_prefers"]} for e in entries}
        generator[critic], _ = echo.generator_rates(entries, truth)
    assert [generator[c] for c in (GOLD, NOISY)] == [echo_row(shipped_tables, "pref-gen", c)["stored_right_generator"]
                                                     for c in (GOLD, NOISY)]
    assert abs(noisy["contradiction"] - gold["contradiction"]) < 1 and noisy["specificity"] > gold["specificity"]
    quoted = (f"the critic contradicts the gold label it is shown as often as before (contradiction "
              f"{pct(gold['contradiction'])} with the gold critic, {pct(noisy['contradiction'])} over the wrong "
              "answers whose label was not flipped), while the flipped labels raise the share of wrong answers "
              f"stored as right against the generator's truth from {pct(generator[GOLD])} to {pct(generator[NOISY])} "
              f"and specificity from {zero(gold['specificity'])} to {pct(noisy['specificity'])}")
    assert quoted in results(), quoted


def test_pref_gen_noisy_accuracy_against_the_gold_critic(shipped_tables):
    crit = accuracy(shipped_tables, "pref-gen", NOISY, "EP_CRIT")
    both = accuracy(shipped_tables, "pref-gen", NOISY, "EP+SEM_CRIT")
    zero_shot = accuracy(shipped_tables, "pref-gen", NOISY, "zero_shot")
    assert pct(both["accuracy"]) == pct(both["gold_critic"])
    assert pct(zero_shot["accuracy"]) == pct(zero_shot["gold_critic"])
    quoted = (f"(EP_CRIT {pct(crit['accuracy'])} against {pct(crit['gold_critic'])} with the gold critic, "
              f"EP+SEM_CRIT {pct(both['accuracy'])} both, zero_shot {pct(zero_shot['accuracy'])})")
    assert quoted in results(), quoted


def test_pref_gen_noisy_accuracy_moves_by_at_most(shipped_tables):
    n = {r["n"] for r in shipped_tables["table1"] if r["dataset"] == "pref-gen"}
    assert len(n) == 1
    moved = [items(accuracy(shipped_tables, "pref-gen", NOISY, s)["vs_gold_critic"], min(n))
             for s in ("zero_shot", "EP_LABEL", "EP_CRIT", "SEM_CRIT", "EP+SEM_CRIT")]
    most = max(moved)
    quoted = f"accuracy moves by at most {WORDS[most]} item{'s' if most != 1 else ''} per strategy"
    assert quoted in results(), quoted


def self_critic_memory(shipped_tables: dict, shipped_audit: dict, dataset: str) -> tuple[dict, list, list]:
    """(Echo row, audit entries, wrong entries) of the self critic's run, checking that every wrong initial
    answer is stored as right with itself as the believed label."""
    row = echo_row(shipped_tables, dataset, SELF)
    entries = audit_entries(shipped_audit, dataset, SELF)
    memory = logs.memory(run_dir(dataset, SELF))
    assert len(entries) == len(memory) == row["entries"] and row["verdict_unknown"] == 0
    wrong = [m for m in memory if m["initial_answer"] != m["gold"]]
    assert len(wrong) == row["u0"] == row["believed_not_gold"]
    assert all(m["verdict"] == "right" and m["believed"] == m["initial_answer"] for m in wrong)
    return row, entries, wrong


def test_pref_gen_self_critic_calls_every_answer_right(shipped_tables, shipped_audit):
    """Every entry is stored as right, the wrong ones with their wrong answer as the believed label."""
    row, entries, wrong = self_critic_memory(shipped_tables, shipped_audit, "pref-gen")
    assert all(e["r"] == 1 for e in entries) and row["specificity"] == 0
    quoted = (f"the critic calls every answer right: leniency {whole(row['leniency'])} over the {row['u0']} wrong "
              "initial answers, each stored as a success with its wrong answer as the believed label")
    assert quoted in results(), quoted


def test_pref_gen_self_accuracy(shipped_tables, shipped_inference):
    """Both under zero_shot by 1 to 2 items, and neither difference significant (the paired test)."""
    crit = accuracy(shipped_tables, "pref-gen", SELF, "EP_CRIT")
    both = accuracy(shipped_tables, "pref-gen", SELF, "EP+SEM_CRIT")
    n = one(shipped_tables["table1"], model="local/smollm2 [critic=self]", dataset="pref-gen",
            strategy="EP_CRIT")["n"]
    assert crit["vs_zero_shot"] < 0 and both["vs_zero_shot"] < 0
    under = sorted(items(r["vs_zero_shot"], n) for r in (crit, both))
    for row in (crit, both):
        paired = one(shipped_inference["inference"]["paired"], condition="critic=self", dataset="pref-gen",
                     strategy=row["strategy"], baseline="zero_shot")
        assert paired["discordant_losses"] - paired["discordant_wins"] == items(row["vs_zero_shot"], n)
        assert paired["p_mcnemar"] >= 0.05
    quoted = (f"EP_CRIT falls to {pct(crit['accuracy'])} ({crit['vs_gold_critic']:.1f} points against the gold "
              f"critic) and EP+SEM_CRIT to {pct(both['accuracy'])} ({both['vs_gold_critic']:.1f}), both under "
              f"zero_shot, though by {under[0]} to {under[1]} items of {n}, not a significant difference")
    assert quoted in results(), quoted


def test_pref_gen_reorder_verifier(shipped_tables):
    row = one(shipped_tables["eia"], dataset="pref-gen", critic=SELF, verifier="reorder")
    run = echo_row(shipped_tables, "pref-gen", SELF)
    assert row["checked"] == run["entries"] and not row["errors"]
    assert pct(row["precision"]) == pct(100 * run["u0"] / run["entries"])  # the base rate
    quoted = (f"`critique verify ... --verifier reorder` on the self run flags all {row['flagged']} entries")
    assert row["flagged"] == row["checked"] and quoted in results(), quoted
    assert row["corr_nu_b"] is None and row["corr_v_u"] is None
    quoted = (f"Its precision is then the base rate ({pct(row['precision'])}) and Corr(nu, b) is undefined "
              f"({row['corr_why'].removeprefix('undefined: ')}: with both constant the 1 it would print says nothing "
              "of the verifier)")
    assert quoted in results(), quoted


def test_pref_gen_deinflation(shipped_tables):
    rows = {r["strategy"]: r for r in shipped_tables["deinflate"] if r["dataset"] == "pref-gen"}
    assert set(rows) == {"EP_CRIT", "EP+SEM_CRIT"}
    entries = echo_row(shipped_tables, "pref-gen", SELF)["entries"]
    for r in rows.values():
        assert (r["critic"], r["mode"], r["verifier"]) == (SELF, "doubt", "reorder")
        assert r["demoted"] == entries and r["shown"] == 100 and not r["errors"]
        assert r["random_mean"] is None and r["control"].startswith("none possible")
        assert "its 2 random arms repeat the verifier arm" in r["control"]  # --control random:2
    within = max(abs(r["vs_source"]) for r in rows.values())
    quoted = (f"with every entry demoted as doubtful, EP_CRIT {pct(rows['EP_CRIT']['accuracy'])} and EP+SEM_CRIT "
              f"{pct(rows['EP+SEM_CRIT']['accuracy'])}, within {within:.1f} points of the source run, and no control "
              f"is possible: as many entries chosen at random are the same {rows['EP_CRIT']['demoted']} (the random "
              "arms repeat the verifier arm's answers), so the table prints no random mean and says why")
    assert quoted in results(), quoted


@pytest.mark.parametrize("dataset,mode", [("pref-gen", "doubt"), ("mcr-gen", "drop")])
def test_the_random_arms_repeat_the_verifier_arm(dataset, mode):
    """The two random arms answer every prompt as the verifier arm does (in drop mode with no example left)."""
    base = f"{run_dir(dataset, SELF).name}__deinflate-{mode}"

    def answers(path: Path) -> dict:
        found = {(p["strategy"], p.get("user"), p["item_id"]): (p["answer"], tuple(p.get("retrieved") or ()))
                 for p in logs.predictions(path, ("test",))}
        assert len(found) == 500, path
        return found

    arm = answers(LOGS / f"{base}-reorder")
    arms = sorted(LOGS.glob(f"{base}-random*-s*"))
    assert len(arms) == 2 and all(answers(path) == arm for path in arms)
    if mode == "drop":
        assert all(not retrieved for _, retrieved in arm.values())


# --- mcr-gen ----------------------------------------------------------------------------------------------------

def test_mcr_gen_noisy_contradiction_and_specificity(shipped_tables, shipped_audit):
    gold, noisy = echo_row(shipped_tables, "mcr-gen", GOLD), echo_row(shipped_tables, "mcr-gen", NOISY)
    entries = audit_entries(shipped_audit, "mcr-gen", NOISY)
    right = [e for e in entries if e["U"] == 1]
    assert {e["id"] for e in right if e["r"] == 0} == {e["id"] for e in right if e["label_flipped"]}
    quoted = (f"with `noisy:0.2` contradiction goes from {pct(gold['contradiction'])} (Wilson {LEVEL:.0%} interval "
              f"{pct(gold['contradiction_low'])} to {pct(gold['contradiction_high'])}) to "
              f"{pct(noisy['contradiction'])} of the wrong answers whose label was not flipped and specificity from "
              f"{zero(gold['specificity'])} to {pct(noisy['specificity'])} (right answers whose label was flipped "
              "stored as wrong)")
    assert quoted in results(), quoted


def test_mcr_gen_noisy_accuracy_is_the_one_answer(shipped_tables):
    rows = [r for r in shipped_tables["echo_accuracy"] if r["dataset"] == "mcr-gen" and r["critic"] == NOISY]
    assert len(rows) == 5 and all(pct(r["accuracy"]) == pct(r["gold_critic"]) for r in rows)
    stays = {pct(r["accuracy"]) for r in rows}
    assert len(stays) == 1
    predictions = logs.predictions(run_dir("mcr-gen", NOISY), ("test",))
    assert len({p["answer"] for p in predictions}) == 1  # the model's one answer
    assert {pct(100 * sum(p["correct"] is True for p in predictions) / len(predictions))} == stays
    quoted = f"every strategy stays at {stays.pop()}, the model's one answer"
    assert quoted in results(), quoted


def test_mcr_gen_self_critic_and_accuracy(shipped_tables, shipped_audit):
    row, entries, wrong = self_critic_memory(shipped_tables, shipped_audit, "mcr-gen")
    right = sum(e["r"] == 1 for e in entries)
    rows = {r["strategy"]: r for r in shipped_tables["echo_accuracy"]
            if r["dataset"] == "mcr-gen" and r["critic"] == SELF and r["strategy"] != "zero_shot"}
    stay = [s for s in ("EP_LABEL", "EP_CRIT", "SEM_CRIT", "EP+SEM_CRIT") if rows[s]["vs_gold_critic"] == 0]
    moved = [s for s in rows if s not in stay]
    assert len(moved) == 1 and len({pct(rows[s]["accuracy"]) for s in stay}) == 1
    n = one(shipped_tables["table1"], model="local/smollm2 [critic=self]", dataset="mcr-gen",
            strategy=moved[0])["n"]
    up = rows[moved[0]]
    quoted = (f"the critic calls all {right} answers right (leniency {whole(row['leniency'])} over the {row['u0']} "
              f"wrong ones, each stored with its wrong answer as the believed label); {listed(stay)} stay at "
              f"{pct(rows[stay[0]]['accuracy'])} and {moved[0]}, whose advice now comes from self-graded critiques, "
              f"reaches {pct(up['accuracy'])} ({items(up['vs_gold_critic'], n)} items)")
    assert right == row["entries"] and quoted in results(), quoted


def test_mcr_gen_reorder_verifier_and_deinflation(shipped_tables):
    verifier = one(shipped_tables["eia"], dataset="mcr-gen", critic=SELF, verifier="reorder")
    run = echo_row(shipped_tables, "mcr-gen", SELF)
    assert verifier["flagged"] == verifier["checked"] == run["entries"] and not verifier["errors"]
    assert pct(verifier["precision"]) == pct(100 * run["u0"] / run["entries"])  # the base rate of wrong answers
    rows = {r["strategy"]: r for r in shipped_tables["deinflate"] if r["dataset"] == "mcr-gen"}
    assert set(rows) == {"EP_CRIT", "EP+SEM_CRIT"}
    for r in rows.values():
        assert (r["critic"], r["mode"], r["verifier"]) == (SELF, "drop", "reorder") and not r["errors"]
        assert r["random_mean"] is None and r["control"].startswith("none possible")
        assert "its 2 random arms repeat the verifier arm" in r["control"]  # --control random:2
        assert r["vs_source"] == 0
    stays = {pct(r["accuracy"]) for r in rows.values()}
    assert len(stays) == 1
    demoted = {r["demoted"] for r in rows.values()}
    assert len(demoted) == 1
    demoted = demoted.pop()
    quoted = (f"The reorder verifier flags all {verifier['flagged']} entries there too (precision "
              f"{pct(verifier['precision'])}, the base rate of wrong answers; Corr(nu, b) undefined, "
              f"{verifier['corr_why'].removeprefix('undefined: ')}), "
              f"and `critique deinflate --mode drop --control random:2` removes all {demoted} (again no control is "
              f"possible: each random arm removes the same {demoted}, and the table says so): EP_CRIT and EP+SEM_CRIT "
              f"stay at {stays.pop()}")
    assert quoted in results(), quoted


# --- the Echo Gap statistics ------------------------------------------------------------------------------------

def test_mcr_gen_gold_echo_gap_rests_on_one_entry(shipped_tables, shipped_audit):
    row = echo_row(shipped_tables, "mcr-gen", GOLD)
    lenient = [e for e in audit_entries(shipped_audit, "mcr-gen", GOLD) if e["U"] == 0 and e["b"] == 1]
    assert len(lenient) == 1 == row["lenient_reused"]
    assert row["corr_low"] is None and row["corr_why"].startswith("no interval")
    assert row["kappa_within_low"] is None and row["kappa_why"].startswith("no interval")
    quoted = (f"on mcr-gen the gold critic's Corr(b, n | U=0) = {row['corr_b_n_u0']:.2f} rests on its one "
              f"wrong-but-trusted entry (reused in {lenient[0]['n']} prompts), so the Echo table gives no interval "
              f"(`lenient_reused` {row['lenient_reused']}, `corr_why` says why), and its contamination slope within "
              f"the zero_shot strata, {row['kappa_within']:.3f} over {row['kappa_prompts']} prompts, rests on the "
              f"{row['kappa_varying']} whose share of wrong-but-trusted entries varies within their stratum "
              f"(`kappa_varying` {row['kappa_varying']}, no interval; pooled over the strata, confounded, "
              f"{row['kappa_confounded']:.3f})")
    assert quoted in results(), quoted


def test_pref_gen_gold_echo_gap(shipped_tables):
    row = echo_row(shipped_tables, "pref-gen", GOLD)
    quoted = (f"on pref-gen the gold critic's {row['lenient_reused']} reused wrong-but-trusted entries give "
              f"Corr(b, n | U=0) = {row['corr_b_n_u0']:.2f} [{row['corr_low']:.2f}, {row['corr_high']:.2f}] and "
              f"kappa within the strata = {row['kappa_within']:.3f} [{row['kappa_within_low']:.2f}, "
              f"{row['kappa_within_high']:.2f}] ({row['kappa_varying']} of {row['kappa_prompts']} prompts vary; "
              f"{row['kappa_zero_shot_right']:.3f} where zero_shot was right, {row['kappa_zero_shot_wrong']:.3f} where "
              f"it was wrong, {row['kappa_confounded']:.3f} pooled)")
    assert quoted in results(), quoted


def test_the_positive_controls_pooled_slope_is_difficulty(shipped_tables):
    row = one(shipped_tables["echo"], model="local/smollm2", dataset="control-pos")
    assert {p["answer"] for p in logs.predictions(LOGS / "control-pos__local_smollm2", ("test",))} == {"1"}
    within = {row[k] for k in ("kappa_within", "kappa_zero_shot_right", "kappa_zero_shot_wrong")}
    assert len(within) == 1
    quoted = (f"on the positive control, where every answer is \"1\", the pooled slope is "
              f"{row['kappa_confounded']:.3f} and the slope within each stratum {within.pop():.3f}: the pooled figure "
              "is the questions' difficulty, not contamination")
    assert quoted in results(), quoted


def test_self_critic_echo_gap_is_undefined(shipped_tables):
    """"with `self` every wrong answer is stored as right (b = +1), so Corr(b, n | U=0) is undefined and the
    table says so": both datasets."""
    for dataset in ("pref-gen", "mcr-gen"):
        row = echo_row(shipped_tables, dataset, SELF)
        assert row["leniency"] == 100 and row["corr_b_n_u0"] is None
        assert row["corr_why"] == "undefined: every U=0 entry has b = +1"
    quoted = ("with `self` every wrong answer is stored as right (b = +1), so Corr(b, n | U=0) is undefined and "
              "the table says so")
    assert quoted in results(), quoted


def test_the_echo_interval_rules_are_the_analysis_constants():
    """The rules docs/experiments.md states for Corr(b, n | U=0)'s interval are critique.analysis.memory.echo_stats'."""
    quoted = (f"a {LEVEL:.0%} percentile bootstrap interval ({BOOTSTRAP:,} resamples, seed {SEED}) with the share of "
              f"resamples where it is undefined, given only when at least {MIN_CARRIERS} such entries and "
              f"{MIN_CARRIERS} U=0 entries with b=0 carry it and at most {MAX_UNDEFINED:.0%} of resamples are "
              f"undefined (`corr_why` says why not), each rate's {LEVEL:.0%} Wilson interval")
    assert quoted in page(EXPERIMENTS), quoted
    kappa = (f"an interval over resampled test questions only when at least {MIN_CARRIERS} wrong-but-trusted "
             f"entries carry it and at least {MIN_VARYING} prompts vary (`kappa_why` says why not)")
    assert kappa in page(EXPERIMENTS), kappa
