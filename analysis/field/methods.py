"""The field's methods beside ours (`critique tables`, table ``methods``): per run that holds a field method's
memory (memory/METHOD.json: ACE, Dynamic Cheatsheet, ExpeL) and per such method, its accuracy and its
timeouts, what its memory holds (analysis.field.method_memory: empty, a placeholder, its starting program, or learned),
what its offline stage spent and whether --train-budget stopped it, its tokens per test question, its break-even
against EP_LABEL, and item-level paired tests against EP+SEM_CRIT and zero_shot of the same run (exact McNemar on the
items the two answered differently), Holm-adjusted over the family of one run's comparisons; the run's critique
strategies beside them, with the train stage they pay, and many_shot (the in-context learning baseline: labeled train
items in its prompt, no offline stage) where the run has it: a run with a field method or many_shot has rows."""

from __future__ import annotations

from pathlib import Path

from critique.analysis.field import method_memory
from critique.analysis.reading import logs, prices, tally
from critique.analysis.stats.core import MDE_NOTE, detectable_effect, holm, sign_test
from critique.analysis.study.tabular import Table
from critique.base import rundir, vocab
from critique.base.price import Price

KEY = "methods"
TITLE = "The field's methods beside ours: accuracy, offline cost, break-even and paired tests (same run, same items)"
AGAINST = (vocab.EP_SEM_CRIT, vocab.ZERO_SHOT)
COLUMNS = ["model", "dataset", "method", "accuracy", "n", "errors", "timeouts", "notes", "memory", "offline_calls",
           "offline_tokens", "offline_dollars", "train_budget", "stopped", "total_tokens_per_question",
           "dollars_per_question", "break_even", "against", "diff", "wins", "losses", "timeout_losses", "p", "p_holm",
           "mde"]
NOTE = ("method: a field method of the run (memory/METHOD.json), a critique strategy of the same run (its "
        "offline stage: the whole train stage, as Table 5 counts it), or many_shot, the in-context baseline (as many "
        "labeled train items as fit in the context in every prompt; no offline stage: 0 calls and tokens); "
        "accuracy: % of the test questions (n), errors and timeouts counted wrong; timeouts: its test answers cut at "
        "the token limit (max_tokens); notes: the notes of its memory; memory: what they are, from its offline "
        "stage's calls: 'empty' (none), 'placeholder' (text of a prompt the model copied back, such as a curator's "
        "example, or a note that is one bracketed blank, such as '[add a new insight]'), 'starting program' (text "
        "its stage's first prompt already held, such as the task's own instructions), or 'learned' (written by the "
        "model, or composed from the train items; how many notes are not, and how many pools are empty); "
        "offline_calls, offline_tokens: its offline stage's calls and their prompt + completion tokens (each "
        "distinct request once); train_budget: --train-budget (each pool's share when a preference dataset has "
        "several); stopped: the pools whose stage the budget stopped, or where a "
        "call failed (a rerun retries it); total_tokens_per_question: prompt + completion tokens per answered test "
        "question (Table 1's tokens_per_question counts completion tokens only); "
        "offline_dollars, dollars_per_question: the same tokens at the run's price (its manifest's; '-' where no "
        "price is known); "
        "break_even: offline tokens / (EP_LABEL's total tokens per question - the method's), the test questions after "
        "which it has cost less than EP_LABEL ('never' when it costs more per question; '-' without EP_LABEL in the "
        "run; where its memory is empty, a placeholder or its starting program, a saving is a shorter prompt's, "
        "not a memory's); against: the strategy of the same run it is compared with, diff: accuracy - theirs in "
        "points, wins/losses: items only it / only they answered right, timeout_losses: its losses that were "
        "timeouts, p: exact McNemar, p_holm: Holm over the run's comparisons; " + MDE_NOTE)


