#!/usr/bin/env bash
# Times a whole-library check on clean skills: 500 skill folders, each a SKILL.md of ~32 KB of
# ordinary Markdown (prose, headings, lists, tables, fenced code; no credentials), scanned by
# gitleaks and, when built, by `self-evolve check`. Each tool: one untimed warm-up run (also
# counts its findings), then 3 timed runs; prints the median wall time in seconds.
#
#   tests/scan-corpus/bench_check.sh [WORK_DIR]     (default: a fresh mktemp -d)
#
# GITLEAKS=/path/to/gitleaks picks the binary (else `gitleaks` on PATH, else /tmp/gl-venv/bin/gitleaks).
# SELF_EVOLVE=/path/to/self-evolve picks the CLI (else target/release/self-evolve; skipped when absent,
# or when SELF_EVOLVE=skip). `check` takes no --home: its home is given as SELF_EVOLVE_HOME.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:-$(mktemp -d)}
mkdir -p "$work"
skills="$work/skills"
rm -rf "$skills"

python3 - "$skills" <<'PY'
import random, sys
from pathlib import Path

root = Path(sys.argv[1])
TOPICS = ["release notes", "database migrations", "incident triage", "flaky tests", "dependency upgrades",
          "log search", "container images", "API pagination", "systemd timers", "performance regressions",
          "CSS audits", "infrastructure drift", "git history", "CSV imports", "feature flags", "cache warming",
          "queue backlogs", "schema reviews", "load testing", "accessibility checks", "translation files",
          "error budgets", "canary deploys", "cost reports", "on-call handover", "backup restores",
          "search relevance", "image resizing", "rate limiting", "webhook retries"]
SERVICES = ["orders", "billing", "catalog", "search", "notifier", "ledger", "shipping", "inventory", "reports"]
VERBS = ["check", "compare", "record", "review", "measure", "confirm", "trace", "summarise", "list", "inspect"]
NOUNS = ["the last deploy", "the slow queries", "the error rate", "the queue depth", "the cache hit ratio",
         "the changelog", "the open alerts", "the test timings", "the disk usage", "the p99 latency",
         "the pending migrations", "the retry counts", "the failing jobs", "the bundle size"]
SENT = ["Start by {verbing} {noun} for the {svc} service; it usually explains most of what follows.",
        "When working on {topic}, write down what you expect before running anything.",
        "If {noun} looks unusual, {verb} it against the previous week before drawing conclusions.",
        "The {svc} team owns this area, so leave a note in their channel when you change it.",
        "Most problems with {topic} come from a configuration change rather than from the code itself.",
        "Keep the output of each command; the next person will want to see exactly what you saw.",
        "Prefer small, reversible steps: {verb} {noun}, change one thing, then {verb} again.",
        "Staging mirrors production closely enough for {topic}, except for data volume.",
        "Do not skip the verification step even when the change looks trivial.",
        "A dashboard link belongs in the ticket, together with the time range you looked at.",
        "The {svc} service logs one structured line per request, which makes {noun} easy to follow.",
        "Ask for a second pair of eyes before touching anything that affects customers directly.",
        "Automate the boring part of {topic} only after doing it by hand at least twice.",
        "Timings vary between runs; repeat a measurement three times and keep the median.",
        "Record the commit you tested, the environment, and the exact command line."]
CODE = [
    ("bash", ["git log --oneline -20 -- services/{svc}/", "git diff --stat HEAD~5", "make -C services/{svc} test"]),
    ("bash", ["kubectl -n {svc} get pods -o wide", "kubectl -n {svc} rollout history deploy/{svc}",
              "kubectl -n {svc} logs deploy/{svc} --since=30m | grep -c ERROR"]),
    ("sql", ["SELECT date_trunc('hour', created_at) AS hour, count(*)", "FROM {svc}_events",
             "WHERE created_at > now() - interval '1 day'", "GROUP BY 1", "ORDER BY 1;"]),
    ("python", ["def summarise(rows):", "    totals = {}", "    for row in rows:",
                "        totals[row['kind']] = totals.get(row['kind'], 0) + row['count']",
                "    return sorted(totals.items(), key=lambda kv: -kv[1])"]),
    ("yaml", ["service: {svc}", "replicas: 3", "resources:", "  requests:", "    cpu: 250m", "    memory: 256Mi",
              "probes:", "  readiness: /healthz"]),
    ("json", ["{", '  "service": "{svc}",', '  "window": "24h",', '  "threshold": 0.95,', '  "notify": ["#{svc}-alerts"]', "}"]),
    ("rust", ["fn median(mut xs: Vec<f64>) -> f64 {", "    xs.sort_by(|a, b| a.total_cmp(b));",
              "    xs[xs.len() / 2]", "}"]),
    ("js", ["export function retry(fn, attempts = 3) {", "  return fn().catch((err) =>",
            "    attempts > 1 ? retry(fn, attempts - 1) : Promise.reject(err));", "}"]),
]

