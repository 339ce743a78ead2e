"""Shared fixtures: the component is loaded from the checkout's dist/ (or $SELF_EVOLVE_WASM),
with a disk cache in a temporary folder per test session."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
CONFORMANCE = REPO / "tests" / "conformance"
SERVICES = ["tools", "commands", "system-prompt", "agents", "subagents"]


@pytest.fixture(scope="session", autouse=True)
def _cache_dir(tmp_path_factory: pytest.TempPathFactory) -> None:
    os.environ.setdefault("SELF_EVOLVE_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
