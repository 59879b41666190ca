"""docs/results.md's shipped streams (critique stream --arms on mcr-gen, pref-gen and control-pos) hold the figures that
`critique tables logs --format json` computes: the arms' accuracies and the write-back loop's numbers are rebuilt
here from the stream table and found in docs/results.md, so a change to the logs or the analysis that moves one
fails until docs/results.md says the new one."""

from dataclasses import dataclass

from critique.analysis.reading import logs
from critique.analysis.memory.online import FRACTIONS
from critique.analysis.study.render import cell
from shipped import LOGS, RESULTS, pct, results

ARMS = (("memory off", "none", "empty", None), ("frozen train memory", "none", "train", None),
        ("online gold", "gold", "train", None), ("online self", "self", "train", None),
        ("self, de-inflated", "self", "train", "reorder"), ("its random control", "self", "train", "random"))
ONLINE = ARMS[2:4]  # the write-back loops docs/results.md tabulates
LOOP = ("written", "l", "l_low", "l_high", "s", "trusted_wrong", "kappa", "kappa_within", "slope_low", "slope_high",
        "attractor", "corrupted")


@dataclass(frozen=True)
class Streams:
    """One model's shipped stream arms: on which datasets, and how many steps each arm answers."""
    model: str
    datasets: tuple[str, ...]
    steps: int

    def of(self, row: dict) -> bool:
        """A row of this model's (a table labels it with the settings its runs differ in: ``local/smollm2
        [critic=gold]``)."""
        return row["model"].partition(" [")[0] == self.model


SMOLLM2 = Streams("local/smollm2", ("mcr-gen", "pref-gen", "control-pos"), 250)
DATASETS = SMOLLM2.datasets


def _row(rows: list[dict], dataset: str, feedback: str, start: str, demote: str | None = None,
         streams: Streams = SMOLLM2) -> dict:
    found = [r for r in rows if streams.of(r) and r["dataset"] == dataset and r["feedback"] == feedback
             and r["start"] == start and r["demote"] == demote and r["conflicts"] == "append" and not r["refresh"]
             and not r["disable"]]
    assert len(found) == 1, (streams.model, dataset, feedback, start, len(found))
    assert found[0]["status"] == "complete" and found[0]["steps"] == found[0]["of"] == streams.steps
    return found[0]


