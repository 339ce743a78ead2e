"""The WIT shapes as ordinary Python: dataclasses for records, strings for enums, exceptions
for the error variants. Only `_adapter.py` knows how wasmtime-py spells them."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

#: `fs-error` cases; only `io` carries a message.
FS_ERROR_TAGS = frozenset(
    ["not-found", "already-exists", "not-permitted", "symlink", "invalid-path", "no-space", "wrong-kind", "io"]
)
#: `http-error` cases; only `network` carries a message.
HTTP_ERROR_TAGS = frozenset(["timeout", "denied", "no-credential", "network"])
ENTRY_KINDS = ("file", "dir", "symlink")
WRITE_MODES = ("create-new", "truncate", "append")
LOG_LEVELS = ("debug", "info", "warn", "error")
TURN_STATUSES = ("completed", "aborted", "failed")
ACTIVATION_STATUSES = ("completed", "failed", "aborted", "timed-out")
U64_MAX = (1 << 64) - 1


class FsError(Exception):
    """The WIT `fs-error`, raised by the fs capability. `tag` is one of FS_ERROR_TAGS."""

    def __init__(self, tag: str, message: Optional[str] = None):
        if tag not in FS_ERROR_TAGS:
            raise ValueError(f"not an fs-error case: {tag!r}")
        super().__init__(tag if message is None else f"{tag}: {message}")
        self.tag = tag
        self.message = message if tag == "io" else None


class HttpError(Exception):
    """The WIT `http-error`, raised by the http capability. `tag` is one of HTTP_ERROR_TAGS."""

    def __init__(self, tag: str, message: Optional[str] = None):
        if tag not in HTTP_ERROR_TAGS:
            raise ValueError(f"not an http-error case: {tag!r}")
        super().__init__(tag if message is None else f"{tag}: {message}")
        self.tag = tag
        self.message = message if tag == "network" else None


@dataclass(frozen=True)
class Root:
    """The WIT `fs.root`: `user-skills`, `project-skills(session)` or `state`."""

    tag: str
    session: Optional[str] = None

    def label(self) -> str:
        return f"project-skills({self.session})" if self.tag == "project-skills" else self.tag


USER_SKILLS = Root("user-skills")
STATE = Root("state")


def project_skills(session: str) -> Root:
    return Root("project-skills", session)


@dataclass(frozen=True)
class FileStat:
    kind: str  # one of ENTRY_KINDS
    size: int
    modified_ms: int


@dataclass
class HttpRequest:
    endpoint: str
    path: str
    headers: list  # of (name, value) tuples
    body: bytes
    timeout_ms: int


@dataclass
class HttpResponse:
    status: int
    body: bytes


@dataclass
class SubagentSpec:
    parent_session: str
    provider: str
    delivery: str
    prompt: str
    tools: list
    timeout_ms: int


@dataclass
class CallContext:
    session: str
    agent: str = "main"
    origin: str = "user"  # or "subagent"
    depth: int = 0
    cwd: str = ""


def user_context(session: str) -> CallContext:
    return CallContext(session=session)


@dataclass
class ToolSpec:
    name: str
    description: str
    parameters_schema: str


@dataclass
class Part:
    name: str
    state: str  # active | pending | disabled
    missing: list
    detail: str


@dataclass
class InitReport:
    version: str
    parts: list  # of Part
    warnings: list
    config_json: str


@dataclass
class ToolEvent:
    tool: str
    args_json: str
    ok: bool
    output: str = ""


@dataclass
class ActivationResult:
    id: str
    status: str  # one of ACTIVATION_STATUSES
    text: str


@dataclass
class ServedFile:
    path: str
    size: int
    sha256: str


@dataclass
class ServedSkill:
    name: str
    scope: str
    description: str
    frontmatter_json: str
    files: list  # of ServedFile


@dataclass
class CatalogPage:
    skills: list  # of ServedSkill
    next_offset: Optional[int]


@dataclass
class FileInput:
    path: str
    bytes: bytes


@dataclass
class SkillInput:
    folder: str
    skill_md: FileInput
    resources: list = field(default_factory=list)


@dataclass
class Finding:
    path: str
    line: int
    rule: str
    severity: str  # error | warning | advice
    message: str


@dataclass
class Independence:
    """The review loop's `independence`: `independent`, `self-authored` (the files this session
    edited) or `unverified` (why authorship could not be measured)."""

    tag: str = "independent"
    files: list = field(default_factory=list)
    reason: str = ""


@dataclass
class Document:
    path: str
    text: str


@dataclass
class CommandResult:
    name: str
    exit_code: int
    stderr_tail: str = ""


@dataclass
class ReviewRequest:
    """`review-loop.request`; see wit/plugin.wit for each field."""

    artifact: str
    mode: str = "code"
    artifact_sha: Optional[str] = None
    files: list = field(default_factory=list)
    documents: list = field(default_factory=list)  # of Document
    repo: str = ""
    branch: str = ""
    commit: Optional[str] = None
    uncommitted: bool = False
    max_iter: Optional[int] = None
    token_ceiling: Optional[int] = None
    independence: Independence = field(default_factory=Independence)
    self_review_ack: Optional[str] = None
    auto: bool = False
    commands: Optional[list] = None  # of CommandResult
    disabled_lenses: list = field(default_factory=list)
