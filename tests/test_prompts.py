import pytest

from critique.base.config import PROMPT_SETS, TURN_SETS, RunConfig
from critique.engine import agents, prompts
from critique.datasets.splits import Item
from critique.engine.strategies import STRATEGIES

ITEM = Item("t1", "Which ordering? (the question)", "2")
SPACE = ["1", "2", "3", "4"]
EXAMPLE = {"id": "e1", "item_id": "e1", "question": "An earlier question", "initial_answer": "3", "gold": "1",
           "critique": {"correct_answer": "The correct answer is 1; 3 was wrong.",
                        "local_reason": "LOCAL-REASON", "global_reason": "GLOBAL-REASON"}}


def render(name, parts="full", prompt_set="compact"):
    s = STRATEGIES[name]
    task = prompts.Task("TASK-TEXT", prompt_set)
    messages = agents.performance_prompt(s.template, task, ITEM, SPACE, [EXAMPLE] if s.episodic else [],
                                         "ADVICE-TEXT" if s.semantic else None, parts).messages
    return "\n\n".join(m["content"] for m in messages)  # the turns set's conversation, read in its order


@pytest.mark.parametrize("prompt_set", PROMPT_SETS)
def test_every_strategy_shows_task_question_and_answer_format(prompt_set):
    for name in STRATEGIES:
        text = render(name, prompt_set=prompt_set)
        assert "TASK-TEXT" in text and ITEM.question in text and '"answer"' in text and "1, 2, 3, 4" in text


@pytest.mark.parametrize("prompt_set", PROMPT_SETS)
def test_zero_shot_has_no_memory(prompt_set):
    text = render("zero_shot", prompt_set=prompt_set)
    assert "An earlier question" not in text and "ADVICE-TEXT" not in text


@pytest.mark.parametrize("prompt_set", PROMPT_SETS)
def test_ep_label_shows_the_correct_answer_not_the_critique(prompt_set):
    text = render("EP_LABEL", prompt_set=prompt_set)
    shown = '{"answer": "1"}' if prompt_set in TURN_SETS else "Correct answer: 1"  # the earlier turn's answer
    assert "An earlier question" in text and shown in text
    assert "LOCAL-REASON" not in text and "ADVICE-TEXT" not in text


def test_compact_ep_examples_show_the_earlier_answer():
    assert "Earlier answer: 3" in render("EP_LABEL") and "Earlier answer: 3" in render("EP_CRIT")


@pytest.mark.parametrize("prompt_set", PROMPT_SETS)
def test_ep_crit_shows_the_critique_parts(prompt_set):
    full, local, glob = (render("EP_CRIT", parts, prompt_set) for parts in ("full", "local", "global"))
    assert "LOCAL-REASON" in full and "GLOBAL-REASON" in full and "Correct answer: 1" not in full
    assert "LOCAL-REASON" in local and "GLOBAL-REASON" not in local
    assert "LOCAL-REASON" not in glob and "GLOBAL-REASON" in glob
    assert all("The correct answer is 1; 3 was wrong." in text for text in (full, local, glob))  # the assertion


@pytest.mark.parametrize("prompt_set", PROMPT_SETS)
def test_sem_crit_and_ep_sem_crit(prompt_set):
    sem, both = render("SEM_CRIT", prompt_set=prompt_set), render("EP+SEM_CRIT", prompt_set=prompt_set)
    assert "ADVICE-TEXT" in sem and "An earlier question" not in sem
    assert "ADVICE-TEXT" in both and "LOCAL-REASON" in both
    assert both.index("An earlier question") < both.index("ADVICE-TEXT") < both.index(ITEM.question)


def test_compact_sem_crit_puts_the_advice_before_the_question():
    text = render("SEM_CRIT")
    assert text.index("TASK-TEXT") < text.index("ADVICE-TEXT") < text.index(ITEM.question)


@pytest.mark.parametrize("prompt_set", PROMPT_SETS)
def test_critic_prompt_has_gold_and_answer(prompt_set):
    text = agents.critic_prompt(prompts.Task("TASK-TEXT", prompt_set), ITEM, None, "2").messages[0]["content"]
    assert "Correct answer: 2" in text and agents.NO_ANSWER in text and ITEM.question in text


@pytest.mark.parametrize("prompt_set", PROMPT_SETS)
def test_template_hashes_are_stable_and_cover_partials(prompt_set):
    hashes = prompts.all_hashes(prompt_set)
    assert set(hashes) >= {"performance_zero_shot.j2", "critic.j2", "summary.j2"}
    assert hashes == prompts.all_hashes(prompt_set)
    assert len(set(hashes.values())) == len(hashes)


def test_the_sets_hold_the_same_templates_and_differ_in_each():
    paper, compact = prompts.all_hashes("paper"), prompts.all_hashes("compact")
    assert set(paper) == set(compact) and not set(paper.values()) & set(compact.values())
    assert prompts.all_hashes() == prompts.all_hashes(RunConfig.prompts)


def test_a_task_carries_its_set_and_a_plain_text_is_refused():
    for prompt_set in PROMPT_SETS:
        made = agents.critic_prompt(prompts.Task("TASK-TEXT", prompt_set), ITEM, "1", "2")
        assert made.template_hash == prompts.template_hash("critic.j2", prompt_set)
    with pytest.raises(TypeError, match="prompts.Task"):  # it names no set: never rendered in a default one
        agents.critic_prompt("TASK-TEXT", ITEM, "1", "2")
    with pytest.raises(ValueError, match="unknown prompt set"):
        prompts.Task("TASK-TEXT", "nonesuch")


def test_a_task_pickles_with_its_set():
    import pickle

    task = pickle.loads(pickle.dumps(prompts.Task("TASK-TEXT", "compact")))
    assert task == "TASK-TEXT" and task.prompt_set == "compact"
