#!/usr/bin/env python3
"""procroute harness (protocol v1), written from SPEC.md / PROTOCOL.md only."""
import json
from collections import deque
import re
import sys
import traceback

# ---------------------------------------------------------------- utilities

CHAT_TYPES = ("dm", "group", "channel", "thread")
ORIGIN_FIELDS = ("platform", "chat_type", "chat_id", "thread_id", "user_id", "user_name")
PLATFORM_RE = re.compile(r"[a-z][a-z0-9_]*\Z")
PROFILE_RE = re.compile(r"[a-z0-9][a-z0-9_-]*\Z")


def blen(s):
    return len(s.encode("utf-8", "surrogatepass"))


def lossy(s):
    """KEY-1: any bytes decoded lossily (lone surrogates become U+FFFD)."""
    return s.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def has_surrogate(s):
    return any(0xD800 <= ord(ch) <= 0xDFFF for ch in s)


class KeyError_(Exception):
    def __init__(self, kind, position=None, part=None, **extra):
        super().__init__(kind)
        self.kind = kind
        self.position = position
        self.part = part
        self.extra = extra

    def as_json(self):
        e = {"kind": self.kind}
        if self.position is not None:
            e["position"] = self.position
        if self.part is not None:
            e["part"] = self.part
        e.update(self.extra)
        return e


class OriginError(Exception):
    def __init__(self, kind, field=None, **extra):
        super().__init__(kind)
        self.kind = kind
        self.field = field
        self.extra = extra

    def as_json(self):
        e = {"kind": self.kind}
        if self.field is not None:
            e["field"] = self.field
        e.update(self.extra)
        return e


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
    for k, v in o.items():
        if not isinstance(v, str) or has_surrogate(v):
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
            n = blen(v)
            if n > 512:
                raise OriginError("too_long", k, length=n, limit=512)
    if "user_name" in o:
        v = o["user_name"]
        if v == "":
            raise OriginError("empty", "user_name")
        n = blen(v)
        if n > 256:
            raise OriginError("too_long", "user_name", length=n, limit=256)
    return {k: o[k] for k in ORIGIN_FIELDS if k in o}


# ---------------------------------------------------------------- policies (KEY-3)

class Policy:
    def __init__(self, gspu=True, tspu=False, profile=None):
        self.gspu = gspu
        self.tspu = tspu
        self.profile = profile

    @staticmethod
    def from_json(p):
        if p is None:
            return Policy()
        if not isinstance(p, dict):
            raise OriginError("malformed", "policy")
        g = p.get("group_sessions_per_user", True)
        t = p.get("thread_sessions_per_user", False)
        prof = p.get("profile")
        if not isinstance(g, bool) or not isinstance(t, bool):
            raise OriginError("malformed", "policy")
        if prof is not None and not isinstance(prof, str):
            raise OriginError("malformed", "policy")
        return Policy(g, t, prof)

    def namespace(self):
        prof = self.profile
        if prof is None or prof in ("main", "default"):
            return "main"
        if prof == "" or blen(prof) > 64 or not PROFILE_RE.match(prof):
            raise OriginError("bad_token", "profile")
        return prof


def user_keyed(o, pol):
    """KEY-4."""
    if "user_id" not in o:
        return False
    if o["chat_type"] == "dm":
        return False
    if not pol.gspu:
        return False
    return ("thread_id" not in o) or pol.tspu


# ---------------------------------------------------------------- canonical dialect (KEY-C*)

def c_escape(s):
    out = []
    for ch in s:
        c = ord(ch)
        if ch in "%:~" or c < 0x20 or c == 0x7F:
            out.append("%%%02X" % c)
        else:
            out.append(ch)
    return "".join(out)


def canonical_build(o, pol):
    o = validate_origin(o)
    ns = pol.namespace()
    key = "agent:%s:%s:%s:%s" % (ns, o["platform"], o["chat_type"], c_escape(o["chat_id"]))
    if "thread_id" in o:
        key += ":" + c_escape(o["thread_id"])
    if user_keyed(o, pol):
        key += ":~" + c_escape(o["user_id"])
    return key


HEXU = "0123456789ABCDEF"


