#!/usr/bin/env python3
"""Clean-room harness for the procroute protocol v1 (PROTOCOL.md), implementing SPEC.md."""
import json
import os
import re
import sys
from collections import deque

READ_POLICY = os.environ.get("READ_ACK", "")
OWN_THREAD_ACK = READ_POLICY == "own_thread_after_delivery"

# ---------------------------------------------------------------- helpers


def blen(s):
    return len(s.encode("utf-8", "surrogatepass"))


class OriginError(Exception):
    def __init__(self, kind, field=None, **extra):
        self.kind = kind
        self.field = field
        self.extra = extra

    def as_json(self):
        e = {"kind": self.kind}
        if self.field is not None:
            e["field"] = self.field
        e.update(self.extra)
        return e


class KeyError_(Exception):
    def __init__(self, kind, position, part=None):
        self.kind = kind
        self.position = position
        self.part = part

    def as_json(self):
        e = {"kind": self.kind, "position": self.position}
        if self.part is not None:
            e["part"] = self.part
        e["display"] = "byte %d: %s" % (self.position, self.kind)
        return e


CHAT_TYPES = ("dm", "group", "channel", "thread")
ORIGIN_FIELDS = ("platform", "chat_type", "chat_id", "thread_id", "user_id", "user_name")
PLATFORM_RE = re.compile(r"[a-z][a-z0-9_]*\Z")
PROFILE_RE = re.compile(r"[a-z0-9][a-z0-9_-]*\Z")

# ---------------------------------------------------------------- origins (ORIGIN-1..6)


def validate_origin(o):
    """Returns a normalized dict (only present fields) or raises OriginError."""
    if not isinstance(o, dict):
        raise OriginError("malformed")
    for k in o:
        if k not in ORIGIN_FIELDS:
            raise OriginError("malformed")
    for k in ("platform", "chat_type", "chat_id"):
        if k not in o:
            raise OriginError("malformed")
    for k in ORIGIN_FIELDS:
        if k in o and not isinstance(o[k], str):
            raise OriginError("malformed")
    p = o["platform"]
    if p == "":
        raise OriginError("empty", "platform")
    if blen(p) > 32:
        raise OriginError("too_long", "platform", length=blen(p), limit=32)
    if not PLATFORM_RE.match(p):
        raise OriginError("bad_token", "platform")
    if o["chat_type"] not in CHAT_TYPES:
        raise OriginError("unknown_chat_type", "chat_type")
    for k in ("chat_id", "thread_id", "user_id"):
        if k in o:
            v = o[k]
            if v == "":
                raise OriginError("empty", k)
            if blen(v) > 512:
                raise OriginError("too_long", k, length=blen(v), limit=512)
    if "user_name" in o:
        v = o["user_name"]
        if v == "":
            raise OriginError("empty", "user_name")
        if blen(v) > 256:
            raise OriginError("too_long", "user_name", length=blen(v), limit=256)
    return {k: o[k] for k in ORIGIN_FIELDS if k in o}


# ---------------------------------------------------------------- policy (KEY-3, KEY-4)


def read_policy(p):
    if p is None:
        p = {}
    if not isinstance(p, dict):
        raise ValueError("policy is not an object")
    g = p.get("group_sessions_per_user", True)
    t = p.get("thread_sessions_per_user", False)
    prof = p.get("profile")
    if not isinstance(g, bool) or not isinstance(t, bool):
        raise ValueError("policy knobs must be booleans")
    if prof is not None:
        if not isinstance(prof, str) or not (blen(prof) <= 64 and PROFILE_RE.match(prof)):
            raise ValueError("bad profile")
    return g, t, prof


def namespace_of(prof):
    if prof is None or prof in ("main", "default"):
        return "main"
    return prof


def user_keyed(origin, g, t):
    if "user_id" not in origin:
        return False
    if origin["chat_type"] == "dm":
        return False
    if not g:
        return False
    if "thread_id" in origin and not t:
        return False
    return True


# ---------------------------------------------------------------- canonical dialect (KEY-C*)


def c_escape(s):
    out = []
    for ch in s:
        o = ord(ch)
        if ch in "%:~" or o < 0x20 or o == 0x7F:
            out.append("%%%02X" % o)
        else:
            out.append(ch)
    return "".join(out)


ESCAPABLE = set([0x25, 0x3A, 0x7E, 0x7F] + list(range(0x20)))
UPHEX = "0123456789ABCDEF"


