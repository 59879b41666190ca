"""docs/results.md's shipped streams (critique stream --arms on mcr-gen, pref-gen and control-pos) hold the figures that
`critique tables logs --format json` computes: the arms' accuracies and the write-back loop's numbers are rebuilt
here from the stream table and found in docs/results.md, so a change to the logs or the analysis that moves one
fails until docs/results.md says the new one."""

from dataclasses import dataclass

import pytest

from critique.analysis.reading import logs
from critique.analysis.memory.online import FRACTIONS
from critique.analysis.study.render import cell
from critique.base import rundir
from shipped import LOGS, MEMORY, QWEN, RESULTS, pct, results

ARMS = (("memory off", "none", "empty", None), ("frozen train memory", "none", "train", None),
        ("online gold", "gold", "train", None), ("online self", "self", "train", None),
        ("self, de-inflated", "self", "train", "reorder"), ("its random control", "self", "train", "random"))
ONLINE = ARMS[2:4]  # the write-back loops docs/results.md tabulates
LOOP = ("written", "l", "l_low", "l_high", "s", "trusted_wrong", "kappa", "kappa_within", "slope_low", "slope_high",
        "attractor", "corrupted")


@dataclass(frozen=True)
class Streams:
    """One model's shipped stream arms: on which datasets, how many steps each arm answers, and, where the tables
    read other runs of the model beside them, the settings the model column names each dataset's arms by."""
    model: str
    datasets: tuple[str, ...]
    steps: int
    settings: tuple[str, ...] | None = None  # one a dataset, in the order of datasets

    def of(self, row: dict) -> bool:
        """A row of this model's arms (a table labels a model with the settings its runs differ in: ``local/smollm2
        [critic=gold]``)."""
        name, _, settings = row["model"].partition(" [")
        if name != self.model or row["dataset"] not in self.datasets:
            return False
        return self.settings is None or settings == f"{self.settings[self.datasets.index(row['dataset'])]}]"


SMOLLM2 = Streams("local/smollm2", ("mcr-gen", "pref-gen", "control-pos"), 250)
# the model that learns, in logs-memory/ beside the admitting stream (admission=instruction) and the study's runs
# mcr-gen at --limit 100; pref-gen at --limit 10, ten questions a user for its ten users: 100 steps each
QWEN_STREAMS = Streams(QWEN, ("mcr-gen", "pref-gen"), 100, ("limit=100, admission=all", "limit=10, admission=all"))
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


def _a_test(row: dict) -> str:
    """Whether the row's predicted attractor tests the loop: - where there is no prediction."""
    if row["attractor"] is None:
        return "-"
    return "no" if (row["attractor_why"] or "").startswith("no test") else "yes"


def loop_table(rows: list[dict], streams: Streams = SMOLLM2) -> str:
    """docs/results.md's table of the write-back loop of the online arms: "a test?" is no where the table's
    attractor_why says the prediction is no test, - where there is no prediction."""
    lines = ["| dataset | arm | notes | l [95%] | s | shown trusted but wrong | kappa (pooled) | kappa within [95%] "
             "| predicted attractor | reached | a test? |", "|---" * 11 + "|"]
    for dataset in streams.datasets:
        for name, feedback, start, _ in ONLINE:
            r = _row(rows, dataset, feedback, start, streams=streams)
            f = {k: cell(k, r[k], formats=FRACTIONS) for k in LOOP}
            test = _a_test(r)
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


# ---- the arms on the model that learns (logs-memory/) ------------------------------------------------------
def _qwen_arms(dataset: str, random: str) -> dict:
    """The arm's role (memory off, frozen, online gold and self, de-inflated, its random control) -> its run: the
    random control's folder names the budget it was given, the count the verifier demoted."""
    names = {"none-empty": "none-empty", "none": "none", "gold": "gold", "self": "self",
             "reorder": "self-deinflate-reorder", "random": f"self-deinflate-{random}"}
    return {role: MEMORY / f"{dataset}__local_qwen2.5-coder-0.5b__stream-{name}" for role, name in names.items()}


QWEN_ARMS = {"mcr-gen": _qwen_arms("mcr-gen", "random98"), "pref-gen": _qwen_arms("pref-gen", "random100")}


def test_the_arms_and_loop_tables_on_the_model_that_learns(memory_tables):
    said = RESULTS.read_text(encoding="utf-8")
    assert arms_table(memory_tables["stream"], QWEN_STREAMS) in said
    assert loop_table(memory_tables["stream"], QWEN_STREAMS) in said


