#!/usr/bin/env python3
"""Sorts every key-dialect failure of an OpenClaw conformance run into the
findings of FINDINGS.md, mechanically, and writes the known-failures list
(stdout) and FINDINGS.md's table of failure classes (stderr).

    KNOWN_FAILURES= run.sh --format json --save DIR > report.json
    classify.py report.json DIR > known-failures-2026.9.6.txt 2> table.md

Cases are `dialect/<policy>/KEY-…` (one run per policy harness.mjs
declares); a class has one cause under every policy, so the map below names
cases without the policy segment. A failure that fits no finding makes the
script exit 1: then FINDINGS.md needs a new entry, never a silent addition.
"""
import json
import os
import re
import sys

# KEY-L1 classes by `<family>/<class>` (or `*/<class>`: any family), KEY-L2
# and KEY-L4 by class.
FINDINGS = {
    "KEY-L1/*/chat-id-case": "O-CASE",
    "KEY-L1/*/thread-id-case": "O-CASE",
    "KEY-L1/*/chat-id-whitespace": "O-TRIM",
    "KEY-L1/*/thread-vs-none": "O-TRIM",
    "KEY-L1/thread-user/thread-vs-user": "O-TRIM",
    "KEY-L1/*/separator-in-id": "O-RAW",
    # dmScope per-peer keys a DM by the peer alone: the channel is not in it.
    "KEY-L1/*/platform": "O-PEER",
    "KEY-L2/chat-id-case-folded": "O-CASE",
    "KEY-L2/chat-id-rewritten": "O-CASE",
    "KEY-L2/thread-id-case-folded": "O-CASE",
    "KEY-L2/thread-id-rewritten": "O-CASE",
    "KEY-L2/chat-id-trimmed": "O-TRIM",
    "KEY-L2/thread-id-trimmed": "O-TRIM",
    "KEY-L2/thread-lost": "O-TRIM",
    "KEY-L2/chat-id-truncated": "O-RAW",
    "KEY-L2/chat-split-into-thread": "O-RAW",
    "KEY-L2/chat-type-changed": "O-RAW",
    "KEY-L2/thread-invented": "O-RAW",
    "KEY-L2/platform-changed": "O-PEER",
    "KEY-L4/case-changed": "O-CASE",
    "KEY-L4/space-appended": "O-TRIM",
    "KEY-L4/segment-dropped": "O-GUESS",
    "KEY-L4/separator-appended": "O-GUESS",
    "KEY-L4/truncated": "O-GUESS",
}


def finding(case_id):
    m = re.match(r"^dialect/[a-z0-9-]+/(KEY-L\d)/(.+)$", case_id)
    if not m:
        return None
    law, rest = m.groups()
    if law == "KEY-L1" and "/" in rest:
        family, cls = rest.split("/", 1)
        return FINDINGS.get(f"KEY-L1/{family}/{cls}") or FINDINGS.get(f"KEY-L1/*/{cls}")
    return FINDINGS.get(f"{law}/{rest}")


def dm_threads(trace):
    return [t for t in trace["threads"] if t["chat_type"] == "dm"]


def restarted_since_spawn(violation, trace):
    """Whether a restart comes after the (last) spawn of the violation's
    process before the step its notification was emitted at, or after."""
    m = re.match(r"^(p\w+) ", violation)
    if not m:
        return False
    proc, spawned = m.group(1), None
    for i, op in enumerate(trace["ops"]):
        name, arg = (op, {}) if isinstance(op, str) else next(iter(op.items()))
        if name == "spawn" and arg.get("process") == proc:
            spawned = i
        elif name == "restart" and spawned is not None:
            return True
    return False


