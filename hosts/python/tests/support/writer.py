"""One Python writer process of hosts/node/test/many-writers.test.js, the twin of
hosts/node/test-support/writer.js: loads the plugin over a home it shares with other processes
(Node workers, Rust replays, other Python writers), waits for the go file, then creates its own
skills, tries to create the contested ones, and appends unique notes to those with view then
patch, retrying on `conflict`. Prints `ready` once loaded, then one JSON report at the end, in
writer.js's shape: every success it saw, the conflicts it retried, any answer it did not expect.

    python tests/support/writer.py '{"home":…,"id":"p1","go":…,"own":5,"shared":4,"patches":20}'
"""
from __future__ import annotations

import json
import os
import re
import sys
import time

from self_evolve import Refused, load_plugin, user_context

SERVICES = ["tools", "commands", "system-prompt", "agents", "subagents"]
TRIES = 50
GO_WAIT_S = 120.0


# The same names, arguments and note lines as writer.js: the checker reads them all alike.
def create_args(name: str) -> dict:
    return {
        "action": "create",
        "name": name,
        "description": f"Procedure {name} for the stress test. Use when testing {name}.",
        "body": "# Steps\n\n1. Do it.\n\n## Notes\n",
    }


def own(worker: str, i: int) -> str:
    return f"{worker}-own-{i:02d}"


def shared(k: int) -> str:
    return f"shared-{k:02d}"


def note_line(worker: str, j: int) -> str:
    return f"- note {worker} {j}"


def patch_args(name: str, note: str) -> dict:
    return {"action": "patch", "name": name, "old_string": "## Notes\n", "new_string": f"## Notes\n{note}\n"}


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def main(spec: dict) -> None:
    home, worker, go = spec["home"], spec["id"], spec["go"]
    logs: list = []
    doing = ["loading"]  # the call in progress, to name it in what the plugin logs

    def on_log(level: str, message: str) -> None:
        if level not in ("debug", "info"):
            logs.append(f"{level} during {doing[0]}: {message}")

    # The system clock (the default): locks age by it.
    plugin = load_plugin(fs={"user_skills": os.path.join(home, "skills"), "state": os.path.join(home, "self-evolve")},
                         on_log=on_log)
    plugin.init('{"duplicateThreshold": 1.0}', SERVICES)
    ctx = user_context(f"s-{worker}")
    sys.stdout.write("ready\n")
    sys.stdout.flush()

    waited_from = time.monotonic()
    while not os.path.exists(go):
        if time.monotonic() - waited_from > GO_WAIT_S:
            raise RuntimeError("no go file")
        time.sleep(0.001)

    report: dict = {"id": worker, "created": [], "exists": [], "notes": [], "conflicts": 0, "notRead": 0, "notYet": 0,
                    "calls": 0, "unexpected": [], "warned": [], "logs": logs, "startMs": now_ms(), "endMs": 0}

    def call(args: dict):
        report["calls"] += 1
        second = f" {json.dumps(args['new_string'].split(chr(10))[1])}" if args.get("new_string") else ""
        doing[0] = f"call {report['calls']} ({args['action']} {args['name']}{second})"
        try:
            answer = (True, json.loads(plugin.tools_call(ctx, "skill_manage", json.dumps(args))))
        except Refused as r:
            answer = (False, json.loads(r.payload))
        if answer[0] and answer[1].get("warnings"):
            report["warned"].append({"what": f"{args['action']} {args['name']}", "answer": answer[1]})
        return answer

    def unexpected(what: str, answer) -> None:
        report["unexpected"].append({"what": what, "answer": answer})

    def create(name: str, contested: bool) -> None:
        for _ in range(TRIES):
            ok, v = call(create_args(name))
            if ok and v.get("status") == "written":
                report["created"].append(name)
                return
            if not ok and v.get("code") == "conflict":
                report["conflicts"] += 1
                continue
            if contested and not ok and v.get("code") == "exists":
                report["exists"].append(name)
                return
            unexpected(f"create {name}", v)
            return
        unexpected(f"create {name}", f"still conflicting after {TRIES} tries")

    for k in range(spec["shared"]):
        create(shared(k), True)
    for i in range(spec["own"]):
        create(own(worker, i), False)

    offset = int(re.sub(r"\D", "", worker) or 0)
    for j in range(spec["patches"]):
        name = shared((j + offset) % spec["shared"])
        note = note_line(worker, j)
        done = failed = False
        for _ in range(TRIES):
            if done or failed:
                break
            ok, v = call({"action": "view", "name": name})
            if not ok:
                if v.get("code") == "not-found":  # not created yet
                    report["notYet"] += 1
                    time.sleep(0.002)
                elif v.get("code") == "conflict":
                    report["conflicts"] += 1
                else:
                    unexpected(f"view {name}", v)
                    failed = True
                continue
            ok, v = call(patch_args(name, note))
            if ok and v.get("status") == "written":
                report["notes"].append([name, note])
                done = True
            elif not ok and v.get("code") == "conflict":
                report["conflicts"] += 1
            elif not ok and v.get("code") == "not-read":
                report["notRead"] += 1
            else:
                unexpected(f"patch {name} {note}", v)
                failed = True
        if not done and not failed:
            unexpected(f"patch {name} {note}", f"not written after {TRIES} tries")
    report["endMs"] = now_ms()
    sys.stdout.write(json.dumps(report) + "\n")


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
