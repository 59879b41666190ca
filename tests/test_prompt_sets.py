"""The prompt sets (prompts/<set>/, --prompts): the paper set follows the study's prompts part by
part and in their order; no dataset's task text or question states what the memory is meant to
learn (how MCR's conditions combine); the set is part of a run's identity, manifest and requests."""

import json
import re
from pathlib import Path

from critique.base import rundir
from critique.base.config import LEGACY, PROMPT_SETS, RunConfig
from critique.cli import main
from critique.datasets import controls, mcr, mcr_gen, nfcorpus, preference, pubmed
from critique.datasets.registry import REGISTRY
from critique.datasets.splits import Item
from critique.engine import agents, prompts
from critique.engine.strategies import STRATEGIES

TASK = prompts.Task("TASK-TEXT", "paper")
ITEM = Item("t1", "THE-QUESTION", "2")
SPACE = ["1", "2", "3", "4"]
EXAMPLE = {"id": "e1", "item_id": "e1", "question": "PAST-QUESTION", "initial_answer": "3", "gold": "1",
           "critique": {"correct_answer": "ASSERTION", "local_reason": "RATIONALE", "global_reason": "REFLECTION"}}
FORMAT = 'Answer with JSON: {"answer": one of 1, 2, 3, 4}.'
OWN_PAST = "You have answered questions like the one below before"  # the examples are the agent's own answers
LEARN = "Learn from your past mistakes"
ROOT = Path(__file__).resolve().parent.parent


def paper(name: str, parts: str = "full") -> str:
    s = STRATEGIES[name]
    return agents.performance_prompt(s.template, TASK, ITEM, SPACE, [EXAMPLE] if s.episodic else [],
                                     "- ADVICE" if s.semantic else None, parts).messages[0]["content"]


def in_order(text: str, *parts: str) -> bool:
    """Every part is in ``text``, each after the one before."""
    at = 0
    for part in parts:
        found = text.find(part, at)
        if found < 0:
            return False
        at = found + len(part)
    return True


# ---- the paper set, part by part -------------------------------------------------------------------
def test_zero_shot_is_the_question_and_the_answer_format():
    text = paper("zero_shot")
    assert in_order(text, "TASK-TEXT", "Question:\nTHE-QUESTION", FORMAT)
    assert "PAST-QUESTION" not in text and "ADVICE" not in text and LEARN not in text


def test_ep_label_shows_own_past_answers_with_the_correct_answer_then_the_question():
    text = paper("EP_LABEL")
    assert in_order(text, OWN_PAST, "the correct answer", "PAST-QUESTION", "Your initial response: 3",
                    "Correct answer: 1", LEARN, "TASK-TEXT", "Question:\nTHE-QUESTION", FORMAT)
    assert "ASSERTION" not in text and "ADVICE" not in text


def test_ep_crit_shows_own_past_answers_with_the_critique_then_the_question():
    text = paper("EP_CRIT")
    assert in_order(text, OWN_PAST, "a critique of your response", "PAST-QUESTION", "Your initial response: 3",
                    "Critique: ASSERTION", "RATIONALE", "REFLECTION", LEARN, "TASK-TEXT",
                    "Question:\nTHE-QUESTION", FORMAT)
    assert "Correct answer: 1" not in text and "ADVICE" not in text
    local, global_ = paper("EP_CRIT", "local"), paper("EP_CRIT", "global")
    assert in_order(local, "ASSERTION", "RATIONALE") and "REFLECTION" not in local
    assert in_order(global_, "ASSERTION", "REFLECTION") and "RATIONALE" not in global_


def test_sem_crit_puts_the_question_first_then_the_advice():
    text = paper("SEM_CRIT")
    assert in_order(text, "TASK-TEXT", "Question:\nTHE-QUESTION", "- ADVICE", FORMAT)
    assert "PAST-QUESTION" not in text


def test_ep_sem_crit_is_the_examples_then_the_advice_then_the_question():
    text = paper("EP+SEM_CRIT")
    assert in_order(text, OWN_PAST, "PAST-QUESTION", "Your initial response: 3", "Critique: ASSERTION", "RATIONALE",
                    "REFLECTION", "- ADVICE", LEARN, "TASK-TEXT", "Question:\nTHE-QUESTION", FORMAT)


