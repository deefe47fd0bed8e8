#!/usr/bin/env python3
"""Sorts every failure of a hermes-agent conformance run into the findings of
FINDINGS.md, mechanically, and writes the known-failures list.

    run.sh --format json --save DIR > report.json    # a run that shrinks
    classify.py report.json DIR > known-failures-0.19.0.txt
    classify.py --check report.json DIR known-failures-0.19.0.txt

Each line pins the case's finding and the signature of every violation
the judge found in it (`conform`'s `violations`: `RULE`, `RULE:kind`,
`RULE:kind@tN`), so `conform` fails when a known case's violations change.
`--check` (run.sh runs it after every run) re-derives the finding of every
failing case and exits 1 naming each case whose finding differs from the
list's, or that the list does not have, and compares every stored trace
of hermes (spec/vectors/traces/hermes-*.json) with FINDINGS.md's table
"Stored traces" (the column of the list's version).

A failure that fits no finding is printed to stderr and the script exits 1:
then FINDINGS.md needs a new entry (or the harness a fix), never a silent
addition to the list. Trace failures are classified from the headline
violation the one judge reports (rule, process, kind) and the saved trace
(shrunk where the runner shrank it: the first failures of each rule).
"""
import json
import os
import re
import sys

# Key vectors hermes-agent fails, by finding (see FINDINGS.md).
VECTORS = {
    "H-PARSE-AMBIGUOUS": [
        "hermes-parse/dm-two-segments", "hermes-parse/group-sixth-part",
        "hermes-parse/matrix-room", "hermes-parse/thread-discord",
        "hermes-parse/whatsapp-dm",
    ],
    "H-PARSE-PROFILE": ["hermes-parse/profile"],
    # 0.13.0 only: the key vectors pin 0.19.0's build (KEY-H1).
    "H-OLD-KEYS": [
        "hermes-build/whatsapp/dm-empty-falls-to-user",
        "hermes-build/whatsapp/dm-empty-falls-to-raw-user",
        "hermes-build/whatsapp/dm-empty-falls-to-user-then-thread",
        "hermes-build/whatsapp/cloud-not-canonicalised",
    ],
    "H-PARSE-NO-REASON": [
        "hermes-parse/whatsapp-dm-bare", "hermes-parse/err/no-chat", "hermes-parse/err/not-agent",
    ],
    "H-PARSE-UNCHECKED": [
        "hermes-parse/err/empty-chat", "hermes-parse/err/chat-type", "hermes-parse/err/too-long",
    ],
}
# Key-dialect laws (P-10): one case per policy and failure class
# (`dialect/<policy>/KEY-L1/<family>/<class>`, `…/KEY-L2/<class>`); a class
# has the same cause under every policy the harness declares, so the map
# names cases without the policy segment. KEY-L2 reads routes with
# `_parse_session_key`.
DIALECT = {
    "dialect/KEY-L1/whitespace/chat-id-whitespace": "H-WHATSAPP-CANON",
    "dialect/KEY-L1/colon-join/chat-id-other": "H-WHATSAPP-CANON",
    "dialect/KEY-L1/colon-join/separator-in-id": "H-KEY-RAW",
    "dialect/KEY-L1/thread-user/thread-vs-user": "H-THREAD-USER",
    "dialect/KEY-L1/generated/thread-vs-user": "H-THREAD-USER",
    "dialect/KEY-L1/markers/chat-id-other": "H-WHATSAPP-CANON",
    "dialect/KEY-L1/markers/chat-id-prefix": "H-WHATSAPP-CANON",
    "dialect/KEY-L1/markers/separator-in-id": "H-KEY-RAW",
    "dialect/KEY-L1/markers/chat-and-thread": "H-KEY-RAW",
    "dialect/KEY-L2/chat-id-rewritten": "H-WHATSAPP-CANON",
    "dialect/KEY-L2/chat-id-trimmed": "H-WHATSAPP-CANON",
    "dialect/KEY-L2/thread-joined-into-chat": "H-WHATSAPP-CANON",
    "dialect/KEY-L2/chat-id-truncated": "H-PARSE-AMBIGUOUS",
    "dialect/KEY-L2/chat-split-into-thread": "H-PARSE-AMBIGUOUS",
    "dialect/KEY-L2/thread-id-truncated": "H-PARSE-AMBIGUOUS",
    "dialect/KEY-L2/thread-invented": "H-PARSE-AMBIGUOUS",
    "dialect/KEY-L2/thread-lost": "H-PARSE-AMBIGUOUS",
    "dialect/KEY-L2/user-read-as-thread": "H-THREAD-USER",
    # KEY-L4: `_parse_session_key` answers keys with empty ids.
    "dialect/KEY-L4/separator-appended": "H-PARSE-UNCHECKED",
    "dialect/KEY-L4/separator-doubled": "H-PARSE-UNCHECKED",
    "dialect/KEY-L4/truncated": "H-PARSE-UNCHECKED",
    "dialect/KEY-L4/space-appended": "H-PARSE-UNCHECKED",
}
for case, finding in DIALECT.items():
    VECTORS.setdefault(finding, []).append(case)
