"""The fs capability's paths, with no component loaded: malformed paths refused before anything
is opened, symlinks refused anywhere on a path, and the ordinary operations (write modes,
rename, remove, listing, stat) on what is left. Every refusal is checked for its error and for
a disk left as it was."""
from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from conftest import snapshot, refused

from self_evolve.fs import FsCap, validate
from self_evolve.types import STATE, USER_SKILLS, FileStat, FsError, Root, project_skills

U, S = USER_SKILLS, STATE


@pytest.fixture
def world(tmp_path):
    user, outside = tmp_path / "user", tmp_path / "outside"
    user.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("do not read")
    cap = FsCap(user_skills=user, state=tmp_path / "state")
    yield SimpleNamespace(base=tmp_path, user=user, outside=outside, cap=cap)
    cap.close()


MALFORMED = [
    "/etc/passwd", "../outside/secret.txt", "a/../../outside", "a//b", "./a", "a/.", "a/", "..",
    "a\\b", "a\x00b", "a\nb", "a\x1fb", "a\x7fb",
    "é" * 128,  # 128 characters, 256 bytes: components are counted in UTF-8 bytes
    "a" * 256,
    "/".join(["a"] * 2049),  # 4097 characters
    "a\x85b", "a\x9b31mb",  # C1 controls (NEL, CSI), refused as Rust's char::is_control refuses them
    "/".join(["é" * 127] * 17),  # 2175 characters but 4334 bytes: the whole path counts bytes
    "a\udcffb",  # a lone surrogate: no UTF-8 name stands for it
]


@pytest.mark.parametrize("path", MALFORMED + [""], ids=repr)
def test_malformed_paths_are_refused_for_every_operation_and_nothing_is_created(world, path):
    before = snapshot(world.base)
    cap = world.cap
    refused("invalid-path", cap.read, U, path)
    for mode in ("create-new", "truncate", "append"):
        refused("invalid-path", cap.write, U, path, b"x", mode)
        refused("invalid-path", cap.write, S, path, b"x", mode)
    (world.user / "ok.md").write_text("ok")
    refused("invalid-path", cap.rename, U, "ok.md", path)
    refused("invalid-path", cap.rename, U, path, "ok.md")
    refused("invalid-path", cap.remove_file, U, path)
    refused("invalid-path", cap.remove_dir, U, path)
    refused("invalid-path", cap.create_dir_all, U, path)
    refused("invalid-path", cap.create_dir_all, S, path)
    if path != "":  # "" is the root itself for list-dir and stat
        refused("invalid-path", cap.list_dir, U, path)
        refused("invalid-path", cap.stat, U, path)
        assert [e.tag for e in cap.stat_many(U, [path])] == ["invalid-path"]
    (world.user / "ok.md").unlink()
    assert snapshot(world.base) == before
    assert cap.writes == 0 and cap.renames == 0, "refused before the counters"


def test_validate_counts_bytes_per_component_and_per_path():
    for good in ["a", "a/b/c.md", "é" * 127 + "a", "a" * 255, "/".join(["a" * 255] * 16), "x/" * 2047 + "xy", "/".join(["é" * 127] * 16),
                 ".hidden", "a..b", "...", "space d/tab-free", "😀/ｚ"]:
        validate(good)
    for bad in MALFORMED + ["", 7, None, b"a"]:
        with pytest.raises(FsError) as info:
            validate(bad)
        assert info.value.tag == "invalid-path", repr(bad)


def test_symlinks_are_refused_anywhere_on_the_path_and_the_outside_is_untouched(world):
    cap, user, outside = world.cap, world.user, world.outside
    os.symlink(outside, user / "escape")
    os.symlink(outside / "secret.txt", user / "link.md")
    os.symlink(outside / "new.txt", user / "dangling.md")
    (user / "a" / "b").mkdir(parents=True)
    os.symlink(outside, user / "a" / "b" / "deep")
    before = snapshot(world.base)
    for p in ["escape/secret.txt", "link.md", "a/b/deep/secret.txt", "dangling.md"]:
        refused("symlink", cap.read, U, p)
        for mode in ("create-new", "truncate", "append"):
            refused("symlink", cap.write, U, p, b"x", mode)
    refused("symlink", cap.write, U, "escape/new.txt", b"x", "create-new")
    refused("symlink", cap.write, U, "a/b/deep/c/new.txt", b"x", "truncate")
    refused("symlink", cap.create_dir_all, U, "escape/deep")
    refused("symlink", cap.create_dir_all, U, "a/b/deep")
    refused("symlink", cap.list_dir, U, "escape")
    refused("symlink", cap.list_dir, U, "a/b/deep")
    refused("symlink", cap.stat, U, "escape/secret.txt")
    assert snapshot(world.base) == before
    # rename(2) and unlink(2) would act on the link itself; refused all the same, as by the Rust host.
    (user / "plain.md").write_text("plain")
    before = snapshot(world.base)
    refused("symlink", cap.rename, U, "link.md", "moved.md")
    refused("symlink", cap.rename, U, "plain.md", "link.md")
    refused("symlink", cap.rename, U, "plain.md", "escape/plain.md")
    refused("symlink", cap.remove_file, U, "link.md")
    refused("symlink", cap.remove_dir, U, "escape")
    refused("symlink", cap.remove_file, U, "escape/secret.txt")
    assert cap.stat(U, "link.md").kind == "symlink"
    assert cap.stat(U, "escape").kind == "symlink"
    assert ("escape", "symlink") in cap.list_dir(U, "")
    assert cap.list_dir(U, "a/b") == [("deep", "symlink")]
    assert snapshot(world.base) == before
    assert (outside / "secret.txt").read_text() == "do not read"


