"""`python -m self_evolve replay FILE.jsonl [--home DIR] [--gate-replies FILE] [--start MS]`:
replays a recorded session and prints the decision lines (as `self-evolve replay --json`)."""
from __future__ import annotations

import argparse
import json
import os
import sys
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
    args = parser.parse_args(argv)
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


if __name__ == "__main__":
    sys.exit(main())