class _Cursor:
    """Helper: byte offsets for character indexes of a key."""

    def __init__(self, key):
        self.key = key
        offs = [0]
        acc = 0
        for ch in key:
            acc += blen(ch)
            offs.append(acc)
        self.offs = offs

    def b(self, i):
        return self.offs[i]


def _split_segments(key, start):
    """Split key[start:] at ':' -> list of (char_start, text)."""
    segs = []
    i = start
    n = len(key)
    while True:
        j = key.find(":", i)
        if j < 0:
            segs.append((i, key[i:n]))
            break
        segs.append((i, key[i:j]))
        i = j + 1
    return segs


def _common_head(key):
    """KEY-1, KEY-6: prefix, namespace, platform, chat type.
    Returns (cursor, namespace, platform, chat_type, tail_start_char_index or None)."""
    if blen(key) > 8192:
        raise KeyError_("too_long", 8192)
    if not key.startswith("agent:"):
        raise KeyError_("missing_prefix", 0, "prefix")
    cur = _Cursor(key)
    segs = _split_segments(key, 6)
    names = ("namespace", "platform", "chat_type")
    vals = []
    for idx, part in enumerate(names):
        if idx >= len(segs):
            raise KeyError_("missing", cur.b(len(key)), part)
        st, txt = segs[idx]
        pos = cur.b(st)
        if txt == "":
            raise KeyError_("empty", pos, part)
        if part == "namespace":
            if blen(txt) > 64 or not PROFILE_RE.match(txt):
                raise KeyError_("bad_token", pos, part)
        elif part == "platform":
            if blen(txt) > 32:
                raise KeyError_("part_too_long", pos, part)
            if not PLATFORM_RE.match(txt):
                raise KeyError_("bad_token", pos, part)
        else:
            if txt not in CHAT_TYPES:
                raise KeyError_("unknown_chat_type", pos, part)
        vals.append(txt)
    if len(segs) <= 3:
        tail = None
    else:
        tail = segs[3:]
    return cur, vals[0], vals[1], vals[2], tail


def _c_decode(cur, st, txt, part):
    """Decode an escaped id segment starting at char index st."""
    out = []
    i = 0
    n = len(txt)
    while i < n:
        ch = txt[i]
        c = ord(ch)
        if ch == "%":
            pos = cur.b(st + i)
            if i + 2 >= n or txt[i + 1] not in HEXU or txt[i + 2] not in HEXU:
                raise KeyError_("bad_escape", pos, part)
            v = int(txt[i + 1:i + 3], 16)
            if not (v in (0x25, 0x3A, 0x7E) or v < 0x20 or v == 0x7F):
                raise KeyError_("bad_escape", pos, part)
            out.append(chr(v))
            i += 3
            continue
        if ch == "~" or c < 0x20 or c == 0x7F:
            raise KeyError_("unescaped", cur.b(st + i), part)
        out.append(ch)
        i += 1
    s = "".join(out)
    if blen(s) > 512:
        raise KeyError_("part_too_long", cur.b(st), part)
    return s


def canonical_parse(key):
    cur, ns, plat, ctype, tail = _common_head(key)
    # Amended by procroute for suite 0.3.0 (not clean-room code; ROUNDS.md):
    # SPEC KEY-2 now says a canonical key writes the default namespace `main`.
    if ns == "default":
        raise KeyError_("bad_token", 6, "namespace")
    if tail is None:
        raise KeyError_("missing", cur.b(len(key)), "chat_id")
    fields = {"namespace": ns, "platform": plat, "chat_type": ctype}
    # chat
    st, txt = tail[0]
    if txt == "":
        raise KeyError_("empty", cur.b(st), "chat_id")
    fields["chat_id"] = _c_decode(cur, st, txt, "chat_id")
    have_thread = False
    have_user = False
    for st, txt in tail[1:]:
        if have_user or have_thread and not txt.startswith("~"):
            raise KeyError_("trailing", cur.b(st - 1))
        if txt.startswith("~"):
            if ctype == "dm":
                raise KeyError_("user_in_dm", cur.b(st), "user_id")
            body = txt[1:]
            if body == "":
                raise KeyError_("empty", cur.b(st + 1), "user_id")
            fields["user_id"] = _c_decode(cur, st + 1, body, "user_id")
            have_user = True
        else:
            if txt == "":
                raise KeyError_("empty", cur.b(st), "thread_id")
            fields["thread_id"] = _c_decode(cur, st, txt, "thread_id")
            have_thread = True
    return fields


