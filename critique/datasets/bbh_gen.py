"""BIG-Bench Hard's boolean_expressions task, generated in the set's own schema (lukaemon/bbh: rows of ``input`` and
``target`` strings), so that the bbh preset can import a slice the project may ship: the upstream rows may not be
committed here, generated ones may.

The task is generated upstream too. BIG-bench's boolean_expressions task enumerates every expression of a given
number of tokens over the constants True and False, the operators ``not``, ``and``, ``or`` and parentheses, and
asks for its value; BBH's rows are expressions of 8 such tokens, written ``<expression> is``, with the target
``True`` or ``False``. This module enumerates the same expressions, evaluates each with Python's precedence (not,
then and, then or: the rule the task states), and draws a seeded sample with as many True as False targets.

    python -m critique.datasets.bbh_gen rows.jsonl                # 100 rows, seed 0
    critique datasets import preset:bbh:boolean_expressions --from rows.jsonl

Same seed and size: byte-identical files.
"""

from __future__ import annotations

import ast
import json
import random
import sys
from functools import cache
from pathlib import Path

CONSTANTS = ("True", "False")
BINARY = ("and", "or")
TOKENS = 8  # the length of BBH's boolean_expressions rows, in tokens
ROWS = 100  # the preset cuts them in half: 50 train, 50 test


@cache
def expressions(length: int) -> tuple[str, ...]:
    """Every expression of exactly ``length`` tokens, sorted; the grammar is a constant, ``not E``, ``( E )`` or
    ``E op E``. One string can come from two parses; it is kept once."""
    if length < 1:
        return ()
    found = set(CONSTANTS) if length == 1 else set()
    found.update(f"not {e}" for e in expressions(length - 1))
    found.update(f"( {e} )" for e in expressions(length - 2))
    for left in range(1, length - 1):
        for op in BINARY:
            found.update(f"{a} {op} {b}" for a in expressions(left) for b in expressions(length - 1 - left))
    return tuple(sorted(found))


def truth(expression: str) -> bool:
    """The value of an expression of this grammar, read with Python's parser (its precedence is the task's):
    only constants, not, and, or are evaluated; anything else is refused."""
    return _value(ast.parse(expression, mode="eval").body)


def _value(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return not _value(node.operand)
    if isinstance(node, ast.BoolOp):
        values = [_value(v) for v in node.values]
        return all(values) if isinstance(node.op, ast.And) else any(values)
    raise ValueError(f"not a Boolean expression of True, False, not, and, or: {ast.dump(node)}")


def rows(n: int = ROWS, seed: int = 0) -> list[dict[str, str]]:
    """``n`` rows (even) in lukaemon/bbh's schema: half with target True, half False, each expression drawn
    without replacement by a seeded shuffle, the rows in that shuffled order."""
    if n < 2 or n % 2:
        raise ValueError(f"n must be even and at least 2 (half True, half False), not {n}")
    rng = random.Random(seed)
    pool = list(expressions(TOKENS))
    rng.shuffle(pool)
    picked = {True: [], False: []}
    for expression in pool:
        value = truth(expression)
        if len(picked[value]) < n // 2:
            picked[value].append(expression)
    if min(len(v) for v in picked.values()) < n // 2:
        raise ValueError(f"only {len(pool)} expressions of {TOKENS} tokens: too few for {n} balanced rows")
    chosen = picked[True] + picked[False]
    rng.shuffle(chosen)
    return [{"input": f"{e} is", "target": str(truth(e))} for e in chosen]


def write(path: Path, n: int = ROWS, seed: int = 0) -> Path:
    """The rows as JSON Lines at ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows(n, seed)), encoding="utf-8")
    return path


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m critique.datasets.bbh_gen OUT.jsonl", file=sys.stderr)
        return 2
    print(write(Path(argv[0])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
