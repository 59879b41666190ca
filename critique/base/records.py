"""The run-directory contract: every record a run directory holds, defined once.

The writer (critique.engine.pipeline), the synthetic-log generator (critique.analysis.synthetic),
the JSON Schemas (``json_schema``) and docs/run-directory.md (``markdown_table``) all come
from the definitions below. ``make``/``check`` refuse a record with a missing or unknown
field, so a writer cannot drift from the contract without failing at once.

Types are JSON Schema type names; ``"string|null"`` allows null. ``analysis=True`` marks
the fields the analysis (``critique.analysis``) reads; ``required=False`` marks a field only
some records carry (declared extensions). The manifest's fields are critique.base.manifest_fields'; an
experiment's own prediction fields are declared where the experiment is written (``declare``).
"""

from __future__ import annotations

from critique.base.field import Field
from critique.base.manifest_fields import CONFIG, DATASET, MANIFEST


def _shared(what: str) -> tuple[Field, ...]:
    return (
        Field("run_id", "string", "id of the run that wrote the record (kept when a run is resumed)"),
        Field("stage", "string", f"the stage of the {what}: train_predict, critique, recritique (--on-mismatch "
              "recritique), summary, test, probe_predict, probe_critique, probe, predict (learner), credit, "
              "credit_null, credit_prune, stream (a stream's answers), stream_critique (its feedback); a field "
              "method's offline stage (critique.engine.field): ace_generate, ace_reflect, ace_curate, dc_generate, "
              "dc_curate, expel_attempt, expel_reflect, expel_insight, dspy_compile; a budgeted critique strategy's "
              "train stage (EP_CRIT:budget, ...): budget_train_predict, budget_critique, budget_recritique, "
              "budget_summary", analysis=True),
        Field("strategy", "string|null", "test: the strategy (zero_shot, EP_LABEL, EP_CRIT, SEM_CRIT, EP+SEM_CRIT); "
              "probe: truth, lying or repeat-N; credit: full or without:ENTRY_ID; credit_null: null; credit_prune: "
              "STRATEGY|RULE; stream: EP_CRIT; a field method's offline stage: the method (ace, dc, ...); null in the "
              "train stage", analysis=what == "prediction"),
        Field("item_id", "string|null", "the item's id in its dataset; null for a summary call", analysis=True),
        Field("user", "string|null", "the item's user (preference data); null otherwise", analysis=True),
    )


_TOKENS = (
    Field("prompt_tokens", "integer", "input tokens the provider reported"),
    Field("completion_tokens", "integer", "output tokens the provider reported (reasoning included)", analysis=True),
    Field("reasoning_tokens", "integer", "reasoning tokens the provider reported (0 when none)", analysis=True),
)
_CONTEXT = (
    Field("probe", "object|null", "the run's probe, as in the manifest"),
    Field("ablation", "object|null", "the run's ablation, as in the manifest"),
)

