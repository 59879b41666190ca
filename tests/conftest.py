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
