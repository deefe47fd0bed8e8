#!/usr/bin/env python3
"""The bug bank (spec issue: "proof of power"): every realistic bug, one at a
time, must be failed by the default `procroute conform` run (default seed,
1,000 traces) with a shrunk counterexample naming the rule it breaks.

Bugs: the built-in harness's `--fault NAME` (the bug bank's copy: tests/bug-bank/) and variants of
the Python template router (PROCROUTE_TEMPLATE_BUG, router.py). Prints a
markdown table (bug, rule, cases failed, counterexample length, seconds) and
exits non-zero if any bug passes or is not caught as its rule.

usage: .ci/bug-bank.py PROCROUTE_WITH_FAULTS [--jobs N] [--only NAME]
"""
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TEMPLATE = os.path.join(ROOT, "spec/harnesses/example-python")
PY_BUGS = {  # name -> rule (router.py's BUGS)
    "lifo": "DELIVER-5",
    "no-suppressed-count": "TEXT-4",
    "breaker-16": "PROC-6",
    "kill-silent": "PROC-7",
    "retry-forever": "DELIVER-4",
    "read-consumes": "PROC-10",
    "tail-uncapped": "PROC-7",
    "excerpt-keeps-cr": "PROC-3",
}


def run(exe, label, rule, impl, env):
    t = time.time()
    p = subprocess.run(
        [exe, "conform", "--law-cases", "0", "--dialect-cases", "0", "--format", "json", "--jobs", "1",
         "--save", os.path.join(ROOT, "target/bug-bank", label), "--impl", impl],
        capture_output=True, text=True, env=env, cwd=ROOT)
    secs = time.time() - t
    try:
        report = json.loads(p.stdout)
    except ValueError:
        return dict(label=label, rule=rule, ok=False, why=f"no report: {p.stderr[-300:]}", secs=secs)
    failed = [o for o in report["outcomes"] if not o["passed"]]
    named = [o for o in failed if rule in o["rules"]]
    shrunk = [o for o in named if "shrunk from" in (o.get("detail") or "")]
    length = None
    if shrunk:
        m = re.search(r"shrunk from (\d+) to (\d+) step", shrunk[0]["detail"])
        length = f"{m.group(2)} (from {m.group(1)})" if m else "?"
    ok = p.returncode != 0 and bool(shrunk)
    why = "" if ok else ("passes" if not failed else f"not failed as {rule} with a shrunk counterexample")
    return dict(label=label, rule=rule, ok=ok, why=why, failed=len(failed), named=len(named),
                length=length, secs=secs, first=(shrunk[0]["id"] if shrunk else ""))


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    exe = os.path.abspath(args[0])
    jobs = int(args[args.index("--jobs") + 1]) if "--jobs" in args else 2
    only = args[args.index("--only") + 1] if "--only" in args else None
    listed = subprocess.run([exe, "harness", "--list-faults"], capture_output=True, text=True,
                            check=True).stdout.split("\n")
    work = []
    for line in filter(None, listed):
        name, rule = line.split()
        work.append((f"fault:{name}", rule, f"{exe} harness --fault {name}", dict(os.environ)))
    for name, rule in PY_BUGS.items():
        env = dict(os.environ, PROCROUTE_TEMPLATE_BUG=name)
        work.append((f"python:{name}", rule, f"python3 {TEMPLATE}/harness.py", env))
    if only:
        work = [w for w in work if only in w[0]]
    if len(work) < 30 and not only:
        sys.exit(f"the bank has {len(work)} bugs; it must have at least 30")
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        results = list(pool.map(lambda w: run(exe, *w), work))
    print("| bug | rule | traces failed (as the rule) | shrunk counterexample (steps) | seconds |")
    print("|---|---|---:|---|---:|")
    for r in results:
        if r["ok"]:
            print(f"| `{r['label']}` | {r['rule']} | {r['failed']} ({r['named']}) | {r['length']} `{r['first']}` | {r['secs']:.1f} |")
        else:
            print(f"| `{r['label']}` | {r['rule']} | **{r['why']}** | | {r['secs']:.1f} |")
    rules = sorted({r["rule"] for r in results})
    print(f"\n{sum(r['ok'] for r in results)} of {len(results)} bugs caught; rules covered: {', '.join(rules)}")
    if not all(r["ok"] for r in results):
        sys.exit(1)


if __name__ == "__main__":
    main()
