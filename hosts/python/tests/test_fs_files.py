"""What the fs capability will open: hard-linked files, special files (FIFOs, sockets, devices)
and oversized files, each decided on the open handle. Refusals change nothing."""
from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import snapshot, refused

import self_evolve
from self_evolve.fs import FsCap, read_bounded, to_fs_error
from self_evolve.types import STATE, USER_SKILLS, FsError, project_skills

U, S, P = USER_SKILLS, STATE, project_skills("s1")
SRC = str(Path(self_evolve.__file__).resolve().parents[1])


def test_hard_linked_files_are_never_written_and_never_read_from_a_skills_root(tmp_path):
    user, state, project, outside = (tmp_path / d for d in ("user", "state", "project", "outside"))
    skills = project / ".dsh" / "skills"
    for d in (user / "u", state, skills / "p", project / ".git", outside):
        d.mkdir(parents=True)
    (outside / "secret.txt").write_text("secret")
    for link in (user / "u" / "SKILL.md", skills / "p" / "SKILL.md", state / "ledger.json"):
        os.link(outside / "secret.txt", link)
    before = snapshot(tmp_path)
    warnings = []
    cap = FsCap(user_skills=user, state=state, projects={"s1": skills}, on_warn=warnings.append)
    for root, p in ((U, "u/SKILL.md"), (P, "p/SKILL.md"), (S, "ledger.json")):
        for mode in ("truncate", "append"):
            error = refused("not-permitted", cap.write, root, p, b"overwritten", mode)
            assert error.message is None
        refused("already-exists", cap.write, root, p, b"overwritten", "create-new")
    refused("not-permitted", cap.read, U, "u/SKILL.md")
    refused("not-permitted", cap.read, P, "p/SKILL.md")
    # The state root is the plugin's own: a link there is read (never written).
    assert cap.read(S, "ledger.json") == b"secret"
    assert snapshot(tmp_path) == before
    assert warnings == [
        "user-skills/u/SKILL.md has 4 hard links; refused",
        "user-skills/u/SKILL.md has 4 hard links; refused",
        "project-skills(s1)/p/SKILL.md has 4 hard links; refused",
        "project-skills(s1)/p/SKILL.md has 4 hard links; refused",
        "state/ledger.json has 4 hard links; refused",
        "state/ledger.json has 4 hard links; refused",
        "user-skills/u/SKILL.md has 4 hard links; refused",
        "project-skills(s1)/p/SKILL.md has 4 hard links; refused",
    ]
    cap.close()


# In a child process with a deadline: a host that opens a FIFO without O_NONBLOCK blocks for ever.
PROBE = """
import json, os, socket, sys
from self_evolve.fs import FsCap
from self_evolve.types import USER_SKILLS as U, FsError
user, names = sys.argv[1], json.loads(sys.argv[2])
os.chdir(user)  # bound by a relative name: a socket's path is limited to ~107 bytes
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind("sock")
server.listen()
cap = FsCap(user_skills=user)

def tag(fn, *args):
    try:
        fn(*args)
        return "ok"
    except FsError as e:
        return e.tag

out = {"list": cap.list_dir(U, ""), "kinds": {}}
for n in names:
    out[n] = [tag(cap.read, U, n)] + [tag(cap.write, U, n, b"x", m) for m in ("truncate", "append", "create-new")]
    out["kinds"][n] = cap.stat(U, n).kind
server.close()
print(json.dumps(out))
"""