def para(r, ctx, n):
    out = []
    for _ in range(n):
        verb = r.choice(VERBS)
        verbing = (verb[:-1] if verb.endswith("e") else verb) + "ing"
        out.append(r.choice(SENT).format(verb=verb, verbing=verbing, noun=r.choice(NOUNS), **ctx))
    return " ".join(out)

def skill(r, i):
    topic, svc = r.choice(TOPICS), r.choice(SERVICES)
    ctx = {"topic": topic, "svc": svc}
    name = f"skill-{i:03d}-{topic.replace(' ', '-')}"
    out = ["---", f"name: {name}", f"description: Use when working on {topic} for the {svc} service; "
           "lists the steps, commands and checks that worked before.", "---", "",
           f"# {topic.capitalize()} for {svc}", "", para(r, ctx, 4), ""]
    n = 0
    while sum(len(x) + 1 for x in out) < 32 * 1024 - 1500:
        n += 1
        out += [f"## {r.choice(['Step', 'Check', 'Part', 'Stage'])} {n}: {r.choice(VERBS)} {r.choice(NOUNS)}", "",
                para(r, ctx, r.randint(3, 6)), ""]
        kind = r.random()
        if kind < 0.4:
            lang, lines = r.choice(CODE)
            out += [f"```{lang}"] + [l.replace("{svc}", svc) for l in lines] + ["```", ""]
        elif kind < 0.6:
            out += [f"- {para(r, ctx, 1)}" for _ in range(r.randint(3, 5))] + [""]
        elif kind < 0.75:
            out += [f"{k}. {r.choice(VERBS).capitalize()} {r.choice(NOUNS)}." for k in range(1, r.randint(4, 7))] + [""]
        elif kind < 0.85:
            out += ["| metric | before | after |", "| --- | --- | --- |"]
            out += [f"| {r.choice(NOUNS)[4:]} | {r.randint(10, 999)} | {r.randint(10, 999)} |" for _ in range(4)] + [""]
        out += [para(r, ctx, 2), ""]
    return name, "\n".join(out) + "\n"

for i in range(500):
    name, text = skill(random.Random(i), i)
    (root / name).mkdir(parents=True)
    (root / name / "SKILL.md").write_text(text)
PY

count=$(find "$skills" -name SKILL.md | wc -l)
bytes=$(find "$skills" -name SKILL.md -printf '%s\n' | awk '{ s += $1 } END { print s }')
echo "corpus: $count skill folders, $bytes bytes of SKILL.md in $skills"

now() { date +%s.%N; }
median3() { printf '%s\n' "$@" | sort -g | sed -n 2p; }

# time_runs NAME CMD...: one warm-up, three timed runs, median wall seconds.
time_runs() {
    local name=$1
    shift
    "$@" >/dev/null 2>&1 || true
    local runs=() t0 t1
    for _ in 1 2 3; do
        t0=$(now)
        "$@" >/dev/null 2>&1 || true
        t1=$(now)
        runs+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')")
    done
    printf '%-12s runs: %s  median: %.3f s\n' "$name" "$(printf '%.3f ' "${runs[@]}")" "$(median3 "${runs[@]}")"
}

gitleaks=${GITLEAKS:-$(command -v gitleaks || echo /tmp/gl-venv/bin/gitleaks)}
if [ -x "$gitleaks" ]; then
    mkdir -p "$work/no-ignore"
    "$gitleaks" dir "$skills" --no-banner --exit-code 0 --report-format json --report-path "$work/gitleaks.json" \
        --gitleaks-ignore-path "$work/no-ignore" >/dev/null 2>&1
    echo "gitleaks $("$gitleaks" version): $(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$work/gitleaks.json") finding(s) on the clean corpus"
    # Never --report-path /dev/null: gitleaks replaces the report file, and run as root that turns
    # /dev/null into a regular file (every later read of /dev/null then returns old output).
    time_runs gitleaks "$gitleaks" dir "$skills" --no-banner --exit-code 0 --report-format json \
        --report-path "$work/gitleaks-timed.json" --gitleaks-ignore-path "$work/no-ignore"
else
    echo "gitleaks: not found (set GITLEAKS)"
fi

self_evolve=${SELF_EVOLVE:-$repo/target/release/self-evolve}
if [ "$self_evolve" != skip ] && [ -x "$self_evolve" ]; then
    wasm=()
    [ -f "$repo/dist/self-evolve.wasm" ] && wasm=(--wasm "$repo/dist/self-evolve.wasm")
    export SELF_EVOLVE_HOME="$work/home" SELF_EVOLVE_CACHE_DIR="$work/cache"
    mkdir -p "$SELF_EVOLVE_HOME" "$SELF_EVOLVE_CACHE_DIR"
    rc=0
    "$self_evolve" "${wasm[@]}" check "$skills" >"$work/self-evolve.out" 2>&1 || rc=$?
    echo "self-evolve check: exit $rc; $(tail -1 "$work/self-evolve.out")"
    time_runs self-evolve "$self_evolve" "${wasm[@]}" check "$skills"
else
    echo "self-evolve: skipped (SELF_EVOLVE=skip, or no executable at $self_evolve)"
fi
