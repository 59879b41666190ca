"""The Echo-Gap tables (docs/memory.md section 1): are a run's stored verdicts wrong, are the wrong ones
reused more, does a wrong retrieved set make the test answer wrong, and what the critic mode costs.

Per plain run with episodic memory (one row each, `echo`):
- `P(r = 1 | U = 0)` with its Wilson interval, named by what the critic saw (echo_stats.stored_right): leniency
  without a label, contradiction of the gold label it was shown; specificity `P(r = 0 | U = 1)`; in percent: U,
  r, b and the reuse n of each entry are critique.analysis.memory.audit's (`entry_rows`, `count_reuse`: one definition
  each; n counts EP_CRIT and EP+SEM_CRIT prompts, echo_stats.REUSE_NOTE);
- `Corr(b, n | U = 0)` with the wrong-but-trusted reused entries that carry it and a seeded percentile
  bootstrap interval, or the reason none is given (critique.analysis.memory.echo_stats);
- the contamination slope kappa: the least-squares slope of a test prompt's error (1 - correct) on the share
  of its retrieved entries (of known verdict) that are wrong-but-trusted (b = +1), over the same strategies'
  prompts, within the difficulty strata of the run's zero_shot answers (right, wrong) with an interval over
  resampled test questions, in each stratum, and pooled over both (confounded with the questions' difficulty);
- with the generator's truth (pref-gen: meta.rule_prefers, the label before the generator flipped it), the
  leniency and specificity against that truth too.
Per run and strategy (`echo_accuracy`): the strategy's accuracy (Table 1's cell) next to the gold-critic run
of the same model, dataset and other settings, and next to the run's zero_shot.

Truth is the benchmark's gold (the entries' `gold`), used only here, never by the run. Reads logs (and the
dataset folder for the generator's truth) only."""

from __future__ import annotations

from pathlib import Path

from critique.analysis.memory import audit
from critique.analysis.reading import logs
from critique.analysis.study.cells import mean
from critique.analysis.memory.echo_stats import BOOTSTRAP, CONTRADICTION, LENIENCY, LEVEL, MAX_UNDEFINED, \
    MIN_CARRIERS, MIN_VARYING, REUSE, REUSE_NOTE, SEED, STORED_RIGHT_NOTE, contamination, corr_b_n, pearson, \
    stored_right
from critique.analysis.study.tabular import Table
from critique.base import vocab
from critique.base.ids import entry_id

ECHO_TITLE = "Echo Gap: stored verdicts against the truth, their reuse, and the contamination slope, per run"
ACCURACY_TITLE = "Echo Gap: accuracy (%) of each strategy next to the gold-critic run and zero_shot"
ECHO_COLUMNS = ["model", "dataset", "critic", "entries", "verdict_unknown", "u0", "leniency", "leniency_low",
                "leniency_high", "contradiction", "contradiction_low", "contradiction_high", "specificity",
                "corr_b_n_u0", "lenient_reused", "corr_undefined", "corr_low", "corr_high", "corr_why",
                "kappa_within", "kappa_within_low", "kappa_within_high", "kappa_zero_shot_right",
                "kappa_zero_shot_wrong", "kappa_confounded", "kappa_prompts", "kappa_varying", "kappa_why",
                "label_flipped", "believed_not_gold", "stored_right_generator", "specificity_generator"]
