"""A small study written as run directories, with numbers chosen so every table can be
computed by hand (the expected values are in the tests that use it).

Points (model, dataset), test accuracy (%) per strategy:

    point         zero_shot EP_LABEL EP_CRIT SEM_CRIT EP+SEM_CRIT
    (mA, d1)         50       60       70      50        80
    (mA, pref)       40       50       50      60        50
    (mB, d1)         70       80       60      70        70
    (mB, pref)       60       60       70      70        90

d1 has 10 test items. `pref` is a preference dataset with two users of unequal size: u1
has 2 test items, u2 has 10; its accuracy is the mean of the two users' accuracies
(u1 = 50 unless the accuracy is above 80, then 100; u2 = 2 x accuracy - u1), which differs
from the pooled accuracy. Wrong answers include timeouts, parse failures and a record
with correct = null; some rows are repeated (a failed call retried within the run).

mA reports reasoning tokens; mB does not. Tokens per question (carried by the test predictions,
as each prediction repeats its call's):
(mA, d1): zero_shot 200, EP_LABEL 400, EP_CRIT 300, SEM_CRIT 200, EP+SEM_CRIT 500;
(mA, pref): zero_shot 800, EP_LABEL 1000, EP_CRIT 600, SEM_CRIT 900, EP+SEM_CRIT 700.
Offline tokens (train_predict from the predictions, critique and summary from the calls):
(mA, d1) train_predict 300, critique 100, summary 40;
(mA, pref) train_predict 200, critique 100, summary 60 (two pools).

Suggestibility (truth, lying): (mA, d1) 80/30, (mA, pref) 90/70, (mB, d1) 70/60,
(mB, pref) 100/40. One K ablation run: (mA, d1) EP_CRIT at k=3: 60%.
"""

from __future__ import annotations

from pathlib import Path

from critique.analysis import synthetic

ACCURACY = {
    ("mA", "d1"): {"zero_shot": 50, "EP_LABEL": 60, "EP_CRIT": 70, "SEM_CRIT": 50, "EP+SEM_CRIT": 80},
    ("mA", "pref"): {"zero_shot": 40, "EP_LABEL": 50, "EP_CRIT": 50, "SEM_CRIT": 60, "EP+SEM_CRIT": 50},
    ("mB", "d1"): {"zero_shot": 70, "EP_LABEL": 80, "EP_CRIT": 60, "SEM_CRIT": 70, "EP+SEM_CRIT": 70},
    ("mB", "pref"): {"zero_shot": 60, "EP_LABEL": 60, "EP_CRIT": 70, "SEM_CRIT": 70, "EP+SEM_CRIT": 90},
}
TOKENS = {
    ("mA", "d1"): {"zero_shot": (100, 300), "EP_LABEL": (400, 400), "EP_CRIT": (250, 350), "SEM_CRIT": (200, 200),
                   "EP+SEM_CRIT": (500, 500)},
    ("mA", "pref"): {"zero_shot": (800, 800), "EP_LABEL": (1000, 1000), "EP_CRIT": (600, 600),
                     "SEM_CRIT": (900, 900), "EP+SEM_CRIT": (700, 700)},
}
OFFLINE = {("mA", "d1"): {"train_predict": (100, 100, 100), "critique": (50, 50), "summary": (40,)},
           ("mA", "pref"): {"train_predict": (100, 100), "critique": (50, 50), "summary": (30, 30)}}
SUGGESTIBILITY = {("mA", "d1"): (80, 30), ("mA", "pref"): (90, 70), ("mB", "d1"): (70, 60), ("mB", "pref"): (100, 40)}
USERS = {"u1": 2, "u2": 10}


def user_split(accuracy: int) -> dict[str, int]:
    """Per-user accuracies (%) of a preference cell whose mean over users is `accuracy`."""
    u1 = 50 if accuracy <= 80 else 100
    return {"u1": u1, "u2": 2 * accuracy - u1}