CALL = (
    *_shared("call"),
    Field("model", "string", "the model asked"),
    *_TOKENS,
    Field("finish_reason", "string|null", "the provider's finish reason; \"length\" is a timeout (token limit)"),
    Field("latency_s", "number", "seconds the call took (0 when answered from a matching run)"),
    Field("cached", "boolean", "answered by the response cache or a matching run, not the model"),
    Field("cost_usd", "number|null", "dollars of its prompt and completion tokens at the run's price (manifest "
          "price; a cached call's is what it cost when made, not spent again); null when no price is known",
          required=False, analysis=True),
    Field("retries", "integer", "retries after rate limits, server errors or timeouts"),
    Field("error", "string|null", "why the call failed; null when it answered", analysis=True),
    Field("request_hash", "string", "sha256 of the request (model, messages, schema, settings)"),
    Field("response", "string|null", "the reply text; null when the call failed"),
    Field("template", "string", "the prompt template's file name in prompts/<set>/ (e.g. critic.j2; the set is "
          "the manifest's config.prompts)"),
    Field("template_hash", "string", "sha256 of that template"),
    Field("messages", "array", "the chat messages sent ({role, content} objects)"),
    Field("time", "string", "when the record was written, UTC, YYYY-MM-DDTHH:MM:SSZ"),
    *_CONTEXT,
    # written by every call since chunked summaries (absent in older logs: false, null)
    Field("context_overflow", "boolean", "the prompt did not fit the model's context window (see manifest "
          "config.context_tokens): not sent, or refused by the provider as too long; no response, not an error",
          required=False),
    Field("cut_fields", "array|null", "the embedded model: the reply's string fields that reached their length "
          "bound (cut by the grammar), as paths like local_reason or advice[2]; null for models whose replies are "
          "not bounded", required=False),
    Field("option_scores", "object|null", "--answer-by loglikelihood or calibrated: option -> the log-likelihood of "
          "its reply (the sum of its tokens' log-probabilities after the prompt); the answer is the best one; null "
          "for a reply the model wrote", required=False),
    Field("content_free_scores", "object|null", "--answer-by calibrated: option -> its log-likelihood after the same "
          "prompt with a content-free question (N/A); the answer is the best of option_scores less these, each "
          "normalised over the options; null otherwise", required=False),
    Field("summary_level", "integer", "summary calls: 0 for a chunk of critiques, 1 and up for a merge of the "
          "advice lists of the level below (memory/semantic.json tree)", required=False),
    Field("summary_chunk", "integer", "summary calls: the chunk's index within its level", required=False),
)

PREDICTION = (
    *_shared("prediction"),
    Field("answer", "string|null", "the parsed answer (a failed parse gets a seeded wrong option); null when none",
          analysis=True),
    Field("gold", "string|null", "the true label; null for the learner (unlabelled items)", analysis=True),
    Field("correct", "boolean|null", "answer == gold and the call answered in time; null for the learner",
          analysis=True),
    Field("parse_failed", "boolean", "the reply held no valid answer", analysis=True),
    Field("timeout", "boolean", "the call hit the token limit (finish_reason \"length\")", analysis=True),
    Field("error", "string|null", "why no answer was obtained (failed call, missing memory); null otherwise; "
          "a record with an error is redone when the run is resumed", analysis=True),
    Field("retrieved", "array", "ids of the episodic entries put in the prompt, nearest first (many_shot: the "
          "train items shown, in the order shown)"),
    Field("retrieved_scores", "array|null", "the similarity of each entry of retrieved to the question, in the same "
          "order: the cosine of their embeddings (inner product of L2-normalised vectors, as FAISS found it); [] "
          "when none was retrieved; null when not known (many_shot: none is chosen by similarity); absent in logs "
          "written before it existed",
          analysis=True, required=False),
    Field("injected_tokens", "integer|null", "test and learner predictions: tokens of the episodic examples in "
          "the prompt: the prompt's tokens less those of the same template rendered without examples, counted "
          "with the run's tokenizer (critique.llm.context); 0 when none entered (--gate, --inject-budget); null "
          "when not counted (only a run with --gate or --inject-budget counts them); absent in older logs",
          analysis=True, required=False),
    Field("request_hash", "string|null", "request_hash of the call that answered; null when no call was made"),
    *_TOKENS,
    *_CONTEXT,
    Field("context_overflow", "boolean", "the prompt did not fit the model's context window, so it was not answered "
          "(answer null, correct false, not a parse failure, not an error); absent in logs written before it "
          "existed: false", analysis=True, required=False),
    Field("experiment", "object", "an experiment's own fields, under the experiment's name: {NAME: {field: value}}, "
          "NAME the run's probe (suggestibility, consistency, verify, overturn, conditioning, priors, dose, "
          "credit, credit_prune, stream); each experiment declares its fields (EXPERIMENTS; the tables below this "
          "one); absent for the study's own stages. Older logs have these fields at the top level: readers lift "
          "them there (flat)",
          required=False),
)

