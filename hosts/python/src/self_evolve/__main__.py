"""`python -m self_evolve replay FILE.jsonl [--home DIR] [--gate-replies FILE] [--start MS]`:
replays a recorded session and prints the decision lines (as `self-evolve replay --json`).

`python -m self_evolve inspect [--wasm PATH]`: where the component comes from, its size and
sha256, and the capabilities it imports and the interfaces it exports (as `self-evolve inspect`)."""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import List, Optional

from .host import ConfigError, PluginError
from .lines import visible_json
from .replay import ReplayError, home_for_run, read_events, replay, start_ms


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m self_evolve")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("replay", help="replay a recorded session and print its decision lines")
    run.add_argument("file", help="the replay, one JSON event per line (DESIGN.md, \"Replay format\")")
    run.add_argument("--json", action="store_true", help="accepted for parity with the other hosts; lines are always JSON")
    run.add_argument("--home", help="the folder holding skills/, self-evolve/ and project/ (default: a new temporary one)")
    run.add_argument("--gate-replies", help="a JSON list of replies for a scripted gate on 127.0.0.1")
    run.add_argument("--start", help="the clock at t=0: `now` or milliseconds since the epoch")
    run.add_argument("--wasm", help="the component to run (default: the packaged or built self-evolve.wasm)")
    look = commands.add_parser("inspect", help="show where the component comes from and what it imports and exports")
    look.add_argument("--wasm", help="the component to inspect (default: the packaged or built self-evolve.wasm)")
    args = parser.parse_args(argv)
    if args.command == "inspect":
        return inspect(args.wasm)
    # A replay acts as the operator on its home, with the file's own config: inside a live
    # reviewer it may only replay into a fresh home of its own (as the Rust and Node CLIs).
    activation = os.environ.get("SELF_EVOLVE_ACTIVATION")
    if activation and args.home:
        sys.stderr.write(f"self-evolve-py: this runs inside reviewer {visible_json(json.dumps(activation, ensure_ascii=False))} (SELF_EVOLVE_ACTIVATION): "
                         "a replay into an existing home acts as the operator, so it is refused here; leave out --home "
                         "to replay into a fresh folder\n")
        return 1
    try:
        events = read_events(args.file)
        start = start_ms(args.start)
        home = args.home or home_for_run()
        gate = None
        if args.gate_replies:
            from .gate_server import serve_gate_replies

            gate = serve_gate_replies(args.gate_replies)
        try:
            replay(events, home=home, start_ms=start, gate_url=gate.url if gate else None, wasm=args.wasm,
                   on_line=lambda line: print(visible_json(line), flush=True))
        finally:
            if gate:
                gate.stop()
    except (ReplayError, ConfigError, PluginError, OSError) as e:
        sys.stderr.write(f"self-evolve-py: {e}\n")
        return 1
    return 0


def inspect(wasm: Optional[str]) -> int:
    """What `self-evolve inspect` prints first, for the component this host would run."""
    from wasmtime import WasmtimeError

    from . import engine as eng
    from ._adapter import iface

    def say(text: str) -> None:
        # Names and paths come from the component or the command line: shown, never obeyed.
        print(visible_json(text), flush=True)

    try:
        path = Path(wasm) if wasm else eng.default_wasm()
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            named = " (named by --wasm)" if wasm else " (named by SELF_EVOLVE_WASM)" if os.environ.get("SELF_EVOLVE_WASM") else ""
            sys.stderr.write(f"self-evolve-py: no component at {visible_json(str(path))}{named}\n")
            return 1
        loaded = eng.load_component(path, eng.default_cache_dir())
    except WasmtimeError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        sys.stderr.write(f"self-evolve-py: {visible_json(str(path))}: not a component wasmtime-py can load: {first}\n")
        return 1
    except OSError as e:
        sys.stderr.write(f"self-evolve-py: {e}\n")
        return 1
    packaged = Path(eng.__file__).resolve().parent / "data" / "self-evolve.wasm"
    if path.resolve() == packaged:
        say(f"component  packaged in self_evolve ({len(data)} bytes)")
    else:
        say(f"component  {path}")
    say(f"size       {len(data)} bytes ({len(data) / 1024:.1f} KiB)")
    say(f"sha256     {loaded.sha256}")
    say(f"cache      {loaded.cache}")
    say(f"wasmtime   wasmtime-py {eng.wasmtime_version()}")
    listed = _imports_and_exports(loaded.component)
    if listed is None:
        say(f"imports and exports: wasmtime-py {eng.wasmtime_version()} cannot list a component's; "
            "this host provides these imports (the capabilities it may ask for):")
        for name in ("fs", "http", "subagent", "clock", "log"):
            say(f"  {iface(name)}")
        return 0
    imports, exports = listed
    say("imports (the capabilities it asks for):")
    for name in imports:
        say(f"  {name}")
    say("exports:")
    for name in exports:
        say(f"  {name}")
    return 0


def _imports_and_exports(compiled: object) -> Optional[tuple]:
    """The component's import and export names in its order, or None where this wasmtime-py
    has no `Component.type` (44.0.0 and 50.0.1, the versions build.sh tests, both have it)."""
    from . import engine as eng

    try:
        ty = compiled.type  # type: ignore[attr-defined]
        return list(ty.imports(eng.engine())), list(ty.exports(eng.engine()))
    except AttributeError:
        return None


if __name__ == "__main__":
    sys.exit(main())
