"""docs/results.md's figures of "Auditing the memory" and "Credit by deletion", rebuilt from the shipped logs: the
JSON of `critique audit logs --data datasets` and of `critique tables logs` (its `credit` and `credit_prune`
tables), and the credit run directories' own calls. Each test builds a quoted sentence in docs/results.md's exact
words from the computed values and finds it in docs/results.md, so a change to the logs or to the analysis that
moves a figure fails here until docs/results.md says the new one."""

import json
from pathlib import Path

from critique.analysis.memory import credit as credit_analysis
from critique.experiments import reuse
from shipped import LOGS, pct as _pct, results

DATASETS = ("mcr-gen", "pref-gen")


# ---- Auditing the memory ----------------------------------------------------------------------------
def audit_of(shipped_audit: dict, dataset: str) -> dict:
    """The audit of the dataset's plain gold-critic run."""
    found = [a for a in shipped_audit["audits"] if Path(a["run"]).name == f"{dataset}__local_smollm2"]
    assert len(found) == 1, [a["run"] for a in shipped_audit["audits"]]
    return found[0]


def test_the_audited_runs_use_the_papers_prompts_and_the_gold_critic(shipped_audit):
    """"with the paper's prompts ... mcr-gen's gold critic": the audited runs' manifests and the audit say so."""
    for dataset in DATASETS:
        manifest = json.loads((LOGS / f"{dataset}__local_smollm2" / "manifest.json").read_text(encoding="utf-8"))
        assert manifest["config"]["prompts"] == "paper"
        audit = audit_of(shipped_audit, dataset)
        assert audit["experiment"] == "plain run" and audit["model"].endswith("[critic=gold]")
    assert "On the shipped logs (`critique audit logs --data datasets`): with the paper's prompts" in results()


def mcr_gen_contradiction_sentence(audit: dict) -> str:
    """mcr-gen's gold critic hardly contradicts the gold label it is shown: the wrong initial answers (U = 0) with
    a known verdict whose critique stores them as right (r = 1), and the critiques that do not assert the gold
    (`assertion_mismatch`), split into those asserting another option (`asserts_other_than_gold`) and those
    naming none (e.g. "True")."""
    s, entries = audit["summary"], audit["entries"]
    stored_right = sum(e["U"] == 0 and e["r"] == 1 for e in entries)
    assert s["leniency"] is None and s["contradiction_entries"] == s["u0_verdict_known"]  # shown the gold label
    assert stored_right == round(s["contradiction"] * s["u0_verdict_known"])
    assert s["entries"] == len(entries)
    return (f"hardly contradicts the label it is shown ({stored_right} of the {s['u0_verdict_known']} wrong "
            f"initial answers with a known "
            f"verdict stored as right; {_not_the_gold(s)})")


def _not_the_gold(s: dict) -> str:
    other, none = s["asserts_other_than_gold"], s["assertion_mismatch"] - s["asserts_other_than_gold"]
    assert none >= 0  # with the gold critic, a critique asserting another option does not assert the gold
    return (f"{s['assertion_mismatch']} of {s['entries']} critiques do not assert the gold: {other} "
            f"{'asserts' if other == 1 else 'assert'} another option, {none} name none")


def test_the_mcr_gen_critic_hardly_contradicts_the_label(shipped_audit):
    assert mcr_gen_contradiction_sentence(audit_of(shipped_audit, "mcr-gen")) in results()


def pref_gen_contradiction_sentence(audit: dict) -> str:
    """pref-gen's gold critic often contradicts the gold label it is shown: P(r = 1 | U = 0) over the entries
    shown the gold label with its 95% Wilson interval, to two decimals, over the wrong answers with a known
    verdict; the critiques that do not assert the gold, as for mcr-gen."""
    s = audit["summary"]
    return (f"while pref-gen's often does (contradiction {s['contradiction']:.2f} [{s['contradiction_low']:.2f}, "
            f"{s['contradiction_high']:.2f}] over the {s['contradiction_entries']} wrong answers with a known "
            "verdict; "
            f"{_not_the_gold(s)})")


