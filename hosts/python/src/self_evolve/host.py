"""The Python host: the component instantiated in wasmtime-py with the five capabilities in
Python, and its exports as ordinary methods. Mirrors host-test's `Plugin` and the Node host:
the same decision lines, the same bounds, the same recovery after a trap.

Every instance gets a fresh `Store` with a memory limit and an epoch deadline per call; a call
that traps (its deadline, the memory limit, a broken capability, a bug) replaces the instance
with a fresh one set up with the last good configuration, and only that call reports it."""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, List, Optional, Union

import wasmtime
from wasmtime import component

from . import _adapter as adapter
from . import _fastcall
from .clock import SystemClock
from .engine import EPOCH_TICK_MS, default_cache_dir, default_wasm, engine, load_component
from .fs import FsCap
from .http import HttpCap
from .lines import tool_line
from .subagent import ScriptedProvider
from .types import (
    LOG_LEVELS,
    TURN_STATUSES,
    ACTIVATION_STATUSES,
    ActivationResult,
    CallContext,
    CatalogPage,
    Finding,
    InitReport,
    ReviewRequest,
    ServedSkill,
    ToolEvent,
    ToolSpec,
)

#: The least time instantiation gets, whatever the call deadline.
INSTANTIATE_DEADLINE_MS = 1000
#: The longest event text (message, tool arguments or output) passed into the instance.
MAX_EVENT_TEXT_BYTES = 1 << 20
#: The plugin's own bound on a `/skills` line (`command::MAX_LINE_BYTES`).
MAX_COMMAND_BYTES = 64 << 10
#: The plugin's own bound on tool arguments (`library::tool_args::MAX_ARGS_BYTES`).
MAX_ARGS_BYTES = 24 << 20
#: Catalog arguments past these bounds never enter the instance.
MAX_CATALOG_NAME = 256
MAX_CATALOG_PATH = 4096


@dataclass
class Limits:
    """Per instance: linear memory at most `memory_bytes`; each export call at most `call_deadline_ms`."""

    memory_bytes: int = 64 << 20
    call_deadline_ms: int = 2000


class PluginError(Exception):
    """Base of what the plugin's methods raise."""


class Refused(PluginError):
    """An export's `err` arm: the plugin refused and changed nothing. `payload` is its text,
    for tool calls and catalog calls the structured error JSON {"code","message","hint","details"}."""

    def __init__(self, payload: str):
        super().__init__(payload)
        self.payload = payload

    @property
    def code(self) -> Optional[str]:
        try:
            value = json.loads(self.payload)
        except ValueError:
            return self.payload.split(":", 1)[0] if ":" in self.payload else None
        return value.get("code") if isinstance(value, dict) else None


class ConfigError(PluginError):
    """`lifecycle.init` refused the configuration: `key` is the dotted path of the offending key."""

    def __init__(self, key: str, message: str):
        super().__init__(f"config key `{key}`: {message}" if key else message)
        self.key = key
        self.message = message


class PluginTrap(PluginError):
    """A call into the instance failed and the instance was replaced. `reason` is "timeout"
    (its deadline passed), or "trap" (anything else: a panic, the memory limit, a capability
    that raised past its wrapper)."""

    def __init__(self, export: str, reason: str, message: str):
        super().__init__(message)
        self.export = export
        self.reason = reason


def too_large_arguments(n: int) -> str:
    """The plugin's `too-large` refusal for arguments, byte for byte (keys in serde_json's order)."""
    return _too_large("arguments", n, MAX_ARGS_BYTES, "send a shorter value; put long material in references/ files with write_file")


def too_large_field(name: str, n: int, limit: int) -> str:
    return _too_large(name, n, limit, "list the skills for their names and files")


def _too_large(name: str, n: int, limit: int, hint: str) -> str:
    return json.dumps({
        "code": "too-large",
        "details": {"bytes": n, "field": name, "limit": limit},
        "hint": hint,
        "message": f"`{name}` is {n} bytes; the limit for it is {limit}",
    }, separators=(",", ":"), ensure_ascii=False)


def too_large_command(n: int) -> str:
    return f"too-large: the /skills line is {n} bytes; the limit is {MAX_COMMAND_BYTES}; no subcommand takes that much"


def clip_event_text(text: str) -> str:
    """`text` cut to at most MAX_EVENT_TEXT_BYTES of UTF-8, never inside a character."""
    text = adapter.guest_text(text)
    if len(text) <= MAX_EVENT_TEXT_BYTES // 4:
        return text
    data = text.encode("utf-8")
    if len(data) <= MAX_EVENT_TEXT_BYTES:
        return text
    return data[:MAX_EVENT_TEXT_BYTES].decode("utf-8", errors="ignore")


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))


