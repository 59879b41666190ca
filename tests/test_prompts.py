from critique.engine import agents, prompts
from critique.datasets.splits import Item
from critique.engine.strategies import STRATEGIES

ITEM = Item("t1", "Which ordering? (the question)", "2")
SPACE = ["1", "2", "3", "4"]
EXAMPLE = {"id": "e1", "item_id": "e1", "question": "An earlier question", "initial_answer": "3", "gold": "1",
           "critique": {"correct_answer": "The correct answer is 1; 3 was wrong.",
                        "local_reason": "LOCAL-REASON", "global_reason": "GLOBAL-REASON"}}


def render(name, parts="full"):
    s = STRATEGIES[name]
    return agents.performance_prompt(s.template, "TASK-TEXT", ITEM, SPACE, [EXAMPLE] if s.episodic else [],
                                     "ADVICE-TEXT" if s.semantic else None, parts).messages[0]["content"]


def test_every_strategy_shows_task_question_and_answer_format():
    for name in STRATEGIES:
        text = render(name)
        assert "TASK-TEXT" in text and ITEM.question in text and '"answer"' in text and "1, 2, 3, 4" in text


def test_zero_shot_has_no_memory():
    text = render("zero_shot")
    assert "An earlier question" not in text and "ADVICE-TEXT" not in text


def test_ep_label_shows_the_correct_answer_not_the_critique():
    text = render("EP_LABEL")
    assert "An earlier question" in text and "Earlier answer: 3" in text and "Correct answer: 1" in text
    assert "LOCAL-REASON" not in text and "ADVICE-TEXT" not in text


def test_ep_crit_shows_the_critique_parts():
    full, local, glob = render("EP_CRIT"), render("EP_CRIT", "local"), render("EP_CRIT", "global")
    assert "LOCAL-REASON" in full and "GLOBAL-REASON" in full and "Correct answer: 1" not in full
    assert "LOCAL-REASON" in local and "GLOBAL-REASON" not in local
    assert "LOCAL-REASON" not in glob and "GLOBAL-REASON" in glob


def test_sem_crit_and_ep_sem_crit():
    sem, both = render("SEM_CRIT"), render("EP+SEM_CRIT")
    assert "ADVICE-TEXT" in sem and "An earlier question" not in sem
    assert "ADVICE-TEXT" in both and "LOCAL-REASON" in both
    assert both.index("An earlier question") < both.index("ADVICE-TEXT") < both.index(ITEM.question)


def test_critic_prompt_has_gold_and_answer():
    text = agents.critic_prompt("TASK-TEXT", ITEM, None, "2").messages[0]["content"]
    assert "Correct answer: 2" in text and agents.NO_ANSWER in text


def test_template_hashes_are_stable_and_cover_partials():
    hashes = prompts.all_hashes()
    assert set(hashes) >= {"performance_zero_shot.j2", "critic.j2", "summary.j2"}
    assert hashes == prompts.all_hashes()
    assert len(set(hashes.values())) == len(hashes)
