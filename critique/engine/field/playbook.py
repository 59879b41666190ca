"""ACE's playbook (ace-agent/ace, playbook_utils.py): bullets in named sections, each with an id, helpful and
harmful counters and its content, rendered ``[sai-00001] helpful=2 harmful=0 :: content``. The curator's ADD
operations append bullets (the ids come from one counter across sections); the reflector's tags move the
counters; bullets whose contents are near-duplicates (cosine of the run's encoder at least DEDUP) are merged into
the first, its counters summed (the paper's non-LLM de-duplication, after each delta). Each bullet keeps its
sources: the train items whose reflection added it or was merged into it."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

SECTIONS = {"STRATEGIES & INSIGHTS": "sai", "FORMULAS & CALCULATIONS": "calc", "CODE SNIPPETS & TEMPLATES": "code",
            "COMMON MISTAKES TO AVOID": "err", "PROBLEM-SOLVING HEURISTICS": "prob",
            "CONTEXT CLUES & INDICATORS": "ctx", "OTHERS": "misc"}  # section -> the slug of its bullets' ids
OTHERS = "OTHERS"  # where an ADD to a section the playbook does not have goes
TAGS = ("helpful", "harmful", "neutral")
DEDUP = 0.90  # the reference implementation's de-duplication threshold (bulletpoint_analyzer_threshold)
CONTENT_CHARS = 400  # the longest bullet the embedded model's grammar lets the curator write


@dataclass
class Playbook:
    bullets: list[dict] = field(default_factory=list)  # {id, section, text, helpful, harmful, sources}
    counter: int = 0

    def render(self) -> str:
        """The playbook as a prompt shows it, section by section (an empty one says so)."""
        if not self.bullets:
            return "(empty)"
        lines = []
        for section in SECTIONS:
            mine = [b for b in self.bullets if b["section"] == section]
            if mine:
                lines += [f"## {section}"] + [f"[{b['id']}] helpful={b['helpful']} harmful={b['harmful']} :: "
                                              f"{b['text']}" for b in mine] + [""]
        return "\n".join(lines).strip()

    def used(self, ids) -> str:
        """The bullets the generator named (ACE's extract_playbook_bullets), or that it named none."""
        chosen = [b for b in self.bullets if b["id"] in set(ids)]
        if not chosen:
            return "(No bullets used by generator)"
        return "\n".join(f"[{b['id']}] helpful={b['helpful']} harmful={b['harmful']} :: {b['text']}" for b in chosen)

    def tag(self, tags: list) -> None:
        """The reflector's tags: helpful or harmful adds one to that counter of a bullet that exists."""
        by_id = {b["id"]: b for b in self.bullets}
        for entry in tags:
            if not isinstance(entry, dict) or entry.get("tag") not in ("helpful", "harmful"):
                continue
            bullet = by_id.get(str(entry.get("id", "")).strip("[] "))
            if bullet is not None:
                bullet[entry["tag"]] += 1

    def add(self, operations: list, source: str) -> list[dict]:
        """Apply the curator's ADD operations (other types are not applied, as in the reference implementation);
        returns the bullets added."""
        added = []
        for op in operations:
            if not isinstance(op, dict) or str(op.get("type", "")).upper() != "ADD":
                continue
            text = str(op.get("content", "")).strip()
            if not text:
                continue
            section = str(op.get("section", "")).strip().strip("#").strip().upper()
            section = section if section in SECTIONS else OTHERS
            self.counter += 1
            bullet = {"id": f"{SECTIONS[section]}-{self.counter:05d}", "section": section, "text": text,
                      "helpful": 0, "harmful": 0, "sources": [source]}
            self.bullets.append(bullet)
            added.append(bullet)
        return added

    def deduplicate(self, encode) -> list[str]:
        """Merge each bullet into the first earlier one whose content is at least DEDUP similar (``encode``: texts
        -> L2-normalised vectors); returns the ids merged away."""
        if len(self.bullets) < 2:
            return []
        vectors = np.asarray(encode([b["text"] for b in self.bullets]))
        similar = vectors @ vectors.T
        keep: list[int] = []
        gone: list[str] = []
        for n, bullet in enumerate(self.bullets):
            into = next((k for k in keep if similar[k, n] >= DEDUP), None)
            if into is None:
                keep.append(n)
                continue
            first = self.bullets[into]
            first["helpful"] += bullet["helpful"]
            first["harmful"] += bullet["harmful"]
            first["sources"] = list(dict.fromkeys(first["sources"] + bullet["sources"]))
            gone.append(bullet["id"])
        self.bullets = [self.bullets[k] for k in keep]
        return gone

    def stats(self) -> dict:
        """ACE's get_playbook_stats, shown to the curator."""
        b = self.bullets
        return {"total_bullets": len(b),
                "high_performing": sum(x["helpful"] > 5 and x["harmful"] < 2 for x in b),
                "problematic": sum(x["harmful"] >= x["helpful"] and x["harmful"] > 0 for x in b),
                "unused": sum(x["helpful"] == 0 and x["harmful"] == 0 for x in b),
                "by_section": {s: sum(x["section"] == s for x in b) for s in SECTIONS if any(x["section"] == s
                                                                                              for x in b)}}

    def notes(self) -> list[dict]:
        """The bullets as notes (critique.engine.field.memory)."""
        return [dict(b) for b in self.bullets]
