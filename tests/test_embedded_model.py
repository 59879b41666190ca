"""Integration: the embedded model (SmolLM2-135M through llama.cpp) on a few mcr-gen items."""

import pytest

from critique import logs
from critique.cli import main

pytest.importorskip("llama_cpp")


def test_embedded_model_runs_the_whole_pipeline(home, capsys):
    out = home / "run"
    argv = ["run", "--dataset", "mcr-gen", "--model", "local/smollm2", "--limit", "3", "--k", "2",
            "--strategies", "zero_shot,EP_CRIT,EP+SEM_CRIT", "--out", str(out), "--quiet", "--max-tokens", "256"]
    assert main(argv) == 0
    data = logs.read_run(out)
    calls = data["calls"]
    assert {c["stage"] for c in calls} == {"train_predict", "critique", "summary", "test"}
    assert all(c["error"] is None and c["prompt_tokens"] > 50 and c["completion_tokens"] > 0 for c in calls)
    tests = [p for p in data["predictions"] if p["stage"] == "test"]
    assert len(tests) == 9
    # JSON-schema-constrained output: the answer is always an option, never a parse failure
    assert all(not p["parse_failed"] and p["answer"] in {"1", "2", "3", "4"} for p in tests if not p["timeout"])
    assert "| EP+SEM_CRIT |" in capsys.readouterr().out
    assert main(argv) == 0  # rerun: all from the logs
    assert "0 LLM calls made" in capsys.readouterr().out
