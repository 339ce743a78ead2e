"""Python host benchmarks, the rows of the Rust host's (`cargo bench -p self-evolve-host --bench
host`): cold compile, load from the disk cache, instantiate, an empty export call, a turn end
that is not due, a create in a library of 1,000 skills, and replay per event against the Rust
CLI on the same generated session (identical output checked).

    ./build.sh && cargo build --release -p self-evolve
    hosts/python/.venv-wasmtime-50.0.1/bin/python hosts/python/bench/bench.py [EVENTS]
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, List

from self_evolve import ManualClock, load_plugin, user_context
from self_evolve import engine as engine_module
from self_evolve.replay import read_events, replay

ROOT = Path(__file__).resolve().parents[3]
WASM = ROOT / "dist" / "self-evolve.wasm"
SERVICES = ["tools", "commands", "system-prompt", "agents", "subagents"]
START = 1767225600000


def measure(name: str, iterations: int, f: Callable[[], object]) -> float:
    """Median and p95 of `iterations` runs after one warm-up, printed as the Rust bench prints them."""
    f()
    samples: List[float] = []
    for _ in range(iterations):
        t = time.perf_counter_ns()
        f()
        samples.append((time.perf_counter_ns() - t) / 1000.0)
    samples.sort()
    median = statistics.median(samples)
    p95 = samples[min(len(samples) - 1, len(samples) * 95 // 100)]
    print(f"{name:<44} median {fmt(median):>10}   p95 {fmt(p95):>10}   (n={iterations})", flush=True)
    return median


def fmt(us: float) -> str:
    return f"{us / 1000:.2f} ms" if us >= 1000 else f"{us:.2f} µs"


def fresh_memo() -> None:
    engine_module._loaded.clear()


def tag(i: int) -> str:
    """A word of its own per number (letters only: the duplicate check drops digits)."""
    letters = "bcdfghjklmnpqrstvwxz"
    out = ""
    i += 1
    while i:
        i, r = divmod(i - 1, len(letters))
        out = letters[r] + out
    return out + "o"


def session_file(directory: str, n: int) -> str:
    """The Node bench's session: users, tool results, assistants and turn ends over 20 sessions."""
    lines = []
    t = 0
    for i in range(n // 4):
        s = f"s{i % 20}"
        t += 1000
        lines.append({"t": t, "type": "user", "session": s, "text": f"step {i}: run the tests again", "human": True})
        lines.append({"t": t, "type": "tool", "session": s, "tool": "bash", "args": {"cmd": "pnpm test"}, "ok": True,
                      "output": "212 passed"})
        lines.append({"t": t, "type": "assistant", "session": s, "text": "All 212 tests pass."})
        lines.append({"t": t, "type": "turn-end", "session": s, "status": "completed", "origin": "user", "depth": 0})
    path = os.path.join(directory, "session.jsonl")
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines))
    return path


def main() -> None:
    events_wanted = int(sys.argv[1]) if len(sys.argv) > 1 else 40_000
    print(f"component size {WASM.stat().st_size} bytes; wasmtime-py {engine_module.wasmtime_version()}; "
          f"Python {sys.version.split()[0]}")
    work = tempfile.mkdtemp(prefix="se-py-bench-")
    cache = Path(work) / "cache"

    def cold() -> None:
        fresh_memo()
        load_plugin(fs={"state": f"{work}/cold"}, cache_dir=False)

    measure("cold compile + instantiate (no cache)", 3, cold)
    load_plugin(fs={"state": f"{work}/s"}, cache_dir=cache)

    def from_disk() -> None:
        fresh_memo()
        load_plugin(fs={"state": f"{work}/s"}, cache_dir=cache)

    measure("load from disk cache + instantiate", 20, from_disk)
    plugin = load_plugin(fs={"state": f"{work}/s"}, cache_dir=cache)
    measure("instantiate (linker ready, fresh Store)", 200, plugin._instantiate)
    measure("load_plugin, component in memory", 100, lambda: load_plugin(fs={"state": f"{work}/s"}, cache_dir=cache))
    measure("empty export round trip (events.tick)", 20_000, plugin.tick)

    home = Path(work) / "home"
    p = load_plugin(fs={"user_skills": str(home / "skills"), "state": str(home / "state")}, clock=ManualClock(START),
                    cache_dir=cache)
    p.init('{"review":{"turnInterval":10000,"toolCallThreshold":100000}}', SERVICES)
    ctx = user_context("s1")
    measure("turn-end, not due", 5_000, lambda: p.turn_end(ctx, "completed"))
    measure("tools.list round trip", 5_000, p.tools_list)

    for i in range(1000):
        folder = home / "skills" / f"lib-{tag(i)}"
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: lib-{tag(i)}\ndescription: {tag(4 * i)} {tag(4 * i + 1)} {tag(4 * i + 2)}. Use when testing.\n"
            f"---\n# Steps\n\n1. Do it.\n", encoding="utf-8")
    p.tools_call(ctx, "skill_manage", '{"action":"list"}')
    created = iter(range(10_000, 20_000))

    def create() -> None:
        i = next(created)
        args = {"action": "create", "name": f"bench-{tag(i)}", "body": "Steps.\n",
                "description": f"{tag(4 * i)} {tag(4 * i + 1)} {tag(4 * i + 2)} {tag(4 * i + 3)}. Use when testing."}
        answer = json.loads(p.tools_call(ctx, "skill_manage", json.dumps(args)))
        assert answer["status"] == "written", answer

    measure("create, 1,000 skills in the library", 50, create)

    session = session_file(work, events_wanted)
    events = read_events(session)
    t = time.perf_counter_ns()
    lines = replay(events, home=f"{work}/py-replay")
    py_ns = time.perf_counter_ns() - t
    print(f"replay: {len(events)} events, {len(lines)} decision lines")
    print(f"  python host  {py_ns / len(events) / 1000:.2f} µs/event  ({py_ns / 1e6:.0f} ms, in process)")
    cli = next((c for c in (ROOT / "target/release/self-evolve", ROOT / "target/debug/self-evolve") if c.is_file()), None)
    if cli is None:
        print("  rust host    not built (cargo build --release -p self-evolve)")
        return
    subprocess.run([str(cli), "--wasm", str(WASM), "inspect"], capture_output=True, check=True)
    t = time.perf_counter_ns()
    rust = subprocess.run([str(cli), "--wasm", str(WASM), "replay", session, "--json", "--home", f"{work}/rust-replay"],
                          capture_output=True, check=True)
    rust_ns = time.perf_counter_ns() - t
    same = rust.stdout.decode("utf-8") == "".join(f"{line}\n" for line in lines)
    print(f"  rust host    {rust_ns / len(events) / 1000:.2f} µs/event  ({rust_ns / 1e6:.0f} ms, {cli.parent.name} CLI "
          f"incl. start-up)")
    print(f"  ratio python/rust: {py_ns / rust_ns:.2f}x; identical output: {same}")


if __name__ == "__main__":
    main()
