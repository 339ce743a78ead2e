"""Replays a recorded session (DESIGN.md "Replay format") through the component in Python, with
a manual clock and a scripted reviewer: the same semantics and decision lines as
`self-evolve replay --json` and the Node host's `self-evolve-node`."""
from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from .clock import ManualClock, saturating_add
from .host import Refused, load_plugin
from .lines import command_line, review_loop_refused_line, tool_line
from .subagent import Script, ScriptedProvider
from .types import CallContext, CommandResult, Document, Independence, ReviewRequest, ToolEvent, U64_MAX

EPOCH_MS = 1767225600000
# A replay is one process serving its sessions for its whole run: it holds them in memory
# ("session-owner"), each event made durable by one append to the session's journal.
SERVICES = ["tools", "commands", "system-prompt", "agents", "subagents", "session-owner", "session-batch"]
TYPES = frozenset(["config", "user", "assistant", "tool", "call", "turn-end", "reviewer", "command", "review-loop"])
#: The longest line a replay may hold (its config line is the largest legitimate one).
MAX_LINE_BYTES = 16 * 1024 * 1024
#: A replay is read whole (and checked) before it runs; this bounds what that may hold.
MAX_REPLAY_BYTES = 256 * 1024 * 1024
_CHUNK_BYTES = 64 * 1024
_NOT_AN_EVENT = 'not a replay event (see DESIGN.md, "Replay format")'


class ReplayError(Exception):
    """A replay file that cannot run, named by file and line."""


def read_lines(file: str, max_line: int = MAX_LINE_BYTES) -> Iterator[Tuple[int, bytes]]:
    """`(line number, bytes)` without the newline (nor a '\\r' before it), read in fixed chunks so
    that /dev/zero or an endless pipe cannot grow memory without bound."""
    with open(file, "rb", buffering=0) as f:
        parts: List[bytes] = []
        length = 0
        number = 1
        while True:
            chunk = f.read(_CHUNK_BYTES)
            if not chunk:
                break
            at = 0
            while at < len(chunk):
                nl = chunk.find(b"\n", at)
                end = len(chunk) if nl == -1 else nl
                if length + (end - at) > max_line:
                    raise ReplayError(f"{file}:{number}: a line longer than {max_line} bytes (is this the right file?)")
                parts.append(chunk[at:end])
                length += end - at
                if nl == -1:
                    break
                line = b"".join(parts)
                yield number, line[:-1] if line.endswith(b"\r") else line
                number += 1
                parts, length = [], 0
                at = end + 1
        if parts and length:
            yield number, b"".join(parts)


def _is_u64_number(n: Any) -> bool:
    # JSON numbers as the Rust host takes them: whole and 0..=u64::MAX; 2^64 stands for u64::MAX
    # (a JavaScript or float writer rounds it up), as the Node host accepts.
    if isinstance(n, bool):
        return False
    if isinstance(n, int):
        return 0 <= n <= U64_MAX + 1
    return isinstance(n, float) and math.isfinite(n) and n.is_integer() and 0 <= n <= 2.0 ** 64


def _reject_constant(name: str) -> Any:
    raise ValueError(name)


def read_events(file: str) -> List[dict]:
    """Reads and checks the whole file first: a bad line is reported with its number, before anything runs."""
    events: List[dict] = []
    total = 0
    for i, data in read_lines(file):
        total += len(data) + 1
        if total > MAX_REPLAY_BYTES:
            raise ReplayError(f"{file}:{i}: the replay passes {MAX_REPLAY_BYTES} bytes; split it")
        try:
            line = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ReplayError(f"{file}:{i}: not UTF-8 text") from None
        line = line.lstrip("\ufeff") if i == 1 else line
        if not line.strip():
            continue
        try:
            event = json.loads(line, parse_constant=_reject_constant)
        except (ValueError, RecursionError):
            raise ReplayError(f"{file}:{i}: {_NOT_AN_EVENT}") from None
        if (not isinstance(event, dict) or event.get("type") not in TYPES or not _is_u64_number(event.get("t"))
                or (event["type"] == "reviewer" and "delayMs" in event and not _is_u64_number(event["delayMs"]))):
            raise ReplayError(f"{file}:{i}: {_NOT_AN_EVENT}")
        if event["type"] == "config" and events:
            raise ReplayError(f"{file}:{i}: a config line may only come first")
        if events and event["t"] < events[-1]["t"]:
            raise ReplayError(f"{file}:{i}: t goes backwards")
        events.append(event)
    return events


def _ms(n: Any) -> int:
    return U64_MAX if n >= 2 ** 64 else int(n)


def _review_request(e: dict) -> ReviewRequest:
    ind = e.get("independence")
    independence = Independence()
    if isinstance(ind, dict) and isinstance(ind.get("selfAuthored"), list):
        independence = Independence("self-authored", files=list(ind["selfAuthored"]))
    elif isinstance(ind, dict) and isinstance(ind.get("unverified"), str):
        independence = Independence("unverified", reason=ind["unverified"])
    commands = e.get("commands")
    return ReviewRequest(
        mode=e.get("mode", "code"),
        artifact=e.get("artifact", ""),
        files=list(e.get("files", [])),
        documents=[Document(path=d["path"], text=d["text"]) for d in e.get("documents", [])],
        repo=e.get("repo", ""),
        branch=e.get("branch", ""),
        commit=e.get("commit"),
        uncommitted=bool(e.get("uncommitted", False)),
        max_iter=e.get("maxIter"),
        token_ceiling=e.get("tokenCeiling"),
        independence=independence,
        self_review_ack=e.get("ack"),
        auto=bool(e.get("auto", False)),
        commands=None if commands is None else [
            CommandResult(name=c["name"], exit_code=c["exitCode"], stderr_tail=c.get("stderrTail", "")) for c in commands],
        disabled_lenses=list(e.get("disabledLenses", [])),
    )


