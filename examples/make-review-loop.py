"""Writes examples/review-loop.jsonl: the review loop (seed 003) as a replay scene.

Session s1 finishes a change to its lock file and asks for a review. Iteration 1: five lenses
start at once; the adversarial lens finds a real bug, ship-readiness a speculative one that its
falsifier disproves, the simplicity lens answers in prose (one recorded failure), and the host's
test run fails. The loop continues; after the fix, iteration 2 is clean and the verdict names
what was fixed. Then session s2, which wrote the code it asks to review, is stopped before any
reviewer starts, and a plan review that carries test results is refused (execution-grounded checks
are code mode's). Children take the queued `reviewer` scripts in start order: the lenses, then
one falsifier per finding as each lens reply arrives.
"""
import json

DIFF1 = open("tests/fixtures/lock.diff").read()  # shared with the Rust tests
DIFF2 = DIFF1.replace("remove_stale_lock(path, owner)", "remove_stale_lock_if_owner_dead(path, owner)")

M = 60_000
ev = []
def add(**k): ev.append(k)
def lens(findings): add(t=t, type="reviewer", text=json.dumps(findings) if not isinstance(findings, str) else findings)
def falsifier(falsified, evidence=""):
    add(t=t, type="reviewer", text=json.dumps({"falsified": True, "evidence": evidence} if falsified else {"falsified": False}))

base = dict(session="s1", mode="code", files=["src/lock.rs"], repo="/work/checkout", branch="feat/stale-locks",
            commit="9f1c2ab4e07d", auto=False)

t = 1 * M
lens("Looks good to me, nice and simple!")                         # simplicity: prose, not JSON
lens([])                                                            # design-coherence
lens([{"file": "src/lock.rs", "line": 6, "severity": "high", "confidence": 90, "load_bearing": True,
       "category": "concurrency", "fix": "remove the lock only when its owner is dead",
       "claim": "take_lock removes a stale lock of another owner without checking the owner is gone"}])
lens([{"file": "src/lock.rs", "line": 5, "severity": "low", "confidence": 60, "load_bearing": False,
       "category": "tests", "claim": "take_lock has no test for the create_new failure path"}])
lens([])                                                            # statistical-rigor
falsifier(False)                                                    # the adversarial finding stands
falsifier(True, "tests/lock.rs::stale_lock_is_removed covers the create_new failure path")
add(t=t, type="review-loop", artifact=DIFF1,
    commands=[{"name": "lint", "exitCode": 0},
              {"name": "test", "exitCode": 101, "stderrTail": "test lock::two_owners ... FAILED\nerror: test failed"}],
    **base)

t = 9 * M
for _ in range(5):
    lens([])
add(t=t, type="review-loop", artifact=DIFF2,
    commands=[{"name": "lint", "exitCode": 0}, {"name": "test", "exitCode": 0}], **base)

t = 12 * M
add(t=t, type="review-loop", session="s2", mode="code", artifact=DIFF2, files=["src/lock.rs"], repo="/work/checkout",
    branch="feat/stale-locks", independence={"selfAuthored": ["src/lock.rs"]}, commands=[])

t = 13 * M
add(t=t, type="review-loop", session="s3", mode="plan", artifact="# Rollout plan\n\n1. Ship it.\n", files=["docs/rollout-plan.md"],
    commands=[{"name": "test", "exitCode": 0}])

# The demo scene, and the same scene as a conformance scenario both hosts must replay alike.
for path in ["examples/review-loop.jsonl", "tests/conformance/review-loop.jsonl"]:
    with open(path, "w") as f:
        for e in ev:
            f.write(json.dumps(e, ensure_ascii=False) + "\n")
