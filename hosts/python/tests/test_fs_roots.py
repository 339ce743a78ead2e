"""Where the fs capability's roots are: user and state roots fixed to their real paths when it
is made, project roots once per session and only inside their project, a root folder deleted
since it was opened found again, a state root that is a file answered with typed errors."""
from __future__ import annotations

import os
import shutil

import pytest

from conftest import refused

from self_evolve.fs import FsCap
from self_evolve.types import STATE, USER_SKILLS, FsError, project_skills

U, S = USER_SKILLS, STATE


def tree(top) -> list:
    return sorted(os.path.relpath(os.path.join(d, n), top) for d, dirs, files in os.walk(top) for n in dirs + files)


def test_user_and_state_roots_are_their_real_paths_fixed_when_the_capability_is_made(tmp_path):
    (tmp_path / "real-user").mkdir()
    (tmp_path / "other").mkdir()
    os.symlink(tmp_path / "real-user", tmp_path / "user-link")
    cap = FsCap(user_skills=tmp_path / "user-link", state=tmp_path / "state")
    real_user = os.path.realpath(tmp_path / "real-user")
    assert cap.describe_roots() == {"user_skills": real_user, "state": None}
    # The configured link now points elsewhere: the root stays where it was resolved.
    os.unlink(tmp_path / "user-link")
    os.symlink(tmp_path / "other", tmp_path / "user-link")
    cap.write(U, "a/SKILL.md", b"here", "create-new")
    assert (tmp_path / "real-user" / "a" / "SKILL.md").read_text() == "here"
    assert tree(tmp_path / "other") == []
    # A missing root is resolved when first created.
    cap.write(S, "ledger.json", b"{}", "create-new")
    assert cap.describe_roots() == {"user_skills": real_user, "state": os.path.realpath(tmp_path / "state")}
    cap.close()


def test_a_root_folder_deleted_since_it_was_opened_is_opened_again(tmp_path):
    cap = FsCap(user_skills=tmp_path / "user")
    cap.write(U, "a.md", b"a", "create-new")
    shutil.rmtree(tmp_path / "user")
    assert cap.list_dir(U, "") == []
    cap.write(U, "b.md", b"b", "create-new")
    assert os.listdir(tmp_path / "user") == ["b.md"]
    assert cap.read(U, "b.md") == b"b"
    cap.close()


def test_a_project_skills_folder_linked_outside_its_project_is_not_mapped_with_one_warning(tmp_path):
    proj, outside, good = tmp_path / "proj", tmp_path / "outside", tmp_path / "good"
    (proj / ".git").mkdir(parents=True)
    (proj / ".dsh").mkdir()
    (outside / "skills" / "x").mkdir(parents=True)
    (outside / "skills" / "x" / "SKILL.md").write_text("outside")
    os.symlink(outside / "skills", proj / ".dsh" / "skills")
    (good / ".dsh").mkdir(parents=True)
    before = tree(tmp_path)
    warnings = []
    configured = str(proj / ".dsh" / "skills")
    # s3 has the same folder as s1: the same sentence is logged once.
    cap = FsCap(projects={"s1": configured, "s2": good / ".dsh" / "skills", "s3": configured},
                on_warn=warnings.append)
    for session in ("s1", "s3"):
        assert cap.has_root(project_skills(session)) is False
        refused("not-permitted", cap.read, project_skills(session), "x/SKILL.md")
        refused("not-permitted", cap.write, project_skills(session), "x/SKILL.md", b"w", "truncate")
        refused("not-permitted", cap.list_dir, project_skills(session), "")
    assert tree(tmp_path) == before
    assert (outside / "skills" / "x" / "SKILL.md").read_text() == "outside"
    assert warnings == [f"project skills folder {configured} resolves to {os.path.realpath(outside / 'skills')}, "
                        f"outside the project {os.path.realpath(proj)}; running without a project root"]
    # A skills folder not made yet is mapped, and made inside its project on the first write.
    assert cap.has_root(project_skills("s2")) is True
    cap.write(project_skills("s2"), "y/SKILL.md", b"in", "create-new")
    assert (good / ".dsh" / "skills" / "y" / "SKILL.md").read_text() == "in"
    # Resolved once: the folder swapped for a link to the outside later leads nowhere new. The
    # open root folder moved with its rename, so the write lands there.
    os.rename(good / ".dsh" / "skills", good / ".dsh" / "moved")
    os.symlink(outside / "skills", good / ".dsh" / "skills")
    cap.write(project_skills("s2"), "x/SKILL.md", b"w", "truncate")
    assert (good / ".dsh" / "moved" / "x" / "SKILL.md").read_text() == "w"
    assert (outside / "skills" / "x" / "SKILL.md").read_text() == "outside"
    assert len(warnings) == 1
    # A capability made after the swap refuses that folder.
    later = FsCap(projects={"s2": good / ".dsh" / "skills"}, on_warn=warnings.append)
    assert later.has_root(project_skills("s2")) is False
    assert len(warnings) == 2 and "outside the project" in warnings[1]
    cap.close()