BY_VECTOR = {v: f for f, vs in VECTORS.items() for v in vs}


def without_policy(case_id):
    """`dialect/<policy>/KEY-…` as `dialect/KEY-…` (the DIALECT map's form)."""
    return re.sub(r"^dialect/[a-z0-9-]+/(KEY-)", r"dialect/\1", case_id)


ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))

def strip_unstable(s):
    return s is not None and s.strip() != s


def spawns_of(ops, proc):
    return [op["spawn"] for op in ops if isinstance(op, dict) and "spawn" in op
            and op["spawn"]["process"] == proc]


def joined(o):
    """An origin's ids as hermes joins them into a key: chat, thread, and
    the user outside a dm."""
    ids = [o["chat_id"], o.get("thread_id")]
    if o["chat_type"] != "dm":
        ids.append(o.get("user_id"))
    return ":".join(i for i in ids if i is not None)


def raw_twins(a, b):
    """Two threads of one platform and chat type whose ids, joined with
    ':' (or with ':thread:' / ':topic:' for a thread), are the same text."""
    if (a["platform"], a["chat_type"]) != (b["platform"], b["chat_type"]) or a == b:
        return False
    if joined(a) == joined(b):
        return True
    def marked(o):
        t = o.get("thread_id")
        return {o["chat_id"]} if t is None else {f'{o["chat_id"]}:{w}:{t}' for w in ("thread", "topic")}
    one_thread = (a.get("thread_id") is None) != (b.get("thread_id") is None)
    return one_thread and bool(marked(a) & marked(b))


def whatsapp_twins(a, b):
    """Two WhatsApp dm threads whose chat ids hermes canonicalises alike
    (KEY-H2: '+', a device ':N' and the '@' domain dropped)."""
    def canon(i):
        return i.strip().split("@")[0].split(":")[0].lstrip("+")
    return (a["platform"] == b["platform"] == "whatsapp" and a["chat_type"] == b["chat_type"] == "dm"
            and a["chat_id"] != b["chat_id"] and canon(a["chat_id"]) == canon(b["chat_id"]) != "")


def classify_trace(doc):
    """The finding a saved failing trace (a trace file, spec/PROTOCOL.md)
    belongs to, from its headline violation (rule, process, kind) and the
    trace itself; None if no finding fits."""
    return classify(doc["found"]["rule"], doc["found"]["violation"], doc["trace"])


