"""The package's layout: data flows one way (base -> datasets, llm -> engine -> runner ->
experiments -> learner, cli; the analysis reads run directories through base alone), with
no import cycle and no import from a lower layer to a higher one. Function-local imports
count. Inside the analysis its subpackages are layered the same way (reading, stats -> study ->
field -> memory -> the commands at its top). Also: no module over 400 lines."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Each layer may import its own modules and the layers of lower rank; layers of one rank
# do not import each other.
LAYERS = {
    "critique.base": 0,
    "critique.datasets": 1, "critique.llm": 1, "critique.analysis": 1,
    "critique.engine": 2,
    "critique.runner": 3,
    "critique.experiments": 4, "critique.learner_items": 4,  # what a Learner is given and gives back
    "critique.learner": 5, "critique.cli": 5,  # the learner's online step is the stream experiment's
    "critique": 6,  # the package itself: its public names, loaded on first use
}
# The analysis' subpackages, by the same rule: the reader of run directories and the statistics first, then the
# study's tables, the field's methods beside ours, the memory experiments' tables, and at the top the modules of
# critique.analysis itself (its commands: cli, analyse, export, plan, mlflow_log; synthetic).
ANALYSIS = {
    "critique.analysis.reading": 0, "critique.analysis.stats": 0,
    "critique.analysis.study": 1,
    "critique.analysis.field": 2,
    "critique.analysis.memory": 3,
    "critique.analysis": 4,
}
MAX_LINES = 400


def modules() -> dict[str, Path]:
    """Module name -> file, for the package and the analysis folder installed as critique.analysis."""
    found = {}
    for folder, package in ((ROOT / "critique", "critique"), (ROOT / "analysis", "critique.analysis")):
        for path in sorted(folder.rglob("*.py")):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join([package, *parts])] = path
    return found


def layer(module: str, layers: dict[str, int] = LAYERS) -> str:
    return max((name for name in layers if module == name or module.startswith(name + ".")), key=len)


def imports(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of the package that ``module`` imports, at any depth of its code."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([node.module] if node.module else []))
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != module:
                found.add(name)
    return found


def graph() -> dict[str, set[str]]:
    known = modules()
    return {m: imports(m, p, known) for m, p in known.items()}


def test_no_import_goes_up_or_sideways():
    wrong = []
    for module, targets in graph().items():
        mine = layer(module)
        for target in targets:
            theirs = layer(target)
            if theirs != mine and LAYERS[theirs] >= LAYERS[mine]:
                wrong.append(f"{module} ({mine}) imports {target} ({theirs})")
    assert not wrong, "\n".join(sorted(wrong))


def test_no_analysis_import_goes_up_or_sideways():
    """The analysis' subpackages import only those of lower rank: no cycle between them, and none imports the
    commands at the analysis' top."""
    wrong = []
    for module, targets in graph().items():
        if layer(module) != "critique.analysis":
            continue
        mine = layer(module, ANALYSIS)
        for target in targets:
            theirs = layer(target, ANALYSIS) if layer(target) == "critique.analysis" else None
            if theirs and theirs != mine and ANALYSIS[theirs] >= ANALYSIS[mine]:
                wrong.append(f"{module} ({mine}) imports {target} ({theirs})")
    assert not wrong, "\n".join(sorted(wrong))


def test_no_import_cycle():
    edges = graph()
    # a package's __init__ importing its own modules is how a package is made, not a cycle
    for module in edges:
        edges[module] = {t for t in edges[module] if not t.startswith(module + ".")}
    state: dict[str, int] = {}
    cycles = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(" -> ".join(path[path.index(nxt):] + [nxt]) if nxt in path else f"{node} -> {nxt}")
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module, [module])
    assert not cycles, "\n".join(cycles)


def test_the_checks_see_a_bad_import(tmp_path, monkeypatch):
    """The walker finds function-local imports: an upward one inside a function is caught."""
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from critique.cli import main\n    return main\n")
    known = modules()
    assert "critique.cli" in imports("critique.base.bad", bad, known)
    up = tmp_path / "up.py"
    up.write_text("def f():\n    from critique.analysis.memory import echo\n    return echo\n")
    found = imports("critique.analysis.reading.up", up, known)
    assert "critique.analysis.memory.echo" in found
    assert (layer("critique.analysis.reading.up", ANALYSIS), layer("critique.analysis.memory.echo", ANALYSIS)) == \
        ("critique.analysis.reading", "critique.analysis.memory")  # rank 0 importing rank 3: caught


@pytest.mark.parametrize("module", sorted(modules()))
def test_no_module_is_over_400_lines(module):
    lines = modules()[module].read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, f"{module}: {lines} lines"