def tables(metas: list[dict], problems: list[str]) -> list[Table]:
    rows = [row for meta in metas if meta.get("probe") is None and meta.get("ablation") is None
            for row in _rows(meta, problems)]
    if not rows:
        return [Table(KEY, TITLE, skipped="no field method nor many_shot among the inputs (critique run --strategies "
                                          "ace,dc,expel,many_shot,...)")]
    return [Table(KEY, TITLE, COLUMNS, rows, note=NOTE)]


def learned(run: Path, problems: list[str]) -> dict[str, dict]:
    """method -> its memory document (memory/METHOD.json) of one run."""
    found = {}
    for path in sorted((Path(run) / rundir.MEMORY).glob("*.json")):
        try:
            document = logs.memory_document(run, path.name)
        except ValueError as exc:
            problems.append(f"{path}: unreadable ({exc}); its method is left out")
            continue
        if isinstance(document, dict) and "method" in document and isinstance(document.get("pools"), dict):
            found[str(document["method"])] = document
    return found


def _rows(meta: dict, problems: list[str]) -> list[dict]:
    from critique.analysis.reading.read import model_label

    path = Path(meta["path"])
    methods = learned(path, problems)
    if not methods and vocab.MANY_SHOT not in (logs.manifest(path).get("config") or {}).get("strategies", []):
        return []
    answers = _answers(logs.predictions(path, (vocab.TEST,), problems))
    price = prices.of_run(path)
    offline = _offline_calls(path, problems)
    kept = method_memory.verdicts(path, methods, problems)
    costs = {name: {**_cost(document), **kept[name], "offline_dollars": _method_dollars(offline, document, price)}
             for name, document in methods.items() if answers.get(name)}
    costs.update({name: cost for name, cost in _train_stage_costs(offline, price).items() if answers.get(name)})
    if answers.get(vocab.MANY_SHOT):  # the baseline: nothing offline, its examples paid in every prompt
        costs[vocab.MANY_SHOT] = {"offline_calls": 0, "offline_tokens": 0, "train_budget": None, "stopped": None,
                                  "notes": None, "memory": None, "offline_dollars": prices.dollars(price, 0, 0)}
    rows = []
    for name, cost in costs.items():
        mine = answers[name]
        head = {"model": model_label(meta), "dataset": meta["dataset"], "method": name, **cost, **_accuracy(mine),
                "total_tokens_per_question": _per_question(mine),
                "dollars_per_question": _dollars_per_question(mine, price),
                "break_even": _break_even(cost["offline_tokens"], mine, answers.get(vocab.EP_LABEL))}
        against = [other for other in AGAINST if other in answers and other != name]
        rows += [{**head, **_paired(mine, answers[other]), "against": other} for other in against]
        if not against:
            rows.append({**head, "against": None})
    family = [r for r in rows if r.get("p") is not None]
    for row, adjusted in zip(family, holm([r["p"] for r in family])):
        row["p_holm"] = adjusted
    return rows


def _answers(predictions: list[dict]) -> dict[str, dict[tuple, dict]]:
    """strategy -> (user, item) -> its test prediction."""
    found: dict[str, dict[tuple, dict]] = {}
    for record in predictions:
        found.setdefault(record.get("strategy"), {})[(record.get("user"), record.get("item_id"))] = record
    return found


def _accuracy(answers: dict) -> dict:
    right = sum(r.get("correct") is True for r in answers.values())
    return {"accuracy": 100.0 * right / len(answers), "n": len(answers),
            "errors": sum(bool(r.get("error")) for r in answers.values()),
            "timeouts": sum(tally.timed_out(r.get("timeout")) for r in answers.values())}


def _answered(answers: dict) -> list[dict]:
    """The test predictions whose call answered (an error answered nothing)."""
    return [r for r in answers.values() if not r.get("error")]


def _per_question(answers: dict) -> float | None:
    answered = _answered(answers)
    if not answered:
        return None
    return sum((r.get("prompt_tokens") or 0) + (r.get("completion_tokens") or 0) for r in answered) / len(answered)