def canonical_build(origin, policy):
    g, t, prof = policy
    ns = namespace_of(prof)
    k = "agent:%s:%s:%s:%s" % (ns, origin["platform"], origin["chat_type"], c_escape(origin["chat_id"]))
    if "thread_id" in origin:
        k += ":" + c_escape(origin["thread_id"])
    if user_keyed(origin, g, t):
        k += ":~" + c_escape(origin["user_id"])
    return k


class Seg:
    __slots__ = ("text", "pos")

    def __init__(self, text, pos):
        self.text = text
        self.pos = pos


def split_segments(key, start):
    """Split key[start:] on ':' returning Segs with byte positions."""
    segs = []
    pos = blen(key[:start])
    cur = []
    cur_pos = pos
    for ch in key[start:]:
        if ch == ":":
            segs.append(Seg("".join(cur), cur_pos))
            pos += 1
            cur = []
            cur_pos = pos
        else:
            cur.append(ch)
            pos += blen(ch)
    segs.append(Seg("".join(cur), cur_pos))
    return segs


def parse_head(key, canonical):
    """Common prefix: agent:<ns>:<platform>:<chat type>. Returns (ns, platform, ct, tail segs, keylen)."""
    kb = blen(key)
    if kb > 8192:
        raise KeyError_("too_long", 8192)
    if not key.startswith("agent:"):
        raise KeyError_("missing_prefix", 0, "prefix")
    segs = split_segments(key, 6)
    names = ("namespace", "platform", "chat_type")
    # namespace
    ns = segs[0]
    if ns.text == "":
        raise KeyError_("empty", ns.pos, "namespace")
    if blen(ns.text) > 64 or not PROFILE_RE.match(ns.text):
        raise KeyError_("bad_token", ns.pos, "namespace")
    if canonical and ns.text == "default":
        raise KeyError_("bad_token", ns.pos, "namespace")
    if len(segs) < 2:
        raise KeyError_("missing", kb, "platform")
    pl = segs[1]
    if pl.text == "":
        raise KeyError_("empty", pl.pos, "platform")
    if blen(pl.text) > 32:
        raise KeyError_("part_too_long", pl.pos, "platform")
    if not PLATFORM_RE.match(pl.text):
        raise KeyError_("bad_token", pl.pos, "platform")
    if len(segs) < 3:
        raise KeyError_("missing", kb, "chat_type")
    ct = segs[2]
    if ct.text == "":
        raise KeyError_("empty", ct.pos, "chat_type")
    if ct.text not in CHAT_TYPES:
        raise KeyError_("unknown_chat_type", ct.pos, "chat_type")
    return ns.text, pl.text, ct.text, segs[3:], kb


def c_decode(seg_text, seg_pos, part):
    """Strict decode of one id (KEY-C3)."""
    out = []
    pos = seg_pos
    i = 0
    n = len(seg_text)
    while i < n:
        ch = seg_text[i]
        o = ord(ch)
        if ch == "%":
            h = seg_text[i + 1:i + 3]
            if len(h) == 2 and h[0] in UPHEX and h[1] in UPHEX:
                v = int(h, 16)
                if v not in ESCAPABLE:
                    raise KeyError_("bad_escape", pos, part)
                out.append(chr(v))
                i += 3
                pos += 3
                continue
            raise KeyError_("bad_escape", pos, part)
        if ch == "~" or o < 0x20 or o == 0x7F:
            raise KeyError_("unescaped", pos, part)
        out.append(ch)
        i += 1
        pos += blen(ch)
    s = "".join(out)
    if s == "":
        raise KeyError_("empty", seg_pos, part)
    if blen(s) > 512:
        raise KeyError_("part_too_long", seg_pos, part)
    return s


def canonical_parse(key):
    ns, pl, ct, tail, kb = parse_head(key, True)
    if not tail:
        raise KeyError_("missing", kb, "chat_id")
    fields = {"namespace": ns, "platform": pl, "chat_type": ct}
    chat = tail[0]
    fields["chat_id"] = c_decode(chat.text, chat.pos, "chat_id")
    rest = tail[1:]
    state = "chat"  # chat -> thread -> user
    for seg in rest:
        colon = seg.pos - 1
        if state == "user":
            raise KeyError_("trailing", colon)
        if seg.text.startswith("~"):
            if ct == "dm":
                raise KeyError_("user_in_dm", seg.pos, "user_id")
            fields["user_id"] = c_decode(seg.text[1:], seg.pos + 1, "user_id")
            state = "user"
        else:
            if state == "thread":
                raise KeyError_("trailing", colon)
            fields["thread_id"] = c_decode(seg.text, seg.pos, "thread_id")
            state = "thread"
    return fields