# ---------------------------------------------------------------- hermes dialect (KEY-H*)

def _wa_norm(v):
    v = v.strip()
    i = v.find("+")
    if i >= 0:
        v = v[:i] + v[i + 1:]
    v = v.split(":", 1)[0]
    v = v.split("@", 1)[0]
    return v


WA_OK = re.compile(r"^[A-Za-z0-9@.+-]+$")


class WhatsAppRejected(Exception):
    pass


def _wa_canon(v):
    """Returns canonical id, or '' if the first pass leaves nothing; raises if rejected."""
    n1 = _wa_norm(v)
    if n1 == "":
        return ""
    n2 = _wa_norm(n1)
    if n2 == "" or not WA_OK.match(n2):
        raise WhatsAppRejected()
    return n2


def hermes_build(o, pol):
    o = validate_origin(o)
    ns = "agent:" + pol.namespace()
    plat = o["platform"]
    ct = o["chat_type"]
    chat = o["chat_id"]
    thread = o.get("thread_id")
    user = o.get("user_id")
    if plat == "whatsapp":
        if ct == "dm":
            c = _wa_canon(chat)
            if c == "":
                if user is not None:
                    u = _wa_canon(user)
                    c = u if u != "" else user
            if c == "":
                if thread is not None:
                    return "%s:whatsapp:dm:%s" % (ns, thread)
                return "%s:whatsapp:dm" % ns
            key = "%s:whatsapp:dm:%s" % (ns, c)
            if thread is not None:
                key += ":" + thread
            return key
        if user is not None:
            u = _wa_canon(user)
            user = u if u != "" else user
    key = "%s:%s:%s:%s" % (ns, plat, ct, chat)
    if thread is not None:
        key += ":" + thread
    if ct != "dm" and user is not None and pol.gspu and (thread is None or pol.tspu):
        key += ":" + user
    return key


def hermes_parse(key):
    cur, ns, plat, ctype, tail = _common_head(key)
    res = {"namespace": ns, "platform": plat, "chat_type": ctype}
    K = lambda v: {"state": "known", "value": v}
    A = {"state": "absent"}
    U = lambda r: {"state": "unknown", "value": r}
    if plat == "whatsapp" and ctype == "dm":
        if tail is None:
            res.update(chat_id=U("whats_app_canonical"), thread_id=A, user_id=A)
        else:
            w = U("whats_app_canonical")
            res.update(chat_id=w, thread_id=w, user_id=w)
        return res
    if tail is None:
        raise KeyError_("missing", cur.b(len(key)), "chat_id")
    if len(tail) == 1:
        st, txt = tail[0]
        if txt == "":
            raise KeyError_("empty", cur.b(st), "chat_id")
        res.update(chat_id=K(txt), thread_id=A, user_id=A)
        return res
    u = U("colon_split")
    res.update(chat_id=u, thread_id=u, user_id=(A if ctype == "dm" else u))
    return res


# ---------------------------------------------------------------- own dialect (P-10): canonical

def dialect_build(o, pol):
    return canonical_build(o, pol)


def dialect_parse(key, pol):
    try:
        f = canonical_parse(key)
    except KeyError_:
        return None
    route = {k: f[k] for k in ("platform", "chat_type", "chat_id", "thread_id", "user_id") if k in f}
    try:
        if dialect_build(route, pol) != key:
            return None
    except (OriginError, KeyError_):
        return None
    return route


# ---------------------------------------------------------------- texts (TEXT-1..4)

BIDI = set([0x061C, 0x200E, 0x200F, 0x2028, 0x2029, 0xFEFF]) | set(range(0x202A, 0x202F)) | set(range(0x2066, 0x206A))


def _needs_escape(c):
    return c < 0x20 or 0x7F <= c <= 0x9F or c in BIDI or 0xD800 <= c <= 0xDFFF


def esc(s):
    out = []
    for ch in s:
        c = ord(ch)
        if _needs_escape(c):
            out.append("\\u{%x}" % c)
        else:
            out.append(ch)
    return "".join(out)


def quote_lines(text):
    lines = text.split("\n")
    if lines and lines[-1] == "" and len(lines) > 1:
        lines.pop()
    return ["| " + esc(l) for l in lines]