def _cost(document: dict) -> dict:
    pools = list(document["pools"].values())
    stopped = sorted({str(p["stopped"]) for p in pools if p.get("stopped")})
    budgets = {p.get("train_budget") for p in pools}
    return {"offline_calls": sum(p.get("offline_calls") or 0 for p in pools),
            "offline_tokens": sum(p.get("offline_tokens") or 0 for p in pools),
            "train_budget": budgets.pop() if len(budgets) == 1 else None,
            "stopped": f"{sum(bool(p.get('stopped')) for p in pools)} of {len(pools)} ({', '.join(stopped)})"
            if stopped else None}


def _offline_calls(run: Path, problems: list[str]) -> list[tuple]:
    """(stage, strategy, request_hash, prompt_tokens, completion_tokens) of the run's answered calls but its test
    stage's."""
    calls = logs.rows(run, logs.CALLS, ("stage", "strategy", "request_hash", "prompt_tokens", "completion_tokens",
                                        "error"), problems)
    return [row[:5] for row in calls if row[0] != vocab.TEST and not row[5]]


def _method_dollars(offline: list[tuple], document: dict, price: Price | None) -> float | None:
    """A field method's offline stage in dollars: the requests its memory lists (one that another step asked
    first included, as its tokens count it), and the calls logged under its name, each distinct request once."""
    mine = {request for pool in document["pools"].values() for request in pool.get("requests") or []}
    once = {request: (prompt, completion) for _, strategy, request, prompt, completion in offline
            if request in mine or strategy == document["method"]}
    return prices.dollars(price, sum(p or 0 for p, _ in once.values()), sum(c or 0 for _, c in once.values()))


def _train_stage_costs(offline: list[tuple], price: Price | None) -> dict[str, dict]:
    """The critique strategies' offline cost in the same run: the whole train stage each pays
    (critique.base.vocab.OFFLINE_STAGES), its calls' prompt + completion tokens, and their dollars."""
    costs = {}
    for strategy, stages in vocab.OFFLINE_STAGES.items():
        paid = [(prompt or 0, completion or 0) for stage, _, _, prompt, completion in offline if stage in stages]
        costs[strategy] = {"offline_calls": len(paid), "train_budget": None, "stopped": None, "notes": None,
                           "memory": None,
                           "offline_tokens": sum(p + c for p, c in paid),
                           "offline_dollars": prices.dollars(price, sum(p for p, _ in paid), sum(c for _, c in paid))}
    return costs


def _dollars_per_question(answers: dict, price: Price | None) -> float | None:
    answered = _answered(answers)
    spent = prices.dollars(price, sum(r.get("prompt_tokens") or 0 for r in answered),
                           sum(r.get("completion_tokens") or 0 for r in answered))
    return spent / len(answered) if answered and spent is not None else None


def _break_even(offline: int, mine: dict, label: dict | None):
    if not label:
        return None
    theirs, ours = _per_question(label), _per_question(mine)
    if theirs is None or ours is None:
        return None
    saving = theirs - ours
    return offline / saving if saving > 0 else "never"


def _paired(mine: dict, theirs: dict) -> dict:
    both = [key for key in mine if key in theirs]
    if not both:
        return {"diff": None, "wins": 0, "losses": 0, "timeout_losses": 0, "p": None, "mde": None}
    ours = sum(mine[k].get("correct") is True for k in both)
    other = sum(theirs[k].get("correct") is True for k in both)
    wins = sum(mine[k].get("correct") is True and theirs[k].get("correct") is not True for k in both)
    lost = [k for k in both if mine[k].get("correct") is not True and theirs[k].get("correct") is True]
    return {"diff": 100.0 * (ours - other) / len(both), "wins": wins, "losses": len(lost),
            "timeout_losses": sum(tally.timed_out(mine[k].get("timeout")) for k in lost),
            "p": sign_test(wins, len(lost)), "mde": detectable_effect(len(both), wins + len(lost))}
