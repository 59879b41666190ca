"""The README's shipped streams (critique stream --arms on mcr-gen and pref-gen) hold the figures that
`critique tables logs --format json` computes: the arms' accuracies and the write-back loop's numbers are rebuilt
here from the stream table and found in the README, so a change to the logs or the analysis that moves one
fails until the README says the new one."""

from critique.analysis.render import cell
from critique.analysis.online import FRACTIONS
from shipped import ROOT

DATASETS = ("mcr-gen", "pref-gen")
ARMS = (("memory off", "none", "empty"), ("frozen train memory", "none", "train"), ("online gold", "gold", "train"),
        ("online self", "self", "train"))
LOOP = ("written", "leniency", "leniency_low", "leniency_high", "s", "trusted_wrong", "kappa", "kappa_within",
        "attractor", "corrupted")


def _row(rows: list[dict], dataset: str, feedback: str, start: str) -> dict:
    found = [r for r in rows if r["dataset"] == dataset and r["feedback"] == feedback and r["start"] == start
             and not r["demote"] and r["conflicts"] == "append" and not r["refresh"] and not r["disable"]]
    assert len(found) == 1, (dataset, feedback, start, len(found))
    assert found[0]["status"] == "complete" and found[0]["steps"] == found[0]["of"] == 250
    return found[0]


def arms_table(rows: list[dict]) -> str:
    """The README's table of the arms' accuracies (%), one row per dataset."""
    lines = ["| dataset | " + " | ".join(name for name, _, _ in ARMS) + " |", "|---" * (len(ARMS) + 1) + "|"]
    for dataset in DATASETS:
        cells = [cell("accuracy", _row(rows, dataset, f, s)["accuracy"]) for _, f, s in ARMS]
        lines.append(f"| {dataset} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def loop_table(rows: list[dict]) -> str:
    """The README's table of the write-back loop of the online arms."""
    lines = ["| dataset | arm | notes | leniency [95%] | s | shown trusted but wrong | kappa | kappa within "
             "| predicted attractor | reached |", "|---" * 10 + "|"]
    for dataset in DATASETS:
        for name, feedback, start in ARMS[2:]:
            r = _row(rows, dataset, feedback, start)
            f = {k: cell(k, r[k], formats=FRACTIONS) for k in LOOP}
            lines.append(f"| {dataset} | {name} | {f['written']} | {f['leniency']} [{f['leniency_low']}, "
                         f"{f['leniency_high']}] | {f['s']} | {f['trusted_wrong']} | {f['kappa']} | "
                         f"{f['kappa_within']} | {f['attractor']} | {f['corrupted']} |")
    return "\n".join(lines)


def test_the_arms_table(shipped_tables):
    assert arms_table(shipped_tables["stream"]) in (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_loop_table(shipped_tables):
    assert loop_table(shipped_tables["stream"]) in (ROOT / "README.md").read_text(encoding="utf-8")