def _ctx(session: str, origin: str = "user", depth: int = 0) -> CallContext:
    return CallContext(session=session, origin="subagent" if origin == "subagent" else "user", depth=depth)


def _args(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def replay(events: List[dict], *, home: str, start_ms: Optional[int] = None, gate_url: Optional[str] = None,
           gate_key_env: Optional[str] = None, on_line: Optional[Callable[[str], None]] = None,
           wasm: Optional[str] = None) -> List[str]:
    """Runs `events` and returns the decision lines (also passed to `on_line` as they come)."""
    start = EPOCH_MS if start_ms is None else start_ms
    clock = ManualClock(start)
    provider = ScriptedProvider(clock)
    endpoints = {"gate": {"url": gate_url, "credential_env": gate_key_env}} if gate_url else {}
    plugin = load_plugin(
        fs={"user_skills": os.path.join(home, "skills"), "state": os.path.join(home, "self-evolve"),
            "default_project": os.path.join(home, "project", ".dsh", "skills")},
        endpoints=endpoints, clock=clock, provider=provider, log_level="warn", wasm=wasm)
    config = _args(events[0]["config"]) if events and events[0]["type"] == "config" else "{}"
    plugin.init(config, SERVICES)
    out: List[str] = []

    def emit(lines: List[str]) -> None:
        for line in lines:
            out.append(line)
            if on_line:
                on_line(line)

    # Whatever happened: the sessions held in memory (a batch keeps state ahead of its journals)
    # go back to the home before the instance does, as the Rust replay does. A run that failed
    # reports its own error, not the hand-back's.
    try:
        _run_events(plugin, events, start, clock, provider, emit)
    except BaseException:
        try:
            plugin.hand_back()
        except Exception:  # noqa: BLE001 - the run's error is the one to see
            pass
        raise
    plugin.hand_back()
    return out


def _run_events(plugin: Any, events: List[Dict[str, Any]], start: int, clock: Any, provider: Any,
                emit: Callable[[List[str]], None]) -> None:
    for e in events:
        clock.set(saturating_add(start, _ms(e["t"])))
        emit(plugin.tick())
        emit(plugin.pump_activations())
        session = e.get("session", "")
        ctx = _ctx(session)
        kind = e["type"]
        if kind == "user":
            emit(plugin.user_message(ctx, e["text"], e.get("human", True)))
        elif kind == "assistant":
            emit(plugin.assistant_message(ctx, e["text"]))
        elif kind == "tool":
            emit(plugin.tool_result(ctx, ToolEvent(tool=e["tool"], args_json=_args(e.get("args")),
                                                   ok=e.get("ok", True), output=e.get("output", ""))))
        elif kind == "call":
            if e.get("agent"):
                ctx.agent = e["agent"]
            try:
                emit([tool_line(session, ctx.agent, e["tool"], True, plugin.tools_call(ctx, e["tool"], _args(e.get("args"))))])
            except Refused as r:
                emit([tool_line(session, ctx.agent, e["tool"], False, r.payload)])
        elif kind == "turn-end":
            status = e.get("status") if e.get("status") in ("completed", "aborted") else "failed"
            emit(plugin.turn_end(_ctx(session, e.get("origin", "user"), e.get("depth", 0)), status))
            emit(plugin.pump_activations())
        elif kind == "reviewer":
            provider.push(Script(calls=e.get("calls") or [], text=e.get("text") or "no skill update",
                                 delay_ms=_ms(e.get("delayMs") or 0)))
        elif kind == "review-loop":
            try:
                emit([plugin.review_loop_begin(ctx, _review_request(e))])
            except Refused as r:
                emit([review_loop_refused_line(session, r.payload)])
            # Lens replies start falsifiers, which finish on a later pump: run them all now.
            more = plugin.pump_activations()
            while more:
                emit(more)
                more = plugin.pump_activations()
        elif kind == "command":
            trimmed = e["text"].strip()
            args = (trimmed[len("/skills"):] if trimmed.startswith("/skills") else e["text"]).strip()
            try:
                emit([command_line(session, e["text"], True, plugin.command(ctx, args))])
            except Refused as r:
                emit([command_line(session, e["text"], False, r.payload)])


def start_ms(arg: Optional[str]) -> Optional[int]:
    """`--start`: `now` or whole milliseconds up to u64::MAX (as the Rust CLI); unset: EPOCH_MS."""
    if arg is None:
        return None
    if arg == "now":
        import time

        return time.time_ns() // 1_000_000
    digits = arg[1:] if arg.startswith("+") else arg
    if not digits.isdigit() or not digits.isascii() or int(digits) > U64_MAX:
        raise ReplayError(f"--start: expected `now` or milliseconds, found `{arg}`")
    return int(digits)


def home_for_run() -> str:
    base = os.environ.get("TMPDIR", "/tmp")
    path = Path(base) / f"self-evolve-py-{os.getpid()}"
    path.mkdir(parents=True, exist_ok=True)
    return str(path)
