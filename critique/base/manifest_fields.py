"""The fields of a run's manifest.json, its ``config`` and its ``dataset`` (critique.base.records holds every
kind of record; these are the manifest's)."""

from __future__ import annotations

from critique.base.field import Field
from critique.base.offline_totals import FIELD

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
          "{name: verify, verifier, source, source_run_id} (critique verify: source is the run checked), "
          "{name: deinflate, mode, demote, verifier, seed, demoted, source, source_run_id, verify_run} "
          "(critique deinflate), {name: overturn} (critique probe overturn), {name: conditioning, lengths} (critique "
          "probe conditioning), {name: priors} (critique probe priors), "
          "{name: dose, values, irrelevant_dataset, irrelevant_memory: the sha256 of the irrelevant run's "
          "memory/episodic.jsonl} (critique probe dose), "
          "{name: stream, feedback, order, conflicts, start, rank, conflict_similarity, strategy} (critique stream); "
          "null for a plain run", analysis=True),
    Field("ablation", "object|null", "{name: k | parts | train_size | gate, value}, and for a gate threshold chosen "
          "from the train split (critique ablate gate --quantiles, a study's ablations.gate.quantiles) chosen: {split: "
          "train, quantile, questions, statistic}; null when none", analysis=True),
    Field("dataset", "object", "the data (table dataset below)", analysis=True),
    Field("templates", "object", "template file name -> sha256 of every prompt template of the run's set "
          "(config.prompts)", analysis=True),
    Field("versions", "object", "package name -> installed version (null when absent)"),
    Field("code", "object", "the code that ran it last: {version: critique's package version, commit: the git commit "
          "of its source tree (null outside a git checkout), dirty: the tree had uncommitted changes}",
          required=False),
    Field("command", "array|null", "the command line that opened the run last (argv, secrets redacted); null from "
          "Python (the Learner, a library call)", required=False),
    Field("folders", "object", "{cache, data}: the response and embedding cache folder and the dataset folder in "
          "use", required=False),
    Field("local_model", "object|null", "the embedded model's weights, prompt form (chat_template: gguf or "
          "completion) and bounds; null for other models"),
    Field("price", "object|null", "{input_per_million, output_per_million, source}: the dollars per million prompt "
          "and completion tokens the calls' cost_usd is computed at (source: --price, litellm's price table, or "
          "embedded: the in-process model, free); null when no price is known; absent in older logs",
          required=False, analysis=True),
    Field("learner", "boolean", "written by critique.Learner.fit: a fit's folder, not a study run (the tables leave "
          "it out)", required=False, analysis=True),
    Field("deployments", "array", "several endpoints: [{model, api_base}]", required=False),
    Field("routing_strategy", "string", "several endpoints: the router's strategy", required=False),
    Field("ep_label", "string", "what EP_LABEL shows as each example's label: gold (the gold label), noisy (the "
          "labels the critic was shown, a fraction flipped), believed (--critic self: the critic's believed answer; "
          "there is no label), budget (the gold label for the --label-budget's items, the believed answer for the "
          "others); absent in older logs: gold", analysis=True, required=False),
    Field("many_shot", "object", "a run with many_shot (critique.engine.many_shot): {order: the rule of the examples' "
          "order, prompt_limit: the tokens a prompt may hold (the window less the reply's room; null: the window is "
          "unknown, every example shown), pools: pool -> {examples: how many every test question of the pool is "
          "shown, labeled: its train items with a label to show, fitted_to: the test item whose prompt (the most "
          "tokens) the count was fitted to; null when nothing was counted}}; absent without many_shot",
          required=False),
    Field("method_versions", "object", "strategy -> the version of its memory method that made its answers "
          "(critique.engine.methods.version): a run is not resumed by another version of a method it has used; "
          "absent in older logs (every method at version 1)", required=False),
    Field("response_format", "object", "{asked, used, refused}: the form requests asked for JSON in (config."
          "response_format), the form they were sent in (auto: json_schema until a served model refused it; rewritten "
          "when the run completes) and form -> the refusal that made auto leave it; absent in older logs "
          "(json_schema)", required=False),
    Field("dropped_params", "object", "model -> the request parameters litellm drops for it because the provider "
          "does not support them as sent (drop_params; e.g. seed for anthropic, temperature 0 for o-series "
          "models), each deployment's model with several; [] when none; absent in older logs (not checked)",
          required=False),
    Field(FIELD, "object", "{calls_bytes, stages, models, repeated}: what calls.jsonl held of the offline stages "
          "(critique, recritique, summary) when the run last finished, calls_bytes its size then: stages is [{stage, "
          "calls, completion_calls, completion_tokens, prompt_calls, prompt_tokens, reasoning}] in the order first met "
          "(the answered calls, each request once; those that report a token count, and the sums; reasoning: one "
          "reported reasoning tokens), models the models they name, repeated the answered records of a request already "
          "counted (critique.base.offline_totals); the tables read them instead of calls.jsonl while it has that size; "
          "absent in older logs, while running, and after an unreadable line of calls.jsonl", required=False,
          analysis=True),
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
    Field("prompts", "string", "the prompt set, a folder prompts/<set>/: paper, compact or turns "
          "(absent: written before the setting existed, compact)", analysis=True, required=False),
    Field("on_mismatch", "string", "--on-mismatch: what enters episodic memory when a critique's assertion "
          "does not name the label the critic was shown: keep (flagged, as the paper), drop "
          "(memory/dropped.jsonl) or recritique (asked once more); absent in older logs: keep", analysis=True,
          required=False),
    Field("admission", "string", "--admission: which critiques may enter memory: all (every one that parsed) or "
          "instruction (only those whose reasons carry an instruction; the others in memory/rejected.jsonl); absent "
          "in older logs: all", analysis=True, required=False),
    Field("gate", "number|null", "--gate: only entries whose similarity to the question is at least this enter an "
          "episodic prompt; a prompt left with none is the memory-free one (zero_shot's; SEM_CRIT's for "
          "EP+SEM_CRIT); null (absent in older logs): no gate", analysis=True, required=False),
    Field("inject_budget", "integer|null", "--inject-budget: at most this many tokens of episodic examples per "
          "prompt, nearest first; null (absent in older logs): no limit", analysis=True, required=False),
    Field("retrieval", "string", "--retrieval: nearest (the K nearest entries) or contrast (pairs of a right and "
          "a wrong initial answer to similar questions); absent in older logs: nearest", analysis=True,
          required=False),
    Field("advice_sources", "string", "--advice-sources: where each line of semantic advice says it comes from: "
          "chunk (every critique of the summary call that wrote it) or cited (the critiques the summary named for "
          "it, checked; a line that names none falls back to its chunk); absent in older logs: chunk",
          analysis=True, required=False),
    Field("critic", "string", "--critic: what the critic saw of each train label: gold, noisy:R (a seeded fraction R "
          "flipped; noisy:0 is written gold) or self (none); absent in older logs: gold", analysis=True,
          required=False),
    Field("label_budget", "number|null", "--label-budget (with --critic self): the nested seeded fraction of train "
          "items whose gold label the critic saw; null: none (absent in older logs: null)", analysis=True,
          required=False),
    Field("train_budget", "integer|null", "--train-budget: the tokens (prompt + completion) each memory method's own "
          "offline stage (ACE, Dynamic Cheatsheet, ExpeL, DSPy's optimizers) may spend before it stops; null "
          "(absent in older logs): no limit", analysis=True, required=False),
    Field("price", "string|null", "--price IN,OUT: dollars per million prompt and completion tokens the user gave; "
          "null: litellm's price table (the manifest's price says which was used)", required=False),
    Field("response_format", "string", "--response-format: how requests ask for JSON (auto, json_schema, "
          "json_object, none; the manifest's response_format says the form sent); absent in older logs: auto "
          "(json_schema)", analysis=True, required=False),
    Field("example_order", "string", "--example-order: where an EP prompt puts its nearest retrieved example, "
          "nearest-first (the study's) or nearest-last; absent in older logs: nearest-first", analysis=True,
          required=False),
    Field("answer_by", "string", "--answer-by: generate (the model writes its answer), loglikelihood (the embedded "
          "model's best-scored option) or calibrated (those scores less a content-free prompt's); absent in older "
          "logs: generate", analysis=True, required=False),
    Field("method_settings", "string|null", "--method-settings: METHOD.KEY=VALUE,... sorted, the settings memory "
          "methods declare of their own (critique.engine.methods.Setting); null: every method at its defaults; "
          "absent in older logs: null", analysis=True, required=False),
    Field("max_cost", "number|null", "--max-cost: the dollars this run may spend (no call that could pass them is "
          "made); null: no cap of its own (a study's cap is the study's)", required=False),
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
    Field("train_kept", "string", "what --limit kept of train: all (no limit), first (the first N items) or twins (a "
          "control: the train twins of the test items kept); absent in older logs: first with a limit, else all",
          required=False),
)
