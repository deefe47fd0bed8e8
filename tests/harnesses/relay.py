#!/usr/bin/env python3
"""Relays the protocol to a real harness (argv[2:]) and breaks one thing
about trace replies, for the runner's robustness tests.
MODE (argv[1]): wrongseq (the first trace reply names another seq) |
extra (every trace reply carries an unknown field) | refuse-nul (traces with
a NUL in a thread's id are skipped, like hermes-agent's environment
variables) | refuse-nul-declared (the same, declared as a constraint, P-12) |
no-restart-profile (declares a profile that steers every restart off, P-13) |
declare-read-ack (declares SPEC D-1's policy, P-15, and changes nothing else:
a gateway that claims it and does not) | read-ack (declares it and leaves out
of each trace reply the completions a read by the home thread acknowledged:
a gateway of kind D-1 (d), simplified: every completion of that process
delivered from the read until its next spawn) | read-ack-undeclared (the same without declaring it)."""
import json
import subprocess
import sys



def drop_acknowledged(trace, result):
    """Leaves out every completion of a process delivered from a read of it
    by its home thread, made after its latest run ended with the adapter
    up, until the process is spawned again."""
    def place(i):
        t = trace["threads"][i]
        return tuple(t.get(k) for k in ("platform", "chat_type", "chat_id", "thread_id"))
    up, home, ended, acked = True, {}, set(), []
    for step, op in enumerate(trace["ops"]):
        if not isinstance(op, dict):
            continue
        (name, body), = op.items()
        if name == "adapter":
            up = body["up"]
        elif name == "spawn":
            home[body["process"]] = place(body["thread"])
            ended.discard(body["process"])
            acked = [(p, s, e if p != body["process"] or e <= step else step) for p, s, e in acked]
        elif name in ("exit", "kill"):
            ended.add(body["process"])
        elif name == "read":
            p = body["process"]
            if p in ended and up and home.get(p) == place(body["thread"]):
                acked.append((p, step, len(trace["ops"])))
    result["deliveries"] = [
        d for d in result["deliveries"]
        if not (d["kind"] == "completion"
                and any(d["process"] == p and s <= d["step"] < e for p, s, e in acked))
    ]


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
    if msg["cmd"] == "start" and mode in ("declare-read-ack", "read-ack"):
        reply["read_acknowledges"] = "own_thread_after_delivery"
    if msg["cmd"] == "run" and msg["case"].get("op") == "trace" and mode.startswith("read-ack"):
        drop_acknowledged(msg["case"]["trace"], reply["result"]["trace"])
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