def test_write_modes_rename_listing_and_unmapped_roots(world):
    cap = world.cap
    assert cap.list_dir(S, "") == []
    assert not (world.base / "state").exists(), "listing a root does not create it"
    cap.write(S, "a/b.txt", b"one", "create-new")
    before = snapshot(world.base)
    refused("already-exists", cap.write, S, "a/b.txt", b"", "create-new")
    assert snapshot(world.base) == before
    cap.write(S, "a/b.txt", b"+", "append")
    assert cap.read(S, "a/b.txt") == b"one+"
    cap.write(S, "a/b.txt", b"new", "truncate")
    assert cap.read(S, "a/b.txt") == b"new"
    cap.rename(S, "a/b.txt", "c/d.txt")
    refused("not-found", cap.read, S, "a/b.txt")
    assert cap.list_dir(S, "") == [("a", "dir"), ("c", "dir")]
    assert cap.read(S, "c/d.txt") == b"new"
    refused("not-permitted", cap.read, project_skills("s1"), "x.md")
    assert not (world.base / "x.md").exists()
    assert (cap.writes, cap.renames) == (4, 1)  # a refused write counts too


def test_rename_replaces_a_file_and_a_missing_source_creates_nothing(world):
    cap = world.cap
    cap.write(U, "from.md", b"from", "create-new")
    cap.write(U, "to.md", b"to", "create-new")
    cap.rename(U, "from.md", "to.md")
    assert cap.list_dir(U, "") == [("to.md", "file")]
    assert cap.read(U, "to.md") == b"from"
    before = snapshot(world.base)
    refused("not-found", cap.rename, U, "missing.md", "new/folder/x.md")
    refused("not-found", cap.rename, U, "missing/x.md", "y.md")
    assert snapshot(world.base) == before


def test_an_unmapped_errno_is_its_name_and_number_only(world):
    """As in Rust and Node: a folder renamed into its own subfolder (EINVAL) is `io` with the
    errno's name and number, not "[Errno 22] Invalid argument: b'a' -> b'c'"."""
    cap = world.cap
    cap.create_dir_all(S, "a/b")
    before = snapshot(world.base)
    assert refused("io", cap.rename, S, "a", "a/c").message == "EINVAL (os error 22)"
    assert refused("io", cap.rename, S, "a", "a/b/c").message == "EINVAL (os error 22)"
    assert snapshot(world.base) == before
    assert refused("io", cap.remove_dir, S, "a").message == "folder not empty"


def test_removal_and_the_wrong_kind_of_entry(world):
    cap = world.cap
    cap.write(U, "d/f.md", b"f", "create-new")
    cap.create_dir_all(U, "e/f/g")
    cap.create_dir_all(U, "e/f/g")  # already there: fine
    before = snapshot(world.base)
    refused("wrong-kind", cap.read, U, "d")
    refused("wrong-kind", cap.write, U, "d", b"x", "truncate")
    refused("wrong-kind", cap.write, U, "d/f.md/x", b"x", "create-new")
    refused("wrong-kind", cap.create_dir_all, U, "d/f.md")
    refused("wrong-kind", cap.create_dir_all, U, "d/f.md/x")
    refused("wrong-kind", cap.list_dir, U, "d/f.md")
    refused("wrong-kind", cap.remove_file, U, "d")
    refused("wrong-kind", cap.remove_dir, U, "d/f.md")
    error = refused("io", cap.remove_dir, U, "d")
    assert error.message == "folder not empty"
    refused("not-found", cap.remove_file, U, "d/missing.md")
    refused("not-found", cap.remove_dir, U, "missing")
    refused("not-found", cap.list_dir, U, "missing")
    refused("not-found", cap.read, U, "missing/x.md")
    refused("not-found", cap.stat, U, "missing/x.md")
    assert snapshot(world.base) == before
    cap.remove_file(U, "d/f.md")
    cap.remove_dir(U, "d")
    cap.remove_dir(U, "e/f/g")
    assert cap.list_dir(U, "") == [("e", "dir")]
    assert cap.list_dir(U, "e") == [("f", "dir")]