def test_the_pref_gen_critic_often_contradicts_the_label(shipped_audit):
    assert pref_gen_contradiction_sentence(audit_of(shipped_audit, "pref-gen")) in results()


def failures_sentence(audit: dict) -> str:
    """mcr-gen's wrong EP_CRIT answers as retrieval or usage failures (its suggestibility run the partner);
    every wrong answer is classified."""
    f = audit["failures"]
    assert Path(f["partner"]).name == "mcr-gen__local_smollm2__suggestibility"
    assert f["unclassified"] == 0 and f["retrieval"] + f["usage"] == f["wrong"]
    assert "states its gold label" in f["note"]
    return (f"Of mcr-gen's {f['wrong']} wrong EP_CRIT answers, {f['retrieval']} are retrieval failures (the "
            f"truthful critique of that item, which states its gold label, fixes it) and {f['usage']} usage "
            "failures")


def test_the_retrieval_and_usage_failures(shipped_audit):
    assert failures_sentence(audit_of(shipped_audit, "mcr-gen")) in results()


# ---- Credit by deletion -----------------------------------------------------------------------------
def credit_dir(dataset: str) -> Path:
    return LOGS / f"{dataset}__local_smollm2__credit-EP_CRIT-test-half"


def credit_row(shipped_tables: dict, dataset: str) -> dict:
    rows = [r for r in shipped_tables["credit"] if r["dataset"] == dataset]
    assert len(rows) == 1, rows
    assert rows[0]["strategy"] == "EP_CRIT" and rows[0]["on"] == "test-half" and rows[0]["critic"] == "gold"
    return rows[0]


def prune_rows(shipped_tables: dict, dataset: str) -> dict[tuple[str, str], dict]:
    """(rule, strategy) -> the row of the pruning table."""
    rows = [r for r in shipped_tables["credit_prune"] if r["dataset"] == dataset]
    by = {(r["rule"], r["strategy"]): r for r in rows}
    assert len(by) == len(rows) and all(not r["errors"] for r in rows)
    return by


