"""`critique methods`: every memory method a run can name in --strategies (the study's five, the project's own and
any an installed package registers), with its version, the train stages it reads, its hooks and its settings of its
own (--method-settings METHOD.KEY=VALUE). Reads the registry only; no call."""

from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser("methods", help="the memory methods --strategies takes, with their versions and settings")
    p.set_defaults(func=main)


def main(args) -> int:
    from critique.base.config import RunConfig
    from critique.engine.method_settings import declared
    from critique.engine.methods import HOOKS, METHODS, hook, load_installed, version

    load_installed()
    config = RunConfig(dataset="-", model="-")
    print("| method | version | train stages | hooks | settings (default) |")
    print("|---|---|---|---|---|")
    for name, found in METHODS.items():
        stages = ", ".join(sorted(found.needs(config))) or "none"
        hooks = ", ".join(h for h in HOOKS if hook(found, h)) or "none"
        settings = "; ".join(f"{name}.{s.key}={s.default}: {s.help}" for s in declared(found).values()) or "none"
        print(f"| {name} | {version(found)} | {stages} | {hooks} | {settings} |")
    return 0