def classify(rule, violation, trace):
    m = re.match(r"(\(no process\)|\S+) (\w+) to ", violation)
    proc = m.group(1) if m and m.group(1) != "(no process)" else None
    kind = m.group(2) if m else None
    ops = trace["ops"]
    at = re.search(r"emitted at step (\d+)", violation)
    upto = ops[: int(at.group(1))] if at else ops
    # The runs of the process spawned by then; the emitting one is the last.
    spawns = spawns_of(upto, proc) if proc else []
    threads = trace["threads"]
    if rule in ("INV-1", "INV-6") and spawns:
        homes = [threads[s["thread"]] for s in spawns]
        if any(strip_unstable(h["chat_id"]) or strip_unstable(h.get("thread_id")) for h in homes):
            return "H-STRIP"
        return shared_key(homes, threads)
    if rule == "INV-4" and kind == "watch_match":
        if spawns and spawns[-1]["notify"] and spawns[-1]["watch"]:
            return "H-WATCH-DROPPED"
        return "H-WATCH-LOST"
    if rule == "PROC-5" or (rule == "TEXT-4" and kind == "watch_disabled"):
        return "H-PROMOTED"
    if rule == "DELIVER-5":
        return "H-ORDER"
    if rule == "PROC-3":
        return "H-EXCERPT"
    if rule in ("DELIVER-1", "INV-8"):
        return "H-LATE"
    if rule == "DELIVER-2":
        return "H-BUSY"
    if rule == "DELIVER-8":
        return "H-SHUTDOWN"
    if rule == "TEXT-2":
        return "H-RAW-TEXT"
    if rule == "DELIVER-4" or "must be dead-lettered" in violation:
        return "H-RETRY"
    if rule in ("INV-4", "PROC-7", "PROC-8", "PROC-10", "DELIVER-6") and proc:
        fate = restart_fate(ops, proc)
        if fate:
            return fate
        homes = [threads[s["thread"]] for s in spawns]
        if rule == "PROC-7" and any(strip_unstable(h["chat_id"]) or strip_unstable(h.get("thread_id"))
                                    for h in homes):
            return "H-STRIP"  # 0.13.0 drops what it cannot route to the stripped id
        if kind == "completion" and down_after_end(ops, proc):
            return "H-OUTAGE-LOST"
        if "which its output tail must quote" in violation:
            return "H-OLD-READER"
        # 0.13.0's `log`/`wait` consume a completion an agent read (#8228),
        # and nothing is sent (0.19.0 sends its text-only notice instead).
        if rule == "PROC-10" and "after an agent read" in violation:
            return "H-READ-CONSUMES"
        if rule == "PROC-7":
            # 0.13.0 delivers neither twin's completion (a shared key).
            twin = shared_key(homes, threads)
            if twin:
                return twin
            # 0.13.0 sends a completion only from a later turn's drain:
            # none after the run's end, none sent (H-WATCH-LOST's cause).
            if at and not turn_after(ops, int(at.group(1))):
                return "H-WATCH-LOST"
        return None
    if rule == "DELIVER-6" and proc is None:
        return "H-INFLIGHT"
    return None


def shared_key(homes, threads):
    """The finding of a process home that shares its hermes session key with
    another thread of the trace, or None."""
    # A lane twin (spec/PROTOCOL.md P-13): ids that hermes joins raw
    # with ':' into one key, or WhatsApp ids it canonicalises into one.
    for h in homes:
        for t in threads:
            if t is not h and raw_twins(h, t):
                return "H-KEY-RAW"
            if t is not h and whatsapp_twins(h, t):
                return "H-WHATSAPP-CANON"
    # A thread and a user of one chat with the same id: one hermes key.
    for h in homes:
        for t in threads:
            same_chat = (t["platform"], t["chat_id"]) == (h["platform"], h["chat_id"])
            if same_chat and (t.get("thread_id") is None) != (h.get("thread_id") is None):
                return "H-THREAD-USER"
    return None


def turn_after(ops, step):
    """Whether a turn of hermes' runs after `step`: a message (its turn ends
    at once) or the end of a running turn."""
    running = set()
    for i, op in enumerate(ops):
        name, arg = (op, {}) if isinstance(op, str) else next(iter(op.items()))
        if name == "turn_start":
            running.add(arg["thread"])
        elif i > step and name == "message":
            return True
        elif name == "turn_end" and arg["thread"] in running:
            running.discard(arg["thread"])
            if i > step:
                return True
    return False


