"""The field's memory methods beside the study's five strategies, on the same items, the same model and the same
engine step (docs/methods.md says where each follows its paper): ACE's playbook (``ace``, ``ace:nolabel``),
Dynamic Cheatsheet's cumulative cheatsheet (``dc``), ExpeL's insights (``expel``) and DSPy's KNNFewShot
(``dspy:knn``, through the pinned ``dspy`` package), each a memory method (critique.engine.methods) with its own
offline stage (``learn``) over the train split, logged, cached, resumable and limited by ``--train-budget``
(critique.engine.field.offline); and the online variants ``ace:online`` and ``dc:online``, which learn on the
test questions as they answer them (critique.engine.field.online); and the study's critique strategies on the
same budget, ``EP_CRIT:budget``, ``SEM_CRIT:budget`` and ``EP+SEM_CRIT:budget``, whose train stage --train-budget
limits as it limits the methods' offline stages (critique.engine.field.budgeted). The package registers them when
it is imported (critique.engine.methods.BUILT_IN)."""

from critique.engine.field import ace, ace_online, budgeted, dc, dspy_knn, dspy_optimize, expel  # noqa: F401
