#!/usr/bin/env python3
"""A deliberately broken harness for the runner's robustness tests.
MODE (argv[1]): crash | garbage | hang | partial | oversized | wrongseq."""
import json
import sys
import time

mode = sys.argv[1]
runs = 0
for line in sys.stdin:
    msg = json.loads(line)
    if msg["cmd"] == "start":
        ops = ["origin"] if mode == "partial" else [
            "hermes_build", "canonical_build", "canonical_parse", "hermes_parse", "origin"]
        print(json.dumps({"protocol": 1, "implementation": {"name": "broken", "version": "0", "language": "python"},
                          "operations": ops, "unsupported": {"hermes_build": "no hermes keys here"}}), flush=True)
    elif msg["cmd"] == "stop":
        break
    else:
        runs += 1
        seq = msg["seq"]
        if mode == "crash" and runs == 3:
            sys.exit(3)
        if mode == "garbage" and runs == 2:
            print("this is \x01 not json", flush=True)
            continue
        if mode == "hang" and runs == 1:
            time.sleep(30)
        if mode == "oversized" and runs == 1:
            print("x" * (1 << 21), flush=True)
            continue
        if mode == "wrongseq" and runs == 1:
            seq += 1000
        print(json.dumps({"seq": seq, "result": {"ok": True}}), flush=True)
