"""What a stream is (critique.experiments.stream.loop): its feedback modes and options, the manifest's ``probe`` that
records them and the run directory's name. No heavy import: the command line reads it to build its options."""

from __future__ import annotations

from dataclasses import dataclass

from pathlib import Path

from critique.base.errors import UserError
from critique.base.vocab import EP_CRIT, EP_SEM_CRIT, REORDER, STREAM, STREAM_CRITIQUE  # noqa: F401  (re-exported)

FEEDBACKS = ("gold", "noisy:R", "self", "none", "delayed:D")
CONFLICTS = ("append", "revise")
STARTS = ("train", "empty")
RANKS = ("similarity", "verdict")
STREAM_VERIFY = "stream_verify"  # the stage of a de-inflation arm's verifier calls
STREAM_DISABLE = "stream_disable"  # the stage of verification by disabling: a wrong answer re-asked without a note
RANDOM = "random"
DEMOTE = (REORDER, RANDOM)  # who demotes new notes: the reorder verifier, or its budget-matched random control
CONFLICT_SIMILARITY = 0.9  # --conflict-similarity: a retrieved note this close to the question can be contradicted
RANK_DEPTH = 4  # --rank verdict ranks the nearest RANK_DEPTH x K notes
# The arms of a comparison on one stream (critique stream --arms): (name, feedback, start, demote); the random
# control demotes as many notes as the verifier arm before it did.
ARMS = (("memory off", "none", "empty", None), ("frozen train memory", "none", "train", None),
        ("online gold", "gold", "train", None), ("online self", "self", "train", None),
        ("online self, de-inflated", "self", "train", REORDER), ("its random control", "self", "train", RANDOM))


@dataclass(frozen=True)
class Feedback:
    mode: str  # gold, noisy, self, none, delayed
    rate: float = 0.0  # noisy: the share of labels flipped
    delay: int = 0  # delayed: steps until gold feedback arrives

    @property
    def labelled(self) -> bool:
        return self.mode in ("gold", "noisy", "delayed")

    def __str__(self) -> str:
        return {"noisy": f"noisy:{self.rate:g}", "delayed": f"delayed:{self.delay}"}.get(self.mode, self.mode)


def parse_feedback(text: str) -> Feedback:
    """gold, noisy:R (R in [0, 1]), self, none or delayed:D (D >= 0 whole steps); ValueError otherwise."""
    text = str(text).strip()
    if text in ("gold", "self", "none"):
        return Feedback(text)
    name, _, value = text.partition(":")
    try:
        if name == "noisy" and 0.0 <= float(value) <= 1.0:
            return Feedback("noisy", rate=float(value))
        if name == "delayed" and int(value) >= 0:
            return Feedback("delayed", delay=int(value)) if int(value) else Feedback("gold")
    except ValueError:
        pass
    raise ValueError(f"--feedback must be one of {', '.join(FEEDBACKS)}, not {text!r}")


def stream_probe(feedback: str, order: int = 0, conflicts: str = "append", start: str = "train",
                 rank: str = "similarity", conflict_similarity: float = CONFLICT_SIMILARITY,
                 demote: str | None = None, demote_count: int | None = None, disable: bool = False,
                 refresh_every: int | None = None) -> dict:
    """The manifest's ``probe`` of a stream (checked: UserError naming the bad option). ``demote``: reorder (each
    new note is checked by the reorder verifier before it is trusted; a flagged one is marked doubtful) or
    random (``demote_count`` new notes, chosen by a seeded rank of their items, are marked doubtful: the
    verifier arm's budget-matched control). ``disable``: verification by disabling (labelled feedback only).
    ``refresh_every``: the stream keeps a semantic memory, refreshed every N steps, and answers with EP+SEM_CRIT
    (critique.experiments.stream.advice)."""
    for option, value, names in (("--conflicts", conflicts, CONFLICTS), ("--start", start, STARTS),
                                 ("--rank", rank, RANKS), ("--demote", demote or REORDER, DEMOTE)):
        if value not in names:
            raise UserError(f"{option} must be one of {', '.join(names)}, not {value!r}")
    if not -1.0 <= conflict_similarity <= 1.0:
        raise UserError(f"--conflict-similarity must be a cosine similarity in [-1, 1], not {conflict_similarity}")
    if (demote == RANDOM) != (demote_count is not None) or (demote_count is not None and demote_count < 0):
        raise UserError("--demote random needs --demote-count N >= 0 (the number the verifier arm demoted), and "
                        "only it")
    try:
        parsed = parse_feedback(feedback)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if demote and parsed.mode == "none":
        raise UserError("--demote needs notes to demote: not with --feedback none")
    if disable and not parsed.labelled:
        raise UserError("--disable-test needs labelled feedback (gold, noisy:R, delayed:D) to know an answer was wrong")
    probe = {"name": STREAM, "feedback": str(parsed), "order": int(order), "conflicts": conflicts, "start": start,
             "rank": rank, "conflict_similarity": float(conflict_similarity), "strategy": EP_CRIT}
    if demote:
        probe.update(demote=demote, demote_count=demote_count)
    if disable:
        probe["disable"] = True
    if refresh_every is not None:
        if refresh_every < 1:
            raise UserError(f"--refresh-every must be at least 1 step, not {refresh_every}")
        probe.update(refresh_every=int(refresh_every), strategy=EP_SEM_CRIT)
    return probe


def stream_suffix(probe: dict) -> str:
    """The run directory's suffix: stream-<feedback>[-<start>][-<conflicts>][-rank-<rank>][-order-<seed>]
    [-deinflate-<reorder|randomN>][-disable][-refresh-<N>]."""
    parts = ["stream", probe["feedback"].replace(":", "_")]
    parts += [probe["start"]] if probe["start"] != "train" else []
    parts += [probe["conflicts"]] if probe["conflicts"] != "append" else []
    parts += [f"rank-{probe['rank']}"] if probe["rank"] != "similarity" else []
    parts += [f"order-{probe['order']}"] if probe["order"] else []
    if probe.get("demote") == RANDOM:
        parts += [f"deinflate-random{probe['demote_count']}"]
    elif probe.get("demote"):
        parts += [f"deinflate-{probe['demote']}"]
    parts += ["disable"] if probe.get("disable") else []
    parts += [f"refresh-{probe['refresh_every']}"] if probe.get("refresh_every") else []
    return "-".join(parts)


def arm_probes(order: int = 0, conflicts: str = "append", rank: str = "similarity",
               conflict_similarity: float = CONFLICT_SIMILARITY, demote_count: int = 0) -> list[tuple[str, dict]]:
    """(name, probe) of each arm of one comparison (ARMS), in order; the random control's ``demote_count`` is the
    verifier arm's, known only once that arm has run (``demoted``): the one given stands in for it until then."""
    return [(name, stream_probe(feedback, order, conflicts, start, rank, conflict_similarity, demote,
                                demote_count if demote == RANDOM else None))
            for name, feedback, start, demote in ARMS]


def demoted(run: Path) -> int:
    """How many notes a de-inflation arm demoted (memory/notes.jsonl): its random control's budget."""
    from critique.experiments.source_run import SourceRun

    return sum(v["why"].startswith("demoted") for v in SourceRun(run).notes())