def answers(stage: str, strategy: str | None, accuracy: int, n: int, user: str | None, prefix: str) -> list[dict]:
    """n prediction records, `accuracy` % right; among the wrong ones a timeout, a parse failure,
    and a record without a verdict (correct = null)."""
    right = round(n * accuracy / 100)
    records = []
    for i in range(n):
        ok = i < right
        wrong_kind = i - right
        records.append(synthetic.prediction(
            stage, strategy, f"{prefix}{i}", ok if ok or wrong_kind != 2 else None, user,
            timeout=not ok and wrong_kind == 0, parse_failed=not ok and wrong_kind == 1))
    return records


def answered(records: list[dict], tokens: tuple, model: str) -> list[dict]:
    """The records, each carrying the tokens of the call that answered it (cycling through `tokens`;
    mA's reasoning tokens are half of them)."""
    return [{**r, "completion_tokens": t, "reasoning_tokens": t // 2 if model == "mA" else 0}
            for r, t in zip(records, tokens * len(records))]


def cell(stage: str, strategy: str | None, accuracy: int, dataset: str, prefix: str = "t") -> list[dict]:
    if dataset != "pref":
        return answers(stage, strategy, accuracy, 10, None, prefix)
    split = user_split(accuracy)
    return [r for user, n in USERS.items() for r in answers(stage, strategy, split[user], n, user, prefix)]


def plain_run(root: Path, model: str, dataset: str) -> Path:
    kind = "preference" if dataset == "pref" else "single"
    predictions, calls = [], []
    for strategy, accuracy in ACCURACY[(model, dataset)].items():
        tokens = TOKENS.get((model, dataset), {}).get(strategy, (20, 20))
        records = answered(cell("test", strategy, accuracy, dataset), tokens, model)
        # a failed first attempt at the first item, retried: the later record counts
        predictions.append({**records[0], "correct": False, "error": "rate limited", "completion_tokens": 0})
        predictions.extend(records)
        calls.append(synthetic.call("test", strategy, "t0", None, 0, 0, model, error="rate limited"))
        calls.extend(synthetic.call("test", strategy, r["item_id"], r["user"], r["completion_tokens"],
                                    r["reasoning_tokens"], model) for r in records)
    offline = OFFLINE.get((model, dataset), {"train_predict": (10,), "critique": (5,)})
    train = cell("train_predict", None, 40, dataset, prefix="r")
    predictions.extend(answered(train, offline["train_predict"] + (0,) * (len(train) - len(offline["train_predict"])),
                                model))
    for stage, tokens in offline.items():
        calls.extend(synthetic.call(stage, None, f"r{i}", None, t, 0, model) for i, t in enumerate(tokens))
    return synthetic.write_run(root / f"{model}__{dataset}", synthetic.manifest(model, dataset, kind), calls,
                               predictions)


def probe_run(root: Path, model: str, dataset: str) -> Path:
    truth, lying = SUGGESTIBILITY[(model, dataset)]
    kind = "preference" if dataset == "pref" else "single"
    predictions = cell("probe", "truth", truth, dataset) + cell("probe", "lying", lying, dataset)
    head = synthetic.manifest(model, dataset, kind, probe={"name": "suggestibility", "attribution": None})
    return synthetic.write_run(root / f"{model}__{dataset}__suggestibility", head, [], predictions)


def ablation_run(root: Path) -> Path:
    head = synthetic.manifest("mA", "d1", ablation={"name": "k", "value": 3})
    return synthetic.write_run(root / "mA__d1__k-3", head, [], cell("test", "EP_CRIT", 60, "d1"))


def build_study(root: Path) -> list[Path]:
    runs = [plain_run(root, m, d) for m, d in ACCURACY]
    runs += [probe_run(root, m, d) for m, d in SUGGESTIBILITY]
    runs.append(ablation_run(root))
    return runs
