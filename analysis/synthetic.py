"""Synthetic run directories in the run-directory contract (critique.base.records, docs/run-directory.md).

For tests (small runs with numbers chosen by hand) and for the benchmark (a whole study
at the paper's scale, seeded). Nothing here is a result: the numbers are made up.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import asdict
from pathlib import Path

from critique.base import offline_totals, records
from critique.base import rundir
from critique.base import vocab
from critique.base.config import RunConfig

TEMPLATES = {name: hashlib.sha256(name.encode()).hexdigest()
             for name in ("performance_zero_shot.j2", "performance_ep_label.j2", "performance_ep_crit.j2",
                          "performance_sem_crit.j2", "performance_ep_sem_crit.j2", "performance_probe.j2",
                          "critic.j2", "summary.j2")}
PROBE_CRITIQUE = "probe_critique"  # the stage of a suggestibility probe's critic calls
# The template each stage or strategy prompts with (as the runner names them).
TEMPLATE_OF = {vocab.ZERO_SHOT: "performance_zero_shot.j2", vocab.EP_LABEL: "performance_ep_label.j2",
               vocab.EP_CRIT: "performance_ep_crit.j2", vocab.SEM_CRIT: "performance_sem_crit.j2",
               vocab.EP_SEM_CRIT: "performance_ep_sem_crit.j2", vocab.TRAIN: "performance_zero_shot.j2",
               vocab.CRITIQUE: "critic.j2", PROBE_CRITIQUE: "critic.j2", vocab.SUMMARY: "summary.j2",
               vocab.PROBE: "performance_probe.j2"}


def manifest(model: str, dataset: str, kind: str = "single", probe: dict | None = None,
             ablation: dict | None = None, templates: dict | None = None, status: str = "complete",
             reasoning_model: bool | None = None, run_id: str = "run", started: str = "2025-01-01T00:00:00Z",
             log_version: int = rundir.LOG_VERSION) -> dict:
    """A manifest as the runner writes it. ``reasoning_model`` declares a reasoning model in
    config.reasoning_model, an optional field the runner never writes (records.CONFIG)."""
    config = asdict(RunConfig(dataset=dataset, model=model, reasoning_effort="medium", concurrency=8))
    if reasoning_model is not None:
        config["reasoning_model"] = reasoning_model
    records.check("config", config)
    return records.make(
        "manifest", log_version=log_version, run_id=run_id, status=status, started=started,
        finished=started if status == "complete" else None, resumed=None, config=config,
        dataset=records.make("dataset", name=dataset, path=f"datasets/{dataset}", checksum="0" * 64, kind=kind,
                             answer_space=["A", "B"], users=[], n_train=0, n_test=0),
        templates=dict(TEMPLATES if templates is None else templates),
        versions={"python": "3.11"}, probe=probe, ablation=ablation, local_model=None, learner=False)


def call(stage: str, strategy: str | None = None, item_id: str | None = "i0", user: str | None = None,
         completion_tokens: int = 10, reasoning_tokens: int = 0, model: str = "m",
         prompt: str = "question", response: str = '{"answer": "A"}', **extra) -> dict:
    template = TEMPLATE_OF.get(strategy, TEMPLATE_OF.get(stage, "performance_zero_shot.j2"))
    record = {"run_id": "run", "stage": stage, "strategy": strategy, "item_id": item_id, "user": user,
              "model": model, "prompt_tokens": len(prompt) // 4, "completion_tokens": completion_tokens,
              "reasoning_tokens": reasoning_tokens, "finish_reason": "stop", "latency_s": 0.5, "cached": False,
              "retries": 0, "error": None,  # a request is what was asked: another prompt or reply, another call
              "request_hash": hashlib.sha256(f"{stage}{strategy}{item_id}{user}{prompt}{completion_tokens}".encode()
                                             ).hexdigest(),
              "template": template, "template_hash": TEMPLATES[template],
              "messages": [{"role": "system", "content": "You answer."}, {"role": "user", "content": prompt}],
              "response": response, "time": "2025-01-01T00:00:00Z", "probe": None, "ablation": None}
    record.update(extra)
    return records.check("call", record)


TOKEN_FIELDS = ("prompt_tokens", "completion_tokens", "reasoning_tokens")  # a prediction repeats its call's


def prediction(stage: str, strategy: str | None, item_id: str, correct: bool, user: str | None = None,
               timeout: bool = False, parse_failed: bool = False, experiment: str | None = None, **extra) -> dict:
    """A prediction record; ``extra``: more fields, those that are not the record's own under ``experiment`` (a
    declared experiment: critique.base.records.declare), as the runner writes them."""
    record = {"run_id": "run", "stage": stage, "strategy": strategy, "item_id": item_id, "user": user,
              "answer": "A", "gold": "A" if correct else "B", "correct": correct, "parse_failed": parse_failed,
              "timeout": timeout, "error": None, "retrieved": [], "request_hash": "0" * 64, "context_overflow": False,
              "prompt_tokens": 0, "completion_tokens": 0, "reasoning_tokens": 0, "probe": None, "ablation": None}
    record.update(extra)
    return records.check("prediction", records.split(experiment, record))


def in_run(head: dict, records_: list[dict]) -> list[dict]:
    """``records_`` stamped with the run id, probe and ablation of the manifest ``head`` (as the runner
    writes them)."""
    for record in records_:
        record.update(run_id=head["run_id"], probe=head["probe"], ablation=head["ablation"])
    return records_


def write_jsonl(path: Path, records) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")


def write_run(path: str | Path, manifest_: dict, calls=(), predictions=()) -> Path:
    """A run directory of these records; the manifest of a finished run (not "running") with the offline stages'
    totals of its calls, as the runner writes them (critique.base.offline_totals)."""
    path, calls = Path(path), list(calls)
    path.mkdir(parents=True, exist_ok=True)
    write_jsonl(path / rundir.CALLS, calls)
    write_jsonl(path / rundir.PREDICTIONS, predictions)
    if manifest_.get("status") != "running":
        totals = offline_totals.Totals()
        for record in calls:
            totals.add(record)
        manifest_ = {**manifest_, offline_totals.FIELD: totals.value((path / rundir.CALLS).stat().st_size)}
    (path / rundir.MANIFEST).write_text(json.dumps(manifest_, indent=2, sort_keys=True), encoding="utf-8")
    return path


# ---- a whole study at the paper's scale (benchmark) ----

DATASETS = (("mcr", "single"), ("nfcorpus", "single"), ("pubmed", "single"), ("steam", "preference"),
            ("book", "preference"), ("anime", "preference"), ("movie", "preference"))
PROMPT_CHARS = {"zero_shot": 900, "EP_LABEL": 3200, "EP_CRIT": 4800, "SEM_CRIT": 2000, "EP+SEM_CRIT": 5800,
                "train_predict": 900, "critique": 1500, "summary": 30000, "probe": 2500}
GAIN = {"zero_shot": 0.0, "EP_LABEL": 0.04, "EP_CRIT": 0.05, "SEM_CRIT": 0.04, "EP+SEM_CRIT": 0.08}
TOKEN_FACTOR = {"zero_shot": 1.0, "EP_LABEL": 1.0, "EP_CRIT": 0.7, "SEM_CRIT": 0.75, "EP+SEM_CRIT": 0.65}


class _Text:
    """Cheap random text: slices of one seeded corpus."""

    def __init__(self, rng: random.Random):
        words = ("the patient study item user prefers ranking condition answer option because critique lesson "
                 "evidence trial abstract article genre rating similar first second however therefore").split()
        self.rng = rng
        self.corpus = " ".join(rng.choice(words) for _ in range(60000)) + '\n"quoted" line\n'

    def __call__(self, n: int) -> str:
        start = self.rng.randrange(0, len(self.corpus) - n - 1)
        return self.corpus[start:start + n]


def _pools(kind: str, n_single: int, users: int, per_user: int) -> list[tuple[str | None, int]]:
    return [(None, n_single)] if kind == "single" else [(f"user{u:02d}", per_user) for u in range(users)]


def _pa(rng, text, stage, strategy, item, user, model, reasoning, p_correct, factor=1.0):
    tokens = int(rng.gauss(900, 250) * factor) if reasoning else rng.randint(5, 40)
    timeout = reasoning and rng.random() < 0.01
    tokens = 8192 if timeout else max(tokens, 5)
    correct = (not timeout) and rng.random() < p_correct
    c = call(stage, strategy, item, user, tokens, tokens - 5 if reasoning else 0, model,
             text(PROMPT_CHARS.get(strategy or stage, 900)), '{"answer": "A", "why": "' + text(150) + '"}',
             finish_reason="length" if timeout else "stop")
    p = prediction(stage, strategy, item, correct, user, timeout=timeout, retrieved=[f"e{i}" for i in range(5)],
                   **{k: c[k] for k in TOKEN_FIELDS})
    return c, p


def _plain(rng, text, model, reasoning, kind, pools, base):
    calls, preds = [], []
    for user, n in pools:
        for i in range(n):
            c, p = _pa(rng, text, vocab.TRAIN, None, f"train{i}", user, model, reasoning, base)
            calls.append(c)
            preds.append(p)
            calls.append(call(vocab.CRITIQUE, None, f"train{i}", user, rng.randint(150, 400), 0, model,
                              text(PROMPT_CHARS["critique"]), text(700)))
        calls.append(call(vocab.SUMMARY, None, None, user, rng.randint(300, 900), 0, model,
                          text(PROMPT_CHARS["summary"]), text(1500)))
        for strategy in vocab.STRATEGIES:
            for i in range(n):
                c, p = _pa(rng, text, vocab.TEST, strategy, f"test{i}", user, model, reasoning,
                           base + GAIN[strategy], TOKEN_FACTOR[strategy])
                calls.append(c)
                preds.append(p)
    return calls, preds


def _probe(rng, text, model, reasoning, pools, base, susceptibility):
    calls, preds = [], []
    for user, n in pools:
        for i in range(n):
            for side, p_correct in ((vocab.TRUTH, min(base + 0.2, 0.99)), (vocab.LYING, base - susceptibility)):
                calls.append(call(PROBE_CRITIQUE, side, f"test{i}", user, rng.randint(150, 400), 0, model,
                                  text(PROMPT_CHARS["critique"]), text(700)))
                c, p = _pa(rng, text, vocab.PROBE, side, f"test{i}", user, model, reasoning, p_correct)
                calls.append(c)
                preds.append(p)
    return calls, preds


def _ablation(rng, text, model, reasoning, pools, base, name, value):
    calls, preds = [], []
    strategies = (vocab.EP_CRIT, vocab.EP_SEM_CRIT) if name == "train_size" else (vocab.EP_CRIT,)
    for user, n in pools:
        for strategy in strategies:
            for i in range(n):
                c, p = _pa(rng, text, vocab.TEST, strategy, f"test{i}", user, model, reasoning,
                           base + GAIN[strategy] * (float(value) if name == "train_size" else 1.0))
                calls.append(c)
                preds.append(p)
    return calls, preds


ABLATION_VALUES = {"k": (1, 3, 5, 10), "train_size": (0.25, 0.5, 0.75, 1.0), "parts": ("local", "global", "full")}


def generate_study(root: str | Path, seed: int = 0, models: int = 6, users: int = 10, n_single: int = 250,
                   per_user: int = 25, ablation_models: int = 1) -> list[Path]:
    """Every run of a study: plain runs, a suggestibility probe per (model, dataset), and the
    three ablations for the first `ablation_models` models on the non-preference datasets."""
    rng = random.Random(seed)
    text = _Text(rng)
    root = Path(root)
    runs = []
    for m in range(models):
        model, reasoning = f"model-{m}", m % 2 == 0
        for dataset, kind in DATASETS:
            pools = _pools(kind, n_single, users, per_user)
            base = rng.uniform(0.5, 0.75)
            head = manifest(model, dataset, kind)
            runs.append(write_run(root / f"{model}__{dataset}", head,
                                  *(in_run(head, r) for r in _plain(rng, text, model, reasoning, kind, pools, base))))
            probe = manifest(model, dataset, kind, probe={"name": vocab.SUGGESTIBILITY, "attribution": None})
            runs.append(write_run(root / f"{model}__{dataset}__suggestibility", probe,
                                  *(in_run(probe, r) for r in _probe(rng, text, model, reasoning, pools, base,
                                                                     rng.uniform(0.0, 0.4)))))
            if m >= ablation_models or kind != "single":
                continue
            for name, values in ABLATION_VALUES.items():
                for value in values:
                    head = manifest(model, dataset, kind, ablation={"name": name, "value": value})
                    runs.append(write_run(root / f"{model}__{dataset}__{name}-{value}", head,
                                          *(in_run(head, r) for r in _ablation(rng, text, model, reasoning,
                                                                               pools, base, name, value))))
    return runs
