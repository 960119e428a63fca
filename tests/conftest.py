"""Shared fixtures. Tests never reach the network: models load from installed packages."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from judge_server import KEY_ENV, JudgeServer, judge_server

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
os.environ["COLUMNS"] = "200"  # rich tables in CLI output are not truncated

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
# `make test` installs BFCL's own package here, without its dependencies
BENCH_DEPS = Path(__file__).resolve().parents[1] / ".bench-deps"


@pytest.fixture(scope="session", autouse=True)
def _cache_folder(tmp_path_factory: pytest.TempPathFactory) -> None:
    """agentgauge's caches (the models' prices) in a folder of the session, not the user's,
    for this process and the commands it starts."""
    os.environ["AGENTGAUGE_CACHE_DIR"] = str(tmp_path_factory.mktemp("agentgauge-cache"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` beside the checkout (PeerRead and BFCL)."""
    if not SHARED_DATA.is_dir():
        pytest.fail(f"real data not found at {SHARED_DATA}; the checkout needs ../shared beside it")
    return SHARED_DATA


@pytest.fixture(scope="session")
def bfcl_eval() -> None:
    """BFCL's own package (its simulated APIs and checkers) importable, from ``.bench-deps``
    where ``make test`` installs it; the test is skipped without it."""
    if BENCH_DEPS.is_dir() and str(BENCH_DEPS) not in sys.path:
        sys.path.append(str(BENCH_DEPS))
    pytest.importorskip(
        "bfcl_eval", reason="bfcl-eval is not installed (make test installs it into .bench-deps)"
    )


@pytest.fixture
def server() -> Iterator[JudgeServer]:
    """A fake judge on 127.0.0.1 (``judge_server.py``) for the test's duration."""
    with judge_server() as state:
        yield state


@pytest.fixture
def fresh_judges(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The test key in the judge's key variable, and no verdict or output mode remembered
    from another test."""
    from agentgauge.judges import client as judge_client

    monkeypatch.setenv(KEY_ENV, "sk-test-0123456789")
    judge_client._MEMO.clear()
    judge_client._MODES_SEEN.clear()
    yield
    judge_client._MEMO.clear()
    judge_client._MODES_SEEN.clear()
