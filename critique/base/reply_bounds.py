"""How long each field of a reply may be: the bounds the embedded model's grammar holds it to.

Only the embedded model is held to them (critique.llm.bounds turns critique.engine.parsing's schemas into its
grammar); other providers get the schemas without length keywords, their replies bounded by the token limit
alone. Defined here, below the engine and the analysis, so that the analysis can say what bounded a run's
replies.
"""

# Characters at most in each field of a reply, by its purpose.
FIELD_CHARS = {
    "correct_answer": 160,  # the correct answer restated, and right or wrong
    "local_reason": 320,  # why, for this question: a sentence or two
    "global_reason": 240,  # one general lesson: a sentence or two
    "advice_line": 120,  # one piece of advice: one line
}
# Pieces of advice in a summary (the prompt asks for at most this many). The advice goes into every
# SEM_CRIT and EP+SEM_CRIT prompt: the embedded model fills whatever bounds it is given, and
# 5 lines of 120 characters are about 220 of its tokens in each of those prompts.
MAX_ADVICE_LINES = 5
