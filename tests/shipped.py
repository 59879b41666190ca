"""The shipped logs as the documentation's figures are computed from them: the JSON of `critique tables logs`,
of `critique tables logs --inference` and of `critique audit logs --data datasets`, each read once per
test session (tests that quote docs/results.md, where the README's shipped findings moved, use these fixtures
through conftest.py), and the pages the figures are quoted in."""

import json
import re
from pathlib import Path

from critique.cli import main

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "logs"
MEMORY = ROOT / "logs-memory"  # the memory papers' experiments, beside the study's runs they compare with
QWEN = "local/qwen2.5-coder-0.5b"  # the embedded model that learns in context, as the tables name it
# what `make reproduce` reads for the memory papers' tables: logs-memory/ and the study's runs of the same model and
# data (the admit-all twins of the admitting runs)
MEMORY_INPUTS = [MEMORY, *(LOGS / f"{d}__local_qwen2.5-coder-0.5b" for d in ("mcr-gen", "pref-gen"))]
RESULTS = ROOT / "docs" / "results.md"  # the shipped findings, built from the logs (the README links it)
EXPERIMENTS = ROOT / "docs" / "experiments.md"  # the memory experiments' commands and what their tables hold
CLI = ROOT / "docs" / "cli.md"  # the commands and options


def page(path: Path) -> str:
    """A documentation page with its line breaks folded, as quoted sentences are written."""
    return re.sub(r"\s+", " ", path.read_text(encoding="utf-8"))


def results() -> str:
    """docs/results.md, folded: where the figures of the shipped logs are quoted."""
    return page(RESULTS)


def readme() -> str:
    """The README with its line breaks folded, as quoted sentences are written."""
    return page(ROOT / "README.md")


def command_json(folder: Path, args: list[str]) -> dict:
    """The JSON a `critique` command writes with `--format json -o FILE`."""
    out = folder / "out.json"
    assert main([*args, "--format", "json", "-o", str(out)]) in (0, 1)
    return json.loads(out.read_text(encoding="utf-8"))


def pct(value: float) -> str:
    """A percentage as the docs write it: 25.2%."""
    return f"{value:.1f}%"


def listed(values: list[str]) -> str:
    """"a, b and c", as the docs list figures."""
    return ", ".join(values[:-1]) + " and " + values[-1]