ECHO_NOTE = (
    "truth: the gold label (U: the initial answer is the gold; r: the entry's stored verdict says it is right: a self "
    "critic's verdict, else the option its correct_answer asserts is the initial answer; entries whose verdict names "
    "nothing are verdict_unknown and left out); u0: entries with U=0 and a known verdict; "
    f"{STORED_RIGHT_NOTE}; each with its {LEVEL:.0%} Wilson interval (*_low/high); specificity = P(r=0 | U=1); in "
    f"percent; {REUSE_NOTE}; corr_b_n_u0: Pearson's r of b = r - U and n over the u0 entries; lenient_reused: the "
    "wrong-but-trusted entries (U=0, b=+1) with n > 0, which carry it; corr_low/corr_high: its percentile bootstrap "
    f"interval ({BOOTSTRAP} resamples of the u0 entries, seed {SEED}), given only with at least {MIN_CARRIERS} "
    f"lenient_reused and {MIN_CARRIERS} u0 entries with b=0 and at most {MAX_UNDEFINED:.0%} of resamples undefined "
    "(corr_undefined, %), else corr_why says why not; kappa_within: least-squares slope of a prompt's test error on "
    "the share of its retrieved entries of known verdict that are wrong-but-trusted (b=+1), over the EP_CRIT and "
    "EP+SEM_CRIT prompts that retrieved an entry of known verdict (kappa_prompts), within the difficulty strata "
    "(the run's zero_shot answer to the question right, wrong: one intercept each), kappa_varying of them with a "
    "share other than their stratum's most common one; kappa_within_low/high: its percentile interval over "
    f"resampled test questions ({BOOTSTRAP} resamples, seed {SEED}), given only with at least {MIN_CARRIERS} "
    f"wrong-but-trusted entries retrieved and {MIN_VARYING} varying prompts, else kappa_why says why not; "
    "kappa_zero_shot_right/wrong: the slope in each stratum; kappa_confounded: pooled over both strata, confounded "
    "with the questions' difficulty (hard questions retrieve wrong entries and fail anyway), not contamination; "
    "label_flipped: entries whose label --critic noisy:R flipped; believed_not_gold: self-graded entries whose "
    "believed answer is not the gold")
ACCURACY_COLUMNS = ["model", "dataset", "critic", "strategy", "accuracy", "gold_critic", "vs_gold_critic",
                    "zero_shot", "vs_zero_shot"]
SLOPES = ("kappa_within", "kappa_within_low", "kappa_within_high", "kappa_zero_shot_right", "kappa_zero_shot_wrong",
          "kappa_confounded")
FORMATS = {"corr_b_n_u0": ".2f", "corr_low": ".2f", "corr_high": ".2f", **{c: ".3f" for c in SLOPES}}


def critic_of(settings: dict) -> str:
    """A run's critic as the tables show it: gold, noisy:R, self, self+budget:F."""
    critic = settings.get("critic") or "gold"
    budget = settings.get("label_budget")
    return f"{critic}+budget:{budget:g}" if budget else critic


def run_label(meta: dict) -> dict:
    """The columns that name a run in the per-run tables: model (with its variant), dataset, critic."""
    from critique.analysis.reading.read import model_label

    return {"model": model_label(meta), "dataset": meta["dataset"], "critic": critic_of(meta["settings"])}


def rate(flags: list) -> float | None:
    """Percent of true values; None when there are none."""
    found = mean(int(bool(f)) for f in flags)
    return None if found is None else 100.0 * found


def generator_rates(rows: list[dict], truth: dict) -> tuple[float | None, float | None]:
    """(P(r = 1 | U = 0), specificity) against the generator's truth (meta.rule_prefers), where the dataset has
    it, whatever the critic was shown."""
    judged = []
    for row in rows:
        prefers = (truth.get((row["user"], str(row["item_id"]))) or {}).get("rule_prefers")
        if prefers is not None and row["r"] is not None:
            judged.append((int(row["initial_answer"] == prefers), row["r"]))
    return (rate([r == 1 for u, r in judged if u == 0]), rate([r == 0 for u, r in judged if u == 1]))


def percent(value: float | None) -> float | None:
    return None if value is None else 100 * value


def stored_right_columns(u0: list[dict]) -> dict:
    """leniency and contradiction (echo_stats.stored_right) with their Wilson intervals, in percent."""
    found = stored_right(u0)
    return {f"{name}{end}": percent(found[name][key]) for name in (LENIENCY, CONTRADICTION)
            for end, key in (("", "value"), ("_low", "low"), ("_high", "high"))}


def zero_shot_strata(predictions: list[dict]) -> dict | None:
    """(user, item) -> whether the run's zero_shot answered it right: the difficulty strata of kappa; None when
    the run has no zero_shot answer."""
    found = {(p.get("user"), p.get("item_id")): p.get("correct") is True for p in predictions
             if p.get("strategy") == vocab.ZERO_SHOT}
    return found or None


