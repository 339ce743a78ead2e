#!/usr/bin/env python3
"""Scores a gitleaks JSON report against the labelled corpus (labels.json beside this file).

Per OUR rule: how many labelled lines gitleaks flagged (any gitleaks rule, same file, the line
inside the finding's StartLine..EndLine). False alarms: gitleaks findings on negative files or
on positive files away from every labelled line. Python 3 stdlib only.

  gitleaks dir tests/scan-corpus/cases --no-banner --report-format json \
      --report-path /tmp/gitleaks-corpus.json --exit-code 0 --gitleaks-ignore-path /tmp/empty
  python3 tests/scan-corpus/compare_gitleaks.py /tmp/gitleaks-corpus.json [-v]
"""

import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent


def corpus_path(file):
    """gitleaks prints the path as given on the command line; keep it from `cases/` on."""
    file = file.replace("\\", "/")
    i = file.find("cases/")
    return file[i:] if i >= 0 else file


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("-")]
    verbose = "-v" in sys.argv
    report_path = args[0] if args else "/tmp/gitleaks-corpus.json"
    labels = json.loads((HERE / "labels.json").read_text())
    report = json.loads(Path(report_path).read_text())

    findings = defaultdict(list)  # path -> [(start, end, gitleaks rule)]
    for f in report:
        findings[corpus_path(f["File"])].append((f["StartLine"], f["EndLine"], f["RuleID"]))

    kinds = {e["path"]: e["kind"] for e in labels["files"]}
    expected, flagged = Counter(), Counter()
    misses, alarms = [], []
    via = defaultdict(Counter)  # our rule -> gitleaks rules that caught it
    for e in labels["files"]:
        hits = findings.get(e["path"], [])
        lines = {x["line"] for x in e["expect"]}
        for x in e["expect"]:
            expected[x["rule"]] += 1
            caught = [g for s, t, g in hits if s <= x["line"] <= t]
            if caught:
                flagged[x["rule"]] += 1
                via[x["rule"]].update(set(caught))
            else:
                misses.append(f'{e["path"]}:{x["line"]} {x["rule"]}')
        for s, t, g in hits:
            if not any(s <= n <= t for n in lines):
                alarms.append((e["path"], s, g))
    unknown = [p for p in findings if p not in kinds]

    print(f"{'our rule':26} {'expected':>8} {'gitleaks':>8} {'missed':>6}  gitleaks rules that fired")
    for rule in sorted(expected):
        print(f"{rule:26} {expected[rule]:8} {flagged[rule]:8} {expected[rule] - flagged[rule]:6}  "
              + ", ".join(sorted(via[rule])))
    total, found = sum(expected.values()), sum(flagged.values())
    print(f"{'TOTAL':26} {total:8} {found:8} {total - found:6}  recall {found / total:.1%}")
    rules_full = sum(1 for r in expected if flagged[r] == expected[r])
    rules_none = sum(1 for r in expected if flagged[r] == 0)
    print(f"rules fully caught: {rules_full}/{len(expected)}; rules never caught: {rules_none}")

    neg_alarms = [a for a in alarms if kinds[a[0]] == "negative"]
    pos_alarms = [a for a in alarms if kinds[a[0]] == "positive"]
    neg_files = sum(1 for k in kinds.values() if k == "negative")
    print(f"\nfalse alarms: {len(alarms)} ({len(neg_alarms)} on {len({a[0] for a in neg_alarms})} of {neg_files}"
          f" negative files, {len(pos_alarms)} on unlabelled lines of positive files)")
    for g, n in Counter(a[2] for a in alarms).most_common():
        print(f"  {g:34} {n}")
    if unknown:
        print(f"findings in files not in labels.json: {unknown}")
    if verbose:
        print("\nmissed:")
        print("\n".join("  " + m for m in misses))
        print("false alarms:")
        print("\n".join(f"  {p}:{s} {g}" for p, s, g in sorted(alarms)))


if __name__ == "__main__":
    main()
