"""Calls across the component boundary without re-reading types on every call.

wasmtime-py asks the C API for a function's type, and builds a Python object for each of its
parameter and result types, on every call: an export call (`Func.__call__`) and every import
call (the linker's `func_impl` callback); converting a value then reads its type's parts again
(a record's fields, a list's element, a variant's cases, whether it is tagged). Types never
change, so this module reads each once and keeps it: the same conversions and the same C calls,
without dozens of FFI calls of type reflection per call.

It relies on wasmtime-py internals that are the same from 44 to 51 (`_func.Func._func`,
`_linker.func_impl`'s shape, `_enter`); `usable()` checks them once, and where they differ the
stock paths are used, which are slower but equivalent."""
from __future__ import annotations

from ctypes import CFUNCTYPE, byref, c_void_p, create_string_buffer, memmove, pointer
from typing import Any, Callable, Dict, List, Optional, Tuple

from wasmtime import _bindings
from wasmtime import _ffi as ffi
from wasmtime.component import _enter
from wasmtime.component import _types as component_types
from wasmtime.component._types import FuncType

from . import _lift

_REQUIRED = ("wasmtime_component_func_call", "wasmtime_component_val_t", "wasmtime_component_val_delete",
             "wasmtime_component_func_callback_t", "wasmtime_component_linker_instance_add_func")


def usable() -> bool:
    return all(hasattr(ffi, name) for name in _REQUIRED) and hasattr(_enter, "enter_wasm") and hasattr(
        _enter, "catch_exceptions")


# ---- value types ------------------------------------------------------------------------------

#: The parts of a value type wasmtime-py reads again on every conversion: (class, attribute).
_TYPE_PARTS = (("ListType", "element"), ("RecordType", "fields"), ("TupleType", "elements"),
               ("VariantType", "cases"), ("EnumType", "names"), ("EnumType", "names_count"),
               ("OptionType", "payload"), ("ResultType", "ok"), ("ResultType", "err"), ("FlagsType", "names"))
#: Methods computed from those parts alone.
_TYPE_FACTS = (("ListType", "_is_bytes"), ("VariantLikeType", "_tagged"))
_types_cached = [False]


def _memo_property(prop: property, key: str) -> property:
    getter = prop.fget

    def get(self: Any) -> Any:
        cache = self.__dict__
        if key not in cache:
            cache[key] = getter(self)
        return cache[key]

    return property(get, doc=prop.__doc__)


def _memo_method(method: Callable[[Any], Any], key: str) -> Callable[[Any], Any]:
    def call(self: Any) -> Any:
        cache = self.__dict__
        if key not in cache:
            cache[key] = method(self)
        return cache[key]

    return call


def _bytes_to_capi(s: Any) -> Any:
    """wasmtime-py's `bytes_to_capi` without its intermediate ctypes array: every string that
    enters the guest (each record field's name among them) is copied once, not twice."""
    if type(s) is not bytes:
        return _stock_bytes_to_capi(s)
    vec = ffi.wasm_byte_vec_t()
    ffi.wasm_byte_vec_new_uninitialized(byref(vec), len(s))
    if s:
        memmove(vec.data, s, len(s))
    return vec


_stock_bytes_to_capi = getattr(ffi, "bytes_to_capi", None)


def install_type_caches() -> None:
    """Each value type object remembers its parts once read, and strings are copied in once.
    Idempotent; a part this version of wasmtime-py does not have is left alone."""
    if _types_cached[0]:
        return
    if _stock_bytes_to_capi is not None and hasattr(ffi, "wasm_byte_vec_new_uninitialized"):
        ffi.bytes_to_capi = _bytes_to_capi  # str_to_capi looks it up in the module each call
    for cls_name, attr in _TYPE_PARTS:
        cls = getattr(component_types, cls_name, None)
        prop = cls.__dict__.get(attr) if cls is not None else None
        if isinstance(prop, property) and prop.fget is not None:
            setattr(cls, attr, _memo_property(prop, f"_self_evolve_{attr}"))
    for cls_name, attr in _TYPE_FACTS:
        cls = getattr(component_types, cls_name, None)
        method = cls.__dict__.get(attr) if cls is not None else None
        if callable(method):
            setattr(cls, attr, _memo_method(method, f"_self_evolve_{attr}"))
    _types_cached[0] = True


# ---- exports ---------------------------------------------------------------------------------


class ExportCaller:
    """One export function with its parameter and result types read once, and its result lifted
    in bulk (`_lift`) where the result's type allows."""

    __slots__ = ("_func", "_ref", "_type", "_params", "_result", "_lift", "_array", "_no_params")

    def __init__(self, func: Any, store: Any):
        self._func = func
        self._ref = byref(func._func)  # `func` is kept, so the struct this points into lives on
        self._type = func.type(store)  # kept: the value types below were read from it
        self._params = [ty for _name, ty in self._type.params]
        self._result = self._type.result
        self._lift = _lift.lifter(self._result)
        self._array = ffi.wasmtime_component_val_t * len(self._params)
        #: A call without parameters writes nothing into its (empty) parameter array: one serves every call.
        self._no_params = self._array() if not self._params else None

    def __call__(self, store: Any, *params: Any) -> Any:
        tys = self._params
        if len(params) != len(tys):
            raise TypeError(f"wrong number of parameters provided: given {len(params)}, expected {len(tys)}")
        if self._no_params is not None:
            return self._invoke(store, self._no_params, 0)
        param_capi = self._array()
        n = 0
        try:
            for ty, val in zip(tys, params):
                ty.convert_to_c(store, val, pointer(param_capi[n]))
                n += 1
            return self._invoke(store, param_capi, n)
        finally:
            for i in range(n):
                ffi.wasmtime_component_val_delete(byref(param_capi[i]))

    def _invoke(self, store: Any, param_capi: Any, n: int) -> Any:
        if self._result is None:
            error = _RAW_FUNC_CALL(self._ref, store._context(), param_capi, n, None, 0)
            if error:
                _enter.enter_wasm(lambda: error)  # raises it, with an import's exception if one was kept
            return None
        space = ffi.wasmtime_component_val_t()
        error = _RAW_FUNC_CALL(self._ref, store._context(), param_capi, n, byref(space), 1)
        if error:
            _enter.enter_wasm(lambda: error)
        if self._lift is not None:
            return _lift_result(self._lift, space, self._result)
        return self._result.convert_from_c(space)


