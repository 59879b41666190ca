"""ExpeL's insights (LeapLabTHU/ExpeL, agent/expel.py: parse_rules, update_rules): a list of rules, each with an
importance count, changed by the operations an extraction reply names, ``AGREE|REMOVE|EDIT|ADD <n>: <rule>``.

As the reference implementation: an operation is kept when its rule is not empty, names no other operation and
ends with a full stop (a cut-off sentence is not a rule); an ADD whose text contains an existing rule is dropped;
an EDIT whose text contains an existing rule is an AGREE of that rule, and one without a valid number is dropped;
a REMOVE or an AGREE must quote an existing rule (matched by text, not by number). They apply in the order REMOVE,
AGREE, EDIT, ADD: an added rule starts at 2, AGREE and EDIT add 1, REMOVE takes 1 (3 once the list holds
MAX_RULES + 5 rules); a rule at 0 goes, and the list is kept by importance, highest first. Each rule keeps its
sources: the train items of the trials whose extraction added, edited or agreed with it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

MAX_RULES = 10  # the soft target of the paper's HotpotQA and ALFWorld runs (max_num_rules)
OPERATION = re.compile(r"((?:REMOVE|EDIT|ADD|AGREE)(?: \d+|)): (?:[a-zA-Z\s\d]+: |)(.*)")
ORDER = ("REMOVE", "AGREE", "EDIT", "ADD")


def parse(lines: list) -> list[tuple[str, int | None, str]]:
    """(operation, number or None, rule) of each operation a reply's lines name, as parse_rules keeps them."""
    found = []
    for line in lines:
        for match in OPERATION.finditer(str(line)):
            head, text = match.group(1).split(" "), match.group(2).strip()
            if not text or any(word in text for word in ("ADD", "AGREE", "EDIT")) or not text.endswith("."):
                continue
            found.append((head[0], int(head[1]) if len(head) > 1 else None, text))
    return found


@dataclass
class Insights:
    rules: list[dict] = field(default_factory=list)  # {id, text, importance, sources}
    counter: int = 0

    @property
    def full(self) -> bool:
        return len(self.rules) >= MAX_RULES

    def texts(self) -> list[str]:
        return [r["text"] for r in self.rules]

    def update(self, operations: list[tuple[str, int | None, str]], sources: list[str]) -> None:
        """Apply one extraction's operations (``parse``), each valid one at most once per rule."""
        checked = self._checked(operations)
        removal = 3 if len(self.rules) >= MAX_RULES + 5 else 1
        for kind in ORDER:
            for op, rule, text in checked:
                if op != kind:
                    continue
                if op == "ADD":
                    self.counter += 1
                    self.rules.append({"id": f"insight-{self.counter:04d}", "text": text, "importance": 2,
                                       "sources": list(sources)})
                elif op == "REMOVE":
                    rule["importance"] -= removal
                else:
                    rule["importance"] += 1
                    rule["sources"] = list(dict.fromkeys(rule["sources"] + list(sources)))
                    if op == "EDIT":
                        rule["text"] = text
        self.rules = sorted((r for r in self.rules if r["importance"] > 0), key=lambda r: -r["importance"])

    def _checked(self, operations) -> list[tuple[str, dict | None, str]]:
        """(operation, the rule it acts on, text) of the valid operations (update_rules's checks)."""
        checked, touched = [], set()
        for op, number, text in operations:
            quoted = next((r for r in self.rules if r["text"] in text), None)
            if op == "ADD":
                if quoted is None:
                    checked.append((op, None, text))
                continue
            if op == "EDIT" and quoted is not None:
                op = "AGREE"
            rule = quoted if op in ("AGREE", "REMOVE") else (
                self.rules[number - 1] if number is not None and 1 <= number <= len(self.rules) else None)
            if rule is not None and rule["id"] not in touched:
                touched.add(rule["id"])
                checked.append((op, rule, text))
        return checked

    def notes(self) -> list[dict]:
        return [dict(r) for r in self.rules]
