"""Shared fixtures: the component is loaded from the checkout's dist/ (or $SELF_EVOLVE_WASM),
with a disk cache in a temporary folder per test session."""
from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from self_evolve import FsError

REPO = Path(__file__).resolve().parents[3]
CONFORMANCE = REPO / "tests" / "conformance"
SERVICES = ["tools", "commands", "system-prompt", "agents", "subagents"]


@pytest.fixture(scope="session", autouse=True)
def _cache_dir(tmp_path_factory: pytest.TempPathFactory) -> None:
    os.environ.setdefault("SELF_EVOLVE_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


def snapshot(top) -> dict:
    """Every entry below `top`: its type, size and link count, and a file's bytes or a link's
    target (a refusal must leave all of them). Folders' sizes vary by file system: left out."""
    out = {}
    for folder, dirs, files in os.walk(top):
        for name in dirs + files:
            p = os.path.join(folder, name)
            st = os.lstat(p)
            content = Path(p).read_bytes() if stat.S_ISREG(st.st_mode) else (
                os.readlink(p) if stat.S_ISLNK(st.st_mode) else None)
            size = None if stat.S_ISDIR(st.st_mode) else st.st_size
            out[os.path.relpath(p, top)] = (stat.S_IFMT(st.st_mode), size, st.st_nlink, content)
    return out


def refused(tag: str, fn, *args) -> FsError:
    with pytest.raises(FsError) as info:
        fn(*args)
    assert info.value.tag == tag, f"{fn.__name__}{args!r}: {info.value}"
    return info.value


def replay_scenario(scenario, home) -> list:
    """The decision lines of one conformance scenario replayed in `home`, with its scripted gate
    (`NAME.gate.json`) served on 127.0.0.1 when it has one."""
    from self_evolve.gate_server import serve_gate_replies
    from self_evolve.replay import read_events, replay

    gate_file = scenario.with_suffix(".gate.json")
    gate = serve_gate_replies(str(gate_file)) if gate_file.exists() else None
    try:
        return replay(read_events(str(scenario)), home=str(home), gate_url=gate.url if gate else None)
    finally:
        if gate:
            gate.stop()
