"""The shipped logs as the README's figures are computed from them: the JSON of `critique tables logs`,
of `critique tables logs --inference` and of `critique audit logs --data datasets`, each read once per
test session (tests that quote the README use these fixtures through conftest.py)."""

import json
import re
from pathlib import Path

from critique.cli import main

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "logs"


def readme() -> str:
    """The README with its line breaks folded, as quoted sentences are written."""
    return re.sub(r"\s+", " ", (ROOT / "README.md").read_text(encoding="utf-8"))


def command_json(folder: Path, args: list[str]) -> dict:
    """The JSON a `critique` command writes with `--format json -o FILE`."""
    out = folder / "out.json"
    assert main([*args, "--format", "json", "-o", str(out)]) in (0, 1)
    return json.loads(out.read_text(encoding="utf-8"))


def pct(value: float) -> str:
    """A percentage as the README writes it: 25.2%."""
    return f"{value:.1f}%"


def listed(values: list[str]) -> str:
    """"a, b and c", as the README lists figures."""
    return ", ".join(values[:-1]) + " and " + values[-1]
