"""The field's memory methods beside the study's five strategies, on the same items, the same model and the same
engine step (docs/methods.md says where each follows its paper): ACE's playbook (``ace``, ``ace:nolabel``),
Dynamic Cheatsheet's cumulative cheatsheet (``dc``, offline; ``dc:online``, on the test questions as it answers
them), ExpeL's insights (``expel``) and DSPy's KNNFewShot
(``dspy:knn``, through the pinned ``dspy`` package). Each is a memory method
(critique.engine.methods) with its own offline stage (``learn``) over the train split, logged, cached, resumable
and limited by ``--train-budget`` (critique.engine.field.offline). The package registers them when it is
imported (critique.engine.methods.BUILT_IN)."""

from critique.engine.field import ace, dc, dspy_knn, expel  # noqa: F401  (each registers its methods)
