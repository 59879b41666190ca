"""A memory method's settings of its own: each declared in the method's module (``settings``: a tuple of
``Setting``), given on the command line or in a study file as ``--method-settings METHOD.KEY=VALUE,...``
(critique.base.config: one setting of the run, part of its identity), checked here before the run opens, and read
by the method with ``value(run, method, key)``. A new setting is one line in its method's module."""

from __future__ import annotations

from dataclasses import dataclass

from critique.base.config import parse_method_settings
from critique.base.errors import UserError


@dataclass(frozen=True)
class Setting:
    """One setting a method declares: its ``key``, its ``default`` (whose type is the setting's: int, float or str),
    what it is (``help``) and its bounds (``low``, ``high``: inclusive; None: none)."""

    key: str
    default: int | float | str
    help: str
    low: float | None = None
    high: float | None = None

    def parse(self, text: str) -> int | float | str:
        """The value of ``text`` (ValueError saying what is wrong)."""
        kind = type(self.default)
        try:
            value = kind(text)
        except ValueError:
            raise ValueError(f"must be {kind.__name__ if kind is not str else 'text'}, not {text!r}") from None
        if self.low is not None and value < self.low:
            raise ValueError(f"must be at least {self.low:g}, not {value}")
        if self.high is not None and value > self.high:
            raise ValueError(f"must be at most {self.high:g}, not {value}")
        return value


def declared(found) -> dict[str, Setting]:
    """The settings method ``found`` declares, by key."""
    return {s.key: s for s in getattr(found, "settings", ()) or ()}


def check(config) -> None:
    """UserError naming the first setting of ``config.method_settings`` of a method that is not registered or does
    not declare it, or whose value its declaration refuses."""
    from critique.engine.methods import METHODS, load_installed

    load_installed()
    for (name, key), text in parse_method_settings(config.method_settings).items():
        where = f"--method-settings {name}.{key}"
        if name not in METHODS:
            raise UserError(f"{where}: no memory method is named {name!r} (choose from {', '.join(METHODS)})")
        known = declared(METHODS[name])
        if key not in known:
            keys = ", ".join(known) or "none"
            raise UserError(f"{where}: {name} has no setting {key!r} (its settings: {keys})")
        try:
            known[key].parse(text)
        except ValueError as exc:
            raise UserError(f"{where} {exc}") from None


def value(run, name: str, key: str):
    """Method ``name``'s setting ``key`` in ``run``: given with --method-settings, else its default."""
    from critique.engine.methods import method

    setting = declared(method(name))[key]
    given = parse_method_settings(run.config.method_settings).get((name, key))
    return setting.default if given is None else setting.parse(given)