# ---------------------------------------------------------------- hermes dialect (KEY-H*)

WA_OK = re.compile(r"^[A-Za-z0-9@.+-]+$")


class WaRejected(Exception):
    pass


def wa_norm_once(s):
    s = s.strip()
    s = s.replace("+", "", 1)
    s = s.split(":", 1)[0]
    s = s.split("@", 1)[0]
    return s


def wa_canon(raw):
    """Returns canonical id, or None if the first pass leaves nothing; raises WaRejected."""
    c1 = wa_norm_once(raw)
    if c1 == "":
        return None
    c2 = wa_norm_once(c1)
    if c2 == "" or not WA_OK.match(c2):
        raise WaRejected()
    return c2


def hermes_build(origin, policy):
    g, t, prof = policy
    ns = "agent:" + namespace_of(prof)
    pl = origin["platform"]
    ct = origin["chat_type"]
    wa = pl == "whatsapp"
    if ct == "dm":
        chat = origin["chat_id"]
        thread = origin.get("thread_id")
        if wa:
            c = wa_canon(chat)
            if c is None:
                user = origin.get("user_id")
                if user is not None:
                    u = wa_canon(user)
                    if u is None:
                        u = user
                    k = "%s:%s:dm:%s" % (ns, pl, u)
                    if thread is not None:
                        k += ":" + thread
                    return k
                if thread is not None:
                    return "%s:%s:dm:%s" % (ns, pl, thread)
                return "%s:%s:dm" % (ns, pl)
            chat = c
        k = "%s:%s:dm:%s" % (ns, pl, chat)
        if thread is not None:
            k += ":" + thread
        return k
    user = origin.get("user_id")
    if wa and user is not None:
        u = wa_canon(user)
        user = user if u is None else u
    k = "%s:%s:%s:%s" % (ns, pl, ct, origin["chat_id"])
    if "thread_id" in origin:
        k += ":" + origin["thread_id"]
    if user_keyed(origin, g, t):
        k += ":" + user
    return k


def hermes_parse(key):
    ns, pl, ct, tail, kb = parse_head(key, False)
    known = lambda v: {"state": "known", "value": v}
    absent = {"state": "absent"}
    unk = lambda r: {"state": "unknown", "value": r}
    out = {"namespace": ns, "platform": pl, "chat_type": ct}
    if pl == "whatsapp" and ct == "dm":
        if not tail:
            out.update(chat_id=unk("whats_app_canonical"), thread_id=absent, user_id=absent)
        else:
            out.update(chat_id=unk("whats_app_canonical"), thread_id=unk("whats_app_canonical"),
                       user_id=unk("whats_app_canonical"))
        return out
    if not tail:
        raise KeyError_("missing", kb, "chat_id")
    if len(tail) == 1:
        if tail[0].text == "":
            raise KeyError_("empty", tail[0].pos, "chat_id")
        out.update(chat_id=known(tail[0].text), thread_id=absent, user_id=absent)
        return out
    out.update(chat_id=unk("colon_split"), thread_id=unk("colon_split"),
               user_id=absent if ct == "dm" else unk("colon_split"))
    return out


# ---------------------------------------------------------------- own dialect (KEY-L*)

DIALECT_POLICY = (True, True, None)  # most isolating: users keyed wherever present (not in dm)


def dialect_build(origin):
    return canonical_build(origin, DIALECT_POLICY)


def dialect_parse(key):
    try:
        f = canonical_parse(key)
    except KeyError_:
        return None
    if f["namespace"] != "main":
        return None
    route = {k: f[k] for k in ("platform", "chat_type", "chat_id", "thread_id", "user_id") if k in f}
    try:
        o = validate_origin(route)
    except OriginError:
        return None
    if dialect_build(o) != key:
        return None
    return route


# ---------------------------------------------------------------- texts (TEXT-1..4)


def esc_text(s):
    out = []
    for ch in s:
        o = ord(ch)
        if (o < 0x20 or 0x7F <= o <= 0x9F or o in (0x61C, 0x200E, 0x200F, 0x2028, 0x2029, 0xFEFF)
                or 0x202A <= o <= 0x202E or 0x2066 <= o <= 0x2069 or 0xD800 <= o <= 0xDFFF):
            out.append("\\u{%x}" % o)
        else:
            out.append(ch)
    return "".join(out)


