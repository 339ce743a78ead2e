"""Export results out of the guest in bulk: the same Python values wasmtime-py's
`convert_from_c` builds, read from the C API's value tree with a few memory copies instead of a
ctypes attribute walk per node.

wasmtime-py lifts a result node by node: each field, string and list element goes through
several ctypes attribute reads, a `to_str`, and a C call to free that piece. For a `tools.list`
that is about 80% of the call. Here a result is read the way the C API lays it out (checked at
import; see `usable`): a value is 32 bytes, its kind byte first and its payload at 8; a string,
list or record payload is (size, pointer); a record entry is a 16-byte name and a value; an
option is a pointer, a result a bool and a pointer. Each list,
record or string is copied out with one `_read`, and the whole tree is freed afterwards with
one `wasmtime_component_val_delete`, as the C API owns it.

A lifter is built once per type (`lifter`), from the type objects `_fastcall` keeps. A type this
module does not read (the kinds no export returns: tuples, variants, flags, floats, ...) gives
`None`, and the stock conversion is used.
"""
from __future__ import annotations

import ctypes
import struct
from ctypes import c_char
from typing import Any, Callable, List, Optional, Tuple

from wasmtime import _ffi as ffi
from wasmtime.component import Record, Variant
from wasmtime.component import _types as t

#: `(buffer, offset) -> value`: lifts the 32-byte value at `offset` of `buffer`.
Lifter = Callable[[bytes, int], Any]

_VAL = 32
_PAYLOAD = 8
_ENTRY = 48  # a record entry: its name (wasm_name_t, 16 bytes), then its value
_ENTRY_VAL = 16
_PAIR = struct.Struct("<QQ")
_WORD = struct.Struct("<Q")


def _layout_ok() -> bool:
    try:
        return _layout_matches()
    except AttributeError:  # a wasmtime-py without one of these types
        return False


def _layout_matches() -> bool:
    val = ffi.wasmtime_component_val_t
    entry = ffi.wasmtime_component_valrecord_entry_t
    result = ffi.wasmtime_component_valresult_t
    record = ffi.wasmtime_component_valrecord_t
    return (ctypes.sizeof(ctypes.c_void_p) == 8 and ctypes.sizeof(val) == _VAL and val.kind.offset == 0
            and val.of.offset == _PAYLOAD and ctypes.sizeof(entry) == _ENTRY
            and entry.val.offset == _ENTRY_VAL and ffi.wasm_byte_vec_t.size.offset == 0
            and ffi.wasm_byte_vec_t.data.offset == 8 and result.is_ok.offset == 0 and result.val.offset == 8
            and ffi.wasmtime_component_vallist_t.size.offset == 0 and ffi.wasmtime_component_vallist_t.data.offset == 8
            and record.size.offset == 0 and record.data.offset == 8)


_USABLE = _layout_ok()


def usable() -> bool:
    """Whether this wasmtime-py lays values out as this module reads them."""
    return _USABLE


def _kind(name: str) -> int:
    return int(getattr(ffi, f"WASMTIME_COMPONENT_{name}").value)


def _read(p: int, n: int) -> bytes:
    """`n` bytes at address `p`: `ctypes.string_at` without its foreign-function call (a third
    of the time)."""
    return (c_char * n).from_address(p).raw


class _Unsupported(Exception):
    pass


def _scalar(kind: str, fmt: str) -> Lifter:
    code, unpack = _kind(kind), struct.Struct("<" + fmt).unpack_from

    def lift(buf: bytes, off: int) -> Any:
        if buf[off] != code:
            raise TypeError(f"expected a {kind.lower()} from the guest")
        return unpack(buf, off + _PAYLOAD)[0]

    return lift


def _text(kind: str) -> Lifter:
    code = _kind(kind)

    def lift(buf: bytes, off: int) -> str:
        if buf[off] != code:
            raise TypeError(f"expected a {kind.lower()} from the guest")
        n, p = _PAIR.unpack_from(buf, off + _PAYLOAD)
        return _read(p, n).decode("utf-8") if n else ""

    return lift