MEMORY_ENTRY = (
    Field("id", "string", "the entry's id: USER/ITEM_ID for preference data, ITEM_ID otherwise"),
    Field("item_id", "string", "the train item critiqued"),
    Field("user", "string|null", "the item's user; null for single-pool data"),
    Field("question", "string", "the item's question (what retrieval embeds)"),
    Field("initial_answer", "string", "the zero-shot answer critiqued (or the no-answer text)"),
    Field("gold", "string|null", "the true label; null when the item has none (a Learner's question learned with "
          "self feedback: Learner.learn(question, \"self\"))"),
    Field("critique", "object", "the critique: the critic's three text fields"),
    Field("assertion_mismatch", "boolean|null", "the critique's correct_answer does not name the label the critic "
          "was shown as the answer (strict: asserted != label; the gold label but with --critic noisy:R; logs written "
          "before the strict check flagged only a label other than gold among the words); null when the critic was "
          "shown no label (--critic self)", analysis=True),
    Field("timeout", "boolean", "the critique call hit the token limit"),
    Field("model", "string", "the critic model"),
    Field("template_hash", "string", "sha256 of critic.j2"),
    Field("run_id", "string", "the run that wrote the entry"),
    Field("request_hash", "string", "request_hash of the critique call"),
    # since the strict assertion check (absent in older logs)
    Field("asserted", "string|null", "the label the critique's correct_answer names as the answer (strict check, "
          "critique.base.assertion); null when it names none (a stray option in a sentence names nothing)",
          analysis=True, required=False),
    Field("recritique", "object", "--on-mismatch recritique, when the first critique mismatched: {first, second, "
          "kept}: first and second are {critique (null: no valid reply), asserted, assertion_mismatch, timeout, "
          "request_hash, error} of the two critique calls (the second is stage recritique); kept is \"second\" "
          "when its assertion names the label the critic was shown, else \"first\"; the entry's own critique "
          "fields are the kept one's", required=False),
    # since critic modes (absent in older logs: the gold label was shown, nothing flipped, no verdict field)
    Field("label", "string|null", "the label the critic was shown: the gold label, a flipped one (--critic noisy:R, "
          "see label_flipped), or null: none (--critic self, outside the --label-budget)", analysis=True,
          required=False),
    Field("label_flipped", "boolean", "--critic noisy:R flipped this item's label (to another option, seeded) before "
          "the critic saw it", analysis=True, required=False),
    Field("verdict", "string|null", "a critic shown no label (self): its own verdict on the initial answer, right or "
          "wrong; null when it was shown a label", analysis=True, required=False),
    Field("believed", "string|null", "a critic shown no label (self): the answer it believes is correct (the option "
          "its believed_answer names; null when none or when it was shown a label); EP_LABEL shows it as the label",
          analysis=True, required=False),
    Field("doubtful", "boolean", "critique deinflate --mode doubt: a verifier (or the random control) demoted the "
          "entry; its correct_answer carries the doubtful mark (prompts/<set>/doubtful.j2); absent: not demoted",
          analysis=True, required=False),
)

SEMANTIC = (
    Field("advice", "string|null", "the distilled advice as the prompts show it, one \"- \" line per piece of "
          "advice; null when there is none"),
    Field("source_ids", "array", "ids of the episodic entries summarised"),
    Field("model", "string", "the summarising model"),
    Field("template_hash", "string", "sha256 of summary.j2"),
    Field("timeout", "boolean", "a summary call of the tree hit the token limit"),
    Field("error", "string|null", "why there is no advice (a failed call, a reply without advice, a context too "
          "small), naming the level and chunk; null when there is advice"),
    Field("run_id", "string", "the run that wrote it"),
    Field("request_hash", "string", "request_hash of the call that wrote the final advice (the root of the tree), "
          "or of the call that failed"),
    # since chunked summaries (absent in older logs)
    Field("lines", "array", "the final advice, one {text, source_ids, cited} object per line: source_ids are the "
          "critiques the line descends from; cited (absent in older logs: false) is true when they are the ones the "
          "summary named for it (--advice-sources cited), false when they are all critiques of every chunk whose "
          "advice went into the calls that wrote it", required=False),
    Field("context_tokens", "integer|null", "the context window the chunks were fitted to; null when it is not "
          "known (one call over all critiques)", required=False),
    Field("tree", "array", "the calls, level by level: tree[L][C] is chunk C of level L, {source_ids, inputs "
          "(level 1 and up: the chunks of level L-1 merged), shortened (ids whose texts were cut to fit), lines, "
          "request_hash (null: a single list passed up without a call), timeout, error; with cited sources also "
          "line_sources, line_cited and unknown_sources (numbers the reply gave that its prompt has not)}",
          required=False),
)

