"""docs/results.md's account of the shipped study logs (from "On the shipped logs (full size: ..." through the
shipped probes and ablations) holds the figures the logs give: each test rebuilds one quoted sentence (or
table) from `critique tables logs [--inference] --format json` or from the run directories, read through
the one reader critique.analysis.reading.logs, and finds it in docs/results.md; a change to the logs or to the analysis
that moves a figure fails here until docs/results.md says the new one."""

import re
from collections import Counter
from datetime import datetime

import pytest

from critique.analysis.reading import logs
from critique.analysis.study.render import cell
from critique.base import rundir
from shipped import LOGS, QWEN, RESULTS, pct, results

GOLD = {dataset: LOGS / f"{dataset}__local_smollm2" for dataset in ("mcr-gen", "pref-gen")}
SUGGESTIBILITY = LOGS / "mcr-gen__local_smollm2__suggestibility"
STRATEGIES = ["zero_shot", "EP_LABEL", "EP_CRIT", "SEM_CRIT", "EP+SEM_CRIT"]
WORDS = {0: "zero", 1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine",
         10: "ten"}
# The columns of docs/results.md's quote of the paired table (the printed one has condition, errors, flagged and
# direction_agrees too).
PAIRED_COLUMNS = ["model", "dataset", "strategy", "baseline", "n", "acc_strategy", "acc_baseline", "diff", "ci_low",
                  "ci_high", "discordant_wins", "discordant_losses", "p_mcnemar", "p_holm", "mde"]


def _gold_rows(table: list[dict], dataset: str) -> dict:
    """A table's rows of the gold-critic plain runs of one dataset, by strategy."""
    return {r["strategy"]: r for r in table if r["model"] == "local/smollm2 [critic=gold]" and r["dataset"] == dataset}