def suppressed_line(n):
    return ["(suppressed matches: %d)" % n] if n else []


SHUTDOWN_TEXT = ("[Background process notice] The gateway is shutting down; "
                 "running background processes are not stopped and will report here when it is back.")

# Unicode White_Space
WS = set([0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000]) | set(range(0x2000, 0x200B))


def rtrim_ws(s):
    i = len(s)
    while i > 0 and ord(s[i - 1]) in WS:
        i -= 1
    return s[:i]


# ---------------------------------------------------------------- trace simulation

COOLDOWN_MS = 15000
BREAKER_WINDOW_MS = 10000
BREAKER_MAX = 15
BREAKER_PAUSE_MS = 30000
STRIKES_MAX = 3
TAIL_CHARS = 2000
EXCERPT_LINES = 20
EXCERPT_CHARS = 2000
MAX_ATTEMPTS = 6
MAX_QUEUED = 1000000
MAX_LANES = 1000000
MAX_RUNNING = 100000
DELIVERED_LOG = 65536
GATEWAY_POLICY = Policy(True, False, None)


class TraceInvalid(Exception):
    pass


class Run:
    def __init__(self, run_id, pid, thread_idx, origin, lane, watch, notify):
        self.run_id = run_id
        self.pid = pid
        self.thread_idx = thread_idx
        self.origin = origin
        self.lane = lane
        self.watch = list(watch)
        self.watching = bool(watch)
        self.notify = notify
        self.seq = 0
        self.tail = ""
        self.running = True
        self.reset_rate()

    def reset_rate(self):
        self.cd_start = None  # start of the open cooldown window
        self.cd_dropped = False  # the (latest) window had a drop
        self.strikes = 0
        self.suppressed = 0


def route_of(o):
    d = {"platform": o["platform"], "chat_type": o["chat_type"], "chat_id": o["chat_id"]}
    if "thread_id" in o:
        d["thread_id"] = o["thread_id"]
    return d


def route_key(o):
    return (o["platform"], o["chat_type"], o["chat_id"], o.get("thread_id"))


class Notif:
    __slots__ = ("nid", "order", "dest", "rkey", "process", "kind", "text", "attempts", "due")

    def __init__(self, nid, order, dest, rkey, process, kind, text):
        self.nid = nid
        self.order = order
        self.dest = dest
        self.rkey = rkey
        self.process = process
        self.kind = kind
        self.text = text
        self.attempts = 0
        self.due = None  # None: attemptable now


