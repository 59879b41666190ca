import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
def home(tmp_path, monkeypatch):
    """Data and cache folders of one test."""
    monkeypatch.setenv("CRITIQUE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("CRITIQUE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


@pytest.fixture
def fake_llm():
    import fake_llm

    fake_llm.register()
    fake_llm.CALLS.clear()
    return fake_llm


@pytest.fixture(scope="session")
def shipped_tables(tmp_path_factory) -> dict:
    """`critique tables logs --format json`: the figures docs/results.md quotes."""
    import shipped

    return shipped.command_json(tmp_path_factory.mktemp("tables"), ["tables", str(shipped.LOGS)])


@pytest.fixture(scope="session")
def memory_tables(tmp_path_factory) -> dict:
    """`critique tables logs-memory logs/mcr-gen__local_qwen2.5-coder-0.5b logs/pref-gen__local_qwen2.5-coder-0.5b
    --format json`: the memory papers' experiments and the streams of the model that learns."""
    import shipped

    return shipped.command_json(tmp_path_factory.mktemp("memory"), ["tables", *map(str, shipped.MEMORY_INPUTS)])


@pytest.fixture(scope="session")
def shipped_inference(tmp_path_factory) -> dict:
    """`critique tables logs --inference --format json`."""
    import shipped

    return shipped.command_json(tmp_path_factory.mktemp("inference"), ["tables", str(shipped.LOGS), "--inference"])


@pytest.fixture(scope="session")
def shipped_audit(tmp_path_factory) -> dict:
    """`critique audit logs --data datasets --format json`."""
    import shipped

    return shipped.command_json(tmp_path_factory.mktemp("audit"),
                                ["audit", str(shipped.LOGS), "--data", str(shipped.ROOT / "datasets")])