def calls_of(path: Path) -> list[dict]:
    with open(path / "calls.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def call_counts(dataset: str) -> dict:
    """What a credit run's calls say: the calls made (sent to the model, as `critique credit` counts them),
    the deletions and null repeats, the cost line printed before the first call (critique.experiments.credit.deletion:
    every null repeat, and every other request the source run's log does not answer: the run started fresh,
    with nothing of its own logged), and the requests the response cache answered (logged as cached, though
    the source run's log does not hold them)."""
    path = credit_dir(dataset)
    manifest = json.loads((path / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["resumed"] is None and manifest["status"] == "complete"
    source = LOGS / manifest["probe"]["source"]
    pool = reuse.matching_calls([source], manifest["config"]["model"], manifest["dataset"]["checksum"])
    calls = calls_of(path)
    assert not any(c.get("error") for c in calls)
    nulls = [c for c in calls if c["stage"] == "credit_null"]
    deletions = [c for c in calls if c["stage"] == "credit" and c["strategy"].startswith("without:")]
    full = [c for c in calls if c["stage"] == "credit" and c["strategy"] == "full"]
    assert len(nulls) + len(deletions) + len(full) == len(calls)
    assert all(c["cached"] and c["request_hash"] in pool for c in full)  # the source run's own prompts
    assert not any(c["cached"] for c in nulls)  # a null repeat is always asked
    made = sum(not c["cached"] for c in calls)
    assert made == credit_analysis.summary(path)["calls_paid"]
    cost = len(nulls) + sum(c["request_hash"] not in pool for c in deletions + full)
    from_cache = sum(c["cached"] and c["request_hash"] not in pool for c in deletions)
    assert made == cost - from_cache
    return {"made": made, "deletions": len(deletions), "prompts": len(full), "nulls": len(nulls), "cost": cost,
            "from_cache": from_cache}


def calls_sentence(shipped_tables: dict) -> str:
    """The calls each credit run made; the cost line and the response cache are named for a run whose cost
    line said more than it made (mcr-gen), and the null repeats once, for the first run."""
    parts = []
    for dataset in DATASETS:
        counts, row = call_counts(dataset), credit_row(shipped_tables, dataset)
        assert (counts["deletions"], counts["prompts"], counts["nulls"]) == (row["deletions"], row["prompts"],
                                                                            row["null_asked"])
        assert counts["made"] + counts["from_cache"] == counts["deletions"] + counts["nulls"]
        what = f"{counts['deletions']} deletions over {counts['prompts']} prompts"
        if dataset == DATASETS[0]:
            what += f" and the {counts['nulls']} null repeats"
            assert counts["from_cache"], "docs/results.md names the response cache for mcr-gen"
        else:
            assert counts["nulls"] == credit_row(shipped_tables, DATASETS[0])["null_asked"]
        if counts["from_cache"]:
            what += (f"; the cost line said {counts['cost']}, {counts['from_cache']} of them answered by the "
                     f"response cache")
        parts.append((dataset, counts["made"], what))
    (first, made, what), (second, made2, what2) = parts
    return f"{first}'s credit run made {made} calls ({what}), {second}'s {made2} ({what2})."


def test_the_credit_runs_calls(shipped_tables):
    assert calls_sentence(shipped_tables) in results()


def command_sentence(shipped_tables: dict) -> str:
    """The command the shipped credit runs were made with, from their manifests and the pruning table: the
    rules besides the budget-matched random removals, and the seeds of those."""
    commands = set()
    for dataset in DATASETS:
        probe = json.loads((credit_dir(dataset) / "manifest.json").read_text(encoding="utf-8"))["probe"]
        assert probe["source"] == f"{dataset}__local_smollm2" and probe["strategy"] == "EP_CRIT"
        assert not probe["cite"]
        rows = prune_rows(shipped_tables, dataset)
        rules = sorted({rule for rule, _ in rows if rule != "none" and not rule.startswith("random:")},
                       key=lambda rule: rule != "toxic")
        seeds = {r["seeds"] for (rule, _), r in rows.items() if rule.startswith("random:")}
        assert len(seeds) == 1
        commands.add(f"(`critique credit logs/<dataset>__local_smollm2 --on {probe['on']} --null {probe['null']} "
                     f"--prune {','.join(rules)} --seeds {seeds.pop()}`, then `critique tables logs`)")
    assert len(commands) == 1
    return commands.pop()


def test_the_credit_command(shipped_tables):
    assert command_sentence(shipped_tables) in results()


def test_the_null_control(shipped_tables):
    rows = [credit_row(shipped_tables, dataset) for dataset in DATASETS]
    assert len({(r["null_flipped"], r["null_asked"]) for r in rows}) == 1
    quoted = f"The null control found {rows[0]['null_flipped']} flips in {rows[0]['null_asked']} repeats on each"
    assert quoted in results()


def mcr_gen_credit_sentence(shipped_tables: dict) -> str:
    """mcr-gen: no deletion changed an answer (not only its correctness), every entry inert or
    novel-not-decisive, and every pruning rule (either strategy, every seed) at one accuracy."""
    row = credit_row(shipped_tables, "mcr-gen")
    assert row["decisive"] == 0
    assert not any(p["answer_changed"] for p in credit_analysis.summary(credit_dir("mcr-gen"))["pairs"])
    assert row["inert"] + row["novel-not-decisive"] == row["entries"]
    assert row["load-bearing"] == row["toxic"] == 0
    accuracies = {_pct(r[key]) for r in prune_rows(shipped_tables, "mcr-gen").values()
                  for key in ("accuracy", "accuracy_min", "accuracy_max")}
    assert len(accuracies) == 1
    return (f"On mcr-gen no deletion changed an answer (the model gives one option whatever it is shown): "
            f"{row['inert']} entries inert, {row['novel-not-decisive']} novel-not-decisive, none load-bearing or "
            f"toxic, and pruning leaves the held-out half at {accuracies.pop()} under every rule.")


def test_the_mcr_gen_credit(shipped_tables):
    assert mcr_gen_credit_sentence(shipped_tables) in results()


def test_pruning_is_scored_on_the_other_half(shipped_tables):
    """"the held-out half": the pruned memories are scored on the test questions the credit run did not
    evaluate, and together they are the whole test set."""
    for dataset in DATASETS:
        manifest = json.loads((credit_dir(dataset) / "manifest.json").read_text(encoding="utf-8"))
        n = {r["n"] for r in prune_rows(shipped_tables, dataset).values()}
        assert len(n) == 1
        assert credit_row(shipped_tables, dataset)["prompts"] + n.pop() == manifest["dataset"]["n_test"]
        held_out = {p["item_id"] for p in calls_of(Path(f"{credit_dir(dataset)}__prune"))}
        credited = {p["item_id"] for p in calls_of(credit_dir(dataset))}
        assert held_out and credited and not held_out & credited


def pref_gen_credit_sentence(shipped_tables: dict) -> str:
    """pref-gen: the deletions that changed correctness against the null control's flips, and the tiers
    docs/results.md names (every tier with an entry but novel-not-decisive), largest first but inert last."""
    row = credit_row(shipped_tables, "pref-gen")
    named = [t for t in ("load-bearing", "toxic", "mixed", "inert") if row[t]]
    assert named == ["load-bearing", "toxic", "mixed", "inert"]
    assert sum(row[t] for t in named) + row["novel-not-decisive"] == row["entries"]
    first, *rest = named
    tiers = ", ".join([f"{row[first]} entries {first}", *(f"{row[t]} {t}" for t in rest)])
    return (f"On pref-gen {row['decisive']} of {row['deletions']} deletions changed correctness "
            f"({_pct(100 * row['decisive'] / row['deletions'])}, against {row['null_flipped']} of "
            f"{row['null_asked']} for the null control): {tiers}.")


def test_the_pref_gen_credit(shipped_tables):
    assert pref_gen_credit_sentence(shipped_tables) in results()


def pruning_sentence(shipped_tables: dict) -> str:
    """pref-gen's pruning: EP_CRIT with the whole memory, without the toxic entries and without the lowest
    credit (one figure for both), against the budget-matched random removals (the seeds' range where they
    differ); EP+SEM_CRIT at one figure under every rule but the random removal of as many as the lowest."""
    rows = prune_rows(shipped_tables, "pref-gen")
    ep = {rule: r for (rule, strategy), r in rows.items() if strategy == "EP_CRIT"}
    sem = {rule: r for (rule, strategy), r in rows.items() if strategy == "EP+SEM_CRIT"}
    toxic, lowest = ep["toxic"], ep["lowest:10"]
    assert _pct(toxic["accuracy"]) == _pct(lowest["accuracy"])
    random_toxic, random_lowest = ep[f"random:{toxic['removed']}"], ep[f"random:{lowest['removed']}"]
    assert set(ep) == set(sem) == {"none", "toxic", "lowest:10", random_toxic["rule"], random_lowest["rule"]}

    def seeded(r: dict) -> str:
        low, high = f"{r['accuracy_min']:.1f}", f"{r['accuracy_max']:.1f}"
        return _pct(r["accuracy"]) + ("" if low == high else f" (seeds {low}-{high})")

    same = {_pct(r[key]) for rule, r in sem.items() if rule != random_lowest["rule"]
            for key in ("accuracy", "accuracy_min", "accuracy_max")}
    assert len(same) == 1
    every = same.pop()
    assert _pct(sem[random_lowest["rule"]]["accuracy"]) != every
    return (f"EP_CRIT {_pct(ep['none']['accuracy'])} with the whole memory, {_pct(toxic['accuracy'])} without the "
            f"{toxic['removed']} toxic entries or without the {lowest['removed']} of lowest credit, against "
            f"{seeded(random_toxic)} with {random_toxic['removed']} removed at random and {seeded(random_lowest)} "
            f"with {random_lowest['removed']}; EP+SEM_CRIT {every} under every rule "
            f"({_pct(sem[random_lowest['rule']]['accuracy'])} for {random_lowest['removed']} at random)")


def test_the_pref_gen_pruning(shipped_tables):
    assert pruning_sentence(shipped_tables) in results()