def gap_columns(rows: list[dict], predictions: list[dict]) -> dict:
    """Leniency and contradiction (Wilson intervals), Corr(b, n | U = 0) and kappa with what each rests on, from
    entry rows whose reuse n is counted; percent for rates and for the share of undefined resamples."""
    u0 = [r for r in rows if r["r"] is not None and r["U"] == 0]
    corr = corr_b_n(u0)
    kappa = contamination(rows, predictions, REUSE, zero_shot_strata(predictions))
    return {**stored_right_columns(u0), "corr_b_n_u0": corr["value"], "lenient_reused": corr["lenient_reused"],
            "corr_undefined": percent(corr["undefined"]), "corr_low": corr["low"], "corr_high": corr["high"],
            "corr_why": corr["why"], "kappa_within": kappa["within"], "kappa_within_low": kappa["low"],
            "kappa_within_high": kappa["high"], "kappa_zero_shot_right": kappa["right"],
            "kappa_zero_shot_wrong": kappa["wrong"], "kappa_confounded": kappa["confounded"],
            "kappa_prompts": kappa["prompts"], "kappa_varying": kappa["varying"], "kappa_why": kappa["why"]}


def run_row(meta: dict, problems: list[str], data_dirs: list[str] = ()) -> dict | None:
    """The Echo-Gap numbers of one run; None when it has no episodic memory."""
    path = Path(meta["path"])
    entries, _ = audit.read_memory(path, problems)
    if entries is None:
        return None
    manifest = logs.manifest(path)
    space = [str(a) for a in (manifest.get("dataset") or {}).get("answer_space") or []]
    predictions = audit.counted(path, vocab.TEST, problems)
    truth, _ = audit.read_truth(manifest, list(data_dirs))
    rows = audit.entry_rows(entries, space, truth)
    audit.count_reuse(rows, predictions, problems, meta["path"])  # n: REUSE's prompts only (REUSE_NOTE)
    known = [r for r in rows if r["r"] is not None]
    self_graded = [r for r in rows if r["believed"] is not None]
    gen_stored_right, gen_specificity = generator_rates(rows, truth)
    return {**run_label(meta), "entries": len(rows), "verdict_unknown": len(rows) - len(known),
            "u0": sum(r["U"] == 0 for r in known), **gap_columns(rows, predictions),
            "specificity": rate([r["r"] == 0 for r in known if r["U"] == 1]),
            "label_flipped": sum(r["label_flipped"] for r in rows),
            "believed_not_gold": sum(r["believed"] != r["gold"] for r in self_graded) if self_graded else None,
            "stored_right_generator": gen_stored_right, "specificity_generator": gen_specificity}


def echo_table(metas: list[dict], problems: list[str], data_dirs: list[str] = ()) -> Table:
    from critique.analysis.reading.read import plain

    found = [row for meta in metas if plain(meta) for row in [run_row(meta, problems, data_dirs)] if row]
    if not found:
        return Table("echo", ECHO_TITLE, skipped="no plain run with episodic memory among the inputs "
                                                 "(memory/episodic.jsonl)")
    rows = sorted(found, key=lambda r: (r["model"], r["dataset"], r["critic"]))
    keep = [c for c in ECHO_COLUMNS if not c.endswith("_generator") or any(r[c] is not None for r in rows)]
    note = ECHO_NOTE
    if any(c.endswith("_generator") for c in keep):
        note += ("; stored_right_generator: P(r=1 | U=0) and specificity_generator: P(r=0 | U=1) against the "
                 "generator's truth (pref-gen's meta.rule_prefers, the label before it was flipped), whatever the "
                 "critic was shown")
    return Table("echo", ECHO_TITLE, keep, [{c: r[c] for c in keep} for r in rows], note=note, formats=FORMATS)


