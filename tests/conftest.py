"""Shared fixtures. Tests never reach the network: models load from installed packages."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
os.environ["COLUMNS"] = "200"  # rich tables in CLI output are not truncated

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` beside the checkout (PeerRead and BFCL)."""
    if not SHARED_DATA.is_dir():
        pytest.fail(f"real data not found at {SHARED_DATA}; the checkout needs ../shared beside it")
    return SHARED_DATA