def test_the_commands_of_the_arms_on_the_model_that_learns():
    """docs/results.md quotes the command each dataset's arms ran (the manifests name the folder they were made in
    before they moved to logs-memory/)."""
    commands = {}
    for dataset, arms in QWEN_ARMS.items():
        command = rundir.read_manifest(arms["self"])["command"]
        commands[dataset] = " ".join(command[:command.index("--out")])
    mcr = commands["mcr-gen"].split()
    assert f"`{commands['mcr-gen']} --out logs-memory`, and the same command with `--dataset pref-gen --limit 10`" \
        in results()
    mcr[mcr.index("--dataset") + 1], mcr[mcr.index("--limit") + 1] = "pref-gen", "10"
    assert " ".join(mcr) == commands["pref-gen"]


def _answers(run) -> list[str]:
    """The stream's final answer at each step, as the tables read them (a rerun's record replaces a failed one)."""
    return [r["answer"] for r in logs.predictions(run, ("stream",))]


def _notes(run) -> list[dict]:
    """The stream's notes, every version (a demotion writes a note's next version)."""
    return [n for n in rundir.read_jsonl(run / rundir.MEMORY / rundir.NOTES) if n["feedback"] != "train"]


def _study_answers(dataset: str, strategies: tuple[str, ...]) -> dict[str, list[str]]:
    """Each strategy's final answer to each of the study's test questions, as the tables read them (one reading of
    the run's predictions)."""
    records = logs.predictions(LOGS / f"{dataset}__local_qwen2.5-coder-0.5b", ("test",))
    return {s: [p["answer"] for p in records if p["strategy"] == s] for s in strategies}


def test_what_comes_out_on_the_model_that_learns(memory_tables):
    rows = memory_tables["stream"]
    arms = QWEN_ARMS["mcr-gen"]
    ones = {role: _answers(run).count("1") for role, run in arms.items()}
    with_notes = sorted({ones[role] for role in arms if role != "none-empty"})
    assert (f'"1" at {ones["none-empty"]} of the 100 steps with memory off and at '
            f'{" or ".join(map(str, with_notes))} in every arm with notes') in results()
    # "as its zero_shot and EP_CRIT answer the study's test set"
    for answers in _study_answers("mcr-gen", ("zero_shot", "EP_CRIT")).values():
        assert answers.count("1") >= 0.98 * len(answers)
    gains = {(r["wins"], r["losses"], r["p"], r["mde"]) for _, f, s, d in ARMS[1:]
             for r in [_row(rows, "mcr-gen", f, s, d, QWEN_STREAMS)]}
    ((wins, losses, p, mde),) = gains
    assert f"({wins} won, {losses} lost, p = {p:.2f} against memory off)" in results()
    assert mde is None and f"with {wins + losses} discordant step no test here can find any difference (mde -)" \
        in results()


def test_pref_gen_arms_on_the_model_that_learns_are_an_identity(memory_tables):
    rows = memory_tables["stream"]
    arms = [_answers(run) for run in QWEN_ARMS["pref-gen"].values()]
    assert all(set(answers) == {"A"} and len(answers) == 100 for answers in arms)
    study = _study_answers("pref-gen", ("zero_shot", "EP_CRIT"))
    assert all(set(answers) == {"A"} for answers in study.values())
    assert ('the model answers "A" at each of the 100 steps of every arm, as its zero_shot and EP_CRIT answer all '
            f"{len(study['zero_shot'])} of the study's test questions") in results()
    for _, f, s, d in ARMS[1:]:
        row = _row(rows, "pref-gen", f, s, d, QWEN_STREAMS)
        assert row["wins"] == row["losses"] == 0 and row["p"] is None and row["mde"] is None


def test_a_stream_arm_of_one_answer_is_warned_of(tmp_path, capsys):
    from critique.cli import main

    assert main(["tables", str(QWEN_ARMS["pref-gen"]["gold"]), "-o", str(tmp_path / "out.md")]) in (0, 1)
    warned = ('local/qwen2.5-coder-0.5b x pref-gen: the stream arm gold/train answered "A" to 100 of 100 test '
              "questions (100%): its accuracy is that label's share of the test set")
    assert warned in capsys.readouterr().err
    assert "`critique tables` warns of each arm that gives one answer to everything" in results()