# One version of a stream's note (memory/notes.jsonl; critique.engine.memory.notes).
NOTE = (
    Field("note", "string", "the note's id: its first entry's id (a train entry's, or stream:ENTRY_ID for one a stream "
          "wrote)"),
    Field("version", "integer", "1 for the note as first written, then one more per change"),
    Field("replaces", "string|null", "NOTE@VERSION of the version this one replaces; null for version 1"),
    Field("status", "string", "active (as written, or its confidence changed), revised (its entry replaced by new "
          "evidence, retrieved like an active note) or disabled (never retrieved again)"),
    Field("sources", "array", "the item ids it rests on: its own item's, then each item whose evidence changed it"),
    Field("scope", "object", "{dataset, user}: where it applies (the pool it is retrieved in)"),
    Field("confidence", "number", "1 when written; each agreeing piece of evidence adds 1 (--conflicts revise)"),
    Field("step", "integer|null", "the stream step that wrote this version; null for the train memory"),
    Field("feedback", "string", "the feedback mode that wrote it (gold, noisy:R, self, delayed:D), or train"),
    Field("verdict", "integer|null", "r: 1 when its critique calls the answer right, 0 when wrong, null when it says "
          "neither", analysis=True),
    Field("truth", "integer|null", "U: 1 when the answer was right (the gold label; recorded for the analysis, "
          "never shown in a prompt); null when unknown: the entry has no gold label (Learner.learn with \"self\")",
          analysis=True),
    Field("why", "string", "what wrote this version"),
    Field("entry", "object", "the episodic entry it holds (memory_entry's fields)"),
)

KINDS = {"call": CALL, "prediction": PREDICTION, "memory_entry": MEMORY_ENTRY, "semantic": SEMANTIC, "note": NOTE,
         "manifest": MANIFEST, "config": CONFIG, "dataset": DATASET}
_NESTED = {("manifest", "config"): "config", ("manifest", "dataset"): "dataset"}


def fields(kind: str) -> tuple[Field, ...]:
    try:
        return KINDS[kind]
    except KeyError:
        raise ValueError(f"unknown record kind {kind!r}; known: {', '.join(KINDS)}") from None


# ---- experiments' own fields ------------------------------------------------------------------------------
# experiment (the run's probe name) -> the prediction fields it writes under record["experiment"][name]; each
# experiment declares its own (``declare``) where it is written, so that a new experiment adds fields without
# touching the prediction record
EXPERIMENTS: dict[str, tuple[Field, ...]] = {}
_PREDICTION_NAMES = frozenset(f.name for f in PREDICTION)  # the record's own fields, never an experiment's


def declare(experiment: str, own: tuple[Field, ...]) -> tuple[Field, ...]:
    """Declare the fields of ``experiment``'s predictions (its namespace); returns them."""
    clash = sorted(f.name for f in own if f.name in _PREDICTION_NAMES)
    if clash:
        raise ValueError(f"experiment {experiment!r}: {', '.join(clash)} already a prediction field")
    EXPERIMENTS[experiment] = tuple(own)
    return EXPERIMENTS[experiment]


