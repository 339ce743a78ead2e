"""The process's one wasmtime `Engine` (epoch interruption on, a ticker thread advancing it) and
loading the component, with compiled code cached on disk keyed by the wasm's sha256 and the
wasmtime version, as the Rust host does (`host-test/src/engine.rs`)."""
from __future__ import annotations

import hashlib
import os
import threading
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Optional

import wasmtime
from wasmtime import component

#: How often the epoch advances; call deadlines are counted in these ticks.
EPOCH_TICK_MS = 5
EPOCH_TICK_S = EPOCH_TICK_MS / 1000

_engine: Optional[wasmtime.Engine] = None
_engine_lock = threading.Lock()
#: The ticks the ticker has added to the engine's epoch (wasmtime-py cannot read the epoch):
#: what call deadlines are measured against (`epoch()`).
_epoch_ticks = 0


def engine() -> wasmtime.Engine:
    """The process-wide engine; the first call starts the epoch ticker (a daemon thread: wasm
    runs with the GIL released, so the ticker advances while a call runs)."""
    global _engine
    with _engine_lock:
        if _engine is None:
            config = wasmtime.Config()
            config.epoch_interruption = True
            made = wasmtime.Engine(config)
            _start_ticker(made)
            _engine = made
        return _engine


def _start_ticker(e: wasmtime.Engine) -> None:
    threading.Thread(target=_tick, args=(e,), name="self-evolve-epoch", daemon=True).start()


def _after_fork_in_child() -> None:
    # A forked child has only the thread that forked: without a new ticker its calls would
    # have no deadline at all (multiprocessing forks by default on Linux before 3.14).
    global _engine_lock
    _engine_lock = threading.Lock()
    if _engine is not None:
        _start_ticker(_engine)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _tick(e: wasmtime.Engine) -> None:
    global _epoch_ticks
    while True:
        time.sleep(EPOCH_TICK_S)
        e.increment_epoch()
        _epoch_ticks += 1  # the only writer: this thread (a forked child's new one replaces it)


def epoch() -> int:
    """The engine's epoch as the ticker advanced it (at most a tick behind): deadlines set with
    `set_epoch_deadline(context, ticks)` fall at `epoch() + ticks`."""
    return _epoch_ticks


def wasmtime_version() -> str:
    try:
        return metadata.version("wasmtime")
    except metadata.PackageNotFoundError:
        return "unknown"


def default_cache_dir() -> Optional[Path]:
    """`$SELF_EVOLVE_CACHE_DIR`, else `$XDG_CACHE_HOME/self-evolve`, else `~/.cache/self-evolve`."""
    if os.environ.get("SELF_EVOLVE_CACHE_DIR"):
        return Path(os.environ["SELF_EVOLVE_CACHE_DIR"])
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "self-evolve"
    home = os.environ.get("HOME")
    return Path(home) / ".cache" / "self-evolve" if home else None


def default_wasm() -> Path:
    """`$SELF_EVOLVE_WASM`, else the copy packaged with this module, else the checkout's dist/."""
    if os.environ.get("SELF_EVOLVE_WASM"):
        return Path(os.environ["SELF_EVOLVE_WASM"])
    here = Path(__file__).resolve().parent
    packaged = here / "data" / "self-evolve.wasm"
    if packaged.is_file():
        return packaged
    checkout = here.parents[3] / "dist" / "self-evolve.wasm" if len(here.parents) > 3 else packaged
    if checkout.is_file():
        return checkout
    raise FileNotFoundError(
        f"no self-evolve.wasm: not packaged at {packaged} nor built at {checkout}; "
        "run ./build.sh in the repository or set SELF_EVOLVE_WASM"
    )


@dataclass
class Loaded:
    component: component.Component
    #: "memory" (this process had it), "hit" (disk cache), "miss" (compiled now) or "disabled".
    cache: str
    sha256: str


_loaded: dict = {}


def load_component(wasm: Path, cache_dir: Optional[Path]) -> Loaded:
    data = wasm.read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    key = (sha, str(cache_dir))
    if key in _loaded:
        return Loaded(_loaded[key].component, "memory", sha)
    e = engine()
    if cache_dir is None:
        loaded = Loaded(component.Component(e, data), "disabled", sha)
    else:
        loaded = _through_cache(e, data, sha, cache_dir)
    _loaded[key] = loaded
    return loaded


def _through_cache(e: wasmtime.Engine, data: bytes, sha: str, cache_dir: Path) -> Loaded:
    # The version is part of the name: compiled code from another wasmtime is never tried.
    path = cache_dir / f"py-wasmtime-{wasmtime_version()}-{sha[:40]}.cwasm"
    if path.is_file():
        try:
            # Read into memory, not `deserialize_file`: that maps the file, and a cache file
            # truncated or rewritten in place by anyone later kills this process with SIGBUS.
            return Loaded(component.Component.deserialize(e, path.read_bytes()), "hit", sha)
        except Exception:  # noqa: BLE001 - a damaged or foreign cache file: compile again
            pass
    compiled = component.Component(e, data)
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        # A unique temporary name, renamed into place: two processes filling the cache at once
        # never read a half-written file.
        tmp = cache_dir / f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp"
        tmp.write_bytes(bytes(compiled.serialize()))
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only cache costs a compile per process, nothing else
    return Loaded(compiled, "miss", sha)