def test_the_default_project_serves_every_session_without_its_own(tmp_path):
    (tmp_path / "p" / ".git").mkdir(parents=True)
    (tmp_path / "q" / ".dsh").mkdir(parents=True)
    cap = FsCap(projects={"mine": tmp_path / "q" / ".dsh" / "skills"}, default_project=tmp_path / "p" / "skills")
    for session in ("any", "", "other one"):
        cap.write(project_skills(session), f"{session or 'empty'}.md", b"x", "create-new")
    cap.write(project_skills("mine"), "mine.md", b"x", "create-new")
    assert sorted(os.listdir(tmp_path / "p" / "skills")) == ["any.md", "empty.md", "other one.md"]
    assert os.listdir(tmp_path / "q" / ".dsh" / "skills") == ["mine.md"]
    cap.close()


def test_the_user_library_is_never_also_a_project(tmp_path):
    home = tmp_path / "home"
    user = home / ".dsh" / "skills"
    user.mkdir(parents=True)
    warnings = []
    cap = FsCap(user_skills=user, projects={"same": user, "around": home / ".dsh", "inside": user / "x"},
                on_warn=warnings.append)
    for session in ("same", "around", "inside"):
        assert not cap.has_root(project_skills(session)), session
        refused("not-permitted", cap.write, project_skills(session), "a.md", b"x", "create-new")
    assert not (user / "a.md").exists() and not (home / ".dsh" / "a.md").exists()
    assert any("is the user skills folder" in w for w in warnings), warnings
    cap.close()


def test_project_maps_are_keyed_by_any_session_id_proto_and_constructor_included(tmp_path):
    (tmp_path / "p" / ".git").mkdir(parents=True)
    cap = FsCap(projects={"__proto__": str(tmp_path / "p" / "skills")})
    assert cap.has_root(project_skills("__proto__")) is True
    cap.write(project_skills("__proto__"), "a.md", b"x", "create-new")
    assert (tmp_path / "p" / "skills" / "a.md").exists()
    for session in ("constructor", "toString", "hasOwnProperty", "__class__", "__dict__", "get", "keys"):
        assert cap.has_root(project_skills(session)) is False, session
        refused("not-permitted", cap.read, project_skills(session), "a.md")
    cap.close()


def test_a_state_root_that_is_a_regular_file_answers_every_operation_with_a_typed_error(tmp_path):
    state = tmp_path / "state"
    state.write_text("not a folder")
    cap = FsCap(state=state)
    calls = {
        "read": (cap.read, "a.json"),
        "write": (cap.write, "a.json", b"{}", "truncate"),
        "write in a folder": (cap.write, "d/a.json", b"{}", "create-new"),
        "rename": (cap.rename, "a.json", "b.json"),
        "remove-file": (cap.remove_file, "a.json"),
        "remove-dir": (cap.remove_dir, "d"),
        "create-dir-all": (cap.create_dir_all, "d/e"),
        "list-dir": (cap.list_dir, ""),
        "list-dir d": (cap.list_dir, "d"),
        "stat": (cap.stat, ""),
        "stat a": (cap.stat, "a.json"),
    }
    for what, (fn, *args) in calls.items():
        with pytest.raises(FsError) as info:
            fn(S, *args)
        assert info.value.tag == "wrong-kind", f"{what}: {info.value}"
    assert [e.tag for e in cap.stat_many(S, ["a.json", ""])] == ["wrong-kind", "wrong-kind"]
    assert state.read_text() == "not a folder"
    assert os.listdir(tmp_path) == ["state"]
    cap.close()


def test_roots_accept_a_home_relative_path(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    cap = FsCap(user_skills="~/skills")
    cap.write(U, "a.md", b"x", "create-new")
    assert (tmp_path / "skills" / "a.md").read_bytes() == b"x"
    assert cap.describe_roots()["user_skills"] == os.path.realpath(tmp_path / "skills")
    cap.close()
