"""Memory methods: what a test-stage strategy needs from the train stage, and the prompt it shows for one
question. The five strategies of the study (critique.engine.strategies) are methods over the critique memory;
a new method is one module that registers itself (``register``), or that an installed package names in the
entry-point group ``critique.methods``, and nothing else changes: ``--strategies`` takes its name, a run makes
the train stages it declares, logs its answers like any strategy's, and ``critique tables`` shows them
(tests/toy_method.py is one).

A method is a ``MemoryMethod`` (critique.engine.protocols): ``name``, ``version``, ``needs(config)`` (the train
stages it reads, a subset of ``TRAIN_STAGES``; a run makes the stages its strategies need and no other:
``needed_stages``), ``prompt(run, item, vector, exclude)`` (``(agents.Prompt, Retrieved)`` for one test item, or None
when the memory it needs is missing: the prediction is then an error a rerun retries; ``Retrieved`` lists the
entries shown, each a dict with an ``id``, and their similarity to the question) and ``learning_calls(run)`` (the
cost line's count of the calls it makes to learn, beyond its test answers). Deriving from ``Method`` gives each of
these but ``name`` and ``prompt`` a default, and every optional hook below its absence; ``hook`` is the one lookup
of an optional hook. The five strategies' prompts read the critique memory the train stage made, a value handed to
them (critique.engine.memory.value.Memory: ``prompt_over``); any other method's reads its own memory.

The optional hooks:
- ``learn(run)``: its own offline stage (a coroutine), after the train stages it needs, which returns the
  method's memory: the engine keeps it in ``run.learned[name]`` and, when it has ``saved``
  (critique.engine.method_memory.Saved), writes it to memory/METHOD.json; each of its calls goes through
  ``run.call`` with the method's name as its strategy; a run awaits the offline stages of its strategies together
  (``offline_stages``);
- ``missing(run, item)``: why ``prompt`` gave None for the item (the prediction's error);
- ``schema(run)``: the JSON schema of its answer, when it asks for more than the dataset's answer field;
- ``test(run, vectors, policy)``: its own test stage (a coroutine), for a method that learns as it answers (the
  field's online methods): it answers the test questions in its order through ``critique.engine.question.ask``,
  ``vectors`` their questions' embeddings by entry id, ``policy`` the test stage's;
- ``without(run, item, vector, note)``: the test prompt of ``item`` with the memory note ``note`` (an id its
  ``prompt`` listed) left out and everything else as shown, for credit by deletion
  (critique.experiments.credit.method); a method without it is credited through its ``prompt`` over its memory
  with the note pruned, when its memory is the critique memory.
"""

from __future__ import annotations

from critique.base.vocab import register_strategy
from critique.engine import performance
from critique.engine.memory.value import Memory
from critique.engine.method_memory import save_learned
from critique.engine.strategies import PREFIX_ORDER, STRATEGIES, TRAIN_STAGES

ENTRY_POINTS = "critique.methods"  # an installed package's methods: each entry point is a module to import
BUILT_IN = ("critique.engine.field", "critique.engine.many_shot")  # the project's own methods beside the five: the
# field's (ACE, DC, ExpeL), the critique strategies on --train-budget (EP_CRIT:budget, ...), and many_shot (the
# in-context learning baseline)


HOOKS = ("learn", "missing", "schema", "test", "without")  # a method's optional hooks (above)


class Method:
    """The defaults of a memory method (critique.engine.protocols.MemoryMethod): a subclass gives ``name`` and
    ``prompt``, and whichever of the others and of the optional hooks (``HOOKS``) it has."""

    name: str
    version = 1  # raised when a change to the method changes its answers: its old predictions are not resumed
    settings: tuple = ()  # its own settings (critique.engine.method_settings.Setting), set with --method-settings
    learn = missing = schema = test = without = None  # optional hooks (HOOKS): absent unless a subclass defines one

    def needs(self, config) -> frozenset[str]:
        return frozenset()

    def prompt(self, run, item, vector, exclude: str | None = None):
        raise NotImplementedError

    def learning_calls(self, run) -> tuple[int, str]:
        return 0, ""


def hook(found, name: str):
    """Method ``found``'s optional hook ``name`` (one of HOOKS), or None when it has none."""
    if name not in HOOKS:
        raise ValueError(f"{name!r} is not a memory method's optional hook ({', '.join(HOOKS)})")
    value = getattr(found, name, None)
    return value if callable(value) else None


def version(found) -> int:
    """The method's version (1 for a method that declares none)."""
    return int(getattr(found, "version", 1))