def test_no_paper_prompt_has_a_task_header_or_an_earlier_answer_field():
    texts = [paper(name) for name in STRATEGIES] + [
        agents.critic_prompt(TASK, ITEM, "3", "2").messages[0]["content"],
        agents.summary_prompt(TASK, [EXAMPLE]).messages[0]["content"],
        agents.merge_prompt(TASK, [["a"], ["b"]]).messages[0]["content"]]
    for text in texts:
        assert "TASK-TEXT" in text and not re.search(r"^Task:", text, re.MULTILINE) and "Earlier answer" not in text


def test_the_critic_sees_question_initial_response_and_gold_and_writes_the_three_parts_in_order():
    text = agents.critic_prompt(TASK, ITEM, "3", "2").messages[0]["content"]
    assert in_order(text, "TASK-TEXT", "Question:\nTHE-QUESTION", "Initial agent response: 3", "Correct answer: 2",
                    '"correct_answer" (the assertion)', '"local_reason" (the rationale)',
                    '"global_reason" (the reflection)')


def test_the_probe_shows_the_question_then_the_earlier_answer_and_its_critique():
    for source, said in (("self", "You answered this question earlier"), ("user", "The user reviewed"),
                         ("other", "Another AI model (M)"), (None, "Here are an earlier answer")):
        text = agents.prompt("performance_probe.j2", task=TASK, question=ITEM.question, answer_space=SPACE,
                             initial_answer="3", critique=EXAMPLE["critique"], critique_text="", source=source,
                             other_model="M").messages[0]["content"]
        assert in_order(text, "TASK-TEXT", said, "Question:\nTHE-QUESTION", "Initial response: 3",
                        "Critique: ASSERTION", "RATIONALE", "REFLECTION", FORMAT)
        assert not re.search(r"^Task:", text, re.MULTILINE)


def test_the_summary_states_the_papers_instructions_and_no_cap():
    text = agents.summary_prompt(TASK, [EXAMPLE, {**EXAMPLE, "question": "SECOND"}]).messages[0]["content"]
    assert in_order(text, "TASK-TEXT", "PAST-QUESTION", "Initial agent response: 3", "ASSERTION", "RATIONALE",
                    "REFLECTION", "SECOND", "where the agent was wrong", "directly as instructions", '"advice"')
    assert text.count("TASK-TEXT") == 1 and "at most" not in text
    merge = agents.merge_prompt(TASK, [["LINE-A"], ["LINE-B"]]).messages[0]["content"]
    assert in_order(merge, "TASK-TEXT", "- LINE-A", "- LINE-B", "mistakes", "directly as instructions", '"advice"')
    assert "at most" not in merge


def test_the_compact_set_keeps_its_cap_on_the_advice():
    text = agents.summary_prompt(prompts.Task("TASK-TEXT", "compact"), [EXAMPLE], max_points=5).messages[0]["content"]
    assert "at most 5" in text


# ---- task texts never state the lesson -----------------------------------------------------------------
# How MCR's conditions combine (which one wins when they conflict) is what the memory is meant to learn.
PRIORITY_RULE = re.compile(r"\bwins?\b|overrid|overrule|precedence|prevail|higher[- ]priority|lower[- ]priority|"
                           r"lowest priority|highest priority|order of (their )?priority|priority order|\bties?\b|"
                           r"\btied\b|applied from", re.IGNORECASE)
STATED_IT = [  # the task texts that did state it, before
    "Conditions are applied from the lowest priority to the highest, so when two conditions conflict the "
    "higher-priority one wins.",
    "A high-priority condition always wins over a medium one, and a medium one over a low one; a lower "
    "condition only orders items that the higher ones leave tied."]


def task_texts() -> dict[str, str]:
    """Every registered dataset's task text, as its builder writes it into the card."""
    texts = {"mcr": mcr.TASK, "mcr-gen": mcr_gen.TASK, "pubmed": pubmed.TASK, "nfcorpus": nfcorpus.TASK,
             nfcorpus.GROUPED: nfcorpus.TASK, "pref-gen": preference.task_text("films"),
             controls.POS: controls.TASK, controls.NEG: controls.TASK}
    texts.update({name: preference.task_text(noun) for name, noun in preference.NOUNS.items()})
    return texts