class Gateway:
    def __init__(self, threads):
        self.threads = threads
        self.now = 0
        self.step = 0
        # persisted
        self.lanes = {}  # lane -> {"origin", "conv"}
        self.lane_order = []
        self.queues = {}  # rkey -> list[Notif]
        self.queued = 0
        self.delivered_ids = set()
        self.delivered_fifo = deque()
        self.queued_ids = set()
        self.next_run_id = 1
        self.shutdown_epoch = 0
        self.runs = {}  # pid -> latest Run
        self.order = 0
        # volatile
        self.busy = set()  # rkeys with a running turn
        self.adapter_up = True
        self.reset_breaker()
        # report
        self.deliveries = []
        self.dead = []

    def reset_breaker(self):
        self.br_start = None
        self.br_count = 0
        self.br_paused_until = None

    # -- lanes
    def ensure_lane(self, o):
        lane = canonical_build(o, GATEWAY_POLICY)
        if lane not in self.lanes:
            if len(self.lanes) >= MAX_LANES:
                return None
            self.lanes[lane] = {"origin": o, "conv": 1}
            self.lane_order.append(lane)
        return lane

    # -- notifications
    def dead_letter(self, n, reason, cause):
        self.dead.append({"step": self.step, "destination": n.dest, "process": n.process,
                          "kind": n.kind, "text": n.text, "reason": reason, "cause": cause})

    def emit(self, nid, origin, lane, process, kind, text):
        if nid in self.delivered_ids:
            return
        # ROUTE-2: stored origin of the lane, then the captured origin
        stored = self.lanes.get(lane, {}).get("origin") if lane else None
        dest_o = origin
        if stored is not None:
            if route_key(stored) != route_key(origin):
                self.order += 1
                n = Notif(nid, self.order, route_of(origin), route_key(origin), process, kind, text)
                self.dead_letter(n, "stored and captured origins name different threads", "origin_conflict")
                return
            dest_o = stored
        self.order += 1
        n = Notif(nid, self.order, route_of(dest_o), route_key(dest_o), process, kind, text)
        if nid in self.queued_ids:
            return
        if self.queued >= MAX_QUEUED:
            self.dead_letter(n, "delivery queue full (back-pressure)", "backpressure")
            return
        self.queues.setdefault(n.rkey, deque()).append(n)
        self.queued_ids.add(nid)
        self.queued += 1

    def emit_event(self, run, kind, text):
        nid = ("run", run.run_id, run.seq)
        run.seq += 1
        self.emit(nid, run.origin, run.lane, run.pid, kind, text)

    def mark_delivered(self, nid):
        self.delivered_ids.add(nid)
        self.delivered_fifo.append(nid)
        if len(self.delivered_fifo) > DELIVERED_LOG:
            old = self.delivered_fifo.popleft()
            self.delivered_ids.discard(old)

    def pump(self):
        blocked = set()
        while True:
            best = None
            for rk, q in self.queues.items():
                if not q or rk in blocked or rk in self.busy:
                    continue
                h = q[0]
                if h.due is not None and h.due > self.now:
                    continue
                if best is None or h.order < best.order:
                    best = h
            if best is None:
                return
            q = self.queues[best.rkey]
            if self.adapter_up:
                q.popleft()
                self.queued -= 1
                self.queued_ids.discard(best.nid)
                self.mark_delivered(best.nid)
                self.deliveries.append({"step": self.step, "destination": best.dest,
                                        "process": best.process, "kind": best.kind, "text": best.text})
            else:
                best.attempts += 1
                if best.attempts >= MAX_ATTEMPTS:
                    q.popleft()
                    self.queued -= 1
                    self.queued_ids.discard(best.nid)
                    self.dead_letter(best, "adapter failed %d delivery attempts" % best.attempts,
                                     "adapter_failed")
                else:
                    best.due = self.now + min(1000 * (2 ** (best.attempts - 1)), 60000)
                    blocked.add(best.rkey)
            if not q:
                del self.queues[best.rkey]

    # -- texts
    def header(self, run, what):
        return "[Background process %s %s]" % (esc(run.pid), what)

    def completion_text(self, run, what):
        lines = [self.header(run, what)]
        if run.tail:
            lines += quote_lines(run.tail)
        else:
            lines.append("(no output)")
        lines += suppressed_line(run.suppressed)
        run.suppressed = 0
        return "\n".join(lines)

    def finish(self, run, what):
        run.running = False
        if run.notify:
            self.emit_event(run, "completion", self.completion_text(run, what))

    # -- watch (PROC-3..6)
    def on_output(self, run, text):
        run.tail = (run.tail + text)[-TAIL_CHARS:]
        if not run.watching:
            return
        parts = text.split("\n")
        lines = []
        for idx, p in enumerate(parts):
            if idx < len(parts) - 1 and p.endswith("\r"):
                p = p[:-1]
            lines.append(p)
        if len(lines) > 1 and lines[-1] == "":
            lines.pop()
        matching = [l for l in lines if any(pat in l for pat in run.watch)]
        if not matching:
            return
        t = self.now
        if run.cd_start is not None and t < run.cd_start + COOLDOWN_MS:
            # inside the cooldown window: dropped and counted
            run.suppressed += len(matching)
            if not run.cd_dropped:
                run.cd_dropped = True
                run.strikes += 1
                if run.strikes >= STRIKES_MAX:
                    run.watching = False
                    run.notify = True
                    n = run.suppressed
                    run.suppressed = 0
                    txt = self.header(run, "watch disabled: too many matches; its completion will be reported")
                    txt = "\n".join([txt] + suppressed_line(n))
                    self.emit_event(run, "watch_disabled", txt)
            return
        # passes the cooldown
        if run.cd_start is not None and not run.cd_dropped:
            run.strikes = 0
        run.cd_start = t
        run.cd_dropped = False
        # breaker (PROC-6)
        if self.br_paused_until is not None:
            if t < self.br_paused_until:
                run.suppressed += len(matching)
                return
            self.br_paused_until = None
            self.br_start = None
        if self.br_start is None or t >= self.br_start + BREAKER_WINDOW_MS:
            self.br_start = t
            self.br_count = 0
        self.br_count += 1
        if self.br_count > BREAKER_MAX:
            run.suppressed += len(matching)
            self.br_paused_until = t + BREAKER_PAUSE_MS
            self.br_start = None
            self.br_count = 0
            return
        first = matching[0]
        pattern = next(p for p in run.watch if p in first)
        ex = []
        total = 0
        for l in matching[:EXCERPT_LINES]:
            l = rtrim_ws(l)
            add = len(l) + (1 if ex else 0)
            if total + add > EXCERPT_CHARS:
                if not ex:
                    ex.append(l[:EXCERPT_CHARS])
                break
            ex.append(l)
            total += add
        lines = [self.header(run, 'matched watch pattern "%s"' % esc(pattern))]
        lines += ["| " + esc(l) for l in ex]
        lines += suppressed_line(run.suppressed)
        run.suppressed = 0
        self.emit_event(run, "watch_match", "\n".join(lines))

    # -- ops
    def thread(self, i):
        if not isinstance(i, int) or isinstance(i, bool) or i < 0 or i >= len(self.threads):
            raise TraceInvalid("thread index %r out of range" % (i,))
        return self.threads[i]

    def running(self, pid):
        r = self.runs.get(pid)
        if r is not None and r.running:
            return r
        return None

    def apply(self, op):
        if op == "shutdown":
            self.shutdown_epoch += 1
            seen = set()
            idx = 0
            for lane in self.lane_order:
                o = self.lanes[lane]["origin"]
                rk = route_key(o)
                if rk in seen:
                    continue
                seen.add(rk)
                self.emit(("shutdown", self.shutdown_epoch, idx), o, lane, None, "shutdown", SHUTDOWN_TEXT)
                idx += 1
            return
        if not isinstance(op, dict) or len(op) != 1:
            raise TraceInvalid("bad op")
        (name, a), = op.items()
        if not isinstance(a, dict):
            raise TraceInvalid("bad op body")
        if name == "message":
            self.ensure_lane(self.thread(a.get("thread")))
        elif name == "turn_start":
            o = self.thread(a.get("thread"))
            self.ensure_lane(o)
            self.busy.add(route_key(o))
        elif name == "turn_end":
            o = self.thread(a.get("thread"))
            self.busy.discard(route_key(o))
        elif name == "reset":
            o = self.thread(a.get("thread"))
            lane = self.ensure_lane(o)
            if lane is not None:
                self.lanes[lane]["conv"] += 1
        elif name == "spawn":
            o = self.thread(a.get("thread"))
            pid = a.get("process")
            watch = a.get("watch", [])
            notify = a.get("notify", False)
            if not isinstance(pid, str) or not isinstance(watch, list) or not isinstance(notify, bool):
                raise TraceInvalid("bad spawn")
            lane = self.ensure_lane(o)
            if lane is None:
                return
            if pid == "" or blen(pid) > 128:
                return
            if len(watch) > 32 or any((not isinstance(w, str)) or w == "" or blen(w) > 256 for w in watch):
                return
            if self.running(pid) is not None:
                return
            if sum(1 for r in self.runs.values() if r.running) >= MAX_RUNNING:
                return
            run = Run(self.next_run_id, pid, a.get("thread"), o, lane, watch, notify)
            self.next_run_id += 1
            self.runs[pid] = run
        elif name == "output":
            r = self.running(a.get("process"))
            text = a.get("text")
            if r is not None and isinstance(text, str):
                self.on_output(r, lossy(text))
        elif name == "exit":
            r = self.running(a.get("process"))
            code = a.get("code")
            if r is not None:
                self.finish(r, "exited with code %s" % (code,))
        elif name == "kill":
            r = self.running(a.get("process"))
            if r is not None:
                self.finish(r, "was killed")
        elif name == "read":
            self.thread(a.get("thread"))
        elif name == "advance":
            ms = a.get("ms")
            if not isinstance(ms, int) or ms < 0:
                raise TraceInvalid("bad advance")
            self.now += ms
        elif name == "adapter":
            self.adapter_up = bool(a.get("up"))
        elif name == "restart":
            survive = bool(a.get("survive"))
            self.busy.clear()
            self.reset_breaker()
            live = sorted((r for r in self.runs.values() if r.running), key=lambda r: r.run_id)
            for r in live:
                r.reset_rate()
            if not survive:
                for r in live:
                    self.finish(r, "was lost: the gateway restarted and the process did not survive")
        else:
            raise TraceInvalid("unknown op %r" % name)

    def run(self, ops):
        for k, op in enumerate(ops):
            self.step = k
            self.apply(op)
            self.pump()
        # anything left queued stays queued (a generated trace ends quiescent)
        return {"deliveries": self.deliveries, "dead_letters": self.dead}


