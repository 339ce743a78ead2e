"""The one module that knows how wasmtime-py spells WIT values; everything else in the package
speaks the dataclasses, strings and exceptions of `types.py`.

What wasmtime-py does, and what this module does about it:
- Interface names need their version (`self-evolve:plugin/fs@0.1.0`): without it the linker
  reports a missing import that looks like a different bug. `iface()` adds it.
- Records have no constructor and keep WIT field names (`modified-ms`): `record()`.
- A variant, result or option is a tagged `Variant(tag, payload)` only when its cases' Python
  types overlap; otherwise the bare payload stands for its case (a `result<list<u8>, string>`
  comes back as `bytes` or `str`). Each function below knows which form its type takes.
- `list<u8>` must be `bytes` and is converted one element at a time (about 1 µs per byte);
  `install_bulk_bytes()` converts it in one copy each way.
- `u64` is not range-checked: `u64()` clamps what the host passes in.
- An import that raises, or returns a wrong shape, traps the guest and leaves the instance
  unusable: every import is wrapped so that only the error its WIT declares crosses.
"""
from __future__ import annotations

import ctypes
import re
import sys
from typing import Any, Callable, List, Optional, Tuple

from wasmtime import _ffi as ffi
from wasmtime.component import Record, Variant
from wasmtime.component import _types as component_types

from . import _fastcall
from .engine import epoch
from .types import (
    ENTRY_KINDS,
    FS_ERROR_TAGS,
    HTTP_ERROR_TAGS,
    LOG_LEVELS,
    U64_MAX,
    ActivationResult,
    CallContext,
    CatalogPage,
    FileStat,
    Finding,
    FsError,
    HttpError,
    HttpRequest,
    HttpResponse,
    InitReport,
    Part,
    Root,
    ServedFile,
    ServedSkill,
    SubagentSpec,
    ToolSpec,
)

PACKAGE = "self-evolve:plugin"
VERSION = "0.1.0"


def iface(name: str) -> str:
    return f"{PACKAGE}/{name}@{VERSION}"


def u64(n: int) -> int:
    """An int clamped to 0..=u64::MAX (wasmtime-py would wrap or fail deep inside a call)."""
    return 0 if n < 0 else U64_MAX if n > U64_MAX else int(n)


def record(**fields: Any) -> Record:
    """A WIT record from Python keyword names (`modified_ms` → `modified-ms`)."""
    r = Record()
    for name, value in fields.items():
        setattr(r, name.replace("_", "-"), value)
    return r


def field(r: Any, name: str) -> Any:
    return getattr(r, name)


def message_of(e: BaseException) -> str:
    return str(e) or type(e).__name__


# ---- list<u8> in one copy ------------------------------------------------------------------

_VAL_SIZE = ctypes.sizeof(ffi.wasmtime_component_val_t)
_KIND_AT = ffi.wasmtime_component_val_t.kind.offset
_PAYLOAD_AT = ffi.wasmtime_component_val_t.of.offset
_U8 = ffi.WASMTIME_COMPONENT_U8.value
_bulk_installed = False


def _lower_bytes(val: Any, ptr: Any) -> None:
    if not isinstance(val, (bytes, bytearray)):
        raise TypeError("expected bytes value")
    n = len(val)
    raw = ffi.wasmtime_component_vallist_t()
    ffi.wasmtime_component_vallist_new_uninit(raw, n)
    if n:
        # The C API holds a list<u8> as one 32-byte value per byte: set every kind and every
        # payload byte with two strided copies instead of n Python-level conversions.
        cells = (ctypes.c_ubyte * (_VAL_SIZE * n)).from_address(ctypes.addressof(raw.data.contents))
        view = memoryview(cells).cast("B")
        view[_KIND_AT::_VAL_SIZE] = bytes([_U8]) * n
        view[_PAYLOAD_AT::_VAL_SIZE] = val
    ptr.contents.kind = ffi.WASMTIME_COMPONENT_LIST
    ptr.contents.of.list = raw