def classify_trace(rule, violation, trace):
    """The finding a failing trace belongs to, from its headline violation
    (rule and text) and the trace (threads); None if no finding fits."""
    # Under OpenClaw's default dmScope "main" every DM is one session.
    shared = len(dm_threads(trace)) >= 2
    if rule == "PROC-7" and "which its output tail must quote" in violation:
        return "O-TAIL"
    if "leaves out a successful completion without output" in violation:
        return "O-EMPTY-SUCCESS"
    if "never delivered" in violation and restarted_since_spawn(violation, trace):
        return "O-RESTART-LOST"
    # A run lost in a restart leaves its completion owed; the next run's
    # completion, quoting no token of its output (O-TAIL's 180 characters),
    # is paired with the lost one in order and judged late.
    if rule == "DELIVER-1" and restarted_since_spawn(violation, trace):
        return "O-RESTART-LOST"
    outage = any(isinstance(op, dict) and op.get("adapter", {}).get("up") is False for op in trace["ops"])
    if outage and rule in ("INV-4", "PROC-7", "PROC-10", "DELIVER-4") and (
        "was never delivered nor dead-lettered" in violation or "the model dead-letters it" in violation
        or "must be dead-lettered" in violation or "its retry was not due yet" in violation
    ):
        return "O-STUCK"
    if rule in ("INV-1", "SEC-1") and shared and '"chat_type":"dm"' in violation:
        return "O-SHARED-DM"
    if rule in ("DELIVER-1", "DELIVER-2", "DELIVER-5", "INV-6", "INV-7", "INV-8") and shared:
        return "O-SHARED-DM"
    return None


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        outcomes = json.load(f)["outcomes"]
    save_dir = sys.argv[2] if len(sys.argv) > 2 else None
    lines, table, unexplained, counts = [], [], [], {}
    for o in outcomes:
        if o["passed"]:
            continue
        oid, detail = o["id"], o.get("detail") or ""
        name = finding(oid)
        if name is None and oid.startswith("gen/") and save_dir:
            seed, n = oid.split("/")[1:3]
            for base in (f"gen-{seed}-{n}.json", f"gen-{seed}-{n}-original.json"):
                path = os.path.join(save_dir, base)
                if os.path.exists(path):
                    with open(path, encoding="utf-8") as f:
                        doc = json.load(f)
                    name = classify_trace(doc["found"]["rule"], doc["found"]["violation"], doc["trace"])
                    break
        if name is None and oid.startswith("trace/"):
            # Stored traces: the headline is in the detail, the trace in
            # the file the detail names.
            first = detail.split("\n", 1)[0]
            m = re.match(r"^([A-Z]+-\d+): (.*)$", first)
            f = re.search(r"stored trace (\S+\.json)", detail)
            if m and f:
                root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
                with open(os.path.join(root, f.group(1)), encoding="utf-8") as fh:
                    trace = json.load(fh)["trace"]
                name = classify_trace(m.group(1), m.group(2), trace)
        if name is None:
            unexplained.append(f"{oid}: {detail[:300]}")
            continue
        counts[name] = counts.get(name, 0) + 1
        lines.append(f"{oid}  # {name}")
        if oid.startswith("gen/"):
            continue  # traces: in the list, not in the dialect table
        example = re.sub(r" \((\d+) (origins|keys|malformed) .*$", "", detail, flags=re.S)
        example = example if len(example) <= 300 else example[:300] + "…"
        table.append(f"| `{oid}` | {name} | {example} |")
    print("# OpenClaw known failures: key-dialect cases, one line per policy and")
    print("# failure class (KEY-L1: family and class; KEY-L2, KEY-L4: class), so a")
    print("# new class is a new failure, and generated traces by id; each is")
    print("# explained in FINDINGS.md under the finding named after it. Generated")
    print("# by classify.py:")
    print("#   " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    for line in lines:
        print(line)
    print("| case | finding | counterexample |\n|---|---|---|", file=sys.stderr)
    for row in table:
        print(row, file=sys.stderr)
    for u in unexplained:
        print(f"unexplained failure: {u}", file=sys.stderr)
    sys.exit(1 if unexplained else 0)


if __name__ == "__main__":
    main()