def test_the_critics_on_the_model_that_learns(memory_tables):
    rows = memory_tables["stream"]
    gold, self = (_row(rows, "mcr-gen", f, "train", streams=QWEN_STREAMS) for f in ("gold", "self"))
    notes = _notes(QWEN_ARMS["mcr-gen"]["gold"])
    assert all(n["entry"]["critique"]["correct_answer"] == n["entry"]["gold"] for n in notes)  # asserts the label
    interval = f"(l = {gold['l']:.3f} [{gold['l_low']:.3f}, {gold['l_high']:.3f}])"
    assert gold["l"] == 0 and f"so each note is stored with the right verdict {interval}" in results()
    assert gold["attractor_why"].startswith("no prediction: no slope, every step was shown the same share")
    wrong = [n for n in notes if n["truth"] == 0]
    assert all(n["entry"]["critique"]["local_reason"].startswith("The agent's response is correct") for n in wrong)
    assert f"on each of the {len(wrong)} wrong answers they begin \"The agent's response is correct\"" in results()
    notes = _notes(QWEN_ARMS["mcr-gen"]["self"])
    right = [n for n in notes if n["truth"] == 1]
    assert all(n["verdict"] == 0 for n in notes)  # "calls every answer wrong"
    assert f"calls every answer wrong, the {len(right)} right ones among them" in results()
    assert self["l"] == self["s"] == 0 and f"(l = s = {self['s']:.3f})" in results()
    assert self["attractor_why"].startswith("no prediction: no note the stream wrote is trusted")


def test_the_critics_on_pref_gen_on_the_model_that_learns(memory_tables):
    gold = _row(memory_tables["stream"], "pref-gen", "gold", "train", streams=QWEN_STREAMS)
    notes = _notes(QWEN_ARMS["pref-gen"]["gold"])
    assert all(n["entry"]["critique"]["correct_answer"] == n["entry"]["gold"] for n in notes)
    assert gold["l"] == 0 and f"(l = {gold['l']:.3f} [{gold['l_low']:.3f}, {gold['l_high']:.3f}])" in results()
    wrong = [n for n in notes if n["truth"] == 0]
    says = sum(n["entry"]["critique"]["local_reason"].startswith("The agent's response was correct") for n in wrong)
    assert f"response was correct\" on {says} of the {len(wrong)} wrong answers" in results()
    notes = _notes(QWEN_ARMS["pref-gen"]["self"])
    assert all(n["verdict"] == 0 for n in notes)
    right = sum(n["truth"] == 1 for n in notes)
    assert f"the self critic calls every answer wrong, the {right} right ones among them" in results()


def test_de_inflation_on_the_model_that_learns(memory_tables):
    rows = {r["dataset"]: r for r in memory_tables["stream_arms"] if QWEN_STREAMS.of(r)}
    assert set(rows) == set(QWEN_STREAMS.datasets)
    for row in rows.values():
        assert row["unfinished"] is None and row["arms"] == len(ARMS)
        assert deinflation_quote(row) in results(), deinflation_quote(row)
    demoted = {}
    for role in ("reorder", "random"):
        notes = _notes(QWEN_ARMS["mcr-gen"][role])
        demoted[role] = {n["note"] for n in notes if n["entry"].get("doubtful")}
        assert all(n["verdict"] == 0 for n in notes if n["note"] in demoted[role])  # none trusted before either
    flagged, written = len(demoted["reorder"]), _row(
        memory_tables["stream"], "mcr-gen", "self", "train", "reorder", QWEN_STREAMS)["written"]
    assert f"{flagged} and {flagged} notes demoted" in results()
    same = len(demoted["reorder"] & demoted["random"])
    assert (f"the reorder verifier flags {flagged} of the {written} notes the stream wrote, so the control demotes "
            f"nearly the same ones ({same} of the {flagged})") in results()
    assert rows["pref-gen"]["demoted"] == "100 / 100: every note, no control possible"


def test_the_new_calls_of_the_arms_on_the_model_that_learns():
    new = {dataset: [sum(not cached for (cached,) in logs.rows(run, logs.CALLS, ("cached",))) for run in arms.values()]
           for dataset, arms in QWEN_ARMS.items()}
    quoted = (f"the memory-off, frozen, online gold, online self, de-inflated and random-control arms made "
              f"{', '.join(map(str, new['mcr-gen'][:-1]))} and {new['mcr-gen'][-1]} new calls on mcr-gen and "
              f"{', '.join(map(str, new['pref-gen'][:-1]))} and {new['pref-gen'][-1]} on pref-gen")
    assert quoted in results(), quoted


@pytest.mark.parametrize("dataset", sorted(QWEN_ARMS))
def test_the_arms_on_the_model_that_learns_resume_with_no_call(dataset, tmp_path, capsys):
    import shutil

    from critique.cli import main

    arms = QWEN_ARMS[dataset]
    for run in arms.values():
        shutil.copytree(run, tmp_path / run.name)
    command = rundir.read_manifest(arms["self"])["command"][1:]  # gold's is the admitting stream's twin's
    assert "--arms" in command
    command[command.index("--out") + 1] = str(tmp_path)
    assert main([*command, "--no-cache", "--quiet"]) == 0
    made = [line for line in capsys.readouterr().out.splitlines() if "LLM calls made" in line]
    assert len(made) == len(arms) and all(line.startswith("0 LLM calls made") for line in made)
