#!/usr/bin/env python3
"""A deliberately lossy key dialect for tests/dialect_laws.rs (P-10).

    lossy_dialect.py exact   ids kept exactly, `%`/`:` escaped (passes KEY-L1..L3)
    lossy_dialect.py fold    ids lower-cased (like OpenClaw's peer ids)
    lossy_dialect.py trim    ids stripped of surrounding whitespace
    lossy_dialect.py raw     ids inserted raw, `:` unescaped (thread after `:`)
    lossy_dialect.py crash   parse answers `errored` for keys containing `%`
    lossy_dialect.py lenient exact's keys, but parse guesses at malformed keys
                             (bad escapes kept, empty or padded segments taken)
    lossy_dialect.py peruser exact, with two declared policies: `default`, and
                             `per-user` where a group's key gains the user id
                             after the chat id, which parse reads as a thread
                             (hermes-agent's shape): only that policy is lossy
"""
import json
import sys

MODE = sys.argv[1]


def esc(s):
    return s.replace("%", "%25").replace(":", "%3A")


def unesc(s):
    """None for a malformed escape (only `%25` and `%3A` exist)."""
    out, i = [], 0
    while i < len(s):
        if s[i] == "%":
            if s[i:i + 3] == "%25":
                out.append("%")
            elif s[i:i + 3] == "%3A":
                out.append(":")
            elif MODE in ("exact", "fold", "trim", "peruser"):
                return None
            else:
                out.append(s[i:i + 3])
            i += 3
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def build(o, policy):
    ids = [o["chat_id"]] + ([o["thread_id"]] if o.get("thread_id") is not None else [])
    if policy.get("per_user") and o["chat_type"] == "group" and len(ids) == 1 and o.get("user_id"):
        ids.append(o["user_id"])
    if MODE == "fold":
        ids = [i.lower() for i in ids]
    if MODE == "trim":
        ids = [i.strip() for i in ids]
    if MODE != "raw":
        ids = [esc(i) for i in ids]
    return ":".join(["agent", "main", o["platform"], o["chat_type"]] + ids)


def parse(key):
    if MODE == "crash" and "%" in key:
        raise ValueError("cannot parse")
    if MODE == "lenient":
        key = key.strip()
    parts = key.split(":")
    if MODE == "lenient":
        parts = [p for p in parts if p]
    if len(parts) < 5 or parts[:2] != ["agent", "main"] or parts[3] not in ("dm", "group", "channel", "thread"):
        return None
    if MODE == "raw":
        parts = parts[:5] + ([":".join(parts[5:])] if len(parts) > 5 else [])
    if len(parts) > 6:
        return None
    if MODE != "lenient" and any(p == "" for p in parts):
        return None  # an empty segment is no id
    ids = parts[4:] if MODE == "raw" else [unesc(p) for p in parts[4:]]
    if any(i is None for i in ids):
        return None
    r = {"platform": parts[2], "chat_type": parts[3], "chat_id": ids[0]}
    if len(ids) == 2:
        r["thread_id"] = ids[1]
    return r


for line in sys.stdin:
    msg = json.loads(line)
    if msg["cmd"] == "start":
        started = {"protocol": 1, "implementation": {"name": f"lossy-{MODE}", "version": "0", "language": "python"},
                   "operations": ["dialect_build", "dialect_parse"]}
        if MODE == "peruser":
            started["policies"] = {"default": {}, "per-user": {"per_user": True}}
        print(json.dumps(started), flush=True)
    elif msg["cmd"] == "run":
        c = msg["case"]
        try:
            if c["op"] == "dialect_build":
                res = {"key": build(c["origin"], c.get("policy", {}))}
            else:
                res = {"route": parse(c["key"])}
            print(json.dumps({"seq": msg["seq"], "result": res}), flush=True)
        except Exception as e:
            print(json.dumps({"seq": msg["seq"], "errored": str(e)}), flush=True)
    else:
        break