def quote_lines(text):
    if text == "":
        return []
    if text.endswith("\n"):
        text = text[:-1]
    return ["| " + esc_text(line) for line in text.split("\n")]


def suppressed_line(n):
    return ["(suppressed: %d)" % n] if n else []


def text_watch_match(proc, pattern, excerpt, suppressed):
    lines = ["[Background process %s: watch match]" % esc_text(proc),
             "pattern: " + esc_text(pattern)]
    lines += quote_lines(excerpt)
    lines += suppressed_line(suppressed)
    return "\n".join(lines)


def text_watch_disabled(proc, suppressed):
    lines = ["[Background process %s: watching disabled after repeated matches; "
             "you will be told when it ends]" % esc_text(proc)]
    lines += suppressed_line(suppressed)
    return "\n".join(lines)


def text_completion(proc, how, tail, suppressed):
    lines = ["[Background process %s %s]" % (esc_text(proc), how)]
    lines += quote_lines(tail)
    lines += suppressed_line(suppressed)
    return "\n".join(lines)


SHUTDOWN_TEXT = "[Background process notice] The gateway is shutting down; running background processes may be interrupted."

# ---------------------------------------------------------------- gateway model

COOLDOWN_MS = 15000
BREAKER_WINDOW_MS = 10000
BREAKER_MAX = 15
BREAKER_PAUSE_MS = 30000
MAX_ATTEMPTS = 6
MAX_QUEUED = 1000000
MAX_LANES = 1000000
MAX_RUNNING = 100000
DELIVERED_KEEP = 65536
TAIL_CHARS = 2000
EXCERPT_LINES = 20
EXCERPT_CHARS = 2000
GATEWAY_POLICY = (True, False, None)  # hermes-agent defaults (KEY-3)


def thread_of(origin):
    return (origin["platform"], origin["chat_type"], origin["chat_id"], origin.get("thread_id"))


def dest_json(th):
    d = {"platform": th[0], "chat_type": th[1], "chat_id": th[2]}
    if th[3] is not None:
        d["thread_id"] = th[3]
    return d


class Run:
    def __init__(self, run_id, label, origin, lane, watch, notify):
        self.run_id = run_id
        self.label = label
        self.origin = origin
        self.lane = lane
        self.watch = list(watch)
        self.watching = bool(watch)
        self.notify = notify
        self.running = True
        self.seq = 0
        self.tail = ""
        self.reset_rate()

    def reset_rate(self):
        self.cd_start = None  # start of the open cooldown window
        self.cd_drops = False
        self.strikes = 0
        self.suppressed = 0


class Notif:
    __slots__ = ("nid", "thread", "process", "kind", "text", "run_id", "failures", "due")

    def __init__(self, nid, thread, process, kind, text, run_id):
        self.nid = nid
        self.thread = thread
        self.process = process
        self.kind = kind
        self.text = text
        self.run_id = run_id
        self.failures = 0
        self.due = None  # None: due now


