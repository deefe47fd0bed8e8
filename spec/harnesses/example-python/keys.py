"""Session keys and origins for the template (spec/SPEC.md chapters 1–2),
written from the spec: the canonical dialect, the hermes dialect, origin
validation. Errors are dicts shaped like the vectors' expectations."""
import re

MAX_ID, MAX_NAME, MAX_PLATFORM, MAX_PROFILE, MAX_KEY = 512, 256, 32, 64, 8192
CHAT_TYPES = ("dm", "group", "channel", "thread")
FIELDS = ("platform", "chat_type", "chat_id", "thread_id", "user_id", "user_name")


class KeyError_(Exception):
    def __init__(self, position, kind, **extra):
        super().__init__(kind)
        self.error = {"kind": kind, "position": position, **extra}


def blen(s):
    return len(s.encode("utf-8"))


def platform_problem(p):
    if p == "":
        return "empty"
    if blen(p) > MAX_PLATFORM:
        return "too_long"
    if not re.fullmatch(r"[a-z][a-z0-9_]*", p):
        return "bad_token"
    return None


def validate_origin(o):
    """Returns an error dict or None (ORIGIN-1..6)."""
    if not isinstance(o, dict) or set(o) - set(FIELDS) or not {"platform", "chat_type", "chat_id"} <= set(o):
        return {"kind": "malformed"}
    if any(not isinstance(o[k], str) for k in o):
        return {"kind": "malformed"}
    prob = platform_problem(o["platform"])
    if prob:
        return {"kind": prob, "field": "platform"}
    if o["chat_type"] not in CHAT_TYPES:
        return {"kind": "unknown_chat_type"}
    for f in ("chat_id", "thread_id", "user_id", "user_name"):
        if f in o:
            if o[f] == "":
                return {"kind": "empty", "field": f}
            if blen(o[f]) > (MAX_NAME if f == "user_name" else MAX_ID):
                return {"kind": "too_long", "field": f}
    return None


def namespace(policy):
    p = policy.get("profile")
    return "main" if p in (None, "", "default", "main") else p


def user_keyed(o, policy):
    return (o["chat_type"] != "dm" and policy.get("group_sessions_per_user", True)
            and ("thread_id" not in o or policy.get("thread_sessions_per_user", False)))


def esc(s):
    return "".join(f"%{ord(c):02X}" if c in "%:~" or ord(c) < 0x20 or ord(c) == 0x7F else c for c in s)


def canonical_build(o, policy):
    key = f"agent:{namespace(policy)}:{o['platform']}:{o['chat_type']}:{esc(o['chat_id'])}"
    if "thread_id" in o:
        key += ":" + esc(o["thread_id"])
    if "user_id" in o and user_keyed(o, policy):
        key += ":~" + esc(o["user_id"])
    return key


def segments(key):
    """[(text, byte_start)] split on ':'."""
    out, start, b = [], 0, key.encode("utf-8")
    for i, byte in enumerate(b):
        if byte == 0x3A:
            out.append((b[start:i].decode("utf-8"), start))
            start = i + 1
    out.append((b[start:].decode("utf-8"), start))
    return out


def head(key):
    if blen(key) > MAX_KEY:
        raise KeyError_(MAX_KEY, "too_long")
    segs = segments(key)
    if segs[0][0] != "agent" or len(segs) < 2:
        raise KeyError_(0, "missing_prefix")
    ns, pos = segs[1]
    if ns == "":
        raise KeyError_(pos, "empty", part="namespace")
    if not re.fullmatch(r"[a-z0-9][a-z0-9_-]*", ns) or blen(ns) > MAX_PROFILE:
        raise KeyError_(pos, "bad_token", part="namespace")
    if len(segs) < 3:
        raise KeyError_(blen(key), "missing", part="platform")
    plat, pos = segs[2]
    prob = platform_problem(plat)
    if prob:
        raise KeyError_(pos, {"too_long": "part_too_long"}.get(prob, prob), part="platform")
    if len(segs) < 4:
        raise KeyError_(blen(key), "missing", part="chat_type")
    ct, pos = segs[3]
    if ct == "":
        raise KeyError_(pos, "empty", part="chat_type")
    if ct not in CHAT_TYPES:
        raise KeyError_(pos, "unknown_chat_type")
    return ns, plat, ct, segs[4:]


def decode(text, start, part):
    if text == "":
        raise KeyError_(start, "empty", part=part)
    out, b, i = [], text.encode("utf-8"), 0
    while i < len(b):
        c = b[i]
        if c == 0x25:  # %
            h = b[i + 1:i + 3]
            if len(h) != 2 or not all(x in b"0123456789ABCDEF" for x in h):
                raise KeyError_(start + i, "bad_escape", part=part)
            v = int(h.decode(), 16)
            if not (chr(v) in "%:~" or v < 0x20 or v == 0x7F):
                raise KeyError_(start + i, "bad_escape", part=part)
            out.append(v)
            i += 3
        elif c == 0x7E or c < 0x20 or c == 0x7F:
            raise KeyError_(start + i, "unescaped", part=part)
        else:
            out.append(c)
            i += 1
    s = bytes(out).decode("utf-8")
    if blen(s) > MAX_ID:
        raise KeyError_(start, "part_too_long", part=part)
    return s


