#!/usr/bin/env python3
"""procroute harness for the template router (spec/PROTOCOL.md, version 1).

Protocol replies go to stdout, one JSON object per line; anything else
must go to stderr. No dependencies beyond the standard library.
"""
import json
import sys

from keys import run_key_case
from router import run_trace

KEY_OPS = ["hermes_build", "canonical_build", "canonical_parse", "hermes_parse", "origin",
           "dialect_build", "dialect_parse"]


def reply(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        cmd = msg.get("cmd")
        if cmd == "start":
            reply({
                "protocol": 1,
                "implementation": {"name": "example-python", "version": "0.1.0", "language": "python"},
                "operations": KEY_OPS + ["trace"],
            })
        elif cmd == "run":
            case = msg["case"]
            try:
                if case["op"] == "trace":
                    result = {"trace": run_trace(case["trace"])}
                else:
                    result = run_key_case(case)
                reply({"seq": msg["seq"], "result": result})
            except Exception as exc:  # report, never crash the run
                reply({"seq": msg["seq"], "errored": f"{type(exc).__name__}: {exc}"})
        elif cmd == "stop":
            return
        else:
            reply({"errored": f"unknown command {cmd!r}"})


if __name__ == "__main__":
    main()