def down_after_end(ops, proc):
    """Whether the adapter was down when a run of the process ended, or went
    down after it (before its completion could be sent: the watcher polls
    every 5 s)."""
    down, ended, hit = False, False, False
    for op in ops:
        name, arg = (op, {}) if isinstance(op, str) else next(iter(op.items()))
        if name == "adapter":
            down = not arg["up"]
            hit = hit or (ended and down)
        elif name in ("exit", "kill") and arg["process"] == proc:
            ended, hit = True, hit or down
    return hit


def restart_fate(ops, proc):
    """What a gateway restart did to a notify-on-exit process."""
    running = False
    finished_before_restart = False
    for op in ops:
        name, arg = (op, {}) if isinstance(op, str) else next(iter(op.items()))
        if name == "spawn" and arg["process"] == proc:
            running = True
        elif name in ("exit", "kill") and arg["process"] == proc and running:
            running = False
            finished_before_restart = True
        elif name == "restart":
            if running and not arg["survive"]:
                return "H-LOST"
            if running and arg["survive"]:
                return "H-CHECKPOINT"
            if finished_before_restart:
                return "H-INFLIGHT"
    return None


def derive(o, save_dir):
    """The finding of one failing outcome, or None."""
    oid = o["id"]
    finding = BY_VECTOR.get(without_policy(oid))
    if finding is None and oid.startswith("gen/"):
        seed, n = oid.split("/")[1:3]
        # The shrunk trace where the runner shrank it, else the original.
        for name in (f"gen-{seed}-{n}.json", f"gen-{seed}-{n}-original.json"):
            path = os.path.join(save_dir, name)
            if os.path.exists(path):
                with open(path, encoding="utf-8") as f:
                    finding = classify_trace(json.load(f))
                break
    if finding is None and oid.startswith("trace/"):
        # A stored trace: its headline is the detail's first line.
        path = os.path.join(ROOT, "spec/vectors/traces", oid[len("trace/"):] + ".json")
        head = (o.get("detail") or "").split("\n", 1)[0]
        rule, _, violation = head.partition(": ")
        with open(path, encoding="utf-8") as f:
            finding = classify(rule, violation, json.load(f)["trace"])
    return finding


def listed(path):
    """case id -> finding, from a known-failures file."""
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            case, _, comment = line.partition("#")
            case, words = case.strip(), comment.split()
            if case and words:
                out[case] = words[0]
    return out


def check(report_path, save_dir, known_path):
    with open(report_path, encoding="utf-8") as f:
        outcomes = json.load(f)["outcomes"]
    known = listed(known_path)
    bad = 0
    for o in outcomes:
        if o["passed"] or (o.get("detail") or "").startswith("errored"):
            continue
        finding = derive(o, save_dir)
        want = known.get(o["id"])
        if want is not None and finding != want:
            print(f"{o['id']}: the list says {want}, this run derives {finding or 'no finding'}",
                  file=sys.stderr)
            bad += 1
        elif want is None and finding is None:
            print(f"{o['id']}: fits no finding: {(o.get('detail') or '')[:300]}", file=sys.stderr)
            bad += 1
    print(f"classify --check: {len([o for o in outcomes if not o['passed']])} failing case(s), "
          f"{bad} whose finding differs from {os.path.basename(known_path)}", file=sys.stderr)
    bad += check_stored(outcomes, known_path)
    sys.exit(1 if bad else 0)


def pins(path):
    """case id -> 'FINDING sig …' (the comment of its known-failures line,
    `flaky` left out)."""
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            case, _, comment = line.partition("#")
            if case.strip() and comment.split():
                out[case.strip()] = " ".join(w for w in comment.split() if w != "flaky")
    return out


