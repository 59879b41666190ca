"""The run-directory contract: every record a run directory holds, defined once.

The writer (critique.engine.pipeline), the synthetic-log generator (critique.analysis.synthetic),
the JSON Schemas (``json_schema``) and docs/run-directory.md (``markdown_table``) all come
from the definitions below. ``make``/``check`` refuse a record with a missing or unknown
field, so a writer cannot drift from the contract without failing at once.

Types are JSON Schema type names; ``"string|null"`` allows null. ``analysis=True`` marks
the fields the analysis (``critique.analysis``) reads; ``required=False`` marks a field only
some records carry (probe predictions, declared extensions).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Field:
    name: str
    type: str
    meaning: str
    analysis: bool = False
    required: bool = True


def _shared(what: str) -> tuple[Field, ...]:
    return (
        Field("run_id", "string", "id of the run that wrote the record (kept when a run is resumed)"),
        Field("stage", "string", f"the stage of the {what}: train_predict, critique, recritique (--on-mismatch "
              "recritique), summary, test, probe_predict, probe_critique, probe, predict (learner), credit, "
              "credit_null, credit_prune", analysis=True),
        Field("strategy", "string|null", "test: the strategy (zero_shot, EP_LABEL, EP_CRIT, SEM_CRIT, EP+SEM_CRIT); "
              "probe: truth, lying or repeat-N; credit: full or without:ENTRY_ID; credit_null: null; credit_prune: "
              "STRATEGY|RULE; null in the train stage", analysis=what == "prediction"),
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
    Field("summary_level", "integer", "summary calls: 0 for a chunk of critiques, 1 and up for a merge of the "
          "advice lists of the level below (memory/semantic.json tree)", required=False),
    Field("summary_chunk", "integer", "summary calls: the chunk's index within its level", required=False),
)

PREDICTION = (
    *_shared("prediction"),
    Field("answer", "string|null", "the parsed answer (a failed parse gets a seeded wrong option); null when none"),
    Field("gold", "string|null", "the true label; null for the learner (unlabelled items)", analysis=True),
    Field("correct", "boolean|null", "answer == gold and the call answered in time; null for the learner",
          analysis=True),
    Field("parse_failed", "boolean", "the reply held no valid answer", analysis=True),
    Field("timeout", "boolean", "the call hit the token limit (finish_reason \"length\")", analysis=True),
    Field("error", "string|null", "why no answer was obtained (failed call, missing memory); null otherwise; "
          "a record with an error is redone when the run is resumed", analysis=True),
    Field("retrieved", "array", "ids of the episodic entries put in the prompt, nearest first"),
    Field("retrieved_scores", "array|null", "the similarity of each entry of retrieved to the question, in the same "
          "order: the cosine of their embeddings (inner product of L2-normalised vectors, as FAISS found it); [] "
          "when none was retrieved; null when not known; absent in logs written before it existed",
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
    # suggestibility probe (stage probe, strategy truth / lying)
    Field("argued", "string", "suggestibility: the label the critic was told to argue for", required=False),
    Field("attribution", "string|null", "suggestibility: who the critique is said to come from "
          "(null, user, self, other:MODEL)", required=False),
    Field("initial_answer", "string", "suggestibility: the zero-shot answer that was critiqued", required=False),
    Field("followed", "boolean", "suggestibility: the new answer is the argued label", required=False),
    Field("critique_parse_failed", "boolean", "suggestibility: the critique reply was not valid", required=False),
    Field("critique_timeout", "boolean", "suggestibility: the critique call hit the token limit", required=False),
    Field("critique_request_hash", "string", "suggestibility: request_hash of the critique call", required=False),
    Field("delivered", "boolean", "suggestibility: the critique asserts the label it was told to argue (strict "
          "check of its correct_answer, critique.base.assertion); false when it asserts another label, none, or did "
          "not parse (a lying critique that asserts the true label was not delivered); absent in older logs: not "
          "checked", analysis=True, required=False),
    Field("critique_asserted", "string|null", "suggestibility: the label the critique's correct_answer asserts as "
          "the answer (strict check); null when it names none or did not parse", required=False),
    # verifier runs (critique verify: stage probe, strategy the verifier)
    Field("verifier", "string", "verify: the verifier (reorder: the options permuted)", required=False),
    Field("checked_answer", "string", "verify: the memory entry's initial answer, the one its verdict is about",
          required=False),
    Field("shown_answer", "string|null", "verify reorder: the label answered in the permuted question (answer is it "
          "mapped back to the original labels); null when none", required=False),
    Field("survives", "boolean", "verify: the checked answer survived the check (reorder: the permuted question got "
          "it again); false means the entry is flagged (a reply with no valid answer is flagged)", analysis=True,
          required=False),
    Field("samples", "array", "verify sample:N: the N sampled answers (null where a sample had no valid answer); "
          "answer is the most frequent valid one", required=False),
    Field("judge_verdict", "string|null", "verify judge:MODEL: the judge's verdict on the checked answer, right or "
          "wrong (answer is the answer it believes); null when its reply did not parse", required=False),
    # overturn probe (stage probe, strategy false, false+true, true+false, each with @provenance)
    Field("notes", "array", "overturn: the critiques in the prompt, in order: truth or lying", required=False),
    Field("provenance", "boolean", "overturn: each critique was shown with where it came from and how confident",
          required=False),
    # consistency probe (stage probe, strategy repeat-N)
    Field("split", "string", "consistency: the split repeated (test or train)", required=False),
    Field("repeat", "integer", "consistency: the repeat's number, from 1", required=False),
    # credit: the deletion test (stage credit, strategy full or without:ENTRY_ID; stage credit_null)
    Field("removed", "string|null", "credit: the episodic entry left out of the prompt (strategy without:ID); "
          "null for the full prompt and the null control", required=False),
    Field("cited", "array|null", "credit --cite: ids of the prompt's entries the answer says it used; null when "
          "not asked or the reply named none validly", required=False),
    Field("nearest_other", "number|null", "credit: the removed entry's greatest similarity (cosine of question "
          "embeddings) to another entry of the same prompt; null when it was alone", required=False),
    Field("nearest_other_id", "string|null", "credit: that other entry's id", required=False),
    Field("pruned", "integer", "credit_prune: the number of entries the rule (strategy STRATEGY|RULE) removed "
          "from memory", required=False),
)

MEMORY_ENTRY = (
    Field("id", "string", "the entry's id: USER/ITEM_ID for preference data, ITEM_ID otherwise"),
    Field("item_id", "string", "the train item critiqued"),
    Field("user", "string|null", "the item's user; null for single-pool data"),
    Field("question", "string", "the item's question (what retrieval embeds)"),
    Field("initial_answer", "string", "the zero-shot answer critiqued (or the no-answer text)"),
    Field("gold", "string", "the true label"),
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
    Field("lines", "array", "the final advice, one {text, source_ids} object per line: source_ids are the "
          "critiques the line descends from (all critiques of every chunk whose advice went into the calls that "
          "wrote it)", required=False),
    Field("context_tokens", "integer|null", "the context window the chunks were fitted to; null when it is not "
          "known (one call over all critiques)", required=False),
    Field("tree", "array", "the calls, level by level: tree[L][C] is chunk C of level L, {source_ids, inputs "
          "(level 1 and up: the chunks of level L-1 merged), shortened (ids whose texts were cut to fit), lines, "
          "request_hash (null: a single list passed up without a call), timeout, error}", required=False),
)

MANIFEST = (
    Field("log_version", "integer", "version of this contract (1)", analysis=True),
    Field("run_id", "string", "the run's id"),
    Field("status", "string", "running; complete once every stage finished; errors once every stage finished but "
          "some call or prediction ended in an error not redone since (running it again retries them; a study takes "
          "it for not done)", analysis=True),
    Field("started", "string", "when the run first started, UTC (the later of two runs of one experiment wins)",
          analysis=True),
    Field("finished", "string|null", "when it completed; null while running or after a crash"),
    Field("errors", "object", "{calls, predictions}: how many ended in an error not redone since, when the run last "
          "finished; absent in older logs and while running", required=False),
    Field("resumed", "string|null", "when it was last resumed; null if never"),
    Field("config", "object", "the run's settings (table config below)", analysis=True),
    Field("probe", "object|null", "{name: suggestibility, attribution}, {name: consistency, repeats, split} or "
          "{name: verify, verifier, source, source_run_id} (critique verify: source is the run checked), {name: deinflate, "
          "mode, demote, verifier, seed, demoted, source, source_run_id, verify_run} (critique deinflate), {name: "
          "overturn} (critique probe overturn); null for "
          "a plain run", analysis=True),
    Field("ablation", "object|null", "{name: k | parts | train_size | gate, value}; null when none", analysis=True),
    Field("dataset", "object", "the data (table dataset below)", analysis=True),
    Field("templates", "object", "template file name -> sha256 of every prompt template of the run's set "
          "(config.prompts)", analysis=True),
    Field("versions", "object", "package name -> installed version (null when absent)"),
    Field("local_model", "object|null", "the embedded model's weights and bounds; null for other models"),
    Field("learner", "boolean", "written by critique.Learner.fit: a fit's folder, not a study run (the tables leave "
          "it out)", required=False, analysis=True),
    Field("deployments", "array", "several endpoints: [{model, api_base}]", required=False),
    Field("routing_strategy", "string", "several endpoints: the router's strategy", required=False),
    Field("ep_label", "string", "what EP_LABEL shows as each example's label: gold (the gold label), noisy (the "
          "labels the critic was shown, a fraction flipped), believed (--critic self: the critic's believed answer; "
          "there is no label), budget (the gold label for the --label-budget's items, the believed answer for the "
          "others); absent in older logs: gold", analysis=True, required=False),
    Field("dropped_params", "object", "model -> the request parameters litellm drops for it because the provider "
          "does not support them as sent (drop_params; e.g. seed for anthropic, temperature 0 for o-series "
          "models), each deployment's model with several; [] when none; absent in older logs (not checked)",
          required=False),
)

CONFIG = (
    Field("dataset", "string", "the dataset's name"),
    Field("model", "string", "the model (litellm name)", analysis=True),
    Field("strategies", "array", "the test strategies run (grows when a run adds strategies)"),
    Field("k", "integer", "episodic examples per prompt", analysis=True),
    Field("parts", "string", "critique fields shown in examples: full, local or global", analysis=True),
    Field("limit", "integer|null", "items per split kept; null for all", analysis=True),
    Field("seed", "integer", "seed of every random choice", analysis=True),
    Field("max_tokens", "integer", "output token limit per call", analysis=True),
    Field("temperature", "number", "sampling temperature", analysis=True),
    Field("reasoning_effort", "string|null", "low, medium, high, or none (--reasoning-effort none: none sent); "
          "without --reasoning-effort, medium for a model litellm knows as a reasoning model (supports_reasoning), "
          "else null (none sent)", analysis=True),
    Field("api_base", "string|null", "the endpoint, when not the provider's default"),
    Field("concurrency", "integer", "calls in flight"),
    Field("encoder", "string", "the sentence encoder of retrieval", analysis=True),
    Field("use_cache", "boolean", "the response cache was used"),
    Field("data_dir", "string|null", "where datasets were read from"),
    Field("cache_dir", "string|null", "where the response cache lives"),
    Field("cache_size_gb", "number", "the response cache's size limit in GB (older entries evicted past it); absent "
          "in older logs", required=False),
    Field("timeout", "number", "seconds per attempt at a call"),
    Field("num_retries", "integer", "retries per call"),
    Field("train_fraction", "number|null", "train-size ablation: the share of train kept", analysis=True),
    Field("endpoint_id", "string|null", "the name the endpoint's responses are cached under (null: its URL)",
          required=False),
    Field("call_processes", "integer", "worker processes that made the calls (0: the run's own)", required=False),
    Field("context_tokens", "integer|null", "--context-tokens: the model's context window as the user gave it (null: "
          "the embedded model's n_ctx, else litellm's max_input_tokens, else unknown)", required=False),
    Field("prompts", "string", "the prompt set, a folder prompts/<set>/: paper or compact (absent: written before "
          "the setting existed, compact)", analysis=True, required=False),
    Field("on_mismatch", "string", "--on-mismatch: what enters episodic memory when a critique's assertion "
          "does not name the label the critic was shown: keep (flagged, as the paper), drop "
          "(memory/dropped.jsonl) or recritique (asked once more); absent in older logs: keep", analysis=True,
          required=False),
    Field("gate", "number|null", "--gate: only entries whose similarity to the question is at least this enter an "
          "episodic prompt; a prompt left with none is the memory-free one (zero_shot's; SEM_CRIT's for "
          "EP+SEM_CRIT); null (absent in older logs): no gate", analysis=True, required=False),
    Field("inject_budget", "integer|null", "--inject-budget: at most this many tokens of episodic examples per "
          "prompt, nearest first; null (absent in older logs): no limit", analysis=True, required=False),
    Field("retrieval", "string", "--retrieval: nearest (the K nearest entries) or contrast (pairs of a right and "
          "a wrong initial answer to similar questions); absent in older logs: nearest", analysis=True,
          required=False),
    Field("critic", "string", "--critic: what the critic saw of each train label: gold, noisy:R (a seeded fraction R "
          "flipped; noisy:0 is written gold) or self (none); absent in older logs: gold", analysis=True,
          required=False),
    Field("label_budget", "number|null", "--label-budget (with --critic self): the nested seeded fraction of train "
          "items whose gold label the critic saw; null: none (absent in older logs: null)", analysis=True,
          required=False),
    Field("reasoning_model", "boolean", "not written by the runner: a third party may declare the model a "
          "reasoning model (the analysis also detects reasoning_tokens > 0)", analysis=True, required=False),
)

DATASET = (
    Field("name", "string", "the dataset's name", analysis=True),
    Field("path", "string", "where it was read from"),
    Field("checksum", "string", "sha256 of its files", analysis=True),
    Field("kind", "string", "single (one pool) or preference (one pool per user)", analysis=True),
    Field("answer_space", "array", "the valid answers"),
    Field("users", "array", "the users (preference data)"),
    Field("n_train", "integer", "train items used"),
    Field("n_test", "integer", "test items used"),
)

KINDS = {"call": CALL, "prediction": PREDICTION, "memory_entry": MEMORY_ENTRY, "semantic": SEMANTIC,
         "manifest": MANIFEST, "config": CONFIG, "dataset": DATASET}
_NESTED = {("manifest", "config"): "config", ("manifest", "dataset"): "dataset"}


def fields(kind: str) -> tuple[Field, ...]:
    try:
        return KINDS[kind]
    except KeyError:
        raise ValueError(f"unknown record kind {kind!r}; known: {', '.join(KINDS)}") from None


def check(kind: str, record: dict) -> dict:
    """``record`` itself; ValueError when it lacks a required field or has an unknown one."""
    defined = fields(kind)
    names = {f.name for f in defined}
    missing = [f.name for f in defined if f.required and f.name not in record]
    unknown = sorted(set(record) - names)
    if missing or unknown:
        raise ValueError(f"{kind} record: " + "; ".join(
            part for part in (missing and f"missing {', '.join(missing)}",
                              unknown and f"unknown {', '.join(unknown)}") if part))
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
    schema = {"type": "object", "properties": props,
              "required": [f.name for f in fields(kind) if f.required], "additionalProperties": False}
    if nested:
        schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": f"critique {kind} record",
                  **schema}
    return schema


def markdown_table(kind: str) -> str:
    """The fields of ``kind`` as a Markdown table (docs/run-directory.md holds each one)."""
    rows = ["| field | type | required | analysis | meaning |", "|---|---|---|---|---|"]
    for f in fields(kind):
        rows.append(f"| `{f.name}` | {f.type} | {'yes' if f.required else 'no'} | "
                    f"{'yes' if f.analysis else ''} | {f.meaning} |")
    return "\n".join(rows)
