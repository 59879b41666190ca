"""Credit that is learned, on the fake provider: a scripted model answers wrong whenever its prompt shows an entry
of a planted bad kind (those whose initial answer was wrong), so deletion credit is negative for the bad entries
and nothing for the others. The estimate fitted from the logs alone (analysis.memory.credit_model) must rank the
held-out entries as that credit does, and pruning by it (`critique credit --prune estimate:N`) must give the
accuracy pruning by measured credit gives, above none and above as many entries removed at random."""

import json

import pytest

from critique.analysis.memory import credit as analysis
from critique.analysis.memory import credit_model
from critique.cli import main

import statement_dataset

TRAIN = {
    "t00": "Dogs are loyal animals that like to play fetch in the park.",
    "t01": "Sharks are fish with rows of sharp teeth that hunt in the ocean.",
    "t02": "Cats often sleep for most of the day in warm sunny spots.",
    "t03": "Octopuses have eight arms and can change colour to hide.",
    "t04": "Horses can sleep standing up in their stables.",
    "t05": "Whales are large mammals that breathe air through a blowhole.",
    "t06": "Rabbits have long ears and eat carrots and hay.",
    "t07": "Parrots can learn to repeat words they hear often.",
    "t08": "Cows give milk and graze on grass in the fields.",
    "t09": "Dolphins swim in pods and talk with clicks and whistles.",
    "t10": "Owls hunt mice at night with silent wings.",
    "t11": "Sheep grow wool that farmers shear every spring.",
    "t12": "Goats climb steep rocks and eat almost any plant.",
    "t13": "Hamsters store food in their cheek pouches.",
    "t14": "Jellyfish drift with the currents and sting with their tentacles.",
    "t15": "Eagles build large nests high on cliffs.",
}
BAD = {"t01", "t04", "t07", "t13"}  # one of each kind of animal; both halves of credit_model.held_out hold two
TEST = {
    "q1": "Seals are sea mammals that rest on rocks near the ocean.",
    "q2": "Crabs walk sideways on the sandy sea floor.",
    "q3": "Ponies are small horses that children learn to ride.",
    "q4": "Ducks swim on ponds and quack loudly.",
}


def dataset(folder):
    return statement_dataset.write(folder, "animals", TRAIN, TEST)


def scripted(prompt, options, props):
    """A question asked alone (the initial answers): wrong for a bad train question. Asked beside examples: wrong
    whenever a bad one is shown, else right."""
    lines = prompt.splitlines()
    if "Question:" not in lines:
        return None
    asked = lines[lines.index("Question:") + 1]
    if asked not in TRAIN.values() and asked not in TEST.values():
        return None
    shown = {k for k, q in TRAIN.items() if q in lines and q != asked}
    if shown:
        right = not (shown & BAD)
    else:
        right = asked not in {TRAIN[k] for k in BAD}
    return {"answer": "yes" if right else "no"}


@pytest.fixture
def source(home, fake_llm, monkeypatch):
    monkeypatch.setattr(fake_llm, "ANSWER", scripted)
    out = home / "runs" / "animals"
    assert main(["run", "--dataset", str(dataset(home / "animals")), "--model", "fake/m", "--strategies",
                 "EP_CRIT,EP+SEM_CRIT", "--k", "3", "--out", str(out), "--quiet"]) == 0
    return out


def test_the_learned_estimate_ranks_and_prunes_as_measured_credit_does(source, fake_llm, capsys):
    n = len(BAD)
    assert main(["credit", str(source), "--on", "train", "--prune", f"lowest:{n},estimate:{n}", "--seeds", "3",
                 "--quiet"]) == 0
    capsys.readouterr()
    out = source.parent / "animals__credit-EP_CRIT-train"
    measured = {r["id"]: r["credit"] for r in analysis.summary(out)["rows"]}
    assert all(measured[k] < 0 for k in BAD)  # shown beside no other bad one: its deletion turns answers right
    assert all(measured[k] == 0 for k in TRAIN if k not in BAD)  # a good entry's deletion changes nothing

    estimates = credit_model.cross_fitted(out)
    assert set(estimates) <= set(TRAIN) and len(estimates) >= 8
    shown_bad = BAD & set(estimates)
    assert max(estimates[k] for k in shown_bad) < min(v for k, v in estimates.items() if k not in BAD)

    s = credit_model.summary(out)
    assert s["spearman"]["rho"] > 0.5
    assert s["pruning"]["by_estimate"] == s["pruning"]["by_credit"] < s["pruning"]["at_random"]

    rows = {(r["rule"], r["strategy"]): r for r in analysis.prune_rows(source.parent / f"{out.name}__prune")}
    for strategy in ("EP_CRIT", "EP+SEM_CRIT"):
        none, lowest, learned = (rows[(rule, strategy)] for rule in ("none", f"lowest:{n}", f"estimate:{n}"))
        random_n = rows[(f"random:{n}", strategy)]
        assert learned["removed"] == lowest["removed"] == n and random_n["seeds"] == 3
        assert learned["accuracy"] == lowest["accuracy"] == 1.0  # no bad entry left to retrieve
        assert none["accuracy"] < 1.0 and random_n["accuracy"] < 1.0

    assert main(["tables", str(source.parent), "--format", "json"]) == 0
    tables = json.loads(capsys.readouterr().out)
    [row] = tables["credit_learned"]
    assert row["rho"] == s["spearman"]["rho"] and row["removed_by_estimate"] == row["removed_by_credit"]
    assert {r["rule"] for r in tables["credit_prune"]} >= {"none", f"lowest:{n}", f"estimate:{n}"}


def test_the_rule_is_parsed_as_the_others():
    from critique.experiments.credit import prune

    assert prune.parse_rules("estimate:3,random:2") == [("estimate", 3), ("random", 2)]
    with pytest.raises(ValueError, match="estimate:N"):
        prune.parse_rules("estimate:0")