def _time(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def _stretch(run) -> tuple[int, float]:
    """The calls of a run's last uninterrupted stretch (from the manifest's `resumed`, or `started`, to
    `finished`) and its seconds."""
    manifest = logs.manifest(run)
    start = manifest.get("resumed") or manifest["started"]
    calls = [t for (t,) in logs.rows(run, logs.CALLS, ("time",)) if _time(t) >= _time(start)]
    return len(calls), (_time(manifest["finished"]) - _time(start)).total_seconds()


def paired_quote(paired: list[dict]) -> str:
    """docs/results.md's table: the EP+SEM_CRIT rows of the gold-critic runs, as `critique tables --inference`
    prints them, in its order."""
    rows = [r for r in paired if r["condition"] == "critic=gold" and r["strategy"] == "EP+SEM_CRIT"]
    lines = ["| " + " | ".join(PAIRED_COLUMNS) + " |", "|" + "---|" * len(PAIRED_COLUMNS)]
    lines += ["| " + " | ".join(cell(c, r[c]) for c in PAIRED_COLUMNS) + " |" for r in rows]
    return "\n".join(lines)


def test_the_full_size_of_the_shipped_runs():
    """"(full size: 250 mcr-gen test items, 10 pref-gen users x 25 items)" and "`mcr-gen` (250 train / 250
    test) and `pref-gen` (10 users x 25 train / 25 test), all five strategies, zero errors, every line of
    semantic advice traced to the critiques of its chunk"."""
    mcr = logs.manifest(GOLD["mcr-gen"])["dataset"]
    pref = logs.manifest(GOLD["pref-gen"])["dataset"]
    users = pref["users"]
    per_user = {}
    for split, size in (("train_predict", pref["n_train"]), ("test", pref["n_test"])):
        counts = Counter(r["user"] for r in logs.predictions(GOLD["pref-gen"], (split,))
                         if r.get("strategy") in (None, "zero_shot"))
        assert sorted(counts) == users and len(set(counts.values())) == 1 and sum(counts.values()) == size
        per_user[split] = counts[users[0]]
    strategies, errors = set(), 0
    for run in GOLD.values():
        config = logs.manifest(run)["config"]
        strategies.add(tuple(config["strategies"]))
        records = logs.predictions(run) + logs.records(run, logs.CALLS)
        errors += sum(r.get("error") is not None for r in records)
        for pool in logs.memory_document(run, logs.SEMANTIC).values():
            assert pool["lines"] and all(line["source_ids"] == pool["source_ids"] and not line.get("cited")
                                         for line in pool["lines"]), run  # no sources asked: the whole pool
    assert strategies == {tuple(STRATEGIES)}
    assert f"(full size: {mcr['n_test']} mcr-gen test items, {len(users)} pref-gen users x " \
           f"{per_user['test']} items)" in results()
    assert f"`mcr-gen` ({mcr['n_train']} train / {mcr['n_test']} test) and `pref-gen` ({len(users)} users x " \
           f"{per_user['train_predict']} train / {per_user['test']} test), all {WORDS[len(STRATEGIES)]} " \
           f"strategies, {'zero' if not errors else errors} errors, every line of semantic advice traced to the " \
           f"critiques of its chunk" in results()


def test_the_quoted_paired_table(shipped_inference):
    paired = shipped_inference["inference"]["paired"]
    quote = paired_quote(paired)
    assert len(quote.splitlines()) == 2 + 4  # header, rule and the four rows docs/results.md shows
    # the whole table as docs/results.md holds it, nothing after its last row
    assert quote + "\n\n" in RESULTS.read_text(encoding="utf-8")


def test_the_number_of_paired_rows_printed(shipped_inference):
    paired = shipped_inference["inference"]["paired"]
    conditions = {r["condition"] for r in paired}
    assert {c.split(",")[0] for c in conditions if c.startswith("critic=")} == \
        {"critic=gold", "critic=noisy:0.2", "critic=self"}
    assert any("control=" in c for c in conditions)
    assert f"prints all {len(paired)} rows, those of the noisy and self critics, of the controls and of the model " \
           "that learns too" in results()


def test_the_call_counts_of_the_shipped_study():
    counts = {d: len(logs.rows(run, logs.CALLS, ("stage",))) for d, run in GOLD.items()}
    assert f"mcr-gen {counts['mcr-gen']:,} calls, pref-gen {counts['pref-gen']:,}" in results()


def test_the_wall_time_of_the_last_stretch():
    """Measured history the logs keep: the manifests' `resumed`/`finished` times and each call's time. The
    call counts exactly, the minutes and seconds a call as rounded."""
    stretches = {d: _stretch(run) for d, run in GOLD.items()}
    (mcr_calls, mcr_s), (pref_calls, pref_s) = stretches["mcr-gen"], stretches["pref-gen"]
    assert f"the last uninterrupted stretch of each ran {mcr_calls:,} calls in {mcr_s / 60:.0f} min (mcr-gen) " \
           f"and {pref_calls:,} calls in {pref_s / 60:.0f} min (pref-gen)" in results()
    per_call = (mcr_s + pref_s) / (mcr_calls + pref_calls)
    assert f"(about {per_call:.1f} s a call;" in results()


def test_the_time_of_a_summary_chunk():
    """A summary chunk but the last of its pass is a full one (the last holds what is left): their prompt
    tokens to the nearest 500, their mean latency to the nearest 10 s."""
    rows = logs.rows(GOLD["mcr-gen"], logs.CALLS, ("stage", "template", "user", "prompt_tokens", "latency_s",
                                                    "cached"), stages=("summary",))
    chunks = [r for r in rows if r[1] == "summary.j2"]
    full = chunks[:-1]
    assert full and not any(r[5] for r in full) and all(r[2] is None for r in chunks)
    tokens = round(sum(r[3] for r in full) / len(full) / 500) * 500
    assert all(abs(r[3] - tokens) < 500 for r in full)
    seconds = round(sum(r[4] for r in full) / len(full), -1)
    assert f"a summary chunk of {tokens:,} prompt tokens takes about {seconds:.0f} s)" in results()


def test_the_model_answers_every_mcr_gen_question_alike(shipped_tables):
    run = GOLD["mcr-gen"]
    size = re.search(r"-(\d+[MB])-", logs.manifest(run)["local_model"]["file"]).group(1)
    answers = {r["answer"] for r in logs.predictions(run)}
    rows = _gold_rows(shipped_tables["table1"], "mcr-gen")
    assert set(rows) == set(STRATEGIES)
    accuracy = {pct(r["accuracy"]) for r in rows.values()} | {pct(r["majority"]) for r in rows.values()}
    assert len(answers) == 1 and len(accuracy) == 1
    assert f"the {size} model answers every mcr-gen question with the same option ({accuracy.pop()}, the " \
           f"majority baseline, for all {WORDS[len(rows)]} strategies)" in results()


def test_the_mcr_gen_advice_is_one_degenerate_line():
    pools = logs.memory_document(GOLD["mcr-gen"], logs.SEMANTIC)
    lines = [line["text"] for pool in pools.values() for line in pool["lines"]]
    assert len(lines) == 1 and set(lines[0].split(".")) <= {"1", ""} and len(lines[0]) > 7
    assert f"its distilled advice is {WORDS[len(lines)]} degenerate line (\"{lines[0][:7]}...\")" in results()


def test_the_pref_gen_advice_of_each_user():
    """six of the ten users' advice is the five lines "The answer is A" ... "The answer is E", one user's
    alternates A and B, one user's is a single "The answer is A", and two users' repeat option texts (texts of
    the options that user's own prompts show)."""
    run = GOLD["pref-gen"]
    space = logs.manifest(run)["dataset"]["answer_space"]
    pools = logs.memory_document(run, logs.SEMANTIC)
    prompts = {}
    for record in logs.records(run, logs.CALLS):
        prompts.setdefault(record["user"], []).extend(m["content"] for m in record["messages"])
    kinds = Counter()
    for user, pool in pools.items():
        texts = [line["text"] for line in pool["lines"]]
        if texts == [f"The answer is {o}" for o in "ABCDE"]:
            kinds["five"] += 1
        elif len(texts) > 1 and texts == [f"The answer is {'AB'[i % 2]}" for i in range(len(texts))]:
            kinds["alternates"] += 1
        elif texts == ["The answer is A"]:
            kinds["single"] += 1
        elif not any(t.startswith("The answer is") for t in texts) \
                and all(any(t in prompt for prompt in prompts[user]) for t in texts):
            kinds["options"] += 1
    assert sum(kinds.values()) == len(pools)
    sentence = (f"on pref-gen, an {'/'.join(space)} task, {WORDS[kinds['five']]} of the {WORDS[len(pools)]} "
                f"users' advice is the five lines \"The answer is A\" ... \"The answer is E\", "
                f"{WORDS[kinds['alternates']]} user's alternates A and B, {WORDS[kinds['single']]} user's is a "
                f"single \"The answer is A\", and {WORDS[kinds['options']]} users' repeat option texts")
    assert sentence in results()


def test_the_pref_gen_gain_of_ep_sem_crit(shipped_inference):
    row, = [r for r in shipped_inference["inference"]["paired"]
            if r["condition"] == "critic=gold" and r["dataset"] == "pref-gen" and r["strategy"] == "EP+SEM_CRIT"
            and r["baseline"] == "zero_shot"]
    significant = row["p_mcnemar"] < 0.05 or row["p_holm"] < 0.05
    side = "over" if row["diff"] > 0 else "under"
    assert f"On pref-gen EP+SEM_CRIT is {abs(row['diff']):.1f} points {side} zero_shot, " \
           f"{'significant' if significant else 'not significant'} (p = {row['p_mcnemar']:.2g}; the test had 80% " \
           f"power for a difference of {row['mde']:.1f} points or more)." in results()


def test_the_suggestibility_probe(shipped_tables):
    cached = [c for (c,) in logs.rows(SUGGESTIBILITY, logs.CALLS, ("cached",))]
    row, = [r for r in shipped_tables["table4"] if r["dataset"] == "mcr-gen"]
    assert shipped_tables["titles"]["table4"].startswith("Table 4. Suggestibility")
    assert row["model"] == "local/smollm2 [critic=gold]" and row["n"] == 250 and not row["errors"]
    assert row["delivered_truth"] == row["delivered_lying"]  # docs/results.md gives one share for both
    assert f"The suggestibility probe on mcr-gen ({len(cached):,} calls, {cached.count(False):,} of them new) " \
           f"is shipped too: {pct(row['acc_truth'])} with a truthful critique, {pct(row['acc_lying'])} with a " \
           f"lying one (S = {row['suggestibility']:.1f}; {pct(row['delivered_truth'])} of the critiques argued " \
           f"the label they were told to)." in results()


def test_the_k_ablation(shipped_tables):
    rows = sorted((r for r in shipped_tables["table8"] if r["dataset"] == "mcr-gen"), key=lambda r: r["value"])
    assert shipped_tables["titles"]["table8"].startswith("Table 8. K ablation")
    assert {r["source"] for r in rows} == {"ablation"} and len({r["strategy"] for r in rows}) == 1
    assert all(r["n"] == 250 and not r["errors"] for r in rows)
    ks = ", ".join(str(r["value"]) for r in rows)
    assert f"The K ablation on mcr-gen (K = {ks}; {rows[0]['strategy']}) is shipped as well: " \
           f"{', '.join(pct(r['accuracy']) for r in rows)}, and so are" in results()


FIVE = ("zero_shot", "EP_LABEL", "EP_CRIT", "SEM_CRIT", "EP+SEM_CRIT")


def _row(shipped_tables, dataset: str) -> str:
    rows = {r["strategy"]: r for r in shipped_tables["table1"] if r["model"] == QWEN and r["dataset"] == dataset}
    assert set(rows) == set(FIVE) and all(r["n"] == 250 for r in rows.values())
    cells = " | ".join(f"{rows[s]['accuracy']:.1f} [{rows[s]['ci_low']:.1f}, {rows[s]['ci_high']:.1f}]" for s in FIVE)
    return f"| {dataset} | {rows['zero_shot']['majority']:.1f} | {cells} |"


def _answers(shipped_tables, dataset: str) -> dict:
    return {r["strategy"]: r for r in shipped_tables["answers"] if r["model"] == QWEN and r["dataset"] == dataset}


def _paired(shipped_inference, dataset: str) -> dict:
    return {(r["strategy"], r["baseline"]): r for r in shipped_inference["inference"]["paired"]
            if r["model"] == QWEN and r["dataset"] == dataset}


@pytest.mark.parametrize("dataset", ["mcr-gen", "pref-gen"])
def test_the_study_on_the_model_that_learns_is_table1s(shipped_tables, dataset):
    """docs/results.md's row of each Qwen2.5-Coder-0.5B study run is Table 1's, made by 1,760 calls, no error."""
    assert _row(shipped_tables, dataset) in results()
    run = LOGS / f"{dataset}__local_qwen2.5-coder-0.5b"
    manifest = rundir.read_manifest(run)
    assert len(rundir.read_jsonl(run / rundir.CALLS)) == 1760 and manifest["status"] == "complete"
    assert manifest["errors"] == {"calls": 0, "predictions": 0} and "1,760 calls each, no error" in results()


def test_the_mcr_gen_study_on_the_model_that_learns(shipped_tables, shipped_inference):
    """What docs/results.md says the model answered on mcr-gen and how the strategies compare on its items."""
    answers = _answers(shipped_tables, "mcr-gen")
    assert all(answers[s]["top_answer"] == "1" for s in FIVE)
    counts = [answers[s]["top_count"] for s in ("zero_shot", "EP_CRIT", "SEM_CRIT", "EP+SEM_CRIT")]
    assert counts == [248, 250, 250, 250]
    assert round(100 - answers["EP_LABEL"]["top_share"]) == 20
    paired = _paired(shipped_inference, "mcr-gen")
    label, zero = paired[("EP_CRIT", "EP_LABEL")], paired[("EP_CRIT", "zero_shot")]
    assert (f"EP_CRIT against EP_LABEL {label['diff']:+.1f} points, {label['discordant_wins']} wins and "
            f"{label['discordant_losses']} losses, p = {label['p_mcnemar']:.3g}; against zero_shot "
            f"{zero['diff']:+.1f}, {zero['discordant_wins']} and {zero['discordant_losses']})") in results()
    assert all(r["p_holm"] is None or r["p_holm"] >= 0.05 for r in paired.values())


def test_the_pref_gen_study_on_the_model_that_learns(shipped_tables, shipped_inference):
    """What docs/results.md says the model answered on pref-gen and how the strategies compare on its items."""
    answers = _answers(shipped_tables, "pref-gen")
    assert [answers[s]["top_count"] for s in ("zero_shot", "EP_CRIT", "EP+SEM_CRIT")] == [250, 250, 250]
    assert all(answers[s]["top_answer"] == "A" for s in FIVE)
    assert (answers["EP_LABEL"]["top_count"], round(answers["EP_LABEL"]["top_share"])) == (228, 91)
    sem = answers["SEM_CRIT"]
    assert (round(sem["top_share"]), round(sem["per_class"]["A"]), round(sem["per_class"]["B"])) == (60, 60, 40)
    paired = _paired(shipped_inference, "pref-gen")
    sem_zero = paired[("SEM_CRIT", "zero_shot")]
    assert (f"SEM_CRIT against zero_shot {sem_zero['diff']:+.1f} points, {sem_zero['discordant_wins']} wins and "
            f"{sem_zero['discordant_losses']} losses, p = {sem_zero['p_mcnemar']:.2f}") in results()
    ep, both = paired[("EP_CRIT", "EP_LABEL")], paired[("EP+SEM_CRIT", "EP_LABEL")]
    assert (ep["discordant_wins"], ep["discordant_losses"], both["discordant_wins"], both["discordant_losses"]) == \
        (11, 11, 11, 11) and ep["p_mcnemar"] == both["p_mcnemar"] == 1
