"""The conformance suite, Python side: every scenario in tests/conformance/ replayed through the
same dist/self-evolve.wasm must print exactly the `.expected` lines the Rust host prints."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CONFORMANCE, REPO, replay_scenario

SCENARIOS = sorted(CONFORMANCE.glob("*.jsonl"))


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """`python -m self_evolve ARGS` with the package these tests import (installed or from src/)."""
    import self_evolve

    env = dict(os.environ, PYTHONPATH=str(Path(self_evolve.__file__).parents[1]))
    return subprocess.run([sys.executable, "-m", "self_evolve", *args], capture_output=True, text=True,
                          timeout=120, cwd=REPO, env=env)


def test_the_suite_holds_the_scenario_families() -> None:
    assert len(SCENARIOS) >= 4, SCENARIOS


def _expected(scenario):
    return scenario.with_suffix(".expected").read_text(encoding="utf-8").splitlines()


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda p: p.name)
def test_conformance(scenario, tmp_path) -> None:
    lines = replay_scenario(scenario, tmp_path)
    expected = [line for line in _expected(scenario) if line]
    assert len(lines) == len(expected), "line count"
    for i, (got, want) in enumerate(zip(lines, expected), 1):
        assert got == want, f"line {i}"
    # Byte for byte: the printed stream (a line and a newline each) is the `.expected` file.
    printed = "".join(f"{line}\n" for line in lines).encode("utf-8")
    assert printed == scenario.with_suffix(".expected").read_bytes()


def test_the_command_line_prints_the_same_lines(tmp_path) -> None:
    scenario = CONFORMANCE / "skill-writes.jsonl"
    run = run_cli("replay", str(scenario), "--home", str(tmp_path))
    assert run.returncode == 0, run.stderr
    assert run.stdout.encode("utf-8") == scenario.with_suffix(".expected").read_bytes()


def test_a_bad_replay_is_named_by_its_line_and_runs_nothing(tmp_path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type":"user","t":0,"session":"s","text":"hi"}\n{"type":"user","t":-1}\n', encoding="utf-8")
    home = tmp_path / "home"
    run = run_cli("replay", str(bad), "--home", str(home))
    assert run.returncode == 1
    assert f"{bad}:2: not a replay event" in run.stderr
    assert run.stdout == ""
    assert not home.exists()