class Gateway:
    def __init__(self):
        self.now = 0
        self.step = 0
        self.lanes = {}  # lane key -> origin
        self.runs = {}  # process label -> latest Run
        self.next_run_id = 1
        self.queues = {}  # thread -> deque of Notif
        self.queued_ids = set()
        self.queued_count = 0
        self.delivered = set()
        self.delivered_order = deque()
        self.turns = set()
        self.adapter_up = True
        self.epoch = 0
        self.b_start = None
        self.b_count = 0
        self.b_pause_until = None
        self.deliveries = []
        self.dead_letters = []

    # -- lanes (STORE-1..3)
    def touch_lane(self, origin):
        key = canonical_build(origin, GATEWAY_POLICY)
        if key not in self.lanes:
            if len(self.lanes) >= MAX_LANES:
                return None
            self.lanes[key] = dict(origin)
        return key

    # -- routing (ROUTE-1..5)
    def route(self, run):
        stored = self.lanes.get(run.lane) if run.lane is not None else None
        captured = run.origin
        if stored is not None:
            if thread_of(stored) != thread_of(captured):
                return None, "origin_conflict"
            return thread_of(stored), None
        if captured is not None:
            return thread_of(captured), None
        try:
            f = canonical_parse(run.lane)
            return (f["platform"], f["chat_type"], f["chat_id"], f.get("thread_id")), None
        except Exception:
            return None, "no_route"

    def dead(self, n, reason, cause, thread=None):
        d = {"step": self.step, "destination": dest_json(thread or n.thread), "process": n.process,
             "kind": n.kind, "text": n.text, "reason": reason, "cause": cause}
        self.dead_letters.append(d)

    def emit(self, run, kind, text):
        nid = ("run", run.run_id, run.seq)
        run.seq += 1
        thread, why = self.route(run)
        n = Notif(nid, thread, run.label, kind, text, run.run_id)
        if thread is None:
            th = thread_of(run.origin)
            d = {"step": None, "destination": dest_json(th), "process": run.label, "kind": kind,
                 "text": text, "reason": "event could not be routed: " + why, "cause": why}
            self.dead_letters.append(d)
            self.pending_router_drops.append(d)
            return
        self.enqueue(n)

    def enqueue(self, n):
        if n.nid in self.queued_ids or n.nid in self.delivered:
            return
        if self.queued_count >= MAX_QUEUED:
            self.dead(n, "delivery queue full (back-pressure)", "backpressure")
            return
        self.queues.setdefault(n.thread, deque()).append(n)
        self.queued_ids.add(n.nid)
        self.queued_count += 1

    def mark_delivered(self, nid):
        self.delivered.add(nid)
        self.delivered_order.append(nid)
        while len(self.delivered_order) > DELIVERED_KEEP:
            self.delivered.discard(self.delivered_order.popleft())

    # -- delivery (DELIVER-1..7)
    def pump(self):
        for th in list(self.queues.keys()):
            q = self.queues[th]
            if th in self.turns:
                continue
            while q:
                n = q[0]
                if n.due is not None and n.due > self.now:
                    break
                if self.adapter_up:
                    q.popleft()
                    self.queued_ids.discard(n.nid)
                    self.queued_count -= 1
                    self.mark_delivered(n.nid)
                    self.deliveries.append({"step": self.step, "destination": dest_json(th),
                                            "process": n.process, "kind": n.kind, "text": n.text})
                    continue
                n.failures += 1
                if n.failures >= MAX_ATTEMPTS:
                    q.popleft()
                    self.queued_ids.discard(n.nid)
                    self.queued_count -= 1
                    self.dead(n, "adapter failed %d attempts; dead-lettered" % n.failures, "adapter_failed")
                    continue
                n.due = self.now + min(1000 * (2 ** (n.failures - 1)), 60000)
                break
            if not q:
                del self.queues[th]

    # -- watch (PROC-3..6)
    def on_output(self, run, text):
        run.tail = (run.tail + text)[-TAIL_CHARS:]
        if not run.watching or not run.watch:
            return
        pieces = text.split("\n")
        lines = []
        for i, p in enumerate(pieces):
            if i < len(pieces) - 1 and p.endswith("\r"):
                p = p[:-1]
            lines.append(p)
        matching = [l for l in lines if any(pat in l for pat in run.watch)]
        if not matching:
            return
        t = self.now
        nmatch = len(matching)
        if run.cd_start is not None and t < run.cd_start + COOLDOWN_MS:
            # dropped by the cooldown (PROC-4), strike (PROC-5)
            run.suppressed += nmatch
            if not run.cd_drops:
                run.cd_drops = True
                run.strikes += 1
                if run.strikes >= 3:
                    run.watching = False
                    run.notify = True
                    sup = run.suppressed
                    run.suppressed = 0
                    self.emit(run, "watch_disabled", text_watch_disabled(run.label, sup))
            return
        # passes the cooldown
        if run.cd_start is not None and not run.cd_drops:
            run.strikes = 0
        run.cd_start = t
        run.cd_drops = False
        # global breaker (PROC-6)
        if self.b_pause_until is not None:
            if t < self.b_pause_until:
                run.suppressed += nmatch
                return
            self.b_pause_until = None
            self.b_start = None
        if self.b_start is not None and t >= self.b_start + BREAKER_WINDOW_MS:
            self.b_start = None
        if self.b_start is None:
            self.b_start = t
            self.b_count = 0
        if self.b_count >= BREAKER_MAX:
            run.suppressed += nmatch
            self.b_start = None
            self.b_pause_until = t + BREAKER_PAUSE_MS
            return
        self.b_count += 1
        first = matching[0]
        pattern = next(p for p in run.watch if p in first)
        excerpt = make_excerpt(matching)
        sup = run.suppressed
        run.suppressed = 0
        self.emit(run, "watch_match", text_watch_match(run.label, pattern, excerpt, sup))

    def finish(self, run, how):
        run.running = False
        if run.notify:
            sup = run.suppressed
            run.suppressed = 0
            self.emit(run, "completion", text_completion(run.label, how, run.tail, sup))

    # -- trace ops
    def op(self, threads, op):
        if op == "shutdown":
            self.shutdown()
            return
        if not isinstance(op, dict) or len(op) != 1:
            raise ValueError("bad op")
        (name, a), = op.items()
        if name in ("message", "turn_start", "turn_end", "reset", "spawn", "read"):
            origin = threads[a["thread"]]
        if name == "message":
            self.touch_lane(origin)
        elif name == "turn_start":
            self.touch_lane(origin)
            self.turns.add(thread_of(origin))
        elif name == "turn_end":
            self.turns.discard(thread_of(origin))
        elif name == "reset":
            self.touch_lane(origin)
        elif name == "spawn":
            lane = self.touch_lane(origin)
            label = a["process"]
            watch = a.get("watch") or []
            if (not isinstance(label, str) or label == "" or blen(label) > 128 or len(watch) > 32
                    or any((not isinstance(p, str)) or p == "" or blen(p) > 256 for p in watch)):
                return
            running = sum(1 for r in self.runs.values() if r.running)
            if running >= MAX_RUNNING:
                return
            prev = self.runs.get(label)
            if prev is not None and prev.running:
                return
            run = Run(self.next_run_id, label, dict(origin), lane, watch, bool(a.get("notify")))
            self.next_run_id += 1
            self.runs[label] = run
        elif name == "output":
            run = self.runs.get(a["process"])
            if run is not None and run.running:
                self.on_output(run, a["text"])
        elif name == "exit":
            run = self.runs.get(a["process"])
            if run is not None and run.running:
                self.finish(run, "exited with code %d" % a["code"])
        elif name == "kill":
            run = self.runs.get(a["process"])
            if run is not None and run.running:
                self.finish(run, "was killed")
        elif name == "read":
            run = self.runs.get(a["process"])
            if OWN_THREAD_ACK and run is not None:
                self.read_ack(run, origin)
        elif name == "advance":
            ms = a["ms"]
            if ms > 0:
                self.now += ms
        elif name == "adapter":
            self.adapter_up = bool(a["up"])
        elif name == "restart":
            self.restart(bool(a["survive"]))
        else:
            raise ValueError("unknown op %r" % name)

    def read_ack(self, run, origin):
        # PROC-11
        if run.running or not self.adapter_up:
            return
        if thread_of(origin) != thread_of(run.origin):
            return
        for th, q in self.queues.items():
            for n in list(q):
                if n.run_id == run.run_id and n.kind == "completion":
                    q.remove(n)
                    self.queued_ids.discard(n.nid)
                    self.queued_count -= 1
        for th in [th for th, q in self.queues.items() if not q]:
            del self.queues[th]

    def restart(self, survive):
        self.turns.clear()
        self.b_start = None
        self.b_count = 0
        self.b_pause_until = None
        live = sorted((r for r in self.runs.values() if r.running), key=lambda r: r.run_id)
        for r in live:
            r.reset_rate()
            if survive:
                r.tail = ""
            else:
                r.running = False
                r.tail = ""
                if r.notify:
                    r.suppressed = 0
                    self.emit(r, "completion", text_completion(r.label, "was lost (the gateway restarted)", "", 0))

    def shutdown(self):
        self.epoch += 1
        seen = []
        for origin in self.lanes.values():
            th = thread_of(origin)
            if th not in seen:
                seen.append(th)
        for i, th in enumerate(seen):
            n = Notif(("shutdown", self.epoch, i), th, None, "shutdown", SHUTDOWN_TEXT, None)
            self.enqueue(n)

    def run_trace(self, trace):
        threads_raw = trace["threads"]
        threads = [validate_origin(o) for o in threads_raw]
        ops = trace["ops"]
        self.pending_router_drops = []
        for i, op in enumerate(ops):
            self.step = i
            if isinstance(op, dict):
                (name, a), = op.items()
                if name in ("message", "turn_start", "turn_end", "reset", "spawn", "read"):
                    ti = a["thread"]
                    if not isinstance(ti, int) or ti < 0 or ti >= len(threads):
                        raise ValueError("thread index %r out of range" % (ti,))
            self.op(threads, op)
            self.pump()
        for d in self.pending_router_drops:
            d["step"] = len(ops)
        return {"deliveries": self.deliveries, "dead_letters": self.dead_letters}