def _lift_bytes(c: Any) -> bytes:
    try:
        n = c.of.list.size
        if n == 0:
            return b""
        cells = (ctypes.c_ubyte * (_VAL_SIZE * n)).from_address(ctypes.addressof(c.of.list.data.contents))
        return bytes(memoryview(cells).cast("B")[_PAYLOAD_AT::_VAL_SIZE])
    finally:
        ffi.wasmtime_component_vallist_delete(ctypes.byref(c.of.list))


def install_bulk_bytes() -> None:
    """Replaces wasmtime-py's per-byte `list<u8>` conversion with a bulk copy (other lists are
    untouched). Idempotent; called by `load_plugin`. The layout it relies on (a 32-byte value,
    kind first, payload at 8) is checked here, and the stock conversion kept if it differs."""
    global _bulk_installed
    if _bulk_installed:
        return
    if (_VAL_SIZE, _KIND_AT, _PAYLOAD_AT) != (32, 0, 8):
        return
    list_type = component_types.ListType
    stock_lower, stock_lift = list_type.convert_to_c, list_type.convert_from_c

    def convert_to_c(self: Any, store: Any, val: Any, ptr: Any) -> None:
        if self._is_bytes():
            _lower_bytes(val, ptr)
        else:
            stock_lower(self, store, val, ptr)

    def convert_from_c(self: Any, c: Any) -> Any:
        if self._is_bytes():
            assert c.kind == ffi.WASMTIME_COMPONENT_LIST.value
            return _lift_bytes(c)
        return stock_lift(self, c)

    list_type.convert_to_c = convert_to_c  # type: ignore[method-assign]
    list_type.convert_from_c = convert_from_c  # type: ignore[method-assign]
    _bulk_installed = True


