"""A small Python API over the pipeline: fit on labeled items, predict on unlabeled questions.

``Learner.fit`` writes the train items as a dataset folder (``<out>/data/``, empty test
split) and runs the ordinary train stage of ``critique.pipeline.Run`` in the run directory
``out``: initial predictions, critiques (episodic memory), the semantic summary. Like
``critique run`` it resumes, and a second ``fit`` with the same data makes no LLM call.

``Learner.predict`` answers new questions with one of the five strategies: retrieval over
the fitted episodic memory (K nearest), advice from the semantic memory, the same
templates as the test stage. Each call is logged in ``calls.jsonl`` and each answer in
``predictions.jsonl`` with stage ``predict`` (``gold`` and ``correct`` null); a question
already answered the same way is not asked again.

``Learner.learn(question, feedback)`` is one online step: the question answered with EP_CRIT over the
fitted memory and the notes learned so far, then written back as a note with its feedback (a label,
"self" or None), as ``critique stream`` does (critique.experiments.stream.loop; memory/notes.jsonl).

``Learner.load(run_dir)`` predicts with the memory of any run directory, e.g. one made by
``critique run``: model, config and data come from its manifest.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path

from critique.base import rundir, vocab
from critique.engine import parsing
from critique.datasets.splits import (CARD, DatasetCard, Item, dataset_checksum, dataset_files, files_checksum,
                                      write_files)
from critique.engine.memory import semantic as semantic_store
from critique.engine.memory.episodic import ENTRIES, EpisodicMemory
from critique.engine.memory.value import Memory
from critique.base.config import RunConfig, manifest_run_config
from critique.llm.spend import Spend
from critique.learner_items import Evaluation, Prediction, evaluation, labeled, question as _question

STAGE = vocab.PREDICT
DATA = "data"


class Learner:
    """Learn a classification task from critiques of the model's own answers.

    ``options`` are fields of ``critique.base.config.RunConfig`` (k, parts, seed, max_tokens,
    temperature, reasoning_effort, api_base, concurrency, encoder, use_cache, cache_dir, ...).
    Problems found before any call (unknown model, missing key, run directory locked or
    holding another run) raise ``critique.base.errors.UserError`` with a one-line message.
    """

    def __init__(self, model: str, task: str | None = None, answer_space: list[str] | None = None,
                 out: str | Path = "runs/learner", *, progress: bool = True, **options):
        self.out = Path(out)
        self.task = task
        self.answer_space = list(answer_space) if answer_space is not None else None
        self.config = RunConfig(dataset=str(self.out / DATA), model=model, strategies=[], **options)  # checked there
        self.progress = progress
        self.probe: dict | None = None
        self.ablation: dict | None = None
        self.calls_made = 0  # LLM calls actually made by the last fit or predict
        self._memory: EpisodicMemory | None = None
        self._semantic: dict[str, dict] | None = None
        self._encoder_kept = None
        # max_cost: one cap over every fit, predict, evaluate and learn of this Learner (critique.llm.spend)
        self._spend = Spend(self.config.max_cost) if self.config.max_cost is not None else None

    @classmethod
    def load(cls, run_dir: str | Path, *, progress: bool = True, **options) -> "Learner":
        """A learner over an existing run directory (``critique run`` or ``Learner.fit``).

        Model, config and data come from its manifest; ``options`` may change what does not
        identify the run (api_base, concurrency, cache_dir, use_cache, timeout, ...).
        """
        from critique.datasets.registry import resolve

        run_dir = Path(run_dir)
        if not rundir.is_run_dir(run_dir):
            raise FileNotFoundError(f"{run_dir}: not a run directory (no {rundir.MANIFEST})")
        manifest = rundir.read_manifest(run_dir)
        config = replace(manifest_run_config(manifest), **options)
        local = run_dir / DATA  # a learner's run directory, possibly moved since it was fitted
        if (local / CARD).exists() and dataset_checksum(local) == manifest["dataset"]["checksum"]:
            config = replace(config, dataset=str(local))
        card = resolve(config.dataset, config.data_dir).card
        learner = cls(config.model, card.task, card.answer_space, run_dir, progress=progress)
        learner.config = config
        learner.probe, learner.ablation = manifest.get("probe"), manifest.get("ablation")
        return learner

    # ---- memory ---------------------------------------------------------------------
    @property
    def memory(self) -> EpisodicMemory | None:
        """The episodic memory: ``.entries`` are dicts with id, item_id, question, initial_answer,
        gold, critique, model, run_id, request_hash. None before anything is fitted."""
        if self._memory is None and (self.out / rundir.MEMORY / ENTRIES).exists():
            self._memory = EpisodicMemory.load(self.out / rundir.MEMORY, self._encoder)
        return self._memory

    @property
    def semantic(self) -> dict[str, dict]:
        """Per pool (``all``, or one user): the advice, the ids of the entries it came from, model..."""
        if self._semantic is None:
            self._semantic = semantic_store.load(self.out / rundir.MEMORY)
        return self._semantic

    @property
    def advice(self) -> str | None:
        """The semantic memory of the pool ``all`` (single-pool data)."""
        return (self.semantic.get("all") or {}).get("advice")

    def _encoder(self):
        """The encoder of this learner's runs, made once (its model loads at the first encode)."""
        from critique.base.paths import cache_dir
        from critique.engine.memory.embed import Encoder

        if getattr(self._encoder_kept, "name", None) != self.config.encoder:
            cache = cache_dir(self.config.cache_dir) if self.config.use_cache else None
            self._encoder_kept = Encoder(self.config.encoder, cache)
        return self._encoder_kept

    # ---- fit ------------------------------------------------------------------------
    def fit(self, data, methods=()) -> "Learner":
        """Run the train stage on ``data``: (question, label) or (id, question, label) tuples,
        ``Item``s, dicts with question/answer (and id), or a dataset folder or name (its train
        split), then the offline stage of each of ``methods`` (the field's memory methods, e.g. "ace",
        "dc", "expel": critique.engine.field) under ``train_budget`` when the Learner was given one.
        Resumes like ``critique run``: the same data again makes no call.
        A run directory holding a run on other data is refused before anything is written."""
        from critique.engine.methods import learn, learns, method, parse_strategies

        learners = parse_strategies(",".join(methods)) if methods else []
        if any(not learns(method(name)) for name in learners):
            raise ValueError("methods: only memory methods with an offline stage of their own (ace, ace:nolabel, dc, "
                             "expel, dspy:knn); the five strategies need the train stage alone")
        items, card = self._train_data(data)
        self._write_data(items, card)
        self.config = replace(self.config, dataset=str(self.out / DATA))
        opened, made = [], []

        async def train(run) -> None:
            made.append(await run.train_stage())
            for name in learners:
                await learn(run, name)

        try:
            self._execute(train, opened.append)
        finally:
            self.calls_made = opened[0].llm.calls_made if opened else 0
        self._memory, self._semantic = made[0].episodic, made[0].semantic
        return self

    def _train_data(self, data) -> tuple[list[Item], DatasetCard]:
        kind, users, source = "single", [], "items given to critique.Learner.fit"
        if isinstance(data, (str, Path)):
            from critique.datasets.registry import resolve

            dataset = resolve(str(data), self.config.data_dir)
            self.task = self.task or dataset.card.task
            self.answer_space = self.answer_space or list(dataset.card.answer_space)
            items, kind, source = dataset.train, dataset.card.kind, f"train split of {dataset.name} ({dataset.path})"
        else:
            items = [labeled(i, x) for i, x in enumerate(data)]
            given = sorted({i.user for i in items if i.user is not None})
            if given:  # items with users: preference data, one memory per user
                if any(i.user is None for i in items):
                    raise ValueError("either every item names its user or none does")
                kind, users = "preference", given
        if not items:
            raise ValueError("fit needs at least one labeled item")
        if not self.task or not self.answer_space:
            raise ValueError("task and answer_space are needed (Learner(model, task=..., answer_space=[...]))")
        old = self._manifest()
        name = old["dataset"]["name"] if old else (self.out.resolve().name or "learner")
        card = DatasetCard(name=name, task=self.task, answer_space=list(self.answer_space), kind=kind, users=users,
                           source=source, build_command="critique.Learner.fit",
                           description="train items of a Learner; the test split is empty (questions come to "
                                       "predict, without labels)")
        return items, card

    def _write_data(self, items: list[Item], card: DatasetCard) -> None:
        """Write ``<out>/data`` unless it already holds these items; refuse other data in a used run."""
        target = self.out / DATA
        files = dataset_files(target, replace(card), items, [])
        checksum = files_checksum(files)
        old = self._manifest()
        if old is not None and old["dataset"]["checksum"] != checksum:
            raise ValueError(f"{self.out} holds a run on other data (dataset checksum differs); "
                             f"use another out folder")
        if not ((target / CARD).exists() and dataset_checksum(target) == checksum):
            write_files(target, files)

    # ---- predict --------------------------------------------------------------------
    def predict(self, questions, strategy: str = "EP+SEM_CRIT", user: str | None = None) -> list[Prediction]:
        """Answer each question (a string, or an ``Item`` whose label is ignored) with ``strategy``: one of the
        five, or a memory method (its offline stage is replayed from the run's log; one that ``fit`` did not run
        runs here, its calls logged like fit's).

        There is no gold label here, so an unparseable reply is not replaced by a random wrong
        option as in the test stage: it gives ``answer=None, parse_failed=True``. A reply cut
        by the token limit or a failed call also gives ``answer=None`` (``timeout``, ``error``).
        ``user``: the memory pool of preference data (a string question has no user otherwise).
        Answers already logged for the same prompt are returned without a call.
        """
        items = [_question(q, user) for q in ([questions] if isinstance(questions, str) else questions)]
        done = self._answer(items, [strategy], STAGE)
        return [_prediction(done[(strategy, i.user, i.id)], i) for i in items]

    def evaluate(self, items, strategies=("EP+SEM_CRIT",)) -> dict[str, Evaluation]:
        """Answer labeled ``items`` (as ``fit`` takes them; an item given without an id is named by a hash of its
        question) with each of ``strategies`` and score them: per strategy its accuracy with its 95% Wilson
        interval (``Evaluation``). Logged like a test stage: each answer in predictions.jsonl with stage test,
        judged as the study judges (an unparseable reply counts wrong), and the same item asked the same way
        again makes no call."""
        found = [labeled(i, x, named=True) for i, x in enumerate(items)]
        done = self._answer(found, list(strategies), vocab.TEST)
        return {name: evaluation(name, [done[(name, i.user, i.id)] for i in found]) for name in strategies}

    def log_mlflow(self, tracking_uri: str | None = None, scores: dict[str, Evaluation] | None = None) -> str:
        """Log this Learner's folder as one MLflow run (settings, manifest, memory; ``scores`` from ``evaluate``
        as metrics ``evaluate/accuracy/<strategy>`` with its interval and n) and return its run id; logging again
        adds to the same MLflow run. Needs ``pip install 'critique-bench[mlflow]'``."""
        from critique.analysis import mlflow_log

        extra = {f"evaluate/{name}/{s.strategy}": value for s in (scores or {}).values()
                 for name, value in (("accuracy", s.accuracy), ("low", s.low), ("high", s.high), ("n", s.n))
                 if value is not None}
        ((_, run_id, _),) = mlflow_log.log_runs([self.out], tracking_uri, extra)
        return run_id

    def _answer(self, items: list[Item], strategies: list[str], stage: str) -> dict[tuple, dict]:
        """(strategy, user, item id) -> the record of each item answered with each strategy, in ``stage``
        (predict: no label; test: judged against the item's label)."""
        from critique.engine.methods import hook, learn, learns, method, parse_strategies

        parse_strategies(",".join(strategies))  # ValueError naming the known ones
        for name in strategies:
            if hook(method(name), "test"):
                raise ValueError(f"{name} learns on the questions it answers, in their order: run it with critique "
                                 "run (or a study), which answers the test split in one go")
        if not items:
            return {}
        self._check_fitted(items)
        unique = list({(i.user, i.id): i for i in items}.values())
        done: dict[tuple, dict] = {}
        opened = []

        def setup(run) -> None:
            opened.append(run)
            if self.task is not None and (run.task != self.task or list(run.space) != list(self.answer_space or [])):
                raise ValueError(f"{self.out} was fitted for another task or answer space; use another out folder")

        async def go(run) -> None:
            memory = self._fitted(run, strategies)
            vectors = run.encoder.encode([i.question for i in unique])
            for name in strategies:
                if learns(method(name)):
                    await learn(run, name)

                async def one(pair, name=name) -> None:
                    item, vector = pair
                    done[(name, item.user, item.id)] = await _answer_one(run, name, item, vector, stage, memory)

                await run.each(list(zip(unique, vectors)), one, f"{stage} ({name})")

        try:  # answers add to a fitted run: its status stays what it was
            self._execute(go, setup, complete=self._manifest().get("status") == "complete")
        finally:
            self.calls_made = opened[0].llm.calls_made if opened else 0
        return done

    def _fitted(self, run, strategies: list[str]) -> Memory:
        """The fitted memory the critique strategies answer from in ``run``: its episodic and semantic memory, and
        EP_LABEL's pool when ``strategies`` hold EP_LABEL."""
        labels = run.label_pool(self.memory) if vocab.EP_LABEL in strategies else None
        return Memory(self.memory, labels, self.semantic)

    def _check_fitted(self, items: list[Item]) -> None:
        """Something is fitted here, and each item names a user of it when the data is preference data."""
        if self._manifest() is None or self.memory is None:
            raise RuntimeError(f"nothing is fitted in {self.out}: call fit() first, or Learner.load(run_dir)")
        fitted = self._manifest()["dataset"]
        if fitted.get("kind") == "preference":  # one memory per user: a question needs its user's
            users = list(fitted.get("users") or [])
            for item in items:
                if item.user not in users:
                    shown = ", ".join(users[:5]) + (", ..." if len(users) > 5 else "")
                    raise ValueError(f"{self.out} holds preference data, one memory per user: give user= "
                                     f"(one of {shown}) for question {item.question[:60]!r}"
                                     + ("" if item.user is None else f"; {item.user!r} is not among them"))

    # ---- learn ----------------------------------------------------------------------
    def learn(self, question, feedback: str | None, user: str | None = None) -> Prediction:
        """One online step (critique.experiments.stream.loop.learn): answer ``question`` with EP_CRIT over the fitted
        memory and the notes learned so far, then write the episode back as a note. ``feedback``: the question's
        label (the critic is shown it), "self" (no label: the critic judges the answer itself) or None (nothing
        is written). Every note keeps its history in memory/notes.jsonl (``critique memory history``); the answer
        is logged with stage ``stream``, and asking the same question the same way again makes no call."""
        item = _question(question, user)
        if feedback is not None and feedback != "self":
            if feedback not in (self.answer_space or []):
                labels = ", ".join(self.answer_space or [])
                raise ValueError(f"feedback must be a label of the answer space ({labels}), \"self\" or None, "
                                 f"not {feedback!r}")
            item = replace(item, answer=feedback)
        self._check_fitted([item])
        done, opened = [], []

        async def go(run) -> None:
            from critique.experiments.stream import loop as stream

            judge = None if item.answer else _unlabeled(run.space)
            done.append(await stream.learn(run, self.memory, item, feedback, judge))

        try:  # a step adds to a fitted run: its status stays what it was
            self._execute(go, opened.append, complete=self._manifest().get("status") == "complete")
        finally:
            self.calls_made = opened[0].llm.calls_made if opened else 0
        return _prediction(done[0], item)

    # ---- run directory --------------------------------------------------------------
    def _manifest(self) -> dict | None:
        path = self.out / rundir.MANIFEST
        return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None

    def _execute(self, work, setup, complete: bool | None = None) -> None:
        """One open -> work -> close of the run directory, through the runner."""
        from critique.runner import execute_run

        def ready(run) -> None:
            run.encoder = self._encoder()  # the same encoder, its model loaded once, not at every predict
            setup(run)

        execute_run(self.config, self.out, probe=self.probe, ablation=self.ablation, work=work, setup=ready,
                    progress=self.progress, runner=_run_sync, complete=complete, learner=True, spend=self._spend)


