#!/usr/bin/env python3
"""Differential check: procroute's hermes dialect vs hermes-agent's own
`gateway.session.build_session_key` (rule KEY-H1, KEY-H2).

Reads JSON lines from stdin, as printed by `procroute keys-corpus`:
  {"origin": {...}, "policy": {...}, "hermes": {"Ok": key} | {"Err": msg}, ...}
and, with --vectors FILE, also every `hermes_build` vector of a key vector file.
For each case, builds the key with the installed hermes-agent and compares.
Prints the mismatches and a closing line `N passed, N failed`; exits 1 on any
mismatch. This is our own code; it imports the published package.
"""
import argparse
import atexit
import json
import os
import shutil
import sys
import tempfile

# hermes-agent fixes its paths at import time and writes state there.
os.environ["HERMES_HOME"] = tempfile.mkdtemp(prefix="procroute-hermes-")
atexit.register(shutil.rmtree, os.environ["HERMES_HOME"], ignore_errors=True)
os.environ.setdefault("HERMES_BACKGROUND_NOTIFICATIONS", "result")

from gateway.config import Platform  # noqa: E402
from gateway.session import SessionSource, build_session_key  # noqa: E402


def hermes_key(origin, policy):
    source = SessionSource(
        platform=Platform(origin["platform"]),
        chat_id=origin["chat_id"],
        chat_type=origin["chat_type"],
        thread_id=origin.get("thread_id"),
        user_id=origin.get("user_id"),
        user_name=origin.get("user_name"),
    )
    try:
        return {"Ok": build_session_key(
            source,
            group_sessions_per_user=policy.get("group_sessions_per_user", True),
            thread_sessions_per_user=policy.get("thread_sessions_per_user", False),
            profile=policy.get("profile"),
        )}
    except ValueError as exc:
        return {"Err": f"ValueError: {exc}"}


def same(ours, theirs):
    if "Ok" in ours or "Ok" in theirs:
        return ours.get("Ok") == theirs.get("Ok")
    return "Err" in ours and "Err" in theirs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vectors", help="key vector file whose hermes_build vectors to check")
    ap.add_argument("--show", type=int, default=20, help="mismatches to print")
    args = ap.parse_args()

    cases = []
    for n, line in enumerate(sys.stdin):
        line = line.strip()
        if line:
            c = json.loads(line)
            cases.append((f"corpus/{n}", c["origin"], c["policy"], c["hermes"]))
    if args.vectors:
        with open(args.vectors, encoding="utf-8") as f:
            for v in json.load(f)["vectors"]:
                if v["op"] != "hermes_build":
                    continue
                exp = v["expect"]
                ours = {"Ok": exp["key"]} if "key" in exp else {"Err": exp["error"]["kind"]}
                cases.append((v["id"], v["origin"], v.get("policy", {}), ours))

    passed = failed = 0
    for cid, origin, policy, ours in cases:
        theirs = hermes_key(origin, policy)
        if same(ours, theirs):
            passed += 1
        else:
            failed += 1
            if failed <= args.show:
                print(f"MISMATCH {cid}: origin={json.dumps(origin, ensure_ascii=False)} "
                      f"policy={json.dumps(policy)} procroute={ours} hermes={theirs}")
    print(f"hermes-agent key differential: {len(cases)} cases")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