def make_excerpt(matching):
    first = matching[0]
    if len(first) > EXCERPT_CHARS:
        return first[:EXCERPT_CHARS]
    out = [first]
    total = len(first)
    for l in matching[1:EXCERPT_LINES]:
        if total + 1 + len(l) > EXCERPT_CHARS:
            break
        out.append(l)
        total += 1 + len(l)
    return "\n".join(out)


# ---------------------------------------------------------------- protocol


def handshake():
    h = {
        "protocol": 1,
        "implementation": {"name": "cleanroom5-procroute", "version": "0.1.0", "language": "python"},
        "operations": ["hermes_build", "canonical_build", "canonical_parse", "hermes_parse", "origin",
                       "trace", "dialect_build", "dialect_parse"],
        "unsupported": {},
        "limits": {"watch_cooldown_ms": COOLDOWN_MS, "breaker": "15 per 10 s, then 30 s pause",
                   "max_queued": MAX_QUEUED, "max_lanes": MAX_LANES, "max_running": MAX_RUNNING},
    }
    if OWN_THREAD_ACK:
        h["read_acknowledges"] = "own_thread_after_delivery"
    return h


def run_case(case):
    if not isinstance(case, dict):
        raise ValueError("case is not an object")
    op = case.get("op")
    if op == "origin":
        try:
            validate_origin(case.get("origin"))
            return {"ok": True}
        except OriginError as e:
            return {"error": e.as_json()}
    if op in ("hermes_build", "canonical_build", "dialect_build"):
        try:
            origin = validate_origin(case.get("origin"))
        except OriginError as e:
            return {"error": e.as_json()}
        if op == "dialect_build":
            return {"key": dialect_build(origin)}
        pol = read_policy(case.get("policy"))
        if op == "canonical_build":
            return {"key": canonical_build(origin, pol)}
        try:
            return {"key": hermes_build(origin, pol)}
        except WaRejected:
            return {"error": {"kind": "whatsapp_id_rejected"}}
    if op in ("canonical_parse", "hermes_parse", "dialect_parse"):
        key = case.get("key")
        if not isinstance(key, str):
            raise ValueError("key is not a string")
        if op == "dialect_parse":
            return {"route": dialect_parse(key)}
        try:
            if op == "canonical_parse":
                return {"fields": canonical_parse(key)}
            return {"parsed": hermes_parse(key)}
        except KeyError_ as e:
            return {"error": e.as_json()}
    if op == "trace":
        tr = case.get("trace")
        if not isinstance(tr, dict):
            raise ValueError("trace is not an object")
        return {"trace": Gateway().run_trace(tr)}
    raise ValueError("unknown op %r" % (op,))