def _other_settings(settings: dict) -> str:
    import json

    return json.dumps({k: v for k, v in settings.items() if k not in ("critic", "label_budget")}, sort_keys=True,
                      default=str)


def accuracy_table(metas: list[dict], cells) -> Table:
    """Each plain run's strategies next to the gold-critic run of the same model, dataset and other settings,
    and next to the run's zero_shot (Table 1's cells)."""
    from critique.analysis.reading.read import model_label, plain

    accuracy = {(r["model"], r["dataset"], r["strategy"]): r["accuracy"] for r in cells.accuracy}
    runs = {}
    for meta in metas:
        if plain(meta):
            runs[(model_label(meta), meta["dataset"])] = meta
    gold = {(m["model"], m["dataset"], _other_settings(m["settings"])): label
            for (label, _), m in runs.items() if critic_of(m["settings"]) == "gold"}
    rows = []
    for (label, dataset), meta in sorted(runs.items()):
        partner = gold.get((meta["model"], dataset, _other_settings(meta["settings"])))
        base = accuracy.get((label, dataset, vocab.ZERO_SHOT))
        for strategy in vocab.STRATEGIES:
            value = accuracy.get((label, dataset, strategy))
            if value is None:
                continue
            against = accuracy.get((partner, dataset, strategy)) if partner else None
            rows.append({"model": label, "dataset": dataset, "critic": critic_of(meta["settings"]),
                         "strategy": strategy, "accuracy": value, "gold_critic": against,
                         "vs_gold_critic": None if against is None else value - against,
                         "zero_shot": base, "vs_zero_shot": None if base is None else value - base})
    if not rows:
        return Table("echo_accuracy", ACCURACY_TITLE, skipped="no test-stage accuracy of plain runs among the inputs")
    note = ("accuracy: Table 1's cell; gold_critic: the same strategy in the run of the same model, dataset and "
            "other settings with --critic gold ('-' when none was read); vs_*: points; zero_shot: the run's own "
            "zero_shot (it does not depend on the critic)")
    return Table("echo_accuracy", ACCURACY_TITLE, ACCURACY_COLUMNS, rows, note=note)


# ---- verifiers (critique verify) -------------------------------------------------------------------------
EIA_TITLE = "Verifiers: does each verifier track the truth without echoing the stored verdicts (per verify run)"
EIA_COLUMNS = ["model", "dataset", "critic", "verifier", "checked", "flagged", "corr_v_u", "corr_nu_b", "corr_why",
               "precision", "errors"]


def constants(named: dict[str, list]) -> list[str]:
    """'V = 0 for every entry' for each named variable that takes one value (or none) over its entries."""
    return [f"{name} = {values[0]:g} for every entry" if values else f"{name}: no entry"
            for name, values in named.items() if len(set(values)) <= 1]


def verifier_correlations(joined: list[tuple[int, dict]]) -> dict:
    """Corr(V, U) and Corr(nu, b), nu = V - U, b = r - U (over the entries of known verdict): a correlation of
    a constant is undefined, and so is Corr(nu, b) when V or r is constant (nu or b is then -U shifted: what is
    left is U's correlation with the other term, not the verifier's error echoing the stored bias; with both
    constant it is 1 whatever the verifier does); `corr_why` says which is constant."""
    v, u = [v for v, _ in joined], [row["U"] for _, row in joined]
    known = [(v, row) for v, row in joined if row["b"] is not None]
    nu, b = [v - row["U"] for v, row in known], [row["b"] for _, row in known]
    fixed_v_u = constants({"V": v, "U": u})
    fixed_nu_b = constants({"V": [v for v, _ in known], "r": [row["r"] for _, row in known], "nu": nu, "b": b})
    why = list(dict.fromkeys(fixed_v_u + fixed_nu_b))
    return {"corr_v_u": None if fixed_v_u else pearson(v, u), "corr_nu_b": None if fixed_nu_b else pearson(nu, b),
            "corr_why": "undefined: " + "; ".join(why) if why else None}


