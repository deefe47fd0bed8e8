#!/usr/bin/env python3
"""Sorts every failure of an OpenClaw conformance run into the findings of
FINDINGS.md, mechanically. Modes:

    classify.py write REPORT.json SAVE_DIR > known-failures-2026.9.6.txt 2> table.md
        the known-failures list (`ID  # FINDING SIG SIG ...`) and FINDINGS.md's
        table of key-dialect failure classes; REPORT.json is conform's
        --json-out (or --format json) of a run without known failures
        (`KNOWN_FAILURES= run.sh --json-out REPORT.json --save SAVE_DIR`).
    classify.py check REPORT.json SAVE_DIR KNOWN.txt
        re-derives the finding and signatures of every failing case of a run
        and exits 1 naming each case whose line in KNOWN.txt differs (run.sh
        runs it after conform).
    classify.py stored FINDINGS.md REPLAY.json
        compares `procroute replay --json` of the stored traces with the
        table "Stored traces" of FINDINGS.md; exits 1 on any difference.
    classify.py unexpected REPORT.json
        one line per unexpected failure: id, rule ids, counterexample length
        (what mutants/run.sh prints).

A signature (SIG) is `RULE`, `RULE:kind` or `RULE:kind@tN` (conform's
`violations` of an outcome: sorted, deduplicated, every violation of the
case); a report without them (an older conform) gives the headline rule
alone.

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
    # The wake scheduler: a completion held back by a busy turn is retried
    # 1 s later, on the trace's clock at its next advance (O-BUSY-RETRY);
    # one that comes within 30 s of the agent's last heartbeat waits for the
    # minimum spacing, later ones within 30 minutes for the heartbeat
    # cooldown (O-COOLDOWN).
    m = re.search(r"delivered at step \d+; it was due at step (\d+)", violation)
    if rule == "DELIVER-1" and m:
        due = int(m.group(1))
        ops = trace["ops"]
        op = ops[due] if due < len(ops) else None
        name = op if isinstance(op, str) else next(iter(op)) if op else None
        return "O-BUSY-RETRY" if name == "turn_end" else "O-COOLDOWN"
    if rule in ("PROC-7", "INV-4") and "was never delivered nor dead-lettered" in violation and not outage:
        return "O-COOLDOWN"
    return None


SIG = re.compile(r"^[A-Z]+-[A-Z0-9]+(?::[a-z_]+)?(?:@t\d+)?$")


def load_report(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)["outcomes"]
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"classify.py: {path}: not a conform JSON report ({e})")


def headline(o):
    """The headline rule of a failing outcome (the older conform's only
    signature): the law of a dialect case, else the detail's first rule."""
    m = re.match(r"^dialect/[a-z0-9-]+/(KEY-L\d)/", o["id"])
    if m:
        return m.group(1)
    m = re.match(r"^([A-Z]+-[A-Z0-9]+): ", o.get("detail") or "")
    if m:
        return m.group(1)
    if o.get("skipped") is None and (o.get("detail") or "").startswith(("harness", "errored", "timed out")):
        return "ERRORED"
    return "UNKNOWN"


def signatures(o):
    v = o.get("violations")
    if v:
        return sorted(set(v))
    return [headline(o)]


def classify(o, save_dir):
    """The finding of a failing outcome, or None."""
    oid, detail = o["id"], o.get("detail") or ""
    name = finding(oid)
    if name is None and oid.startswith("gen/"):
        doc = (o.get("counterexample") or {}).get("file")
        if doc is None and save_dir:
            seed, n = oid.split("/")[1:3]
            for base in (f"gen-{seed}-{n}.json", f"gen-{seed}-{n}-original.json"):
                path = os.path.join(save_dir, base)
                if os.path.exists(path):
                    with open(path, encoding="utf-8") as f:
                        doc = json.load(f)
                    break
        if doc is not None and doc.get("found"):
            name = classify_trace(doc["found"]["rule"], doc["found"]["violation"], doc["trace"])
    if name is None and oid.startswith("trace/"):
        # Stored traces: the headline is in the detail, the trace in the
        # file the detail names.
        first = detail.split("\n", 1)[0]
        m = re.match(r"^([A-Z]+-\d+): (.*)$", first)
        f = re.search(r"stored trace (\S+\.json)", detail)
        if m and f:
            root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
            with open(os.path.join(root, f.group(1)), encoding="utf-8") as fh:
                trace = json.load(fh)["trace"]
            name = classify_trace(m.group(1), m.group(2), trace)
    return name


def parse_known(path):
    """id -> (finding, [SIG...] or None) of a known-failures file."""
    known = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            pattern, _, comment = line.partition("#")
            words = comment.split()
            if not words:
                sys.exit(f"classify.py: {path}:{n}: no finding after `#`")
            sigs = words[1:]
            bad = [s for s in sigs if not SIG.match(s)]
            if bad:
                sys.exit(f"classify.py: {path}:{n}: not a signature: {' '.join(bad)}")
            known[pattern.strip()] = (words[0], sigs or None)
    return known