def test_the_rule_pattern_finds_the_old_statements():
    assert all(PRIORITY_RULE.search(text) for text in STATED_IT)


def test_no_task_text_states_how_conditions_combine(home):
    texts = task_texts()
    assert set(texts) == set(REGISTRY)  # a new dataset must be added here
    for name, text in texts.items():
        assert not PRIORITY_RULE.search(text), (name, text)
    assert mcr_gen.build(home / "mcr-gen", n_train=4, n_test=4).card.task == mcr_gen.TASK
    shipped = json.loads((ROOT / "datasets" / "pref-gen" / "dataset.json").read_text(encoding="utf-8"))
    assert shipped["task"] == texts["pref-gen"]


def test_no_generated_or_formatted_mcr_question_states_it():
    for item in mcr_gen.generate([40], 0, "t"):
        assert not PRIORITY_RULE.search(item.question), item.question
    record = {"items": ["fig", "Oslo", "kiwi"], "label": ["kiwi", "fig", "Oslo"],
              "conditions": ["Sort the items with a low priority based on their character count from the smallest "
                             "to largest", 'Item "Oslo" with a high priority should be the last from left']}
    text = mcr.question(record, [["kiwi", "fig", "Oslo"], ["fig", "kiwi", "Oslo"]])
    assert text.startswith("Given the following conditions: [Sort the items") and not PRIORITY_RULE.search(text)
    assert "], sort the list of items [fig, Oslo, kiwi].\nCandidate orderings:\n1. kiwi, fig, Oslo\n" in text


# ---- the set is part of the run ------------------------------------------------------------------------
def run(out, *extra):
    return main(["run", "--dataset", "mcr-gen", "--model", "fake/model", "--limit", "3", "--k", "1",
                 "--strategies", "zero_shot,EP_CRIT,SEM_CRIT", "--out", str(out), "--quiet", *extra])


def test_the_set_is_in_the_manifest_the_call_records_and_every_request_hash(home, fake_llm, capsys):
    assert RunConfig.prompts == "paper" and set(PROMPT_SETS) == {"paper", "compact", "turns"}
    assert run(home / "paper") == 0 and run(home / "compact", "--prompts", "compact") == 0
    assert run(home / "turns", "--prompts", "turns") == 0
    hashes = {}
    for prompt_set in PROMPT_SETS:
        data = rundir.read_run(home / prompt_set)
        manifest = data["manifest"]
        assert manifest["config"]["prompts"] == prompt_set
        assert manifest["templates"] == prompts.all_hashes(prompt_set)
        for call in data["calls"]:
            assert call["template_hash"] == manifest["templates"][call["template"]]
        hashes[prompt_set] = {c["request_hash"] for c in data["calls"]}
        sem = json.loads((home / prompt_set / "memory" / "semantic.json").read_text())["all"]
        assert sem["template_hash"] == prompts.template_hash("summary.j2", prompt_set)
    assert len(hashes["paper"]) == len(hashes["compact"]) == len(hashes["turns"]) == 3 + 3 + 1 + 9
    assert not hashes["paper"] & hashes["compact"]  # the cache never answers one set with the other's reply
    assert not hashes["turns"] & (hashes["paper"] | hashes["compact"])
    # a run directory belongs to one set
    capsys.readouterr()
    assert run(home / "paper", "--prompts", "compact") == 2
    assert "prompts='paper', not 'compact'" in capsys.readouterr().err


def test_a_manifest_written_before_the_setting_resumes_as_compact(home, fake_llm, capsys):
    assert LEGACY["prompts"] == "compact"
    out = home / "old"
    assert run(out, "--prompts", "compact") == 0
    manifest = json.loads((out / rundir.MANIFEST).read_text())
    del manifest["config"]["prompts"]
    (out / rundir.MANIFEST).write_text(json.dumps(manifest))
    fake_llm.CALLS.clear()
    assert run(out) == 2 and "prompts='compact', not 'paper'" in capsys.readouterr().err
    assert run(out, "--prompts", "compact") == 0 and fake_llm.CALLS == []
    assert json.loads((out / rundir.MANIFEST).read_text())["config"]["prompts"] == "compact"
