#!/usr/bin/env python3
"""Relays the protocol to a real harness (argv[2:]) and breaks one thing
about trace replies, for the runner's robustness tests.
MODE (argv[1]): wrongseq (the first trace reply names another seq) |
extra (every trace reply carries an unknown field) | refuse-nul (traces with
a NUL in a thread's id are skipped, like hermes-agent's environment
variables) | refuse-nul-declared (the same, declared as a constraint, P-12) |
no-restart-profile (declares a profile that steers every restart off, P-13)."""
import json
import subprocess
import sys

mode = sys.argv[1]
inner = subprocess.Popen(sys.argv[2:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
traces = 0
for line in sys.stdin:
    inner.stdin.write(line)
    inner.stdin.flush()
    msg = json.loads(line)
    if msg["cmd"] == "stop":
        break
    reply = json.loads(inner.stdout.readline())
    if msg["cmd"] == "start" and mode == "no-restart-profile":
        reply["steer"] = [{"shape": "restart", "share": 0, "reason": "a test profile"}]
    if msg["cmd"] == "start" and mode == "refuse-nul-declared":
        reply["constraints"] = [{"fields": ["chat_id", "thread_id", "user_id", "user_name"],
                                 "forbid": "\u0000", "reason": "ids travel in environment variables"}]
    if msg["cmd"] == "run" and msg["case"].get("op") == "trace" and mode.startswith("refuse-nul"):
        ids = [v for t in msg["case"]["trace"]["threads"] for v in t.values()]
        if any("\u0000" in v for v in ids):
            reply = {"seq": reply["seq"], "skipped": "a thread id contains NUL"}
    if msg["cmd"] == "run" and msg["case"].get("op") == "trace":
        traces += 1
        if mode == "wrongseq" and traces == 1:
            reply["seq"] += 1000
        if mode == "extra":
            reply["note"] = "not in the protocol"
    print(json.dumps(reply), flush=True)
inner.wait()
