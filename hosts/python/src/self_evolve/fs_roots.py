"""Where each named root of the fs capability lives, decided once (the Node host's fs-roots.js).

The user and state roots are the operator's configuration: resolved to their real paths when the
capability is made (a missing one when first created). A project skills folder came with a
repository: resolved once per session, and only mapped if its real path stays inside its
project, since a skills folder linked elsewhere would let a checked-out repository point the
plugin at any folder. Failures are raised as `FsError` or `OSError`; `fs.py` types the latter.
"""
from __future__ import annotations

import os
from typing import Callable, Dict, Mapping, Optional, Union

from .types import FsError, Root

#: What marks a project folder: the nearest ancestor of a skills folder holding one of these.
MARKERS = (".git", ".dsh")

PathLike = Union[str, "os.PathLike[str]"]


def _configured(path: Optional[PathLike]) -> Optional[str]:
    return os.path.expanduser(os.fspath(path)) if path else None


def _exists(path: str) -> bool:
    try:
        os.lstat(path)
        return True
    except OSError:
        return False


def _realpath(path: str) -> str:
    """The real path of an existing path; raises OSError (missing, dangling link, loop) like
    realpath(3). `os.path.realpath(strict=True)` would do, but needs Python 3.10."""
    os.stat(path)
    return os.path.realpath(path)


def real_of_prefix(path: str) -> str:
    """The real path of the longest existing prefix, with the missing rest appended."""
    missing = []
    at = os.path.abspath(path)
    while True:
        try:
            return os.path.join(_realpath(at), *reversed(missing))
        except FileNotFoundError:
            if at == "/":
                raise
        missing.append(os.path.basename(at))
        at = os.path.dirname(at)


def inside(child: str, parent: str) -> bool:
    return child == parent or child.startswith(parent if parent.endswith("/") else parent + "/")


def project_of(skills: str) -> str:
    """The project a skills folder belongs to: the nearest ancestor holding a marker, else its parent."""
    parent = os.path.dirname(skills)
    at = parent
    while True:
        if any(_exists(os.path.join(at, m)) for m in MARKERS):
            return at
        if at == "/":
            return parent
        at = os.path.dirname(at)


class _Fixed:
    """A user or state root: as configured, and its real path once it exists."""

    def __init__(self, configured: str):
        self.configured = configured
        self.real: Optional[str] = None
        try:
            if _exists(configured):
                self.real = _realpath(configured)
        except OSError:
            pass  # a dangling link, say: resolved (or refused with a typed error) when first used


class Roots:
    def __init__(self, *, user_skills: Optional[PathLike], state: Optional[PathLike],
                 projects: Optional[Mapping[str, PathLike]], default_project: Optional[PathLike],
                 warn: Callable[[str], None]):
        self._warn = warn
        self._fixed: Dict[str, _Fixed] = {}
        for tag, configured in (("user-skills", _configured(user_skills)), ("state", _configured(state))):
            if configured:
                self._fixed[tag] = _Fixed(configured)
        # A dict keyed by the session id as given: any string is a session, `__proto__` included.
        self._projects = {str(k): _configured(v) for k, v in (projects or {}).items()}
        self._default_project = _configured(default_project)
        self._sessions: Dict[str, Optional[str]] = {}  # session -> real path, or None when unmapped
        self._warned: set = set()

    def real(self, root: Root, create: bool) -> str:
        """The real path of a mapped root; `create` makes a missing user or state root first."""
        if root.tag == "project-skills":
            real = self._project(root.session)
            if not real:
                raise FsError("not-permitted")
            return real
        slot = self._fixed.get(root.tag)
        if slot is None:
            raise FsError("not-permitted")
        if slot.real is None:
            if create:
                os.makedirs(slot.configured, exist_ok=True)
            if _exists(slot.configured):
                slot.real = _realpath(slot.configured)
            else:
                raise FsError("not-found")
        return slot.real

    def mapped(self, root: Root) -> bool:
        if root.tag == "project-skills":
            return bool(self._project(root.session))
        return root.tag in self._fixed

    def describe(self) -> dict:
        """The real paths of the user and state roots (None: not mapped, or not created yet)."""

        def one(tag: str) -> Optional[str]:
            try:
                return self.real(Root(tag), False)
            except (FsError, OSError):
                return None

        return {"user_skills": one("user-skills"), "state": one("state")}

    def _project(self, session: Optional[str]) -> Optional[str]:
        if session not in self._sessions:
            self._sessions[session] = self._resolve_project(session)
        return self._sessions[session]

    def _resolve_project(self, session: Optional[str]) -> Optional[str]:
        configured = self._projects.get(session)
        if configured is None:
            configured = self._default_project
        if not configured:
            return None
        skills = os.path.abspath(configured)
        try:
            real = real_of_prefix(skills)
            project_real = real_of_prefix(project_of(skills))
        except OSError as e:
            self._warn_once(f"project skills folder {configured} cannot be resolved ({e}); running without a project root")
            return None
        if not inside(real, project_real):
            self._warn_once(f"project skills folder {configured} resolves to {real}, outside the project "
                            f"{project_real}; running without a project root")
            return None
        # The user library is never also a project's (as in the Rust and Node hosts).
        user = self._fixed.get("user-skills")
        try:
            user_real = real_of_prefix(os.path.abspath(user.configured)) if user else None
        except OSError:
            user_real = None
        if user_real and (inside(real, user_real) or inside(user_real, real)):
            self._warn_once(f"project skills folder {configured} is the user skills folder (or holds it, or lies "
                            f"inside it); running without a project root")
            return None
        return real

    def _warn_once(self, message: str) -> None:
        if message not in self._warned:
            self._warned.add(message)
            self._warn(message)