def arms_table(rows: list[dict], streams: Streams = SMOLLM2) -> str:
    """docs/results.md's table of the arms' accuracies (%), one row per dataset."""
    lines = ["| dataset | " + " | ".join(name for name, *_ in ARMS) + " |", "|---" * (len(ARMS) + 1) + "|"]
    for dataset in streams.datasets:
        cells = [cell("accuracy", _row(rows, dataset, f, s, d, streams)["accuracy"]) for _, f, s, d in ARMS]
        lines.append(f"| {dataset} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def loop_table(rows: list[dict], streams: Streams = SMOLLM2) -> str:
    """docs/results.md's table of the write-back loop of the online arms: "a test?" is no where the table's
    attractor_why says the prediction is no test."""
    lines = ["| dataset | arm | notes | l [95%] | s | shown trusted but wrong | kappa (pooled) | kappa within [95%] "
             "| predicted attractor | reached | a test? |", "|---" * 11 + "|"]
    for dataset in streams.datasets:
        for name, feedback, start, _ in ONLINE:
            r = _row(rows, dataset, feedback, start, streams=streams)
            f = {k: cell(k, r[k], formats=FRACTIONS) for k in LOOP}
            test = "no" if (r["attractor_why"] or "").startswith("no test") else "yes"
            lines.append(f"| {dataset} | {name} | {f['written']} | {f['l']} [{f['l_low']}, {f['l_high']}] | "
                         f"{f['s']} | {f['trusted_wrong']} | {f['kappa']} | {f['kappa_within']} "
                         f"[{f['slope_low']}, {f['slope_high']}] | {f['attractor']} | {f['corrupted']} | {test} |")
    return "\n".join(lines)


def test_the_arms_table(shipped_tables):
    assert arms_table(shipped_tables["stream"]) in RESULTS.read_text(encoding="utf-8")


def test_the_loop_table(shipped_tables):
    assert loop_table(shipped_tables["stream"]) in RESULTS.read_text(encoding="utf-8")


def test_the_new_calls_of_the_online_arms():
    """The memory-off and frozen arms made no call of their own; the online arms' new calls (not cached)."""
    new = {}
    for dataset in DATASETS:
        for arm in ("none-empty", "none", "gold", "self"):
            rows = logs.rows(LOGS / f"{dataset}__local_smollm2__stream-{arm}", logs.CALLS, ("cached",))
            new[dataset, arm] = sum(not cached for (cached,) in rows)
    assert all(new[d, arm] == 0 for d in DATASETS for arm in ("none-empty", "none"))
    quoted = (f"the online gold and self arms made {new['mcr-gen', 'gold']} and {new['mcr-gen', 'self']} new calls "
              f"on mcr-gen, {new['pref-gen', 'gold']} and {new['pref-gen', 'self']} on pref-gen, "
              f"{new['control-pos', 'gold']} and {new['control-pos', 'self']} on control-pos)")
    assert quoted in results(), quoted


def test_what_comes_out(shipped_tables):
    rows = shipped_tables["stream"]
    mcr = {_row(rows, "mcr-gen", f, s, d)["accuracy"] for _, f, s, d in ARMS}
    assert len(mcr) == 1 and f"On mcr-gen every arm stays at {pct(mcr.pop())}, its one answer" in results()
    control = {_row(rows, "control-pos", f, s, d)["accuracy"] for _, f, s, d in ARMS}
    assert len(control) == 1 and f"so does every arm on the positive control ({pct(control.pop())})" in results()
    pref = [_row(rows, "pref-gen", f, s, d)["accuracy"] for _, f, s, d in ARMS]
    assert max(pref) - min(pref) <= 2.0 and "on pref-gen the arms lie within two points of each other" in results()
    gold, off = _row(rows, "pref-gen", "gold", "train"), _row(rows, "pref-gen", "none", "empty")
    quoted = (f"(online gold {pct(gold['accuracy'])} against memory off {pct(off['accuracy'])}: {gold['wins']} items "
              f"won and {gold['losses']} lost, p = {gold['p']:.2f})")
    assert quoted in results(), quoted


def test_the_prediction_is_no_test_of_the_loop(shipped_tables):
    """Every online arm's slope within the strata holds 0, so the table says its prediction is no test, and
    docs/results.md says what agreeing by construction means instead of calling the attractor confirmed."""
    rows = shipped_tables["stream"]
    online = [_row(rows, d, f, s) for d in DATASETS for _, f, s, _ in ONLINE]
    assert all(r["attractor_why"].startswith("no test: the slope's interval") for r in online)
    assert "in none of these streams is the prediction a test" in results()
    mcr, pref = (_row(rows, d, "self", "train") for d in ("mcr-gen", "pref-gen"))
    assert mcr["l"] == pref["l"] == mcr["s"] == pref["s"] == 1.0  # every answer stored as right
    quoted = (f"({mcr['attractor']:.3f} predicted, {mcr['corrupted']:.3f} reached on mcr-gen's self arm; "
              f"{pref['attractor']:.3f} and {pref['corrupted']:.3f} on pref-gen's)")
    assert quoted in results(), quoted
    gold = _row(rows, "pref-gen", "gold", "train")
    quoted = (f"pref-gen's gold critic contradicts the gold label it is shown on {gold['l']:.3f} of the wrong "
              f"answers, and its bank reached {gold['corrupted']:.3f} against a predicted {gold['attractor']:.3f}")
    assert quoted in results(), quoted
    gold = _row(rows, "mcr-gen", "gold", "train")
    quoted = (f"The pooled slope on mcr-gen ({gold['kappa']:.3f}) is the questions' difficulty, not contamination: "
              f"within the memory-off arm's strata it is {gold['kappa_within']:.3f}")
    assert quoted in results(), quoted


def deinflation_quote(row: dict) -> str:
    """How docs/results.md states one dataset's de-inflated arm against its random control (stream_arms row)."""
    head = (f"{row['dataset']}: de-inflated {pct(row['deinflated'])} against {pct(row['random'])} for its random "
            f"control")
    if row["demoted"].endswith("no control possible"):
        every = row["demoted"].split(" / ")[0]
        return f"{head} (the verifier demoted every note, {every}, so the control demotes the same ones)"
    flagged, random = row["demoted"].split(" / ")
    p = "-" if row["p"] is None else f"{row['p']:.2f}"
    return (f"{head} ({flagged} and {random} notes demoted; {row['wins']} items won, {row['losses']} lost, "
            f"p = {p})")


def test_de_inflation_against_its_random_control(shipped_tables):
    for dataset in DATASETS:
        row = next(r for r in shipped_tables["stream_arms"] if SMOLLM2.of(r) and r["dataset"] == dataset)
        assert row["unfinished"] is None and row["arms"] == len(ARMS)
        assert deinflation_quote(row) in results(), deinflation_quote(row)
    control = next(r for r in shipped_tables["stream_arms"] if SMOLLM2.of(r) and r["dataset"] == "control-pos")
    assert control["demoted"] == "0 / 0" and "so it trusts every note as written and demotes none" in results()