def run_trace(t):
    if not isinstance(t, dict) or not isinstance(t.get("threads"), list) or not isinstance(t.get("ops"), list):
        raise TraceInvalid("malformed trace")
    threads = []
    for o in t["threads"]:
        threads.append(validate_origin(o))
    g = Gateway(threads)
    return g.run(t["ops"])


# ---------------------------------------------------------------- protocol

OPERATIONS = ["hermes_build", "canonical_build", "canonical_parse", "hermes_parse", "origin",
              "trace", "dialect_build", "dialect_parse"]


def handle_case(case):
    op = case.get("op")
    if op in ("hermes_build", "canonical_build", "dialect_build"):
        try:
            pol = Policy.from_json(case.get("policy"))
            if op == "hermes_build":
                return {"key": hermes_build(case.get("origin"), pol)}
            if op == "canonical_build":
                return {"key": canonical_build(case.get("origin"), pol)}
            return {"key": dialect_build(case.get("origin"), pol)}
        except OriginError as e:
            return {"error": e.as_json()}
        except WhatsAppRejected:
            return {"error": {"kind": "whatsapp_id_rejected"}}
    if op in ("canonical_parse", "hermes_parse", "dialect_parse"):
        key = case.get("key")
        if not isinstance(key, str):
            return {"error": {"kind": "malformed"}}
        key = lossy(key)
        if op == "dialect_parse":
            try:
                pol = Policy.from_json(case.get("policy"))
            except OriginError:
                pol = Policy()
            return {"route": dialect_parse(key, pol)}
        try:
            if op == "canonical_parse":
                return {"fields": canonical_parse(key)}
            return {"parsed": hermes_parse(key)}
        except KeyError_ as e:
            return {"error": e.as_json()}
    if op == "origin":
        try:
            validate_origin(case.get("origin"))
            return {"ok": True}
        except OriginError as e:
            return {"error": e.as_json()}
    if op == "trace":
        try:
            return {"trace": run_trace(case.get("trace"))}
        except OriginError as e:
            return {"error": e.as_json()}
    raise TraceInvalid("unknown op %r" % (op,))