def verifier_row(path: Path, problems: list[str]) -> dict | None:
    """A verify run's numbers: V = 1 when the entry's answer survived, U and b of the entry in its source run
    (audit's); Corr(V, U), Corr(nu, b) with nu = V - U, precision P(U = 0 | flagged) in percent. None when
    the run is not a verify run or its source run cannot be read."""
    manifest = logs.manifest(path)
    probe = manifest.get("probe") or {}
    if probe.get("name") != "verify":
        return None
    source = Path(path).parent / str(probe.get("source") or "")  # beside the verify run (an absolute path: old runs)
    entries, _ = audit.read_memory(source, problems) if source.is_dir() else (None, None)
    if entries is None:
        problems.append(f"{path}: its source run {source} (memory/episodic.jsonl) cannot be read; no verifier row")
        return None
    space = [str(a) for a in (manifest.get("dataset") or {}).get("answer_space") or []]
    rows = {r["id"]: r for r in audit.entry_rows(entries, space, {})}
    checks = [p for p in audit.counted(Path(path), vocab.PROBE, problems) if p.get("verifier")]
    done = [p for p in checks if not p.get("error")]
    joined = []
    for p in done:
        row = rows.get(entry_id(p.get("user"), p["item_id"]))
        if row is not None:
            joined.append((int(p.get("survives") is True), row))
    flagged = [row for v, row in joined if v == 0]
    config = manifest.get("config") or {}
    try:  # the model whose memory was checked (a judge:MODEL run's own model is the judge)
        config = logs.manifest(source).get("config") or config
    except (OSError, ValueError):
        pass
    return {"model": config.get("model"), "dataset": (manifest.get("dataset") or {}).get("name"),
            "critic": critic_of(config), "verifier": probe.get("verifier"), "checked": len(joined),
            "flagged": len(flagged), **verifier_correlations(joined),
            "precision": rate([r["U"] == 0 for r in flagged]), "errors": len(checks) - len(done)}


EIA_NOTE = ("V = 1 when the entry's answer survived the verifier, 0 when flagged; U and b = r - U of the entry in "
            "the run it checks (critique audit's); corr_v_u = Corr(V, U); corr_nu_b = Corr(nu, b) with nu = V - U "
            "(the error-independence condition wants it near 0), over entries with a known verdict; corr_why: why a "
            "correlation is undefined (a constant has none, and Corr(nu, b) has none when V or r is constant: nu or "
            "b is then -U shifted, and with both constant it would be 1 whatever the verifier does); precision = "
            "P(U = 0 | flagged) in percent; errors: checks that ended in an error (rerun to retry), left out")


def eia_table(metas: list[dict], problems: list[str]) -> Table:
    found = [row for meta in metas if meta.get("probe") == "verify"
             for row in [verifier_row(Path(meta["path"]), problems)] if row]
    if not found:
        return Table("eia", EIA_TITLE, skipped="no verify run among the inputs (critique verify RUN --verifier V)")
    return Table("eia", EIA_TITLE, EIA_COLUMNS, found, note=EIA_NOTE,
                 formats={"corr_v_u": ".2f", "corr_nu_b": ".2f"})


def verifier_text(path: Path) -> str:
    """The verify run's row as a short markdown table (what `critique verify` prints)."""
    from critique.analysis.study.render import markdown_table

    problems: list[str] = []
    row = verifier_row(Path(path), problems)
    if row is None:
        return "no verifier numbers: " + "; ".join(problems or ["not a verify run"])
    table = Table("eia", EIA_TITLE, EIA_COLUMNS, [row], note=EIA_NOTE, formats={"corr_v_u": ".2f", "corr_nu_b": ".2f"})
    return "\n".join([f"\n{EIA_TITLE}\n", markdown_table(table), "", f"_{EIA_NOTE}._", *problems])


def tables(metas: list[dict], cells, problems: list[str]) -> list[Table]:
    """The Echo-Gap tables of the runs read (`critique tables`, `critique report`), and the verifiers' table."""
    verifiers = [eia_table(metas, problems)] if any(m.get("probe") == "verify" for m in metas) else []
    return [echo_table(metas, problems), accuracy_table(metas, cells), *verifiers]
