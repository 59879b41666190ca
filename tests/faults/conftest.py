"""Fixtures of the fault tests: a fault-injecting OpenAI-compatible server on 127.0.0.1, and
real `critique run` processes pointed at it through litellm (``openai/<name>`` + ``--api-base``)."""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass
from pathlib import Path

import pytest

from faults.harness import Launcher, fresh_cache
from faults.server import FaultServer

SECRET = "sk-faulttest-SECRET-7f3a9c2e5b1d4086"  # the fake API key every run gets in its environment
LIMIT = 8  # train and test items of every run (mcr-gen): 8 + 8 + 1 + 5 * 8 = 57 calls


@dataclass
class World:
    data: Path
    embeddings: Path
    launcher: Launcher


@pytest.fixture(scope="session")
def world(tmp_path_factory) -> World:
    """The warm parent process, mcr-gen built, and its questions embedded once for all tests."""
    root = tmp_path_factory.mktemp("faults")
    data, warm = root / "data", root / "warm-cache"
    launcher = Launcher({"OPENAI_API_KEY": SECRET, "CRITIQUE_DATA_DIR": str(data),
                         "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1",
                         "TOKENIZERS_PARALLELISM": "false"})
    pid = launcher.start(call="faults.harness:warm", args=[str(data), str(warm), LIMIT], logs_to=root / "warm")
    rc = launcher.wait(pid)
    assert rc == 0, (root / "warm.err").read_text()
    yield World(data, warm / "embeddings.sqlite", launcher)
    launcher.close()


@pytest.fixture
def server():
    with FaultServer() as s:
        yield s


class Runs:
    """`critique run` on mcr-gen against the server, as child processes of the warm parent."""

    def __init__(self, world: World, server: FaultServer, folder: Path):
        self.world, self.server, self.folder = world, server, folder
        self.count = 0
        self.pids: list[int] = []
        self.options = {"--limit": str(LIMIT), "--k": "3", "--concurrency": "4", "--timeout": "5", "--retries": "2"}

    def cache(self, name: str = "cache") -> Path:
        return fresh_cache(self.world.embeddings, self.folder / name)

    def argv(self, out: Path, *extra: str, cache: Path | None = None) -> list[str]:
        """The arguments of a run into `out`; its cache is `cache`, or the folder's shared one."""
        if cache is None:
            cache = self.folder / "cache"
            if not cache.exists():
                self.cache()
        given = dict(zip(extra[::2], extra[1::2]))
        argv = ["run", "--dataset", "mcr-gen", "--model", "openai/fault-model", "--api-base", self.server.url,
                "--out", str(out), "--cache-dir", str(cache), "--quiet"]
        for flag, value in {**self.options, **given}.items():
            argv += [flag] if value is None else [flag, value]
        return argv

    def start(self, out: Path, *extra: str, cache: Path | None = None) -> tuple[int, Path]:
        self.count += 1
        logs_to = self.folder / f"proc-{self.count}"
        pid = self.world.launcher.start(self.argv(out, *extra, cache=cache), logs_to)
        self.pids.append(pid)
        return pid, logs_to

    def end(self) -> None:
        """Kill what a failed test left running."""
        for pid in self.pids:
            if self.world.launcher.poll(pid) is None:
                os.kill(pid, signal.SIGKILL)
                self.world.launcher.wait(pid)

    def run(self, out: Path, *extra: str, cache: Path | None = None, timeout: float = 300) -> tuple[int, str, str]:
        """Run to the end: exit status, stdout, stderr."""
        pid, logs_to = self.start(out, *extra, cache=cache)
        rc = self.world.launcher.wait(pid, timeout)
        return rc, Path(str(logs_to) + ".out").read_text(), Path(str(logs_to) + ".err").read_text()


@pytest.fixture
def runs(world, server, tmp_path) -> Runs:
    runs = Runs(world, server, tmp_path)
    yield runs
    runs.end()
