"""Run directories as pandas DataFrames: one row per logged record (predictions, calls, episodic
memory entries), with the experiment each record belongs to.

Runs are found and grouped into experiments as the tables group them (analysis.reading.read: model,
dataset, probe, ablation and settings; a Learner's folders left out). Every frame has the
experiment columns of `EXPERIMENT_COLUMNS` (`variant`: the settings that tell the experiment
from another of its model, dataset, probe and ablation, "" when none does; `settings`: all of
them); `counted` marks the records the tables count (the
latest record of each item in its experiment: a rerun's replaces a failed one, a later run's
an earlier run's). pandas is imported here, and this module only where a frame is asked for
(`critique tables --inference`, `critique export`, a user's own code): never by the default
`critique tables`.

    from critique.analysis.reading import frames
    logs = frames.load(["runs/"])
    logs.predictions()   # one row per prediction record, question text joined in
    logs.calls()         # one row per call record (the prompt as text)
    logs.memory()        # one row per episodic entry, with how often test questions retrieved it
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from critique.analysis.reading import logs as run_logs, read
from critique.analysis.reading.tally import label
from critique.base import rundir, vocab

EXPERIMENT_COLUMNS = ["run", "model", "variant", "dataset", "probe", "attribution", "ablation", "ablation_value",
                      "settings"]
ITEM_KEY = ["stage", "strategy", "user", "item_id"]
PREDICTION_COLUMNS = {  # column -> meaning (beyond EXPERIMENT_COLUMNS): the documented frame
    "stage": "train_predict, test, probe, predict (learner)",
    "strategy": "the strategy; the probe's arm (truth, lying, repeat-N); null in the train stage",
    "user": "the item's user; \"\" for data without users",
    "item_id": "the item's id in its dataset",
    "question": "the item's question, from the dataset folder the run read (null when that folder is gone)",
    "answer": "the parsed answer; null when none", "gold": "the true label", "correct": "answer == gold, in time",
    "parse_failed": "the reply held no valid answer", "timeout": "the call hit the token limit",
    "error": "why no answer was obtained (a failed call, a missing memory); null otherwise",
    "retrieved": "ids of the episodic entries in the prompt, nearest first (a list)",
    "request_hash": "the answering call's request hash", "prompt_tokens": "input tokens",
    "completion_tokens": "output tokens (reasoning included)", "reasoning_tokens": "reasoning tokens",
    "retrieved_questions": "the questions of those entries, from the run's memory/episodic.jsonl (a list)",
    "counted": "the record the tables count (the latest of its item in its experiment)",
    "repeat": "consistency probe: the repeat's number (null otherwise)",
}
OUTCOME_FIELDS = ("stage", "strategy", "user", "item_id", "correct", "error", "repeat")
CHUNK_ROWS = 5000  # records per frame where a table is written a part at a time (Logs.call_chunks)


@dataclass
class Logs:
    """The run directories read (see `read`); their records as frames on demand."""
    metas: list[dict]
    problems: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def predictions(self, questions: bool = True) -> pd.DataFrame:
        """One row per logged prediction record (PREDICTION_COLUMNS and the experiment's)."""
        frame = _frame(self.metas, run_logs.PREDICTIONS, self.problems, self.errors)
        for column in ITEM_KEY:
            frame[column] = frame[column].map(_label) if column in frame else None
        for name in PREDICTION_COLUMNS:
            if name not in frame:
                frame[name] = None
        frame["user"] = frame["user"].fillna("").astype(str)
        frame["counted"] = ~frame.duplicated(["experiment_key", *ITEM_KEY], keep="last")
        if questions:
            frame["question"] = [_question(self._questions, m, u, i) for m, u, i in
                                 zip(frame["run"], frame["user"], frame["item_id"])]
            entries = {m["path"]: _entry_questions(m, self.problems) for m in self.metas}
            frame["retrieved_questions"] = [
                [entries[run].get(str(e)) for e in ids] if isinstance(ids, list) else None
                for run, ids in zip(frame["run"], frame["retrieved"])]
        return _ordered(frame, list(PREDICTION_COLUMNS))

    def outcomes(self) -> pd.DataFrame:
        """The counted predictions, lean and fast (item-level inference): the model as the tables
        show it (with its variant) and as named (base_model), dataset, kind, probe, ablation,
        ablation_value, seed, unseeded (the other settings, as JSON), stage, strategy, user (""
        for data without users), item_id, correct (bool: a missing answer is wrong), error (bool)
        and repeat."""
        rows, runs, experiments = [], [], {}
        for order, meta in enumerate(self.metas):
            experiments.setdefault(read.experiment(meta), len(experiments))
            try:
                found = run_logs.rows(meta["path"], run_logs.PREDICTIONS, OUTCOME_FIELDS, self.problems)
            except OSError as exc:
                self.errors.append(f"{meta['path']}: cannot read its logs ({exc}); left out")
                continue
            rows += found
            runs += [order] * len(found)
        columns = ["model", "base_model", "dataset", "kind", "probe", "ablation", "ablation_value", "seed",
                   "unseeded", "experiment"]
        about = pd.DataFrame([[read.model_label(m), m["model"], m["dataset"], m["kind"], m["probe"], m["ablation"],
                               m["ablation_value"], m["settings"].get("seed"),
                               json.dumps({k: v for k, v in m["settings"].items() if k != "seed"}, sort_keys=True,
                                          default=str), experiments[read.experiment(m)]] for m in self.metas],
                             columns=columns)
        frame = pd.DataFrame.from_records(rows, columns=list(OUTCOME_FIELDS))
        frame = pd.concat([about.iloc[runs].reset_index(drop=True), frame], axis=1)
        for column in ITEM_KEY:  # as the tables count them (analysis.reading.tally.label): a list is its text
            frame[column] = frame[column].map(_label)
        frame["user"] = frame["user"].where(frame["kind"] == vocab.PREFERENCE, "").fillna("").astype(str)
        frame["item_id"] = frame["item_id"].astype(str)
        frame = frame.drop_duplicates(["experiment", *ITEM_KEY], keep="last")  # runs are in start order
        frame["correct"] = frame["correct"].eq(True)
        frame["error"] = frame["error"].notna() & frame["error"].ne("")
        return frame.drop(columns=["experiment"]).reset_index(drop=True)

    def calls(self) -> pd.DataFrame:
        """One row per logged call record; `prompt` is its messages' text, one message per paragraph."""
        return _with_prompt(_ordered(_frame(self.metas, run_logs.CALLS, self.problems, self.errors), []))

    def call_columns(self) -> list[str]:
        """The columns of `calls()`, in its order, found by reading the records one at a time."""
        seen: dict[str, None] = {}
        for meta in self.metas:
            for records in run_logs.record_chunks(meta["path"], run_logs.CALLS, CHUNK_ROWS, [], self.errors):
                for record in records:
                    seen.update(dict.fromkeys(record))
        found = list(EXPERIMENT_COLUMNS) + [c for c in seen if c not in EXPERIMENT_COLUMNS]
        return [c for c in found if c != "messages"] + (["prompt"] if "messages" in seen else [])

    def call_chunks(self):
        """The rows of `calls()` as frames of at most CHUNK_ROWS records, one run at a time, for writing a large
        log set without holding it whole (critique export)."""
        for meta in self.metas:
            for records in run_logs.record_chunks(meta["path"], run_logs.CALLS, CHUNK_ROWS, self.problems, []):
                part = pd.DataFrame.from_records(records)
                for column, value in _experiment(meta).items():
                    part[column] = value
                yield _with_prompt(_ordered(part, []))

    def memory(self) -> pd.DataFrame:
        """One row per episodic memory entry of each run, the critique's fields as columns, and
        `retrieved_by`: how many counted test predictions of its run put it in their prompt."""
        rows = []
        for meta in self.metas:
            try:
                entries = run_logs.memory(meta["path"], self.problems) or []
            except OSError as exc:
                self.errors.append(f"{Path(meta['path']) / run_logs.EPISODIC}: cannot be read ({exc}); left out")
                continue
            for entry in entries:
                if not isinstance(entry, dict):
                    continue
                critique = entry.pop("critique", None)
                critique = critique if isinstance(critique, dict) else {}
                rows.append({**_experiment(meta), **entry, **{f"critique_{k}": v for k, v in critique.items()}})
        frame = pd.DataFrame(rows)
        if frame.empty:
            return pd.DataFrame(columns=[*EXPERIMENT_COLUMNS, "id", "retrieved_by"])
        predictions = self.predictions(questions=False)
        tests = predictions[predictions["counted"] & (predictions["stage"] == vocab.TEST)]
        uses = tests[["run", "retrieved"]].explode("retrieved").dropna().value_counts()
        frame["retrieved_by"] = [int(uses.get((run, entry), 0)) for run, entry in zip(frame["run"], frame["id"])]
        return _ordered(frame, [])

    @property
    def _questions(self) -> dict:
        if not hasattr(self, "_question_cache"):
            self._question_cache = {m["path"]: _dataset_questions(m) for m in self.metas}
        return self._question_cache


def load(paths: list[str], allow_mixed: bool = False, learners: bool = False) -> Logs:
    """The run directories among `paths` (folders count as the runs below them), grouped into
    experiments as `critique tables` groups them; `learners`: a critique.Learner's folders too."""
    errors: list[str] = []
    problems: list[str] = []
    return Logs(read.runs(paths, allow_mixed, errors, problems, learners), problems, errors)


def _experiment(meta: dict) -> dict:
    return {"run": meta["path"], "model": meta["model"], "variant": meta["variant"],
            "dataset": meta["dataset"], "probe": meta["probe"], "attribution": meta["attribution"],
            "ablation": meta["ablation"], "ablation_value": meta["ablation_value"],
            "settings": read.settings_text(meta["settings"])}


def _with_prompt(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its ``messages`` column as ``prompt``: the messages' text, one message per paragraph."""
    if "messages" in frame:
        frame["prompt"] = [None if not isinstance(m, list) else "\n\n".join(
            str(x.get("content", "")) for x in m if isinstance(x, dict)) for m in frame.pop("messages")]
    return frame


def _label(value):
    """A key value as the tables count it: text, a number, or None; anything else as its text."""
    return str(label(value)) if value is not None and not isinstance(value, str) else value


def _frame(metas: list[dict], name: str, problems: list[str], errors: list[str]) -> pd.DataFrame:
    parts = []
    for order, meta in enumerate(metas):
        try:
            records = run_logs.records(meta["path"], name, problems)
        except OSError as exc:
            errors.append(f"{Path(meta['path']) / name}: cannot be read ({exc}); left out")
            continue
        if not records:
            continue
        part = pd.DataFrame.from_records(records)
        for column, value in _experiment(meta).items():  # the run's probe and ablation, as the tables name them
            part[column] = value
        part["experiment_key"] = json.dumps(read.experiment(meta))
        part["run_order"] = order
        parts.append(part)
    if not parts:
        return pd.DataFrame(columns=[*EXPERIMENT_COLUMNS, *ITEM_KEY, "experiment_key"])
    return pd.concat(parts, ignore_index=True)


def _ordered(frame: pd.DataFrame, first: list[str]) -> pd.DataFrame:
    """The experiment columns first, then `first`, then the rest; the internal keys dropped."""
    frame = frame.drop(columns=[c for c in ("experiment_key", "run_order") if c in frame])
    head = [c for c in [*EXPERIMENT_COLUMNS, *first] if c in frame]
    return frame[head + [c for c in frame.columns if c not in head]].reset_index(drop=True)


def _dataset_questions(meta: dict) -> dict[tuple, str]:
    """(user, item id) -> question, from the dataset folder the run read, when it is still there."""
    manifest = run_logs.manifest(meta["path"])
    folder = Path(str((manifest.get("dataset") or {}).get("path") or ""))
    if not str(folder) or not folder.is_dir():
        return {}
    out = {}
    for split in sorted(folder.glob("*.jsonl")) + sorted(folder.glob("*/*.jsonl")):
        user = split.parent.name if split.parent != folder else ""
        for item in rundir.read_jsonl(split):
            if isinstance(item, dict) and "id" in item:
                out[(user, str(item["id"]))] = item.get("question")
    return out


def _entry_questions(meta: dict, problems: list[str]) -> dict[str, str]:
    """Episodic entry id -> its question, in one run's memory."""
    try:
        entries = run_logs.memory(meta["path"], problems) or []
    except OSError:
        return {}
    return {str(e.get("id")): e.get("question") for e in entries if isinstance(e, dict)}


def _question(questions: dict, run: str, user: str, item_id) -> str | None:
    return questions.get(run, {}).get((user or "", str(item_id)))