def canonical_parse(key):
    ns, plat, ct, tail = head(key)
    if ns == "default":  # written `main` in a canonical key (SPEC KEY-2)
        raise KeyError_(len("agent:"), "bad_token", part="namespace")
    if not tail:
        raise KeyError_(blen(key), "missing", part="chat_id")
    fields = {"namespace": ns, "platform": plat, "chat_type": ct,
              "chat_id": decode(tail[0][0], tail[0][1], "chat_id")}
    last = "chat_id"
    for text, pos in tail[1:]:
        if "user_id" in fields:
            raise KeyError_(pos - 1, "trailing", after="user_id")
        if text.startswith("~"):
            if ct == "dm":
                raise KeyError_(pos, "user_in_dm")
            fields["user_id"] = decode(text[1:], pos + 1, "user_id")
            last = "user_id"
        elif "thread_id" not in fields:
            fields["thread_id"] = decode(text, pos, "thread_id")
            last = "thread_id"
        else:
            raise KeyError_(pos - 1, "trailing", after=last)
    return fields


# -- the hermes dialect (KEY-H1, KEY-H2), from the spec's description
def wa_normalise(s):
    return s.strip().replace("+", "", 1).split(":", 1)[0].split("@", 1)[0]


def wa_canonical(s):
    once = wa_normalise(s)
    if once == "":
        return ""
    twice = wa_normalise(once)
    if not re.match(r"^[A-Za-z0-9@.+\-]+$", twice):
        raise ValueError("rejected")
    return twice


def hermes_build(o, policy):
    ns = "agent:" + namespace(policy)
    parts = [ns, o["platform"], o["chat_type"]]
    wa = o["platform"] == "whatsapp"
    thread, user = o.get("thread_id"), o.get("user_id")
    if o["chat_type"] == "dm":
        chat = wa_canonical(o["chat_id"]) if wa else o["chat_id"]
        if chat:
            parts.append(chat)
        elif user:
            parts.append((wa_canonical(user) if wa else "") or user)
        if thread:
            parts.append(thread)
        return ":".join(parts)
    participant = ((wa_canonical(user) or user) if wa else user) if user else None
    parts.append(o["chat_id"])
    if thread:
        parts.append(thread)
    if participant and user_keyed(o, policy):
        parts.append(participant)
    return ":".join(parts)


def hermes_parse(key):
    ns, plat, ct, tail = head(key)
    known = lambda v: {"state": "known", "value": v}  # noqa: E731
    absent = {"state": "absent"}
    unknown = lambda why: {"state": "unknown", "value": why}  # noqa: E731
    wa_dm = plat == "whatsapp" and ct == "dm"
    if not tail:
        if not wa_dm:
            raise KeyError_(blen(key), "missing", part="chat_id")
        c, t, u = unknown("whats_app_canonical"), absent, absent
    elif wa_dm:
        c = t = u = unknown("whats_app_canonical")
    elif len(tail) == 1:
        text, pos = tail[0]
        if text == "":
            raise KeyError_(pos, "empty", part="chat_id")
        if blen(text) > MAX_ID:
            raise KeyError_(pos, "part_too_long", part="chat_id")
        c, t, u = known(text), absent, absent
    else:
        c = t = unknown("colon_split")
        u = absent if ct == "dm" else unknown("colon_split")
    return {"namespace": ns, "platform": plat, "chat_type": ct, "chat_id": c, "thread_id": t, "user_id": u}


def run_key_case(case):
    op = case["op"]
    try:
        if op == "origin":
            e = validate_origin(case["origin"])
            return {"error": e} if e else {"ok": True}
        if op in ("hermes_build", "canonical_build"):
            o, policy = case["origin"], case.get("policy", {})
            e = validate_origin(o)
            if e:
                return {"error": {"kind": "invalid_origin"}}
            if op == "canonical_build":
                return {"key": canonical_build(o, policy)}
            try:
                return {"key": hermes_build(o, policy)}
            except ValueError:
                return {"error": {"kind": "whatsapp_id_rejected"}}
        if op == "canonical_parse":
            return {"fields": canonical_parse(case["key"])}
        if op == "hermes_parse":
            return {"parsed": hermes_parse(case["key"])}
        # The template's own session-key dialect (P-10): the canonical one
        # under the default policy. Its keys name the router's lanes, so
        # these two operations are where lane collisions are checked:
        # KEY-L1 (distinct threads, distinct keys), KEY-L2 (a parse names
        # the thread the key was built from, or declines), KEY-L3 (parse
        # answers every string), KEY-L4 (a malformed key is refused, never
        # guessed at: the route, user included, rebuilds the key exactly).
        if op == "dialect_build":
            o = case["origin"]
            if validate_origin(o):
                return {"error": {"kind": "invalid_origin"}}
            return {"key": canonical_build(o, {})}
        if op == "dialect_parse":
            try:
                f = canonical_parse(case["key"])
            except KeyError_:
                return {"route": None}
            route = {k: f[k] for k in ("platform", "chat_type", "chat_id")}
            for k in ("thread_id", "user_id"):
                if k in f:
                    route[k] = f[k]
            return {"route": route}
    except KeyError_ as ke:
        return {"error": ke.error}
    raise ValueError(f"unknown op {op!r}")