def test_listing_is_sorted_by_utf8_bytes_and_skips_names_that_are_not_utf8(world):
    # UTF-16 order (JavaScript's) would put the emoji before U+FF5A; UTF-8 byte order puts it after.
    names = ["b", "B", "é", "z", "~", "😀", "ｚ", "a.md"]
    for n in names:
        (world.user / n).write_text(n)
    (world.user / "sub").mkdir()
    os.symlink("b", world.user / "ln")
    with open(os.path.join(os.fsencode(world.user), b"\xff.md"), "w") as f:
        f.write("not UTF-8")
    expected = sorted([(n, "file") for n in names] + [("sub", "dir"), ("ln", "symlink")], key=lambda e: e[0].encode())
    assert [n for n, _ in expected][-3:] == ["é", "ｚ", "😀"]
    assert world.cap.list_dir(U, "") == expected


def test_stat_never_follows_links_and_stat_many_answers_each_path(world):
    cap = world.cap
    cap.write(U, "d/f.md", b"12345", "create-new")
    os.symlink("f.md", world.user / "d" / "ln")
    st = os.stat(world.user / "d" / "f.md")
    assert cap.stat(U, "d/f.md") == FileStat("file", 5, st.st_mtime_ns // 1_000_000)
    assert cap.stat(U, "d/ln") == FileStat("symlink", 4, os.lstat(world.user / "d" / "ln").st_mtime_ns // 1_000_000)
    assert cap.stat(U, "d").kind == "dir"
    root = cap.stat(U, "")
    assert (root.kind, root.size, root.modified_ms) == ("dir", 0, os.stat(world.user).st_mtime_ns // 1_000_000)
    assert isinstance(root.modified_ms, int)
    refused("not-found", cap.stat, S, "")
    many = cap.stat_many(U, ["d/f.md", "missing", "../x", "d/ln/x", ""])
    assert many[0] == cap.stat(U, "d/f.md")
    assert [e.tag for e in many[1:4]] == ["not-found", "invalid-path", "symlink"]
    assert many[4].kind == "dir"
    assert [e.tag for e in cap.stat_many(project_skills("nowhere"), ["a", ""])] == ["not-permitted"] * 2


def test_unmapped_roots_are_not_permitted_for_every_operation(tmp_path):
    cap = FsCap()
    for root in (U, S, project_skills("s1"), Root("elsewhere")):
        assert cap.has_root(root) is False
        refused("not-permitted", cap.read, root, "a.md")
        refused("not-permitted", cap.write, root, "a.md", b"x", "create-new")
        refused("not-permitted", cap.rename, root, "a.md", "b.md")
        refused("not-permitted", cap.remove_file, root, "a.md")
        refused("not-permitted", cap.remove_dir, root, "a")
        refused("not-permitted", cap.create_dir_all, root, "a")
        refused("not-permitted", cap.list_dir, root, "")
        refused("not-permitted", cap.stat, root, "")
    assert cap.describe_roots() == {"user_skills": None, "state": None}
    assert list(tmp_path.iterdir()) == []


def test_injected_faults_fail_the_nth_write_and_rename(tmp_path):
    cap = FsCap(state=tmp_path, faults={"fail_write_at": 2, "fail_rename_at": 1})
    cap.write(S, "a", b"1", "create-new")
    error = refused("io", cap.write, S, "b", b"2", "create-new")
    assert error.message == "injected fault"
    cap.write(S, "b", b"3", "create-new")
    assert refused("io", cap.rename, S, "a", "c").message == "injected fault"
    cap.rename(S, "a", "c")
    assert sorted(os.listdir(tmp_path)) == ["b", "c"]
    assert (cap.writes, cap.renames) == (3, 2)


def test_an_unknown_write_mode_is_refused_before_anything_is_opened(world):
    before = snapshot(world.base)
    assert refused("io", world.cap.write, U, "a/b.md", b"x", "overwrite").message == "unknown write mode 'overwrite'"
    assert snapshot(world.base) == before


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_only_the_roots_folders_stay_open(world):
    cap = world.cap
    cap.write(S, "x.md", b"x", "create-new")
    cap.list_dir(U, "")
    held = open_fds()
    os.symlink(world.outside, world.user / "escape")
    for _ in range(3):
        cap.write(U, "a/b/c.md", b"x", "truncate")
        cap.read(U, "a/b/c.md")
        cap.rename(U, "a/b/c.md", "a/b/d.md")
        cap.rename(U, "a/b/d.md", "a/b/c.md")
        cap.list_dir(U, "a/b")
        cap.stat_many(U, ["a/b/c.md", "a/missing/x", "escape/x", "a/b/c.md/x"])
        for fn, args in [(cap.read, ("escape/secret.txt",)), (cap.write, ("a/b/c.md/x", b"x", "create-new")),
                         (cap.create_dir_all, ("a/b/c.md",)), (cap.remove_dir, ("a",)), (cap.read, ("a",))]:
            with pytest.raises(FsError):
                fn(U, *args)
    assert open_fds() == held
    cap.close()
    assert open_fds() == held - 2
    assert cap.read(U, "a/b/c.md") == b"x", "a closed capability opens its roots again"
