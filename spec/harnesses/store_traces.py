#!/usr/bin/env python3
"""Stores a real implementation's counterexamples as portable trace vectors.

    hermes-agent/run.sh --format json --save DIR > report.json   # a shrinking run
    hermes-agent/classify.py report.json DIR > hermes-agent/known-failures-0.19.0.txt
    store_traces.py hermes-agent/known-failures-0.19.0.txt DIR hermes
        # writes spec/vectors/traces/hermes-*.json; `openclaw` likewise

For every trace finding of the known-failures list, the shortest shrunk
counterexample the run saved becomes `spec/vectors/traces/<prefix>-<finding>.json`
(id `trace/<prefix>-<finding>`): the trace, where it was found (the
implementation, the rule it broke, the judge's words), the rules it exercises, and what a
correct implementation reports — taken from procroute's own router through
`procroute replay --json`, which must pass it. `tests/traces.rs` then holds
the built-in router to those observations, and `conform` runs the file
against every harness, hermes-agent included.
"""

import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
PROCROUTE = os.environ.get("PROCROUTE", os.path.join(ROOT, "target", "release", "procroute"))


def main():
    known_path, save_dir = sys.argv[1], sys.argv[2]
    prefix = sys.argv[3] if len(sys.argv) > 3 else "hermes"
    harness_dir = {"hermes": "hermes-agent"}.get(prefix, prefix)
    best = {}
    with open(known_path, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"gen/(\d+)/(\d+)\s+#\s+([A-Z]-[A-Z-]+)", line)
            if not m:
                continue
            seed, n, finding = m.groups()
            path = os.path.join(save_dir, f"gen-{seed}-{n}.json")
            if not os.path.exists(path):
                continue  # not shrunk by that run
            with open(path, encoding="utf-8") as g:
                doc = json.load(g)
            size = (len(doc["trace"]["ops"]), len(doc["trace"]["threads"]))
            if finding not in best or size < best[finding][0]:
                best[finding] = (size, path, doc)
    out_dir = os.path.join(ROOT, "spec", "vectors", "traces")
    for finding, (_, path, doc) in sorted(best.items()):
        replay = subprocess.run(
            [PROCROUTE, "replay", path, "--json"], capture_output=True, text=True
        )
        r = json.loads(replay.stdout)
        if r["verdict"] != "pass":
            sys.exit(f"{path}: procroute's own router does not pass it: {r['violations']}")

        def obs(o):
            keep = {k: o[k] for k in ("step", "destination", "process", "kind")}
            if o.get("cause"):
                keep["cause"] = o["cause"]
            return keep

        name = f"{prefix}-{finding.lower()}"
        stored = {
            "suite_version": doc["suite_version"],
            "id": f"trace/{name}",
            "rules": doc["rules"],
            "note": (
                f"{doc['found']['implementation']}, finding {finding} "
                f"(spec/harnesses/{harness_dir}/FINDINGS.md): a generated case "
                "shrunk by procroute conform through its harness."
            ),
            "found": doc["found"],
            "trace": doc["trace"],
            "expect": {
                "verdict": "pass",
                "deliveries": [obs(o) for o in r["result"]["deliveries"]],
                "dead_letters": [obs(o) for o in r["result"]["dead_letters"]],
            },
        }
        dest = os.path.join(out_dir, name + ".json")
        with open(dest, "w", encoding="utf-8") as f:
            json.dump(stored, f, indent=2, ensure_ascii=False)
            f.write("\n")
        print(f"{dest}: {finding}, {len(doc['trace']['ops'])} ops, from {os.path.basename(path)}")


if __name__ == "__main__":
    main()