async def _answer_one(run, name: str, item: Item, vector, stage: str, memory: Memory) -> dict:
    """One question with one strategy (the critique strategies over the fitted ``memory``), through the one
    test-question step (critique.engine.question); the logged record is reused when the prompt is the same. Stage
    predict: no label (``_unlabeled``) and every memory entry may be shown (the question is new); stage test: judged
    against the item's label, its own entry never shown, as the test stage does."""
    from critique.engine.question import ask

    if stage == STAGE:
        return await ask(run, name, item, vector, memory=memory, stage=stage, exclude=None,
                         judge=_unlabeled(run.space), keep_same=True)
    return await ask(run, name, item, vector, memory=memory, stage=stage, keep_same=True)


def _unlabeled(space: list[str]):
    """The judge of a question without a label: an unparseable reply is no answer, not a random one."""

    def judge(result, item) -> dict:
        answer = parsing.extract_answer(result.text, space) if result.error is None else None
        return {"answer": None if result.timeout else answer, "gold": None, "correct": None,
                "parse_failed": result.error is None and answer is None, "timeout": result.timeout,
                "error": result.error}

    return judge


def _prediction(record: dict, item: Item) -> Prediction:
    return Prediction(id=item.id, question=item.question, strategy=record["strategy"], answer=record["answer"],
                      parse_failed=record["parse_failed"], timeout=record["timeout"], error=record.get("error"),
                      retrieved=list(record["retrieved"]), user=item.user, request_hash=record.get("request_hash"))


def _run_sync(coro):
    """asyncio.run, or in a worker thread where a loop already runs (a notebook)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()