class Plugin:
    """One plugin instance with its capabilities. Not thread-safe: call it from one thread."""

    def __init__(self, loaded: Any, *, fs: FsCap, http: HttpCap, provider: Any, clock: Any,
                 log: Callable[[str, str], None], limits: Limits):
        self.fs, self.http, self.provider, self.clock = fs, http, provider, clock
        self.limits = limits
        self.cache = loaded.cache
        self._component = loaded.component
        self._engine = engine()
        self._linker = component.Linker(self._engine)
        # Each call's deadline; time blocked on the network or a subagent start is not charged to it.
        self._deadline = adapter.CallDeadline()
        adapter.define_imports(self._linker, fs=fs, http=http, provider=provider, clock=clock, log=log,
                               deadline=self._deadline)
        self._log = log
        self._last_init: Optional[tuple] = None
        #: How many times the instance was replaced after a failure.
        self.replacements = 0
        self._store: Any = None
        self._exports: Any = None
        self._instantiate()

    # ---- the instance ----

    def _ticks(self) -> int:
        # Whole milliseconds over the tick, as the Rust host counts them (no float rounding).
        return max(1, int(self.limits.call_deadline_ms) // EPOCH_TICK_MS)

    def _instantiate(self) -> None:
        store = wasmtime.Store(self._engine)
        # Tables capped as the Rust host caps them (host-test/src/state.rs).
        store.set_limits(memory_size=self.limits.memory_bytes, table_elements=100_000)
        # Instantiation runs guest code too: without a deadline set first it traps at once. It
        # gets at least INSTANTIATE_DEADLINE_MS, so a short call deadline cannot fail the load.
        self._deadline.arm(store._context(), max(self._ticks(), INSTANTIATE_DEADLINE_MS // EPOCH_TICK_MS))
        instance = self._linker.instantiate(store, self._component)
        self._store, self._exports = store, adapter.Exports(instance, store)

    def _replace(self) -> Optional[str]:
        """A fresh instance with the last good configuration; None, or why that failed."""
        self.replacements += 1
        try:
            self._instantiate()
            if self._last_init is not None:
                self._call_raw("lifecycle", "init", *self._last_init)
            return None
        except Exception as e:  # noqa: BLE001
            self._exports = None
            return adapter.message_of(e)

    def _call_raw(self, interface: str, name: str, *args: Any) -> Any:
        f = self._exports.func(interface, name)
        store = self._store
        self._deadline.arm(store._context(), self._ticks())
        return f(store, *args)

    def _call(self, interface: str, name: str, *args: Any) -> Any:
        if self._exports is None:
            export = f"{interface}.{name}"
            why = self._replace()
            if why is not None:
                raise PluginTrap(export, "trap", f"plugin instance unavailable: {why}")
        try:
            return self._call_raw(interface, name, *args)
        except Exception as e:  # noqa: BLE001 - a trap, or a capability's exception re-raised by wasmtime-py
            reason = "timeout" if _is_interrupt(e) else "trap"
            what = (f"ran past its {self.limits.call_deadline_ms} ms deadline and was stopped" if reason == "timeout"
                    else f"trapped: {adapter.message_of(e)}")
            why = self._replace()
            escaped = _fastcall.take_escaped()
            if escaped is not None:
                # Ctrl-C or sys.exit inside an import: the call was stopped, the instance
                # replaced; the interrupt goes on to the caller as raised.
                raise escaped from None
            tail = "the instance was replaced" if why is None else f"replacing the instance failed: {why}"
            export = f"{interface}.{name}"
            message = f"plugin export `{export}` {what}; {tail}"
            self._log("error", message)  # as the Rust host logs a trap: the operator sees it too
            raise PluginTrap(export, reason, message) from e

    def _result(self, interface: str, name: str, *args: Any) -> Any:
        ok, payload = adapter.split_result(self._call(interface, name, *args))
        if not ok:
            raise Refused(payload)
        return payload

    # ---- lifecycle, tools, command, guidance ----

    def init(self, config_json: str, services: List[str]) -> InitReport:
        ok, payload = adapter.split_result(self._call("lifecycle", "init", config_json, list(services)))
        if not ok:
            raise ConfigError(payload.key, payload.message)
        self._last_init = (config_json, list(services))
        return adapter.init_report(payload)

    def tools_list(self) -> List[ToolSpec]:
        return [adapter.tool_spec(t) for t in self._call("tools", "list")]

    def tools_call(self, ctx: CallContext, name: str, args_json: str) -> str:
        """The tool's JSON answer; raises `Refused` with the plugin's error JSON."""
        name, args_json = adapter.guest_text(name), adapter.guest_text(args_json)
        n = _utf8_len(args_json)
        if n > MAX_ARGS_BYTES:
            # Bounded before it enters the instance: copying it in would cost the instance's memory.
            raise Refused(too_large_arguments(n))
        return self._result("tools", "call", adapter.call_context(ctx), name, args_json)

    def command(self, ctx: CallContext, args: str) -> str:
        """`/skills ARGS`: its output; raises `Refused` with the plugin's message."""
        args = adapter.guest_text(args)
        n = _utf8_len(args)
        if n > MAX_COMMAND_BYTES:
            raise Refused(too_large_command(n))
        return self._result("command", "run", adapter.call_context(ctx), args)

    def guidance(self) -> Optional[str]:
        return self._call("guidance", "section")

    # ---- events: observations, never refused; long texts clipped before they enter ----

    def user_message(self, ctx: CallContext, text: str, human: bool = True) -> List[str]:
        return self._call("events", "user-message", adapter.call_context(ctx), clip_event_text(text), bool(human))

    def assistant_message(self, ctx: CallContext, text: str) -> List[str]:
        return self._call("events", "assistant-message", adapter.call_context(ctx), clip_event_text(text))

    def tool_result(self, ctx: CallContext, event: ToolEvent) -> List[str]:
        e = adapter.tool_event(clip_event_text(event.tool), clip_event_text(event.args_json), event.ok,
                               clip_event_text(event.output))
        return self._call("events", "tool-result", adapter.call_context(ctx), e)

    def turn_end(self, ctx: CallContext, status: str) -> List[str]:
        status = adapter.enum_value(status, TURN_STATUSES, "turn status")
        return self._call("events", "turn-end", adapter.call_context(ctx), status)

    def activation_end(self, outcome: ActivationResult) -> List[str]:
        adapter.enum_value(outcome.status, ACTIVATION_STATUSES, "activation status")
        return self._call("events", "activation-end", adapter.activation_result(outcome))

    def tick(self) -> List[str]:
        return self._call("events", "tick")

    def hand_back(self) -> None:
        """Hands every session held in memory back to the state root (`sessions.hand-back`):
        call it before letting a "session-owner" or "session-batch" instance go."""
        self._call("sessions", "hand-back")

    # ---- catalog: what an agent may be served ----

    def catalog_skills(self, ctx: CallContext, offset: int = 0, limit: int = 100) -> CatalogPage:
        page = self._result("catalog", "skills", adapter.call_context(ctx), adapter.u32(offset), adapter.u32(limit))
        return adapter.catalog_page(page)

    def catalog_get(self, ctx: CallContext, name: str) -> ServedSkill:
        name = adapter.guest_text(name)
        _bound("name", name, MAX_CATALOG_NAME)
        return adapter.served_skill(self._result("catalog", "get", adapter.call_context(ctx), name))

    def catalog_read(self, ctx: CallContext, name: str, path: str) -> bytes:
        name, path = adapter.guest_text(name), adapter.guest_text(path)
        _bound("name", name, MAX_CATALOG_NAME)
        _bound("path", path, MAX_CATALOG_PATH)
        return self._result("catalog", "read", adapter.call_context(ctx), name, path)

    # ---- checker: pure ----

    def check(self, skills: list) -> List[Finding]:
        return [adapter.finding(f) for f in self._call("checker", "check", [adapter.skill_input(s) for s in skills])]

    def check_batch(self, skills: list) -> List[Finding]:
        return [adapter.finding(f) for f in self._call("checker", "check-batch", [adapter.skill_input(s) for s in skills])]

    def check_duplicates(self) -> List[Finding]:
        return [adapter.finding(f) for f in self._call("checker", "check-duplicates")]

    # ---- feedback loops (seed 001), reviewer quality (seed 004): JSON in and out ----

    def feedback_begin(self, spec_json: str) -> str:
        return self._result("feedback", "begin", spec_json)

    def feedback_report(self, run: str, event_json: str) -> str:
        return self._result("feedback", "report", run, event_json)

    def feedback_record(self, run: str) -> str:
        return self._result("feedback", "record", run)

    def shadow_probes(self) -> str:
        return self._call("shadow", "probes")

    def shadow_admit(self, root: str, prompt: str, holdout: bool = False) -> str:
        return self._result("shadow", "admit", root, prompt, bool(holdout))

    def shadow_accept(self, root: str, report_json: str, projection_refs: List[int], author_route: Optional[str] = None,
                      reviewer_route: Optional[str] = None, holdout: bool = False) -> str:
        refs = [adapter.u64(r) for r in projection_refs]
        return self._result("shadow", "accept", root, report_json, refs, author_route, reviewer_route, bool(holdout))

    def shadow_take_relay(self, root: str) -> str:
        return self._call("shadow", "take-relay", root)

    def shadow_status(self, root: str) -> str:
        return self._call("shadow", "status", root)

    # ---- the review loop (seed 003) ----

    def review_loop_begin(self, ctx: CallContext, request: ReviewRequest) -> str:
        return self._result("review-loop", "begin", adapter.call_context(ctx), adapter.review_request(request))

    def review_loop_commands(self, run: str, results: list) -> List[str]:
        return self._result("review-loop", "commands", run, [adapter.command_result(c) for c in results])

    def review_loop_spend(self, activation: str, input_tokens: int, output_tokens: int) -> List[str]:
        return self._call("review-loop", "spend", activation, adapter.u64(input_tokens), adapter.u64(output_tokens))

    def review_loop_status(self, session: str) -> str:
        return self._call("review-loop", "status", session)

    # ---- scripted children ----

    def pump_activations(self) -> List[str]:
        """Performs the tool calls of newly started children (as the child), then delivers the
        finished ones. Only for a `ScriptedProvider`."""
        lines: List[str] = []
        for child in self.provider.take_work():
            ctx = CallContext(session=child.parent_session, agent=child.id, origin="subagent", depth=1)
            for call in child.calls:
                tool = call.get("tool", "")
                args = json.dumps(call.get("args"), separators=(",", ":"), ensure_ascii=False)
                if tool not in child.allowed:
                    allowed = ", ".join(json.dumps(t, ensure_ascii=False) for t in child.allowed)
                    why = json.dumps(f"`{tool}` is not among the child's tools [{allowed}]", ensure_ascii=False)
                    lines.append(tool_line(ctx.session, ctx.agent, tool, False, why))
                elif tool == "skill":
                    lines.extend(self.tool_result(ctx, ToolEvent(tool=tool, args_json=args, ok=True, output="")))
                    name = (call.get("args") or {}).get("name", "") if isinstance(call.get("args"), dict) else ""
                    lines.append(tool_line(ctx.session, ctx.agent, tool, True, f"loaded {name}"))
                else:
                    try:
                        lines.append(tool_line(ctx.session, ctx.agent, tool, True, self.tools_call(ctx, tool, args)))
                    except Refused as r:
                        lines.append(tool_line(ctx.session, ctx.agent, tool, False, r.payload))
        for done in self.provider.take_finished(self.clock.now()):
            lines.extend(self.activation_end(done))
        return lines


def _bound(name: str, value: str, limit: int) -> None:
    n = _utf8_len(value)
    if n > limit:
        raise Refused(too_large_field(name, n, limit))


def _is_interrupt(e: BaseException) -> bool:
    code = getattr(e, "trap_code", None)
    if code is not None and getattr(code, "name", "") == "INTERRUPT":
        return True
    return "interrupt" in str(e).lower()


def stderr_log(min_level: str) -> Callable[[str, str], None]:
    floor = LOG_LEVELS.index(min_level) if min_level in LOG_LEVELS else 2

    def log(level: str, message: str) -> None:
        if LOG_LEVELS.index(level) >= floor:
            sys.stderr.write(f"self-evolve[{level}]: {message}\n")

    return log


def load_plugin(*, fs: Union[FsCap, dict, None] = None, endpoints: Optional[dict] = None, clock: Any = None,
                provider: Any = None, log_level: str = "warn", on_log: Optional[Callable[[str, str], None]] = None,
                wasm: Union[str, Path, None] = None, cache_dir: Union[str, Path, None, bool] = True,
                limits: Optional[Limits] = None) -> Plugin:
    """Loads the component and returns a `Plugin` (call `init` next).

    `fs`: an `FsCap`, or its keyword arguments as a dict (`user_skills`, `state`, `projects`,
    `default_project`, ...). `endpoints`: name → `Endpoint` (or dict) for the http capability.
    `clock`: anything with `now()` in ms (default: the system clock). `provider`: the subagent
    provider (default: a `ScriptedProvider`). `cache_dir`: True for the default cache folder,
    a path, or False/None for no disk cache."""
    adapter.install_bulk_bytes()
    _fastcall.install_type_caches()
    clock = clock if clock is not None else SystemClock()
    log = on_log or stderr_log(log_level)
    if isinstance(fs, FsCap):
        fs_cap = fs
    else:
        config = dict(fs or {})
        user_warn = config.pop("on_warn", None)

        def on_warn(message: str) -> None:
            # The fs capability's own warnings (hard links, a project root linked elsewhere) go where the plugin's go.
            log("warn", message)
            if user_warn:
                user_warn(message)

        fs_cap = FsCap(on_warn=on_warn, **config)
    http_cap = HttpCap(endpoints or {})
    provider = provider if provider is not None else ScriptedProvider(clock)
    cache = default_cache_dir() if cache_dir is True else (Path(cache_dir) if cache_dir else None)
    loaded = load_component(Path(wasm) if wasm else default_wasm(), cache)
    return Plugin(loaded, fs=fs_cap, http=http_cap, provider=provider, clock=clock, log=log, limits=limits or Limits())
