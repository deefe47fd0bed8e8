#!/usr/bin/env python3
"""Side by side, in one run, on identical inputs: hermes-agent's own
functions and procroute's, with medians, spread and ratios (issue 7).

    spec/harnesses/hermes-agent/side_by_side.py [--cases N] [--check]

Inputs: `procroute keys-corpus` origins × policies (nasty and real id shapes).
hermes side (this process, the pinned package from venv.sh):
  key build      gateway.session.build_session_key(SessionSource, policy)
  key parse      gateway.run._parse_session_key(key)
  route, hit     GatewayRunner._build_process_event_source(evt), session in the store
  route, miss    the same, the store and the live cache empty (key fallback)
procroute side: `procroute timeit` over the same lines (hermes_build,
hermes_parse = the zero-copy `hermes::parse_view`, route_store_hit,
route_store_miss, the byte-scan floor = the faster of a plain and a
memchr count of the key's `:`); the owned `hermes::parse` is shown too.
Both sides time whole passes over the inputs, after one untimed warm-up
pass, and report ns per call. The
sides take turns: BLOCKS blocks of ROUNDS_PER_BLOCK rounds each, procroute's
then hermes', so drift in the machine's speed (a shared VM) lands on both;
medians, min and max are over all pooled rounds. --check exits 1 unless
every ratio is >= 20 and procroute's hermes parse is within 3x of the floor.
"""
import argparse
import atexit
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))

if os.environ.get("PROCROUTE_SIDE_CHILD") != "1":
    python = subprocess.run([os.path.join(HERE, "venv.sh")], capture_output=True, text=True,
                            check=True).stdout.strip()
    env = dict(os.environ, PROCROUTE_SIDE_CHILD="1")
    sys.exit(subprocess.run([python, __file__, *sys.argv[1:]], env=env).returncode)

os.environ["HERMES_HOME"] = tempfile.mkdtemp(prefix="procroute-side-")
atexit.register(shutil.rmtree, os.environ["HERMES_HOME"], ignore_errors=True)
os.environ.setdefault("HERMES_BACKGROUND_NOTIFICATIONS", "result")
import logging  # noqa: E402

logging.disable(logging.CRITICAL)
import gateway.run as gr  # noqa: E402
from gateway.config import GatewayConfig, Platform  # noqa: E402
from gateway.session import SessionSource, build_session_key  # noqa: E402

BLOCKS = 5
ROUNDS_PER_BLOCK = 3


def timed(calls, f):
    """ns per call of each of ROUNDS_PER_BLOCK whole passes, after one
    untimed warm-up pass (procroute's timeit does the same)."""
    f()
    per = []
    for _ in range(ROUNDS_PER_BLOCK):
        t = time.perf_counter_ns()
        f()
        per.append((time.perf_counter_ns() - t) / max(calls, 1))
    return per