# ---- values into the guest -----------------------------------------------------------------


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def guest_text(text: str) -> str:
    """`text` as a WIT string can hold it: a lone surrogate (JSON's `"\\ud83d"`, half an emoji
    a JavaScript writer split) becomes U+FFFD, as jco does in the Node host. wasmtime-py would
    raise deep inside the call and leave the instance unusable."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return _LONE_SURROGATE.sub("\ufffd", text)


def call_context(ctx: CallContext) -> Record:
    if ctx.origin not in ("user", "subagent"):
        raise ValueError(f"origin must be 'user' or 'subagent', not {ctx.origin!r}")
    return record(session=guest_text(ctx.session), agent=guest_text(ctx.agent), origin=ctx.origin,
                  depth=u32(ctx.depth), cwd=guest_text(ctx.cwd))


def u32(n: int) -> int:
    """An int checked to be a u32 before it enters (wasmtime-py would fail deep inside a call)."""
    if not 0 <= n <= 0xFFFFFFFF:
        raise ValueError(f"{n} is not a u32")
    return int(n)


def enum_value(value: str, allowed: Tuple[str, ...], what: str) -> str:
    """Checked before it enters: a bad enum string leaves a wasmtime-py instance unusable."""
    if value not in allowed:
        raise ValueError(f"{what} must be one of {', '.join(allowed)}; got {value!r}")
    return value


def tool_event(tool: str, args_json: str, ok: bool, output: str) -> Record:
    return record(tool=tool, args_json=args_json, ok=bool(ok), output=output)


def activation_result(outcome: ActivationResult) -> Record:
    return record(id=outcome.id, status=outcome.status, text=outcome.text)


def skill_input(skill: Any) -> Record:
    def file_input(f: Any) -> Record:
        return record(path=f.path, bytes=bytes(f.bytes))

    return record(folder=skill.folder, skill_md=file_input(skill.skill_md), resources=[file_input(r) for r in skill.resources])


def review_request(req: Any) -> Record:
    """A `review-loop.request`. `independence` is an untagged variant in wasmtime-py: None is
    `independent`, a list `self-authored`, a string `unverified`."""
    ind = req.independence
    independence: Any = None
    if ind.tag == "self-authored":
        independence = list(ind.files)
    elif ind.tag == "unverified":
        independence = ind.reason
    elif ind.tag != "independent":
        raise ValueError(f"independence must be independent, self-authored or unverified; got {ind.tag!r}")
    commands = None
    if req.commands is not None:
        commands = [command_result(c) for c in req.commands]
    return record(
        mode=enum_value(req.mode, ("code", "plan", "claim", "deliverable"), "mode"),
        artifact=req.artifact,
        artifact_sha=req.artifact_sha,
        files=list(req.files),
        documents=[record(path=d.path, text=d.text) for d in req.documents],
        repo=req.repo,
        branch=req.branch,
        commit=req.commit,
        uncommitted=bool(req.uncommitted),
        max_iter=None if req.max_iter is None else u32(req.max_iter),
        token_ceiling=None if req.token_ceiling is None else u64(req.token_ceiling),
        independence=independence,
        self_review_ack=req.self_review_ack,
        auto=bool(req.auto),
        commands=commands,
        disabled_lenses=list(req.disabled_lenses),
    )


def command_result(c: Any) -> Record:
    if not -(1 << 31) <= c.exit_code < (1 << 31):
        raise ValueError(f"exit code {c.exit_code} is not an s32")
    return record(name=c.name, exit_code=int(c.exit_code), stderr_tail=c.stderr_tail)


# ---- values out of the guest ---------------------------------------------------------------


def split_result(value: Any) -> Tuple[bool, Any]:
    """(ok, payload) of an export's `result<T, E>`. Tagged when T and E overlap (both strings,
    both records); otherwise the error arm of every export here is a bare `str`."""
    if isinstance(value, Variant) and value.tag in ("ok", "err"):
        return value.tag == "ok", value.payload
    return not isinstance(value, str), value


def init_report(r: Any) -> InitReport:
    parts = [Part(name=p.name, state=p.state, missing=list(p.missing), detail=p.detail) for p in r.parts]
    return InitReport(version=r.version, parts=parts, warnings=list(r.warnings), config_json=field(r, "config-json"))


def tool_spec(t: Any) -> ToolSpec:
    return ToolSpec(name=t.name, description=t.description, parameters_schema=field(t, "parameters-schema"))


def served_skill(s: Any) -> ServedSkill:
    files = [ServedFile(path=f.path, size=f.size, sha256=f.sha256) for f in s.files]
    return ServedSkill(name=s.name, scope=s.scope, description=s.description,
                       frontmatter_json=field(s, "frontmatter-json"), files=files)


def catalog_page(p: Any) -> CatalogPage:
    return CatalogPage(skills=[served_skill(s) for s in p.skills], next_offset=field(p, "next-offset"))


def finding(f: Any) -> Finding:
    return Finding(path=f.path, line=f.line, rule=f.rule, severity=f.severity, message=f.message)


# ---- the imports ---------------------------------------------------------------------------


def _root(v: Any) -> Root:
    return Root(v.tag, v.payload if v.tag == "project-skills" else None)


def _fs_error(e: FsError) -> Variant:
    tag = e.tag if e.tag in FS_ERROR_TAGS else "io"
    return Variant(tag, (e.message or "") if tag == "io" else None)


def _stat(st: FileStat) -> Record:
    kind = st.kind if st.kind in ENTRY_KINDS else "file"
    return record(kind=kind, size=u64(st.size), modified_ms=u64(st.modified_ms))


def _typed_fs(fn: Callable[..., Any], shape: Callable[[Any], Any]) -> Callable[..., Any]:
    """An fs import: its result shaped on success, `fs-error` for any failure (`io` with the
    message when the capability raised something other than FsError)."""

    def wrapped(_store: Any, root: Any, *args: Any) -> Any:
        try:
            return shape(fn(_root(root), *args))
        except FsError as e:
            return _fs_error(e)
        except Exception as e:  # noqa: BLE001 - anything else would trap the guest
            return Variant("io", message_of(e))

    return wrapped


def _none(_: Any) -> None:
    return None


def _bytes(data: Any) -> bytes:
    return bytes(data)


def _entries(entries: Any) -> List[Tuple[str, str]]:
    return [(str(name), kind if kind in ENTRY_KINDS else "file") for name, kind in entries]


def _stat_many(results: Any) -> List[Any]:
    return [_fs_error(r) if isinstance(r, FsError) else _stat(r) for r in results]


def _http_error(e: HttpError) -> Variant:
    tag = e.tag if e.tag in HTTP_ERROR_TAGS else "network"
    return Variant(tag, (e.message or "") if tag == "network" else None)


class CallDeadline:
    """The running export call's epoch deadline, counted in the ticker's ticks (`engine.epoch()`).

    The deadline is for the plugin's own work. Time a call spends blocked in a host import that
    waits on the outside world, each bounded by its own timeout (`http.post`, `subagent.start`),
    does not count: when such an import returns, the deadline moves on by the ticks it waited,
    so the call has as much left as it had when the import began. Any other import (the clock,
    fs, log) counts, as the plugin's work does. (The Rust host grants the same time from its
    epoch deadline callback, which wasmtime-py does not expose; setting the deadline from inside
    the import, on the caller's store, comes to the same.)"""

    __slots__ = ("_at",)

    def __init__(self) -> None:
        #: The epoch at which the running call traps; None before the first `arm`.
        self._at: Optional[int] = None

    def arm(self, context: Any, ticks: int) -> None:
        """Before a call (or an instantiation): it may run `ticks` ticks from now."""
        self._at = epoch() + ticks
        _fastcall.set_epoch_deadline(context, ticks)

    def waiting(self, store: Any, wait: Callable[[], Any]) -> Any:
        """`wait()`, an import's blocking part, with the ticks it took added to the deadline."""
        since = epoch()
        try:
            return wait()
        finally:
            at = self._at
            if at is not None:
                now = epoch()
                self._at = at = at + (now - since)
                _fastcall.set_epoch_deadline(store._context(), max(1, at - now))