def split(experiment: str | None, values: dict) -> dict:
    """A prediction's fields with those that are not the prediction record's own moved under
    ``experiment`` (the writer's side of ``flat``)."""
    own = {k: v for k, v in values.items() if k not in _PREDICTION_NAMES}
    if not own:
        return values
    kept = {k: v for k, v in values.items() if k in _PREDICTION_NAMES}
    return {**kept, "experiment": {experiment or "": own}}


def flat(record: dict) -> dict:
    """A prediction record with its experiment's fields at the top level, as older logs wrote them (the readers'
    view: every experiment field is read by its name alone)."""
    nested = record.get("experiment")
    if not isinstance(nested, dict):
        return record
    out = {k: v for k, v in record.items() if k != "experiment"}
    for own in nested.values():
        out.update(own)
    return out


def _problems(defined: tuple[Field, ...], record: dict) -> list[str]:
    names = {f.name for f in defined}
    missing = [f.name for f in defined if f.required and f.name not in record]
    unknown = sorted(set(record) - names)
    return [part for part in (missing and f"missing {', '.join(missing)}",
                              unknown and f"unknown {', '.join(unknown)}") if part]


def _experiment_problems(nested) -> list[str]:
    if not isinstance(nested, dict) or len(nested) != 1:
        return ["experiment: one {NAME: {fields}} object expected"]
    (name, own), = nested.items()
    if name not in EXPERIMENTS:
        return [f"experiment {name!r} declares no fields (critique.base.records.declare)"]
    return [f"experiment {name}: {part}" for part in _problems(EXPERIMENTS[name], own)]


def check(kind: str, record: dict) -> dict:
    """``record`` itself; ValueError when it lacks a required field or has an unknown one (a prediction's
    experiment fields: those its experiment declared)."""
    problems = _problems(fields(kind), record)
    if kind == "prediction" and "experiment" in record:
        problems += _experiment_problems(record["experiment"])
    if problems:
        raise ValueError(f"{kind} record: " + "; ".join(problems))
    return record


def make(kind: str, /, **values) -> dict:
    """A record of ``kind`` from its fields (ValueError on a missing or unknown one)."""
    return check(kind, values)


def _type(text: str) -> dict:
    parts = text.split("|")
    return {"type": parts[0] if len(parts) == 1 else parts}


def json_schema(kind: str, nested: bool = True) -> dict:
    """A JSON Schema (draft 2020-12) of one record of ``kind``."""
    props = {}
    for f in fields(kind):
        sub = _NESTED.get((kind, f.name))
        props[f.name] = json_schema(sub, nested=False) if sub else {**_type(f.type), "description": f.meaning}
    if kind == "prediction":
        props["experiment"] = {**props["experiment"], "additionalProperties": False, "maxProperties": 1,
                               "properties": {name: _experiment_schema(name) for name in sorted(EXPERIMENTS)}}
    schema = {"type": "object", "properties": props,
              "required": [f.name for f in fields(kind) if f.required], "additionalProperties": False}
    if nested:
        schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": f"critique {kind} record",
                  **schema}
    return schema


def _experiment_schema(name: str) -> dict:
    """The JSON Schema of experiment ``name``'s own fields (as declared)."""
    own = EXPERIMENTS[name]
    return {"type": "object", "additionalProperties": False, "required": [f.name for f in own if f.required],
            "properties": {f.name: {**_type(f.type), "description": f.meaning} for f in own}}


def markdown_table(kind: str) -> str:
    """The fields of ``kind`` (a record kind, or ``experiment NAME``: a declared experiment's own fields) as a
    Markdown table (docs/run-directory.md holds each one)."""
    rows = ["| field | type | required | analysis | meaning |", "|---|---|---|---|---|"]
    defined = EXPERIMENTS[kind.split(" ", 1)[1]] if kind.startswith("experiment ") else fields(kind)
    for f in defined:
        rows.append(f"| `{f.name}` | {f.type} | {'yes' if f.required else 'no'} | "
                    f"{'yes' if f.analysis else ''} | {f.meaning} |")
    return "\n".join(rows)
