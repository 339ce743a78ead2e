#!/usr/bin/env bash
# The demo's story: `./build.sh demo` runs it after building, and cli/tests/demo.rs runs it with
# the test build and holds its output to examples/demo.out, so the demo prints the same story
# every day: every step that reads the clock runs on replay's (t = 0 is 2026-01-01T00:00:00Z).
# Usage: examples/demo.sh CLI WASM HOME (HOME: an empty folder; kept afterwards).
set -euo pipefail
cd "$(dirname "$0")"
CLI=$1 WASM=$2 HOME_DIR=$3
step() { printf '\n==> %s\n' "$*"; }
se() { "$CLI" --wasm "$WASM" "$@"; }

mkdir -p "$HOME_DIR/skills"
cp -R library/. "$HOME_DIR/skills/"
step "the capability manifest"
se inspect --home "$HOME_DIR" --project "$HOME_DIR/project"
# The clock: t = 0 is 2026-01-01T00:00:00Z (replay's default), and the example library was
# written relative to it (deploy-staging 78 days before, node-tooling 59), so the curator finds
# the same idle skills whatever today's date is.
step "replaying session.jsonl into the demo home (gate answers: gate-replies.json; the clock starts at 2026-01-01T00:00Z)"
se replay session.jsonl --home "$HOME_DIR" --gate-replies gate-replies.json
step "the review loop: review-loop.jsonl (lenses, falsifiers, a failed test, a fix, a verdict)"
se replay review-loop.jsonl --home "$HOME_DIR"
# The operator's look afterwards, on the same clock an hour after t = 0 (the CLI's `skills` would
# run on today's date, where writes staged "on 2026-01-01" are past their 14-day life).
step "an hour later, the operator: the library, pending writes, what the reviews did, deploy-staging's versions (operator.jsonl)"
se replay operator.jsonl --home "$HOME_DIR"
step "the gate's decisions (gate-stats over gates.jsonl)"
se gate-stats "$HOME_DIR/self-evolve/gates.jsonl"
