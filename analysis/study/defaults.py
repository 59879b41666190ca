"""What a reader cannot see in the tables: the settings of the inputs that differ from their documented
default (critique.base.config.RunConfig, which docs/cli.md's option table quotes), and the length bounds the
embedded model's grammar held its replies to (critique.base.reply_bounds). Every output (`critique tables`
as markdown and JSON, `critique report`) states them once, from the experiments read (analysis.reading.read.describe).

An ablation's own setting (K of a K ablation) is left out for its runs: the ablation's table shows it.
"""

from __future__ import annotations

import json
from dataclasses import MISSING, fields

from critique.base.config import RunConfig
from critique.base.reply_bounds import FIELD_CHARS, MAX_ADVICE_LINES
from critique.analysis.reading.read import ABLATED
from critique.analysis.reading.run_settings import CONFIG_SETTINGS

TITLE = "Settings that differ from the documented defaults"


def documented() -> dict:
    """Setting -> its default (RunConfig's), for the settings that define an experiment."""
    return {f.name: f.default for f in fields(RunConfig) if f.name in CONFIG_SETTINGS and f.default is not MISSING}


def _shown(value) -> str:
    return "unset" if value is None else json.dumps(value) if isinstance(value, (list, dict)) else str(value)


def _runs(count: int, total: int) -> str:
    return f"all {total} run directories" if count == total and total > 1 else \
        f"{count} of {total} run director{'y' if total == 1 else 'ies'}"


def setting_lines(experiments: list[dict]) -> list[str]:
    """One line per setting some run directory has at another value than its default."""
    total, lines = sum(len(e["runs"]) for e in experiments), []
    for name, default in documented().items():
        found: dict[str, int] = {}
        for e in experiments:
            value = (e.get("settings") or {}).get(name, default)
            if ABLATED.get(e.get("ablation")) != name and value != default:
                found[_shown(value)] = found.get(_shown(value), 0) + len(e["runs"])
        if found:
            lines.append(f"{name} = " + "; ".join(f"{v} in {_runs(n, total)}" for v, n in found.items())
                         + f" (documented default: {_shown(default)})")
    return lines


def bound_lines(experiments: list[dict]) -> list[str]:
    """The embedded model's reply bounds, once per model file, where a run used it (manifest local_model)."""
    total, found = sum(len(e["runs"]) for e in experiments), {}
    for e in experiments:
        local = e.get("local_model")
        if isinstance(local, dict):
            key = json.dumps(local, sort_keys=True, default=str)
            found[key] = found.get(key, 0) + len(e["runs"])
    lines = []
    for key, count in found.items():
        local = json.loads(key)
        lines.append(
            f"the embedded model ({local.get('file')}, weights {local.get('weights')}, context {local.get('n_ctx')} "
            f"tokens; {_runs(count, total)}) was held by its grammar to short replies, which no other provider is: "
            f"critique fields of at most {FIELD_CHARS['correct_answer']} (correct_answer), "
            f"{FIELD_CHARS['local_reason']} (local_reason) and {FIELD_CHARS['global_reason']} (global_reason) "
            f"characters, advice of at most {MAX_ADVICE_LINES} lines of {FIELD_CHARS['advice_line']} characters, "
            f"any other free text at most {local.get('max_string_chars')} characters (the manifest's local_model "
            "records the last; the others are this version's schemas, critique.base.reply_bounds)")
    return lines


def lines(experiments: list[dict] | None) -> list[str]:
    """Everything of the inputs a reader would otherwise take for the documented default."""
    return setting_lines(experiments or []) + bound_lines(experiments or [])


def markdown(experiments: list[dict] | None) -> str | None:
    found = lines(experiments)
    if not found:
        return None
    return f"## {TITLE}\n\n" + "\n".join(f"- {line}" for line in found)