def out(obj):
    sys.stdout.write(json.dumps(obj, ensure_ascii=True) + "\n")
    sys.stdout.flush()


def main():
    real_stdout = sys.stdout
    for raw in sys.stdin:
        line = raw.strip()
        if not line:
            continue
        try:
            msg = json.loads(line)
        except Exception as e:  # noqa
            out({"errored": "bad json: %s" % e})
            continue
        if not isinstance(msg, dict):
            out({"errored": "not an object"})
            continue
        cmd = msg.get("cmd")
        if cmd == "start":
            if msg.get("version") != 1:
                out({"errored": "unsupported protocol version %r" % (msg.get("version"),)})
                continue
            out({
                "protocol": 1,
                "implementation": {"name": "cleanroom3-py", "version": "0.1.0", "language": "python"},
                "operations": OPERATIONS,
                "unsupported": {},
                "limits": {"max_lanes": MAX_LANES, "max_queued": MAX_QUEUED, "cooldown_ms": COOLDOWN_MS,
                           "breaker": "15 per 10 s, then 30 s pause", "delivered_log": DELIVERED_LOG},
            })
        elif cmd == "run":
            seq = msg.get("seq")
            try:
                case = msg.get("case")
                if not isinstance(case, dict):
                    raise TraceInvalid("case is not an object")
                res = handle_case(case)
                out({"seq": seq, "result": res})
            except Exception as e:  # never crash
                traceback.print_exc(file=sys.stderr)
                out({"seq": seq, "errored": "%s: %s" % (type(e).__name__, e)})
        elif cmd == "stop":
            return
        else:
            out({"errored": "unknown command %r" % (cmd,)})


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        pass