def out(obj):
    s = json.dumps(obj, ensure_ascii=True, separators=(",", ":"))
    sys.stdout.write(s + "\n")
    sys.stdout.flush()


def main():
    sys.setrecursionlimit(10000)
    inp = sys.stdin.buffer
    while True:
        raw = inp.readline()
        if not raw:
            return
        line = raw.decode("utf-8", "replace").strip()
        if not line:
            continue
        try:
            msg = json.loads(line)
        except Exception as e:
            out({"errored": "bad JSON: %s" % e})
            continue
        if not isinstance(msg, dict):
            out({"errored": "command is not an object"})
            continue
        cmd = msg.get("cmd")
        if cmd == "start":
            if msg.get("version") != 1:
                out({"errored": "unsupported protocol version %r (this harness speaks 1)" % (msg.get("version"),)})
            else:
                out(handshake())
        elif cmd == "stop":
            return
        elif cmd == "run":
            seq = msg.get("seq")
            if not isinstance(seq, int):
                out({"errored": "run without an integer seq"})
                continue
            try:
                res = run_case(msg.get("case"))
                out({"seq": seq, "result": res})
            except Exception as e:
                out({"seq": seq, "errored": "%s: %s" % (type(e).__name__, e)})
        else:
            out({"errored": "unknown command %r" % (cmd,)})


if __name__ == "__main__":
    main()
