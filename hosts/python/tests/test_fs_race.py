"""The fs capability opens by handle, never check-then-open: a folder swapped for a symlink
while the host works through it never leads out of the root."""
from __future__ import annotations

import collections
import os
import subprocess
import sys
from pathlib import Path

import pytest

from self_evolve import fs as fs_module
from self_evolve.fs import FsCap
from self_evolve.types import USER_SKILLS, FsError

U = USER_SKILLS
SWAPPER = str(Path(__file__).resolve().parent / "support" / "swap_folder.py")
FILE = "a/b/c/SKILL.md"
ROUNDS = 1500


def contents(top) -> dict:
    """Every entry below `top`, with a file's bytes."""
    out = {}
    for folder, dirs, files in os.walk(top):
        for name in dirs + files:
            p = Path(folder) / name
            out[str(p.relative_to(top))] = p.read_bytes() if p.is_file() else None
    return out


def test_a_folder_swapped_for_a_symlink_mid_operation_never_leads_out_of_the_root(tmp_path):
    user, outside = tmp_path / "user", tmp_path / "outside"
    # Deep, so a host that checks each component by name before opening has a wide window.
    (user / "skill" / "a" / "b" / "c").mkdir(parents=True)
    (outside / "a" / "b" / "c").mkdir(parents=True)
    (user / "skill" / FILE).write_text("inside")
    (outside / FILE).write_text("OUTSIDE")
    (outside / "a" / "b" / "c" / "ONLY-OUTSIDE.md").write_text("OUTSIDE")
    before = contents(outside)
    cap = FsCap(user_skills=user)
    outcomes = collections.Counter()

    def attempt(what, fn, *args):
        """(True, result), or (False, None) with the refusal counted."""
        try:
            return True, fn(U, *args)
        except FsError as e:  # anything else is not typed, and fails the test
            outcomes[f"{what} {e.tag}"] += 1
            return False, None

    child = subprocess.Popen([sys.executable, SWAPPER, str(user / "skill"), str(outside), "60"], stdout=subprocess.PIPE)
    try:
        assert child.stdout.readline() == b"ready\n"
        for i in range(ROUNDS):
            ok, data = attempt("read", cap.read, f"skill/{FILE}")
            if ok:  # appended to, so "inside" repeated
                outcomes["read the outside" if b"OUTSIDE" in data else "read inside"] += 1
            ok, _ = attempt("write", cap.write, f"skill/{FILE}", b"inside", "truncate" if i % 2 else "append")
            outcomes["wrote"] += ok
            ok, listed = attempt("list", cap.list_dir, "skill/a/b/c")
            outcomes["listed the outside"] += ok and ("ONLY-OUTSIDE.md", "file") in listed
            ok, _ = attempt("stat", cap.stat, "skill/a/b/c/ONLY-OUTSIDE.md")
            outcomes["stat the outside"] += ok
    finally:
        child.kill()
        child.wait()
        cap.close()
    seen = dict(outcomes)
    for leak in ("read the outside", "listed the outside", "stat the outside"):
        assert outcomes[leak] == 0, seen
    assert contents(outside) == before, seen
    # The race really ran: some operations met the symlink and were refused at open time.
    assert outcomes["read symlink"] + outcomes["write symlink"] > 0, seen
    assert outcomes["read inside"] > 0 and outcomes["wrote"] > 0, seen


def test_the_capability_refuses_to_start_where_paths_cannot_be_opened_by_handle(monkeypatch):
    # Walking by names instead, the race above would lead out of the root.
    monkeypatch.setattr(fs_module, "_HAS_OPENAT", False)
    with pytest.raises(RuntimeError, match="needs openat"):
        FsCap()