def define_imports(linker: Any, *, fs: Any, http: Any, provider: Any, clock: Any, log: Callable[[str, str], None],
                   deadline: Optional[CallDeadline] = None) -> None:
    """Defines the five capabilities in `linker` (a `wasmtime.component.Linker`). With a
    `deadline`, the time spent in `http.post` and `subagent.start` is not charged to the call."""

    def or_else(what: str, fn: Callable[..., Any], fallback: Any) -> Callable[..., Any]:
        # Functions the WIT gives no error: answer the safe way and say why in the log.
        def wrapped(_store: Any, *args: Any) -> Any:
            try:
                return fn(*args)
            except Exception as e:  # noqa: BLE001
                log("warn", f"{what} failed: {message_of(e)}")
                return fallback

        return wrapped

    def stat_many(_store: Any, root: Any, paths: Any) -> Any:
        try:
            return _stat_many(fs.stat_many(_root(root), list(paths)))
        except Exception as e:  # noqa: BLE001
            error = _fs_error(e) if isinstance(e, FsError) else Variant("io", message_of(e))
            return [error for _ in paths]

    def waiting(store: Any, wait: Callable[[], Any]) -> Any:
        return deadline.waiting(store, wait) if deadline is not None else wait()

    def http_post(_store: Any, req: Any) -> Any:
        try:
            request = HttpRequest(endpoint=req.endpoint, path=req.path, headers=[tuple(h) for h in req.headers],
                                  body=req.body, timeout_ms=field(req, "timeout-ms"))
            response: HttpResponse = waiting(_store, lambda: http.post(request))
            return record(status=int(response.status) & 0xFFFF, body=bytes(response.body))
        except HttpError as e:
            return _http_error(e)
        except Exception as e:  # noqa: BLE001
            return Variant("network", message_of(e))

    def subagent_start(_store: Any, spec: Any) -> Any:
        # result<string, string>: both arms are strings, so tagged.
        try:
            s = SubagentSpec(parent_session=field(spec, "parent-session"), provider=spec.provider, delivery=spec.delivery,
                             prompt=spec.prompt, tools=list(spec.tools), timeout_ms=field(spec, "timeout-ms"))
            return Variant("ok", str(waiting(_store, lambda: provider.start(s))))
        except Exception as e:  # noqa: BLE001
            return Variant("err", message_of(e))

    def restrict_tools(_store: Any, id: str, tools: Any) -> Optional[str]:
        # result<_, string>: untagged; None is ok, a string the refusal.
        try:
            provider.restrict_tools(id, list(tools))
            return None
        except Exception as e:  # noqa: BLE001
            return message_of(e)

    def log_import(_store: Any, level: str, text: str) -> None:
        try:
            log(level if level in LOG_LEVELS else "warn", text)
        except Exception as e:  # noqa: BLE001
            sys.stderr.write(f"self-evolve: the log sink failed: {message_of(e)}\n")

    fs_funcs = {
        "read": _typed_fs(fs.read, _bytes),
        "write": _typed_fs(fs.write, _none),
        "rename": _typed_fs(fs.rename, _none),
        "remove-file": _typed_fs(fs.remove_file, _none),
        "remove-dir": _typed_fs(fs.remove_dir, _none),
        "create-dir-all": _typed_fs(fs.create_dir_all, _none),
        "list-dir": _typed_fs(fs.list_dir, _entries),
        "stat": _typed_fs(fs.stat, _stat),
        "stat-many": stat_many,
        "has-root": or_else("fs.has-root", lambda r: bool(fs.has_root(_root(r))), False),
    }
    http_funcs = {
        "post": http_post,
        "has-endpoint": or_else("http.has-endpoint", lambda e: bool(http.has_endpoint(e)), False),
        "has-credential": or_else("http.has-credential", lambda e: bool(http.has_credential(e)), False),
    }
    subagent_funcs = {
        "start": subagent_start,
        "restrict-tools": restrict_tools,
        "abort": or_else("subagent.abort", lambda id: provider.abort(id), None),
    }
    # The one import left unguarded: no time is a safe answer, so a broken clock traps the call
    # and the host replaces the instance (host.py).
    clock_funcs = {"now-ms": lambda _store: u64(int(clock.now())) }
    log_funcs = {"log": log_import}
    with linker.root() as root:
        for name, funcs in (("fs", fs_funcs), ("http", http_funcs), ("subagent", subagent_funcs),
                            ("clock", clock_funcs), ("log", log_funcs)):
            with root.add_instance(iface(name)) as instance:
                for fn_name, fn in funcs.items():
                    _fastcall.add_import(instance, fn_name, fn)


# ---- the exports ---------------------------------------------------------------------------


class Exports:
    """An instance's export functions, looked up once: `exports.func("tools", "call")`."""

    def __init__(self, instance: Any, store: Any):
        self._instance = instance
        self._store = store
        self._funcs: dict = {}

    def func(self, interface: str, name: str) -> Any:
        key = (interface, name)
        f = self._funcs.get(key)
        if f is None:
            at = self._instance.get_export_index(self._store, iface(interface))
            index = None if at is None else self._instance.get_export_index(self._store, name, at)
            f = None if index is None else self._instance.get_func(self._store, index)
            if f is None:
                raise LookupError(f"the component exports no {iface(interface)}#{name}; is it the right self-evolve.wasm?")
            f = _fastcall.export_caller(f, self._store)
            self._funcs[key] = f
        return f