def summary(per):
    per = sorted(per)
    return {"median_ns": statistics.median(per), "min_ns": per[0], "max_ns": per[-1]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=250, help="generated origins (x 8 policies)")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    procroute = os.environ.get("PROCROUTE", os.path.join(ROOT, "target", "release", "procroute"))
    if not os.path.exists(procroute):
        subprocess.run(["cargo", "build", "--release", "-q"], cwd=ROOT, check=True)
    corpus = subprocess.run([procroute, "keys-corpus", "--seed", "1", "--cases", str(args.cases)],
                            capture_output=True, text=True, check=True).stdout
    cases = [json.loads(line) for line in corpus.splitlines() if line.strip()]
    built = []  # (source, kwargs)
    for c in cases:
        o, p = c["origin"], c["policy"]
        src = SessionSource(platform=Platform(o["platform"]), chat_id=o["chat_id"],
                            chat_type=o["chat_type"], thread_id=o.get("thread_id"),
                            user_id=o.get("user_id"), user_name=o.get("user_name"))
        kw = {"group_sessions_per_user": p.get("group_sessions_per_user", True),
              "thread_sessions_per_user": p.get("thread_sessions_per_user", False),
              "profile": p.get("profile")}
        built.append((src, kw))

    def build_all():
        for src, kw in built:
            try:
                build_session_key(src, **kw)
            except ValueError:
                pass

    keys = [c["hermes"]["Ok"] for c in cases if "Ok" in c["hermes"]]

    parse_session_key = gr._parse_session_key  # a local: no module lookup per call

    def parse_all():
        for k in keys:
            parse_session_key(k)

    # Routing: one runner whose store holds every session, one empty.
    tmp = tempfile.mkdtemp(prefix="procroute-side-store-")
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    hit = gr.GatewayRunner(GatewayConfig(sessions_dir=__import__("pathlib").Path(tmp, "hit")))
    miss = gr.GatewayRunner(GatewayConfig(sessions_dir=__import__("pathlib").Path(tmp, "miss")))
    events = []
    for (src, kw), c in zip(built, cases):
        if "Ok" not in c["hermes"] or kw["profile"]:
            continue  # the default store keys under its own policy; keep one policy per origin
        try:
            entry = hit.session_store.get_or_create_session(src)
        except ValueError:
            continue
        events.append({"session_key": entry.session_key, "type": "completion",
                       "platform": src.platform.value, "chat_id": src.chat_id,
                       "thread_id": src.thread_id or "", "user_id": src.user_id or ""})
    miss.session_store._ensure_loaded()

    def route(runner):
        build_source = runner._build_process_event_source  # bound once, not per call

        def go():
            for e in events:
                build_source(e)
        return go

    ops = {
        "hermes_build": (len(built), build_all),
        "hermes_parse": (len(keys), parse_all),
        "route_store_hit": (len(events), route(hit)),
        "route_store_miss": (len(events), route(miss)),
    }
    our_rounds, their_rounds = {}, {op: [] for op in ops}
    for _ in range(BLOCKS):
        block = json.loads(subprocess.run(
            [procroute, "timeit", "--rounds", str(ROUNDS_PER_BLOCK)], input=corpus,
            capture_output=True, text=True, check=True).stdout)
        for op, t in block.items():
            our_rounds.setdefault(op, []).extend(t["per_round_ns"])
        for op, (calls, f) in ops.items():
            their_rounds[op].extend(timed(calls, f))
    ours = {op: summary(per) for op, per in our_rounds.items()}
    theirs = {op: summary(per) for op, per in their_rounds.items()}
    rows = [("key build", "hermes_build"), ("key parse", "hermes_parse"),
            ("destination, store hit", "route_store_hit"),
            ("destination, store miss", "route_store_miss")]
    print(f"inputs: {len(built)} origins x policies, {len(keys)} hermes keys, {len(events)} events; "
          f"{BLOCKS} x {ROUNDS_PER_BLOCK} rounds per side, interleaved; ns per call, median [min..max]")
    print(f"{'operation':26} {'hermes-agent 0.19.0':>28} {'procroute':>24} {'ratio':>8}")
    ok = True
    for label, op in rows:
        h, r = theirs[op], ours[op]
        ratio = h["median_ns"] / r["median_ns"]
        ok &= ratio >= 20
        print(f"{label:26} {h['median_ns']:>9.0f} [{h['min_ns']:.0f}..{h['max_ns']:.0f}]".ljust(56)
              + f" {r['median_ns']:>8.1f} [{r['min_ns']:.1f}..{r['max_ns']:.1f}]".ljust(26)
              + f" {ratio:>7.1f}x")
    owned = ours["hermes_parse_owned"]
    print(f"{'(key parse, owned fields)':26} {'':28} {owned['median_ns']:>8.1f} "
          f"[{owned['min_ns']:.1f}..{owned['max_ns']:.1f}]   "
          f"{theirs['hermes_parse']['median_ns'] / owned['median_ns']:>6.1f}x")
    naive, simd = ours["byte_scan_naive"]["median_ns"], ours["byte_scan_memchr"]["median_ns"]
    floor = min(naive, simd)
    parse = ours["hermes_parse"]["median_ns"]
    print(f"byte-scan floor: plain count {naive:.1f} ns, memchr count {simd:.1f} ns")
    print(f"procroute hermes parse vs byte-scan floor ({floor:.1f} ns): {parse / floor:.2f}x (target <= 3x)")
    ok &= parse / floor <= 3
    if args.check and not ok:
        print("targets not met", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
