#!/usr/bin/env python3
"""The bug bank under exhaustive exploration (issue 21's proof): every bug
of the bank (.ci/bug-bank.py), one at a time, explored breadth first in
each declared scope (`procroute explore --scope default|data|limits`) to
the scope's depth, but no deeper than the bug's shortest known
counterexample (the bank's shrunk one, from TESTING.md's bank table): a
bug counts as found only with a counterexample no longer than that.

Faults of the built-in router run in-process (`explore --fault NAME`);
the Python template's bugs run over the protocol (`explore --impl`).
Prints a markdown table (bug, rule, known steps, steps found per scope,
rules named) and exits non-zero if a bug is not found, unless it is
declared beyond the small scope below with its reason.

By default each bug stops at the first scope that finds it, trying the
one recorded in FIRST first (CI); with `--every-scope` every scope runs in
order, and the bugs declared beyond or slow are explored too (the table
in BENCHMARKS.md).

usage: .ci/explore-bank.py PROCROUTE_WITH_FAULTS [--jobs N] [--only NAME] [--every-scope]
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
TEMPLATE = os.path.join(ROOT, "spec/harnesses/example-python/harness.py")
# name -> its default depth, cheapest first (a bug stops at the first
# scope that finds it unless --every-scope). The structural scopes come
# first; then the counting scopes, which offer few kinds of ops so that
# breadth first reaches SPEC's thresholds: the 3rd strike (`strikes`), a
# head's 6th failed attempt (`retries`), the breaker's 16th event (`storm`).
SCOPES = {"data": 4, "default": 5, "limits": 8, "strikes": 11, "retries": 11, "storm": 35}

# Bugs no declared scope reaches, and why (none since the counting scopes).
BEYOND = {}

# Where each bug was found by the last full run (--every-scope, the table
# in BENCHMARKS.md): CI tries that scope first, then the others, so it
# checks the same claim (found in some declared scope, no longer than the
# shortest known) without running every scope that cannot find it.
FIRST = {
    "fault:checkpoint_before_routing": "default",
    "fault:cooldown_inclusive": "limits",
    "fault:cooldown_too_short": "limits",
    "fault:strike_limit_two": "limits",
    "fault:suppressed_not_shown": "default",
    "fault:five_attempts": "limits",
    "fault:no_lost_completion": "default",
    "python:no-suppressed-count": "default",
    "python:retry-forever": "limits",
    "fault:no_promotion": "strikes",
    "fault:retry_not_blocking": "retries",
    "fault:breaker_sixteen": "storm",
    "fault:breaker_no_pause": "storm",
    "python:breaker-16": "storm",
    "python:retry-forever": "retries",
}

# Found, but too slow over the protocol for CI (none since `retries`
# finds `python:retry-forever` in 1 s, which took 4 minutes in `limits`).
SLOW = set()


def known_lengths():
    """bug -> (rule, steps of the bank's shrunk counterexample)."""
    rows = {}
    for line in open(os.path.join(ROOT, "TESTING.md"), encoding="utf-8"):
        m = re.match(r"\| `((?:fault|python):[\w-]+)` \| ([A-Z]+-\d+) \| .*? \| (\d+) \(from", line)
        if m:
            rows[m.group(1)] = (m.group(2), int(m.group(3)))
    return rows


def explore(exe, bug, scope, depth):
    kind, name = bug.split(":", 1)
    if kind == "fault":
        p = subprocess.run([exe, "explore", "--fault", name, "--scope", scope, "--depth", str(depth)],
                           capture_output=True, text=True, cwd=ROOT)
        m = re.search(r"^counterexample \((\d+) ops", p.stdout, re.M)
        rules = sorted(set(re.findall(r"^  ([A-Z]+-\d+): ", p.stdout, re.M)))
        return (int(m.group(1)) if m else None), rules
    env = dict(os.environ, PROCROUTE_TEMPLATE_BUG=name)
    extra = ["--reads"] if name == "read-consumes" else []
    p = subprocess.run([exe, "explore", "--impl", f"python3 {TEMPLATE}", "--scope", scope,
                        "--depth", str(depth), "--jobs", "1", "--format", "json", *extra],
                       capture_output=True, text=True, env=env, cwd=ROOT)
    try:
        report = json.loads(p.stdout)
    except ValueError:
        sys.exit(f"{bug} {scope}: no report: {p.stderr[-300:]}")
    failed = [o for o in report["outcomes"] if not o["passed"]]
    if not failed:
        return None, []
    depth_found = int(failed[0]["id"].split("/")[1])
    rules = sorted({r for o in failed for r in o["rules"]})
    return depth_found, rules


def one(exe, bug, rule, known, every):
    t = time.time()
    found = {s: "not run" for s in SCOPES}
    rules = set()
    order = list(SCOPES)
    if not every and bug in FIRST:
        order.remove(FIRST[bug])
        order.insert(0, FIRST[bug])
    for scope in order:
        depth = SCOPES[scope]
        n, r = explore(exe, bug, scope, min(depth, known))
        found[scope] = n
        if n is not None:
            rules.update(r)
            if not every:
                break
    best = min((n for n in found.values() if isinstance(n, int)), default=None)
    return dict(bug=bug, rule=rule, known=known, found=found, best=best, rules=sorted(rules),
                secs=time.time() - t)


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    exe = os.path.abspath(args[0])
    jobs = int(args[args.index("--jobs") + 1]) if "--jobs" in args else 2
    only = args[args.index("--only") + 1] if "--only" in args else None
    every = "--every-scope" in args
    bank = known_lengths()
    if len(bank) < 30:
        sys.exit(f"TESTING.md's bank table has {len(bank)} bugs; expected the whole bank")
    work = [(b, r, n) for b, (r, n) in bank.items()
            if (not only or only in b) and (every or (b not in BEYOND and b not in SLOW))]
    # The template's bugs (over the protocol, the slowest) start first, so
    # the faults fill the other worker meanwhile; the table keeps the
    # bank's order.
    order = sorted(range(len(work)), key=lambda i: not work[i][0].startswith("python:"))
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        done = dict(zip(order, pool.map(lambda i: one(exe, *work[i], every), order)))
    results = [done[i] for i in range(len(work))]
    print("| bug | rule | shortest known (steps) | " + " | ".join(SCOPES) + " | rules named | seconds |")
    print("|---|---|---:|" + "---:|" * len(SCOPES) + "---|---:|")
    missed = []
    for r in results:
        cells = [{None: "–", "not run": ""}.get(r["found"][s], str(r["found"][s])) for s in SCOPES]
        note = ""
        if r["best"] is None:
            if r["bug"] in BEYOND:
                note = f" (beyond the small scopes: {BEYOND[r['bug']]})"
            else:
                missed.append(r["bug"])
                note = " **not found**"
        print(f"| `{r['bug']}`{note} | {r['rule']} | {r['known']} | " + " | ".join(cells)
              + f" | {', '.join(r['rules'])} | {r['secs']:.1f} |")
    found = sum(1 for r in results if r["best"] is not None)
    shorter = sum(1 for r in results if r["best"] is not None and r["best"] < r["known"])
    beyond = [b for b in bank if b in BEYOND and (not only or only in b)]
    print(f"\n{found} of {len(results)} bugs found by exploration, each no longer than its "
          f"shortest known counterexample ({shorter} shorter)"
          + (f"; {len(beyond)} declared beyond the declared scopes: {', '.join(beyond)}" if beyond else "")
          + ("" if every else f"; slow, not run: {', '.join(sorted(SLOW))}"))
    if missed:
        sys.exit(f"not found by exploration: {', '.join(missed)}")


if __name__ == "__main__":
    main()