# The ctypes functions themselves (private names of `wasmtime._bindings`, which `_ffi`'s star
# import leaves out), not wasmtime-py's one-line Python wrappers around them.
_RAW_FUNC_CALL = getattr(_bindings, "_wasmtime_component_func_call", None) or ffi.wasmtime_component_func_call
#: `store.set_epoch_deadline(ticks)` is `set_epoch_deadline(store._context(), ticks)`; it runs before every call.
set_epoch_deadline = (getattr(_bindings, "_wasmtime_context_set_epoch_deadline", None)
                      or ffi.wasmtime_context_set_epoch_deadline)


def _lift_result(lift: Callable[[bytes, int], Any], space: Any, _ty: Any) -> Any:
    """A result through its bulk lifter (tests put a comparison with the stock conversion here)."""
    return _lift.lift_and_free(lift, space)


def export_caller(func: Any, store: Any) -> Callable[..., Any]:
    return ExportCaller(func, store) if usable() else func


# ---- imports ---------------------------------------------------------------------------------

#: Host functions by index: (the function, its (parameter types, result type) once read).
_FUNCTIONS: Dict[int, List[Any]] = {}
_next_index = [1]


def _types_of(entry: List[Any], store: Any, ty_raw: Any) -> Tuple[List[Any], Optional[Any]]:
    types = entry[1]
    if types is None:
        with FuncType._from_ptr(ty_raw, owner=store) as fty:
            # The value types are copies the FuncType hands out: they outlive `ty_raw`.
            types = ([ty for _name, ty in fty.params], fty.result)
        entry[1] = types
    return types


def _func_impl(idx: Any, context: Any, ty_raw: Any, args: Any, nargs: int, results: Any, nresults: int) -> Any:
    def run(store: Any) -> None:
        entry = _FUNCTIONS[idx or 0]
        params, result_ty = _types_of(entry, store, ty_raw)
        if len(params) != nargs:  # never seen: one name, one type; read it afresh if it happens
            entry[1] = None
            params, result_ty = _types_of(entry, store, ty_raw)
        value = entry[0](store, *[ty.convert_from_c(args[i]) for i, ty in enumerate(params)])
        if result_ty is not None:
            result_ty.convert_to_c(store, value, results)

    return _enter.catch_exceptions(context, run)


def _finalize(idx: Any) -> None:
    _FUNCTIONS.pop(idx or 0, None)


# Built once, kept alive for the process: the C side holds these pointers.
_FUNC_IMPL = ffi.wasmtime_component_func_callback_t(_func_impl) if usable() else None
_FINALIZE = CFUNCTYPE(None, c_void_p)(_finalize)


#: A KeyboardInterrupt or SystemExit raised inside an import, kept for the host to re-raise
#: once the call has ended (host.py). Let through, it would cross the C callback and crash.
_escaped: List[BaseException] = []


def take_escaped() -> Optional[BaseException]:
    """The interrupt an import caught during the last call, if any (and forget every other)."""
    first = _escaped[0] if _escaped else None
    _escaped.clear()
    return first


def _contained(fn: Callable[..., Any]) -> Callable[..., Any]:
    def call(store: Any, *args: Any) -> Any:
        try:
            return fn(store, *args)
        except Exception:
            raise
        except BaseException as e:  # noqa: BLE001 - Ctrl-C, sys.exit: trap the call, re-raise after
            _escaped.append(e)
            raise RuntimeError(f"the host was interrupted ({type(e).__name__}) inside an import") from None

    return call


def add_import(instance: Any, name: str, fn: Callable[..., Any]) -> None:
    """`instance.add_func(name, fn)`, with the function's types read on its first call only, and
    an interrupt inside it turned into a trap of the call (see `take_escaped`)."""
    fn = _contained(fn)
    if _FUNC_IMPL is None:
        instance.add_func(name, fn)
        return
    instance._assert_not_locked()
    idx = _next_index[0]
    _next_index[0] += 1
    _FUNCTIONS[idx] = [fn, None]
    name_bytes = name.encode("utf-8")
    err = ffi.wasmtime_component_linker_instance_add_func(instance.ptr(), create_string_buffer(name_bytes),
                                                          len(name_bytes), _FUNC_IMPL, idx, _FINALIZE)
    if err:
        _FUNCTIONS.pop(idx, None)
        from wasmtime import WasmtimeError

        raise WasmtimeError._from_ptr(err)