def learning_calls(found, run) -> tuple[int, str]:
    """(calls the method may still make to learn, how that is bounded); (0, "") when it declares none."""
    count = getattr(found, "learning_calls", None)
    return count(run) if callable(count) else (0, "")


class CritiqueMemory(Method):
    """One of the five strategies as a method: its prompt over the critique memory it is handed (``memory``: the
    Memory of the train stage, or one made elsewhere)."""

    def __init__(self, strategy):
        self.name, self.strategy = strategy.name, strategy

    def needs(self, config) -> frozenset[str]:
        return self.strategy.needs(config)

    def prompt(self, run, item, vector, exclude: str | None, memory: Memory):
        return performance.performance_prompt(run, self.name, item, vector, exclude, memory)


def prompt_over(found, run, item, vector, exclude: str | None, memory: Memory | None):
    """Method ``found``'s prompt for ``item``: one of the five strategies' over the critique memory ``memory``, any
    other method's over its own (``run.learned``: ``memory`` is not its)."""
    if isinstance(found, CritiqueMemory):
        if memory is None:
            raise ValueError(f"{found.name} answers over the critique memory: ask with the Memory the train stage "
                             "made (critique.engine.memory.value)")
        return found.prompt(run, item, vector, exclude, memory)
    return found.prompt(run, item, vector, exclude)


METHODS: dict[str, object] = {name: CritiqueMemory(s) for name, s in STRATEGIES.items()}  # then the registered
_loaded = False


def register(method) -> object:
    """Make ``method`` (a MemoryMethod: ``name``, ``needs`` and ``prompt`` at least) a strategy; returns it."""
    for attribute in ("name", "needs", "prompt"):
        if not hasattr(method, attribute):
            raise TypeError(f"a memory method needs {attribute!r} (critique.engine.methods)")
    if method.name in STRATEGIES:
        raise ValueError(f"{method.name!r} is one of the study's strategies; give the method another name")
    METHODS[method.name] = method
    register_strategy(method.name)
    return method


def load_installed() -> None:
    """Import the project's own methods (BUILT_IN) and the modules that installed packages name in the entry-point
    group ``critique.methods`` (once)."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    from importlib import import_module
    from importlib.metadata import entry_points

    for name in BUILT_IN:  # by name: they register themselves here, and import this module to do so
        import_module(name)
    for entry in entry_points(group=ENTRY_POINTS):
        entry.load()


def method(name: str):
    """The registered method of strategy ``name``."""
    load_installed()
    return METHODS[name]


def needed_stages(config) -> tuple[str, ...]:
    """The train stages the run's strategies need, in the order they are made; a stage brings the ones before
    it (a critique is of an initial answer, a summary of critiques)."""
    needs = set().union(*(method(name).needs(config) for name in config.strategies)) if config.strategies else set()
    last = max((TRAIN_STAGES.index(stage) for stage in needs), default=-1)
    return TRAIN_STAGES[:last + 1]


async def offline_stages(run) -> None:
    """The offline stages (``learn``) of the run's strategies that have one, at once: each depends on its own
    replies alone, so they replay alike whatever order their calls end in."""
    import asyncio

    await asyncio.gather(*(learn(run, name) for name in run.config.strategies if learns(method(name))))


async def learn(run, name: str) -> None:
    """Method ``name``'s offline stage in ``run``, its memory kept (``keep_learned``)."""
    keep_learned(run, name, await method(name).learn(run))


def keep_learned(run, name: str, memory) -> None:
    """What method ``name``'s ``learn`` returned: kept for its prompts (``run.learned``) and, when it has ``saved``
    (critique.engine.method_memory.Saved), written to memory/METHOD.json. None keeps what the method itself put in
    ``run.learned`` (a method that keeps its own memory there)."""
    if memory is None:
        return
    run.learned[name] = memory
    saved = getattr(memory, "saved", None)
    if saved is not None:
        save_learned(run, name, saved)


def learns(found) -> bool:
    """The method has an offline stage of its own (``learn``)."""
    return hook(found, "learn") is not None


def prompt_order(strategies: list[str]) -> list[str]:
    """The order in which one question's prompts are sent: PREFIX_ORDER, then the other methods as listed."""
    return [n for n in PREFIX_ORDER if n in strategies] + [n for n in strategies if n not in PREFIX_ORDER]


def parse_strategies(text: str) -> list[str]:
    """The strategies of a comma-separated list (ValueError naming an unknown one)."""
    load_installed()
    names = [s.strip() for s in text.split(",") if s.strip()]
    unknown = [n for n in names if n not in METHODS]
    if unknown or not names:
        raise ValueError(f"unknown strategy {', '.join(unknown) or '(none given)'}; "
                         f"choose from {', '.join(METHODS)}")
    return names