def write(report, save_dir):
    outcomes = load_report(report)
    lines, table, unexplained, counts = [], [], [], {}
    for o in outcomes:
        if o["passed"]:
            continue
        oid, detail = o["id"], o.get("detail") or ""
        name = classify(o, save_dir)
        if name is None:
            unexplained.append(f"{oid}: {detail[:300]}")
            continue
        counts[name] = counts.get(name, 0) + 1
        lines.append(f"{oid}  # {name} {' '.join(signatures(o))}")
        if not oid.startswith("dialect/"):
            continue  # traces: in the list, not in the dialect table
        example = re.sub(r" \((\d+) (origins|keys|malformed) .*$", "", detail, flags=re.S)
        example = example if len(example) <= 300 else example[:300] + "…"
        table.append(f"| `{oid}` | {name} | {example} |")
    print("# OpenClaw known failures: key-dialect cases, one line per policy and")
    print("# failure class (KEY-L1: family and class; KEY-L2, KEY-L4: class), so a")
    print("# new class is a new failure, stored vectors and generated traces by id;")
    print("# each line: the finding (explained in FINDINGS.md under its name) and the")
    print("# case's violation signatures (classify.py check compares them). Generated")
    print("# by classify.py write from one run (run.sh's default traces):")
    print("#   " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    for line in lines:
        print(line)
    print("| case | finding | counterexample |\n|---|---|---|", file=sys.stderr)
    for row in table:
        print(row, file=sys.stderr)
    for u in unexplained:
        print(f"unexplained failure: {u}", file=sys.stderr)
    return 1 if unexplained else 0


def check(report, save_dir, known_path):
    known = parse_known(known_path)
    bad = []
    for o in load_report(report):
        if o["passed"] or o.get("skipped") is not None:
            continue
        oid = o["id"]
        name, sigs = classify(o, save_dir), signatures(o)
        got = f"{name or 'no finding'} {' '.join(sigs)}"
        if oid not in known:
            bad.append(f"{oid}: fails ({got}) but is not in {os.path.basename(known_path)}")
            continue
        want_name, want_sigs = known[oid]
        if name != want_name or (want_sigs is not None and want_sigs != sigs):
            want = f"{want_name} {' '.join(want_sigs or [])}".strip()
            bad.append(f"{oid}: {got}; the known list says {want}")
    for b in bad:
        print(f"classify.py check: {b}")
    if not bad:
        print("classify.py check: every failing case has its known finding and signatures")
    return 1 if bad else 0


def replay_reports(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    dec, i, out = json.JSONDecoder(), 0, []
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return out
        try:
            doc, i = dec.raw_decode(text, i)
        except ValueError as e:
            sys.exit(f"classify.py: {path}: not `procroute replay --json` output ({e})")
        out.append(doc)


def violation_sig(v):
    m = re.match(r"^(p\w+) ", v["detail"])
    return f"{v['rule']}:{m.group(1)}" if m else v["rule"]


def body_steps(findings_md, tid):
    """Ops of a stored trace before its quiescence suffix (12 × 61 s)."""
    path = os.path.join(os.path.dirname(os.path.abspath(findings_md)), tid.replace("trace/openclaw-", "") + ".json")
    try:
        with open(path, encoding="utf-8") as f:
            ops = json.load(f)["trace"]["ops"]
    except (OSError, ValueError, KeyError):
        return "?"
    n = len(ops)
    while n and ops[n - 1] == {"advance": {"ms": 61000}}:
        n -= 1
    return n


def stored(findings_md, replay_json):
    """FINDINGS.md's table `| `o-….json` | verdict | RULE:process … |`
    against the replayed reports (trace id `trace/openclaw-o-…`)."""
    want = {}
    with open(findings_md, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"^\| `(o-[a-z0-9-]+)\.json` \| (pass|fail) \| ([^|]*) \|", line)
            if m:
                want[f"trace/openclaw-{m.group(1)}"] = (m.group(2), sorted(m.group(3).split()))
    if not want:
        sys.exit(f"classify.py: {findings_md} has no table of stored traces")
    got = {r["id"]: (r["verdict"], sorted(violation_sig(v) for v in r.get("violations", []))) for r in replay_reports(replay_json)}
    bad = 0
    for tid, (verdict, sigs) in sorted(want.items()):
        g = got.get(tid)
        if g is None:
            print(f"stored trace {tid}: no report (the harness failed on it?)")
            bad += 1
        elif g != (verdict, sigs):
            print(f"stored trace {tid} ({body_steps(findings_md, tid)} steps): {g[0]} {' '.join(g[1])}; FINDINGS.md says {verdict} {' '.join(sigs)}")
            bad += 1
        else:
            print(f"stored trace {tid}: {verdict} {' '.join(sigs)}, as FINDINGS.md says")
    for tid in sorted(set(got) - set(want)):
        print(f"stored trace {tid}: not in FINDINGS.md's table")
        bad += 1
    return 1 if bad else 0


def unexpected(report):
    for o in load_report(report):
        if o["passed"] or o.get("expected_failure") or o.get("skipped") is not None:
            continue
        detail = o.get("detail") or ""
        rules = sorted(set(re.findall(r"^\s*([A-Z]+-[A-Z0-9]+): ", detail, flags=re.M))) or [headline(o)]
        m = re.search(r"shrunk from \d+ to (\d+) step", detail)
        steps = m.group(1) if m else "-"
        if m is None and o.get("counterexample"):
            steps = str(len(o["counterexample"]["file"]["trace"]["ops"]))
        print(f"{o['id']}\t{','.join(rules)}\t{steps}")
    return 0


def main():
    args = sys.argv[1:]
    usage = "usage: classify.py write REPORT.json [SAVE_DIR] | check REPORT.json SAVE_DIR KNOWN.txt | stored FINDINGS.md REPLAY.json | unexpected REPORT.json"
    if not args:
        sys.exit(usage)
    mode, rest = args[0], args[1:]
    if mode == "write" and 1 <= len(rest) <= 2:
        sys.exit(write(rest[0], rest[1] if len(rest) > 1 else None))
    if mode == "check" and len(rest) == 3:
        sys.exit(check(*rest))
    if mode == "stored" and len(rest) == 2:
        sys.exit(stored(*rest))
    if mode == "unexpected" and len(rest) == 1:
        sys.exit(unexpected(rest[0]))
    sys.exit(usage)


if __name__ == "__main__":
    main()