def stored_table(findings_md):
    """FINDINGS.md's table "Stored traces": file -> {version: cell}, a cell
    being `pass` or the finding and signatures the list pins."""
    rows, versions = {}, None
    with open(findings_md, encoding="utf-8") as f:
        for line in f:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if line.startswith("| stored trace |"):
                versions = cells[3:]
            elif versions and re.match(r"^\| `hermes-[a-z0-9-]+\.json` \|", line):
                name = cells[0].strip("`")
                rows[name] = dict(zip(versions, cells[3:]))
    return rows


def check_stored(outcomes, known_path):
    """Every stored trace of FINDINGS.md's table fails (or passes) on this
    run exactly as its cell for this version says: the claims of the
    findings' counterexamples are checked by every run."""
    version = re.sub(r"^known-failures-(.*)\.txt$", r"\1", os.path.basename(known_path))
    findings_md = os.path.join(os.path.dirname(os.path.abspath(__file__)), "FINDINGS.md")
    table = stored_table(findings_md)
    if not table:
        print("classify --check: FINDINGS.md has no table of stored traces", file=sys.stderr)
        return 1
    ran = {o["id"]: o for o in outcomes}
    known, bad = pins(known_path), 0
    for name, cells in sorted(table.items()):
        oid = "trace/" + name[: -len(".json")]
        want = cells.get(version)
        if want is None:
            print(f"classify --check: FINDINGS.md's stored-trace table has no column {version}", file=sys.stderr)
            return 1
        o = ran.get(oid)
        if o is None:
            continue  # a run of some cases only (--only)
        if o["passed"]:
            got = "pass"
        else:
            got = known.get(oid, "failing, not in the list")
        if got != want:
            print(f"{name} on {version}: this run {got}; FINDINGS.md's table says {want}", file=sys.stderr)
            bad += 1
    for oid in sorted(i for i in ran if i.startswith("trace/hermes-")):
        if oid[len("trace/"):] + ".json" not in table:
            print(f"{oid}: not in FINDINGS.md's table of stored traces", file=sys.stderr)
            bad += 1
    print(f"classify --check: {len(table)} stored traces against FINDINGS.md, {bad} differing", file=sys.stderr)
    return bad


def main():
    if sys.argv[1] == "--check":
        check(*sys.argv[2:5])
    report_path, save_dir = sys.argv[1], sys.argv[2]
    with open(report_path, encoding="utf-8") as f:
        outcomes = json.load(f)["outcomes"]
    lines, unexplained, counts = [], [], {}
    for o in outcomes:
        if o["passed"]:
            continue
        oid = o["id"]
        finding = derive(o, save_dir)
        if finding is None:
            unexplained.append(f"{oid}: {(o.get('detail') or '')[:300]}")
            continue
        counts[finding] = counts.get(finding, 0) + 1
        pins = " ".join(o.get("violations") or [])
        lines.append(f"{oid}  # {finding}{' ' + pins if pins else ''}")
    print("# hermes-agent known failures; each one is explained in FINDINGS.md under")
    print("# the finding named after it, and pinned to the signatures of all its")
    print("# violations (conform fails when they change). A line marked `flaky` is a")
    print("# case this harness does not run deterministically (FINDINGS.md): its pass")
    print("# is forgiven, its failure still pinned. Generated by classify.py:")
    print("#   " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    for line in lines:
        print(line)
    for u in unexplained:
        print(f"unexplained failure: {u}", file=sys.stderr)
    if len(sys.argv) > 3 and sys.argv[3] == "--dialect-table":
        # FINDINGS.md's table of key-dialect failure classes (to stderr).
        print("| case | finding | counterexample |\n|---|---|---|", file=sys.stderr)
        for o in outcomes:
            if o["passed"] or not o["id"].startswith("dialect/"):
                continue
            detail = re.sub(r" \(\d+ (origins|keys|malformed) .*$", "", o.get("detail") or "", flags=re.S)
            detail = detail if len(detail) <= 300 else detail[:300] + "…"
            finding = BY_VECTOR.get(without_policy(o["id"]), "?")
            print(f"| `{o['id']}` | {finding} | {detail} |", file=sys.stderr)
    sys.exit(1 if unexplained else 0)


if __name__ == "__main__":
    main()