def test_fifos_sockets_and_devices_are_wrong_kind_never_read_written_or_waited_on(tmp_path):
    user = tmp_path / "user"
    user.mkdir()
    os.mkfifo(user / "fifo")
    names = ["fifo", "sock"]
    try:
        os.mknod(user / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
        names.append("null")
    except PermissionError:
        pass  # no CAP_MKNOD here: no device in this test (the symlink test below still has one)
    (user / "plain.md").write_text("plain")
    with open(os.path.join(os.fsencode(user), b"\xff.md"), "w") as f:  # skipped by list-dir
        f.write("not UTF-8")
    env = {**os.environ, "PYTHONPATH": SRC}
    try:
        run = subprocess.run([sys.executable, "-c", PROBE, str(user), json.dumps(names)], env=env,
                             capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail("the probe hung on a special file")
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    for n in names:
        assert out[n] == ["wrong-kind", "wrong-kind", "wrong-kind", "already-exists"], n
        assert out["kinds"][n] == "file", n  # the WIT enum has file|dir|symlink only
    assert out["list"] == [[n, "file"] for n in sorted(names + ["plain.md"])]
    assert (user / "plain.md").read_text() == "plain"
    assert sorted(os.listdir(os.fsencode(user))) == sorted([n.encode() for n in names] + [b"plain.md", b"\xff.md"])
    assert all(os.lstat(user / n).st_size == 0 for n in names)


def test_a_device_behind_a_symlink_is_refused_as_a_symlink(tmp_path):
    os.symlink("/dev/null", tmp_path / "null")
    os.symlink("/dev", tmp_path / "dev")
    cap = FsCap(user_skills=tmp_path)
    for p in ("null", "dev/null"):
        refused("symlink", cap.read, U, p)
        for mode in ("truncate", "append", "create-new"):
            refused("symlink", cap.write, U, p, b"x", mode)
    assert cap.stat(U, "null").kind == "symlink"
    cap.close()


def test_reads_are_bounded_a_file_over_max_read_bytes_is_refused_by_its_size(tmp_path):
    (tmp_path / "ten.md").write_text("0123456789")
    (tmp_path / "eleven.md").write_text("0123456789A")
    cap = FsCap(user_skills=tmp_path, max_read_bytes=10)
    assert cap.read(U, "ten.md") == b"0123456789"
    error = refused("io", cap.read, U, "eleven.md")
    assert error.message == "too-large: eleven.md is 11 bytes; the host reads at most 10"
    # The default bound is 16 MiB (sparse files: nothing is really written).
    (tmp_path / "big").mkdir()
    for name, size in (("at.md", 16777216), ("over.md", 16777217)):
        with open(tmp_path / "big" / name, "wb") as f:
            f.truncate(size)
    plain = FsCap(user_skills=tmp_path)
    assert len(plain.read(U, "big/at.md")) == 16777216
    error = refused("io", plain.read, U, "big/over.md")
    assert error.message == "too-large: big/over.md is 16777217 bytes; the host reads at most 16777216"
    cap.close()
    plain.close()


def test_a_file_that_grows_while_read_is_cut_one_byte_past_the_bound():
    # A pipe stands for a file whose size (0 here) was taken before it grew: the read stops at
    # limit + 1 bytes and leaves the rest unread.
    r, w = os.pipe()
    try:
        os.write(w, b"x" * 100)
        with pytest.raises(FsError) as info:
            read_bounded(r, "grew.md", 0, 10)
        assert info.value.message == "too-large: grew.md is 11 bytes; the host reads at most 10"
        assert len(os.read(r, 1000)) == 89
        # Refused by its size before any byte is read.
        os.write(w, b"y" * 5)
        with pytest.raises(FsError):
            read_bounded(r, "big.md", 11, 10)
        assert os.read(r, 1000) == b"y" * 5
        os.write(w, b"z" * 10)
        os.close(w)
        w = -1
        assert read_bounded(r, "exact.md", 3, 10) == b"z" * 10
    finally:
        os.close(r)
        if w != -1:
            os.close(w)


@pytest.mark.parametrize(
    "code, tag, val",
    [
        # As the Rust host's `errno` (host-test/src/caps/fs/open.rs), errno for errno.
        (errno.EROFS, "not-permitted", None),
        (errno.ENAMETOOLONG, "invalid-path", None),
        (errno.EACCES, "not-permitted", None),
        (errno.EPERM, "not-permitted", None),
        (errno.ENOENT, "not-found", None),
        (errno.EEXIST, "already-exists", None),
        (errno.ENOSPC, "no-space", None),
        (errno.EDQUOT, "no-space", None),
        (errno.ENOTDIR, "wrong-kind", None),
        (errno.EISDIR, "wrong-kind", None),
        (errno.ENXIO, "wrong-kind", None),
        (errno.ELOOP, "symlink", None),
        (errno.ENOTEMPTY, "io", "folder not empty"),
    ],
)
def test_errno_maps_to_the_fs_error_the_rust_host_gives(code, tag, val):
    e = to_fs_error(OSError(code, os.strerror(code)))
    assert (e.tag, e.message) == (tag, val)


def test_an_unmapped_errno_is_io():
    assert to_fs_error(OSError(errno.EIO, "I/O error")).tag == "io"