def _list(ty: Any) -> Lifter:
    code = _kind("LIST")
    if ty._is_bytes():
        def lift_bytes(buf: bytes, off: int) -> bytes:
            if buf[off] != code:
                raise TypeError("expected a list from the guest")
            n, p = _PAIR.unpack_from(buf, off + _PAYLOAD)
            if not n:
                return b""
            cells = (ctypes.c_ubyte * (_VAL * n)).from_address(p)
            return bytes(memoryview(cells).cast("B")[_PAYLOAD::_VAL])

        return lift_bytes
    element = lifter_of(ty.element)

    def lift(buf: bytes, off: int) -> List[Any]:
        if buf[off] != code:
            raise TypeError("expected a list from the guest")
        n, p = _PAIR.unpack_from(buf, off + _PAYLOAD)
        if not n:
            return []
        data = _read(p, n * _VAL)
        return [element(data, i) for i in range(0, n * _VAL, _VAL)]

    return lift


def _record(ty: Any) -> Lifter:
    code = _kind("RECORD")
    fields = [(name, lifter_of(f), i * _ENTRY + _ENTRY_VAL) for i, (name, f) in enumerate(ty.fields)]
    count = len(fields)

    def lift(buf: bytes, off: int) -> Record:
        if buf[off] != code:
            raise TypeError("expected a record from the guest")
        n, p = _PAIR.unpack_from(buf, off + _PAYLOAD)
        if n != count:
            raise TypeError(f"expected a record of {count} fields from the guest, got {n}")
        data = _read(p, n * _ENTRY) if n else b""
        r = Record()
        d = r.__dict__
        for name, f, at in fields:
            d[name] = f(data, at)
        return r

    return lift


def _boxed(case: Optional[Lifter], tag: str, tagged: bool) -> Callable[[int], Any]:
    """The value a case's pointer holds, as wasmtime-py's `_lift` returns it."""
    def lift(p: int) -> Any:
        if case is None:
            return Variant(tag) if tagged else None
        if not p:
            raise TypeError(f"the guest returned case {tag} without its payload")
        payload = case(_read(p, _VAL), 0)
        return Variant(tag, payload) if tagged else payload

    return lift


def _cases(ty: Any) -> List[Tuple[str, Optional[Lifter]]]:
    return [(name, None if case is None else lifter_of(case)) for name, case in ty._cases()]


def _option(ty: Any) -> Lifter:
    code, tagged = _kind("OPTION"), ty._tagged()
    cases = dict(_cases(ty))
    some = _boxed(cases["some"], "some", tagged)
    none = Variant("none") if tagged else None

    def lift(buf: bytes, off: int) -> Any:
        if buf[off] != code:
            raise TypeError("expected an option from the guest")
        p = _WORD.unpack_from(buf, off + _PAYLOAD)[0]
        return some(p) if p else none

    return lift


def _result(ty: Any) -> Lifter:
    code, tagged = _kind("RESULT"), ty._tagged()
    cases = dict(_cases(ty))
    ok, err = _boxed(cases["ok"], "ok", tagged), _boxed(cases["err"], "err", tagged)

    def lift(buf: bytes, off: int) -> Any:
        if buf[off] != code:
            raise TypeError("expected a result from the guest")
        p = _WORD.unpack_from(buf, off + _PAYLOAD + 8)[0]
        return ok(p) if buf[off + _PAYLOAD] else err(p)

    return lift


#: The kinds the plugin's exports return, each checked against the stock conversion by
#: tests/test_lift.py; any other kind is left to the stock conversion.
_SCALARS = {
    "U8": lambda: _scalar("U8", "B"),
    "U32": lambda: _scalar("U32", "I"),
    "U64": lambda: _scalar("U64", "Q"),
    "String": lambda: _text("STRING"),
}

_COMPOUND = {
    "ListType": _list,
    "RecordType": _record,
    "OptionType": _option,
    "ResultType": _result,
    "EnumType": lambda ty: _text("ENUM"),
}


def lifter_of(ty: Any) -> Lifter:
    name = type(ty).__name__
    if type(ty) is getattr(t, name, None):
        if name in _SCALARS:
            return _SCALARS[name]()
        if name in _COMPOUND:
            return _COMPOUND[name](ty)
    raise _Unsupported(name)


def lifter(ty: Any) -> Optional[Lifter]:
    """A bulk lifter for values of `ty`, or None where the stock conversion must be used."""
    if not _USABLE or ty is None:
        return None
    try:
        return lifter_of(ty)
    except _Unsupported:
        return None


def lift_and_free(lift: Lifter, space: Any) -> Any:
    """The value in `space` (a `wasmtime_component_val_t` the C API filled), lifted; the whole
    tree is freed afterwards, whether lifting succeeded or not."""
    try:
        return lift(bytes(space), 0)
    finally:
        ffi.wasmtime_component_val_delete(ctypes.byref(space))
