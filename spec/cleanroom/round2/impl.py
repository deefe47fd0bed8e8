#!/usr/bin/env python3
"""Clean-room harness for the procroute protocol v1 (PROTOCOL.md), written
from SPEC.md only.  Standard library only."""
import sys
import json
import re
from collections import deque

# ---------------------------------------------------------------- helpers


def blen(s):
    return len(s.encode("utf-8", "surrogatepass"))


class Err(Exception):
    def __init__(self, kind, position=None, part=None, field=None, **extra):
        super().__init__(kind)
        self.d = {"kind": kind}
        if position is not None:
            self.d["position"] = position
        if part is not None:
            self.d["part"] = part
        if field is not None:
            self.d["field"] = field
        self.d.update(extra)


CHAT_TYPES = ("dm", "group", "channel", "thread")
ORIGIN_FIELDS = ("platform", "chat_type", "chat_id", "thread_id", "user_id", "user_name")
PLATFORM_RE = re.compile(r"[a-z][a-z0-9_]*\Z")
PROFILE_RE = re.compile(r"[a-z0-9][a-z0-9_-]*\Z")

# ---------------------------------------------------------------- origins (ORIGIN-1..6)


def validate_origin(o):
    if not isinstance(o, dict):
        raise Err("malformed")
    for k in o:
        if k not in ORIGIN_FIELDS:
            raise Err("malformed")
    for k in ("platform", "chat_type", "chat_id"):
        if k not in o:
            raise Err("malformed")
    for k, v in o.items():
        if not isinstance(v, str):
            raise Err("malformed")
    p = o["platform"]
    if p == "":
        raise Err("empty", field="platform")
    if blen(p) > 32:
        raise Err("too_long", field="platform", length=blen(p), limit=32)
    if not PLATFORM_RE.match(p):
        raise Err("bad_token", field="platform")
    if o["chat_type"] not in CHAT_TYPES:
        raise Err("unknown_chat_type", field="chat_type")
    for k in ("chat_id", "thread_id", "user_id", "user_name"):
        if k in o:
            v = o[k]
            lim = 256 if k == "user_name" else 512
            if v == "":
                raise Err("empty", field=k)
            if blen(v) > lim:
                raise Err("too_long", field=k, length=blen(v), limit=lim)
    return o


# ---------------------------------------------------------------- policy (KEY-3)


def norm_policy(p):
    pol = {"group": True, "thread": False, "profile": None}
    if isinstance(p, dict):
        for k, v in p.items():
            lk = k.lower()
            if "group" in lk and isinstance(v, bool):
                pol["group"] = v
            elif "thread" in lk and isinstance(v, bool):
                pol["thread"] = v
            elif ("profile" in lk or "namespace" in lk) and (v is None or isinstance(v, str)):
                pol["profile"] = v
    return pol


def namespace_of(pol):
    prof = pol["profile"]
    if prof is None or prof in ("main", "default"):
        return "main"
    if not (1 <= blen(prof) <= 64) or not PROFILE_RE.match(prof):
        raise Err("bad_token", field="profile", part="namespace")
    return prof


def keyed_user(o, pol):
    """KEY-4: the user id if keyed, else None."""
    if o["chat_type"] == "dm":
        return None
    if not pol["group"]:
        return None
    if "thread_id" in o and not pol["thread"]:
        return None
    return o.get("user_id")


# ---------------------------------------------------------------- canonical dialect (KEY-C*)


def esc_char_needed(c):
    oc = ord(c)
    return c in "%:~" or oc < 0x20 or oc == 0x7F


def c_escape(s):
    out = []
    for c in s:
        if esc_char_needed(c):
            out.append("%%%02X" % ord(c))
        else:
            out.append(c)
    return "".join(out)


def canonical_build(o, pol):
    validate_origin(o)
    ns = namespace_of(pol)
    k = "agent:%s:%s:%s:%s" % (ns, o["platform"], o["chat_type"], c_escape(o["chat_id"]))
    if "thread_id" in o:
        k += ":" + c_escape(o["thread_id"])
    u = keyed_user(o, pol)
    if u is not None:
        k += ":~" + c_escape(u)
    return k


HEXU = "0123456789ABCDEF"


def c_decode(seg, start, part):
    """Decode an escaped id segment beginning at byte offset start."""
    if seg == "":
        raise Err("empty", position=start, part=part)
    out = []
    pos = start
    i = 0
    n = len(seg)
    while i < n:
        c = seg[i]
        if c == "%":
            h = seg[i + 1:i + 3]
            if len(h) != 2 or h[0] not in HEXU or h[1] not in HEXU:
                raise Err("bad_escape", position=pos, part=part)
            ch = chr(int(h, 16))
            if not esc_char_needed(ch):
                raise Err("bad_escape", position=pos, part=part)
            out.append(ch)
            pos += 3
            i += 3
            continue
        if c == "~" or ord(c) < 0x20 or ord(c) == 0x7F:
            raise Err("unescaped", position=pos, part=part)
        out.append(c)
        pos += blen(c)
        i += 1
    val = "".join(out)
    if blen(val) > 512:
        raise Err("part_too_long", position=start, part=part)
    return val


def split_head(key):
    """Common KEY-6 prefix parsing: returns (ns, platform, chat_type, rest_start_byte, tail_or_None).
    tail is the string after the ':' following chat type, or None when none."""
    kb = blen(key)
    if kb > 8192:
        raise Err("too_long", position=8192)
    if not key.startswith("agent:"):
        raise Err("missing_prefix", position=0, part="prefix")
    pos = 6  # byte offset
    rest = key[6:]
    parts = []
    for name in ("namespace", "platform", "chat_type"):
        idx = rest.find(":")
        if idx < 0:
            seg = rest
            rest = None
        else:
            seg = rest[:idx]
            rest = rest[idx + 1:]
        if seg == "":
            raise Err("empty", position=pos, part=name)
        if name == "namespace":
            if seg != "main" and (blen(seg) > 64 or not PROFILE_RE.match(seg)):
                raise Err("bad_token", position=pos, part=name)
        elif name == "platform":
            if blen(seg) > 32:
                raise Err("part_too_long", position=pos, part=name)
            if not PLATFORM_RE.match(seg):
                raise Err("bad_token", position=pos, part=name)
        else:
            if seg not in CHAT_TYPES:
                raise Err("unknown_chat_type", position=pos, part=name)
        parts.append(seg)
        pos += blen(seg)
        if rest is None:
            if name != "chat_type":
                nxt = "platform" if name == "namespace" else "chat_type"
                raise Err("missing", position=kb, part=nxt)
            return parts[0], parts[1], parts[2], pos, None
        pos += 1
    return parts[0], parts[1], parts[2], pos, rest


def canonical_parse(key):
    ns, plat, ct, pos, tail = split_head(key)
    kb = blen(key)
    if tail is None:
        raise Err("missing", position=kb, part="chat_id")
    segs = tail.split(":")
    starts = []
    p = pos
    for s in segs:
        starts.append(p)
        p += blen(s) + 1
    f = {"namespace": ns, "platform": plat, "chat_type": ct}
    f["chat_id"] = c_decode(segs[0], starts[0], "chat_id")
    i = 1
    have_thread = False
    have_user = False
    while i < len(segs):
        s = segs[i]
        st = starts[i]
        if have_user:
            raise Err("trailing", position=st - 1)
        if s.startswith("~"):
            if ct == "dm":
                raise Err("user_in_dm", position=st, part="user_id")
            f["user_id"] = c_decode(s[1:], st + 1, "user_id")
            have_user = True
        else:
            if have_thread:
                raise Err("trailing", position=st - 1)
            f["thread_id"] = c_decode(s, st, "thread_id")
            have_thread = True
        i += 1
    return f


# ---------------------------------------------------------------- hermes dialect (KEY-H*)

PY_WS = None


def wa_norm(v):
    v = v.strip()
    v = v.replace("+", "", 1)
    v = v.split(":", 1)[0]
    v = v.split("@", 1)[0]
    return v


WA_OK = re.compile(r"^[A-Za-z0-9@.+-]+$")


class WARejected(Exception):
    pass


def wa_canon(v):
    """Returns '' if first pass leaves nothing; raises WARejected per KEY-H2."""
    a = wa_norm(v)
    if a == "":
        return ""
    b = wa_norm(a)
    if b == "" or not WA_OK.match(b):
        raise WARejected()
    return b


def hermes_build(o, pol):
    validate_origin(o)
    ns = "agent:" + namespace_of(pol)
    plat = o["platform"]
    ct = o["chat_type"]
    try:
        if ct == "dm":
            chat = o["chat_id"]
            if plat == "whatsapp":
                chat = wa_canon(o["chat_id"])
                if chat == "" and "user_id" in o:
                    chat = wa_canon(o["user_id"]) or o["user_id"]
            if chat:
                k = "%s:%s:dm:%s" % (ns, plat, chat)
                if "thread_id" in o:
                    k += ":" + o["thread_id"]
                return k
            if "thread_id" in o:
                return "%s:%s:dm:%s" % (ns, plat, o["thread_id"])
            return "%s:%s:dm" % (ns, plat)
        user = o.get("user_id")
        if plat == "whatsapp" and user is not None:
            user = wa_canon(user) or user
        k = "%s:%s:%s:%s" % (ns, plat, ct, o["chat_id"])
        if "thread_id" in o:
            k += ":" + o["thread_id"]
        if user is not None and keyed_user(o, pol) is not None:
            k += ":" + user
        return k
    except WARejected:
        raise Err("whatsapp_id_rejected")


def hermes_parse(key):
    ns, plat, ct, pos, tail = split_head(key)
    kb = blen(key)
    known = lambda v: {"state": "known", "value": v}
    absent = {"state": "absent"}
    unk = lambda r: {"state": "unknown", "value": r}
    r = {"namespace": ns, "platform": plat, "chat_type": ct}
    if plat == "whatsapp" and ct == "dm":
        if tail is None:
            r.update(chat_id=unk("whats_app_canonical"), thread_id=absent, user_id=absent)
        else:
            u = unk("whats_app_canonical")
            r.update(chat_id=u, thread_id=dict(u), user_id=dict(u))
        return r
    if tail is None:
        raise Err("missing", position=kb, part="chat_id")
    segs = tail.split(":")
    if len(segs) == 1:
        if segs[0] == "":
            raise Err("empty", position=pos, part="chat_id")
        r.update(chat_id=known(segs[0]), thread_id=absent, user_id=absent)
        return r
    u = unk("colon_split")
    r.update(chat_id=u, thread_id=dict(u), user_id=dict(u) if ct != "dm" else absent)
    return r


# ---------------------------------------------------------------- texts (TEXT-1..4)

BIDI = set([0x061C, 0x200E, 0x200F, 0x2028, 0x2029, 0xFEFF] + list(range(0x202A, 0x202F)) + list(range(0x2066, 0x206A)))


def needs_esc(c):
    o = ord(c)
    return o < 0x20 or 0x7F <= o <= 0x9F or o in BIDI or 0xD800 <= o <= 0xDFFF


def esc_text(s):
    return "".join("\\u{%x}" % ord(c) if needs_esc(c) else c for c in s)


def header_val(s):
    return esc_text(s)


def quote_lines(lines):
    return ["| " + esc_text(l) for l in lines]


def output_lines(text):
    if text == "":
        return []
    if text.endswith("\n"):
        text = text[:-1]
    return text.split("\n")


def suppressed_line(n):
    return "(%d matches suppressed by the rate limit)" % n


SHUTDOWN_TEXT = "[Background process notice] The gateway is shutting down; background processes may be interrupted."

RUST_WS = set([0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000] + list(range(0x2000, 0x200B)))


def rtrim_ws(s):
    i = len(s)
    while i > 0 and ord(s[i - 1]) in RUST_WS:
        i -= 1
    return s[:i]


# ---------------------------------------------------------------- gateway model

S = 1000
COOLDOWN = 15 * S
BREAKER_WINDOW = 10 * S
BREAKER_MAX = 15
BREAKER_PAUSE = 30 * S
MAX_ATTEMPTS = 6
MAX_QUEUED = 1_000_000
DELIVERED_KEEP = 65536
TAIL_CHARS = 2000
EXCERPT_LINES = 20
EXCERPT_CHARS = 2000


def route_of(o):
    return (o["platform"], o["chat_type"], o["chat_id"], o.get("thread_id"))


def dest_of(route):
    d = {"platform": route[0], "chat_type": route[1], "chat_id": route[2]}
    if route[3] is not None:
        d["thread_id"] = route[3]
    return d


GW_POLICY = norm_policy(None)


class Run:
    def __init__(self, run_id, pid, origin, lane, watch, notify):
        self.run_id = run_id
        self.pid = pid
        self.origin = origin
        self.lane = lane
        self.watch = list(watch)
        self.notify = notify
        self.watching = bool(self.watch)
        self.running = True
        self.seq = 0
        self.tail = ""
        self.reset_volatile()

    def reset_volatile(self):
        self.cool_until = None  # end of current cooldown window
        self.window_drop = False
        self.had_window = False
        self.strikes = 0
        self.suppressed = 0


class Notif:
    __slots__ = ("nid", "route", "process", "kind", "text", "fails", "due")

    def __init__(self, nid, route, process, kind, text):
        self.nid = nid
        self.route = route
        self.process = process
        self.kind = kind
        self.text = text
        self.fails = 0
        self.due = None


class Gateway:
    def __init__(self):
        self.now = 0
        self.step = 0
        self.lanes = {}  # canonical key -> origin
        self.lane_order = []
        self.procs = {}  # pid -> Run (latest)
        self.next_run = 1
        self.queues = {}  # route -> deque
        self.queued = 0
        self.queued_ids = set()
        self.delivered = set()
        self.delivered_order = deque()
        self.busy = set()
        self.adapter_up = True
        self.epoch = 0
        self.reset_breaker()
        self.deliveries = []
        self.dead = []

    def reset_breaker(self):
        self.bw_start = None
        self.bw_count = 0
        self.b_paused_until = None

    # -- store
    def record_lane(self, o):
        try:
            k = canonical_build(o, GW_POLICY)
        except Err:
            return None
        if k not in self.lanes:
            self.lanes[k] = dict(o)
            self.lane_order.append(k)
        return k

    # -- queueing
    def emit(self, nid, route, process, kind, text, lane=None, origin=None):
        if nid in self.queued_ids or nid in self.delivered:
            return
        if route is None:
            self.dead.append(self.obs(None, route, process, kind, text, "no route for the event", "no_route"))
            return
        if self.queued >= MAX_QUEUED:
            n = Notif(nid, route, process, kind, text)
            self.dead.append(self.obs(self.step, route, process, kind, text,
                                      "delivery queue full (back-pressure)", "backpressure"))
            return
        n = Notif(nid, route, process, kind, text)
        self.queues.setdefault(route, deque()).append(n)
        self.queued += 1
        self.queued_ids.add(nid)

    def obs(self, step, route, process, kind, text, reason=None, cause=None):
        d = {"step": step, "destination": dest_of(route) if route else {}, "process": process,
             "kind": kind, "text": text}
        if reason is not None:
            d["reason"] = reason
        if cause is not None:
            d["cause"] = cause
        return d

    def mark_delivered(self, nid):
        self.delivered.add(nid)
        self.delivered_order.append(nid)
        if len(self.delivered_order) > DELIVERED_KEEP:
            old = self.delivered_order.popleft()
            self.delivered.discard(old)

    def pop_head(self, route):
        q = self.queues[route]
        n = q.popleft()
        self.queued -= 1
        self.queued_ids.discard(n.nid)
        if not q:
            del self.queues[route]
        return n

    def attempt_delivery(self):
        for route in list(self.queues.keys()):
            if route in self.busy:
                continue
            while route in self.queues:
                n = self.queues[route][0]
                if n.due is not None and self.now < n.due:
                    break
                if self.adapter_up:
                    self.pop_head(route)
                    self.mark_delivered(n.nid)
                    self.deliveries.append(self.obs(self.step, route, n.process, n.kind, n.text))
                    continue
                n.fails += 1
                if n.fails >= MAX_ATTEMPTS:
                    self.pop_head(route)
                    self.dead.append(self.obs(self.step, route, n.process, n.kind, n.text,
                                              "adapter failed %d attempts; dead-lettered" % n.fails,
                                              "adapter_failed"))
                    continue
                n.due = self.now + min((1 << (n.fails - 1)) * S, 60 * S)
                break

    # -- processes
    def event_id(self, run):
        nid = (run.run_id, run.seq)
        run.seq += 1
        return nid

    def route_for(self, run):
        stored = self.lanes.get(run.lane) if run.lane else None
        cap = run.origin
        if stored is not None and route_of(stored) != route_of(cap):
            return None, "origin_conflict"
        if stored is not None:
            return route_of(stored), None
        return route_of(cap), None

    def emit_run(self, run, kind, text):
        nid = self.event_id(run)
        route, why = self.route_for(run)
        if route is None:
            self.dead.append({"step": None, "destination": dest_of(route_of(run.origin)), "process": run.pid,
                              "kind": kind, "text": text, "reason": "origin conflict", "cause": why})
            return
        self.emit(nid, route, run.pid, kind, text)

    def take_suppressed(self, run, lines):
        if run.suppressed:
            lines.append(suppressed_line(run.suppressed))
            run.suppressed = 0

    def spawn(self, o, pid, watch, notify):
        if not isinstance(pid, str) or pid == "" or blen(pid) > 128:
            return
        watch = [w for w in watch if isinstance(w, str)]
        if len(watch) > 32 or any(w == "" or blen(w) > 256 for w in watch):
            return
        cur = self.procs.get(pid)
        if cur is not None and cur.running:
            return
        lane = self.record_lane(o)
        run = Run(self.next_run, pid, dict(o), lane, watch, bool(notify))
        self.next_run += 1
        self.procs[pid] = run

    def output(self, pid, text):
        run = self.procs.get(pid)
        if run is None or not run.running:
            return
        run.tail = (run.tail + text)[-TAIL_CHARS:]
        if not run.watching:
            return
        pieces = text.split("\n")
        lines = []
        for i, l in enumerate(pieces):
            last = i == len(pieces) - 1
            if last and l == "":
                break
            if not last and l.endswith("\r"):
                l = l[:-1]
            lines.append(l)
        matching = [l for l in lines if any(p in l for p in run.watch)]
        if not matching:
            return
        t = self.now
        if run.cool_until is not None and t < run.cool_until:
            # inside window: dropped and counted
            run.suppressed += len(matching)
            if not run.window_drop:
                run.window_drop = True
                run.strikes += 1
                if run.strikes >= 3:
                    run.watching = False
                    run.notify = True
                    body = ["[Background process %s: watching disabled after repeated matches; "
                            "it will notify on exit]" % header_val(pid)]
                    self.take_suppressed(run, body)
                    self.emit_run(run, "watch_disabled", "\n".join(body))
            return
        # passes cooldown
        if run.had_window and not run.window_drop:
            run.strikes = 0
        run.had_window = True
        run.window_drop = False
        run.cool_until = t + COOLDOWN
        # breaker
        if self.b_paused_until is not None:
            if t < self.b_paused_until:
                run.suppressed += len(matching)
                return
            self.b_paused_until = None
            self.bw_start = None
        if self.bw_start is None or t >= self.bw_start + BREAKER_WINDOW:
            self.bw_start = t
            self.bw_count = 0
        self.bw_count += 1
        if self.bw_count > BREAKER_MAX:
            run.suppressed += len(matching)
            self.b_paused_until = t + BREAKER_PAUSE
            self.bw_start = None
            self.bw_count = 0
            return
        first = matching[0]
        pat = next(p for p in run.watch if p in first)
        ex = []
        total = 0
        for l in matching:
            l = rtrim_ws(l)
            if len(ex) >= EXCERPT_LINES:
                break
            add = len(l) + (1 if ex else 0)
            if total + add > EXCERPT_CHARS:
                if not ex:
                    ex.append(l[:EXCERPT_CHARS])
                break
            ex.append(l)
            total += add
        body = ['[Background process %s matched watch pattern "%s"]' % (header_val(pid), header_val(pat))]
        body += quote_lines(ex)
        self.take_suppressed(run, body)
        self.emit_run(run, "watch_match", "\n".join(body))

    def finish(self, run, how):
        run.running = False
        if not run.notify:
            return
        body = ["[Background process %s %s]" % (header_val(run.pid), how)]
        body += quote_lines(output_lines(run.tail))
        self.take_suppressed(run, body)
        self.emit_run(run, "completion", "\n".join(body))

    def restart(self, survive):
        self.busy.clear()
        self.reset_breaker()
        for run in sorted(self.procs.values(), key=lambda r: r.run_id):
            if not run.running:
                continue
            run.reset_volatile()
            if not survive:
                self.finish(run, "was lost (the gateway restarted and the process did not survive)")

    def shutdown(self):
        self.epoch += 1
        seen = []
        for k in self.lane_order:
            r = route_of(self.lanes[k])
            if r not in seen:
                seen.append(r)
        for i, r in enumerate(seen):
            self.emit(("shutdown", self.epoch, i), r, None, "shutdown", SHUTDOWN_TEXT)

    def run_trace(self, trace):
        threads = trace.get("threads", [])
        ops = trace.get("ops", [])
        if not isinstance(threads, list) or not isinstance(ops, list):
            raise ValueError("trace needs threads and ops lists")

        def th(i):
            if not isinstance(i, int) or isinstance(i, bool) or not (0 <= i < len(threads)):
                raise ValueError("thread index out of range: %r" % (i,))
            o = threads[i]
            if not isinstance(o, dict):
                raise ValueError("bad thread")
            return o

        for k, op in enumerate(ops):
            self.step = k
            if op == "shutdown":
                self.shutdown()
            elif isinstance(op, dict) and len(op) == 1:
                name, a = next(iter(op.items()))
                if not isinstance(a, dict):
                    raise ValueError("bad op %r" % (op,))
                if name == "message":
                    self.record_lane(th(a["thread"]))
                elif name == "turn_start":
                    o = th(a["thread"])
                    self.record_lane(o)
                    self.busy.add(route_of(o))
                elif name == "turn_end":
                    o = th(a["thread"])
                    self.busy.discard(route_of(o))
                elif name == "reset":
                    self.record_lane(th(a["thread"]))
                elif name == "spawn":
                    self.spawn(th(a["thread"]), a.get("process"), a.get("watch", []) or [], a.get("notify", False))
                elif name == "output":
                    t = a.get("text", "")
                    self.output(a.get("process"), t if isinstance(t, str) else "")
                elif name == "exit":
                    run = self.procs.get(a.get("process"))
                    if run is not None and run.running:
                        self.finish(run, "exited with code %s" % (a.get("code"),))
                elif name == "kill":
                    run = self.procs.get(a.get("process"))
                    if run is not None and run.running:
                        self.finish(run, "was killed")
                elif name == "read":
                    th(a["thread"])
                elif name == "advance":
                    ms = a.get("ms", 0)
                    if isinstance(ms, int) and ms > 0:
                        self.now += ms
                elif name == "adapter":
                    self.adapter_up = bool(a.get("up", True))
                elif name == "restart":
                    self.restart(bool(a.get("survive", False)))
                else:
                    raise ValueError("unknown op %r" % name)
            else:
                raise ValueError("bad op %r" % (op,))
            self.attempt_delivery()
        nops = len(ops)
        for d in self.dead:
            if d["step"] is None:
                d["step"] = nops
        return {"deliveries": self.deliveries, "dead_letters": self.dead}


# ---------------------------------------------------------------- protocol

OPS = ["hermes_build", "canonical_build", "canonical_parse", "hermes_parse", "origin", "trace",
       "dialect_build", "dialect_parse"]


def dialect_parse(key):
    try:
        f = canonical_parse(key)
    except Err:
        return None
    route = {"platform": f["platform"], "chat_type": f["chat_type"], "chat_id": f["chat_id"]}
    if "thread_id" in f:
        route["thread_id"] = f["thread_id"]
    if "user_id" in f:
        route["user_id"] = f["user_id"]
    try:
        if canonical_build(route, GW_POLICY) != key:
            return None
    except Err:
        return None
    return route


class Unsupported(Exception):
    pass


def run_case(c):
    op = c.get("op")
    try:
        if op == "origin":
            validate_origin(c.get("origin"))
            return {"ok": True}
        if op == "canonical_build":
            return {"key": canonical_build(c.get("origin"), norm_policy(c.get("policy")))}
        if op == "hermes_build":
            return {"key": hermes_build(c.get("origin"), norm_policy(c.get("policy")))}
        if op == "canonical_parse":
            k = c.get("key")
            if not isinstance(k, str):
                raise Err("malformed")
            return {"fields": canonical_parse(k)}
        if op == "hermes_parse":
            k = c.get("key")
            if not isinstance(k, str):
                raise Err("malformed")
            return {"parsed": hermes_parse(k)}
        if op == "dialect_build":
            return {"key": canonical_build(c.get("origin"), GW_POLICY)}
        if op == "dialect_parse":
            k = c.get("key")
            return {"route": dialect_parse(k) if isinstance(k, str) else None}
        if op == "trace":
            return {"trace": Gateway().run_trace(c.get("trace") or {})}
    except Err as e:
        return {"error": e.d}
    raise Unsupported("operation %r not supported" % (op,))


_SURR = re.compile("[\ud800-\udfff]")


def lossy(v):
    """KEY-1: input decoded lossily -- lone surrogates become U+FFFD."""
    if isinstance(v, str):
        return _SURR.sub("\ufffd", v) if _SURR.search(v) else v
    if isinstance(v, list):
        return [lossy(x) for x in v]
    if isinstance(v, dict):
        return {lossy(k): lossy(x) for k, x in v.items()}
    return v


def out(obj):
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def main():
    sys.setrecursionlimit(10000)
    sys.stdin.reconfigure(encoding="utf-8", errors="replace")
    sys.stdout.reconfigure(encoding="utf-8", errors="replace")
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            msg = lossy(json.loads(line))
        except Exception as e:
            out({"errored": "bad JSON: %s" % e})
            continue
        if not isinstance(msg, dict):
            out({"errored": "not an object"})
            continue
        cmd = msg.get("cmd")
        if cmd == "start":
            if msg.get("version") != 1:
                out({"errored": "unsupported protocol version %r" % (msg.get("version"),)})
                continue
            out({"protocol": 1,
                 "implementation": {"name": "cleanroom2", "version": "0.1.0", "language": "python"},
                 "operations": OPS,
                 "unsupported": {},
                 "limits": {"max_queued": MAX_QUEUED, "delivered_log": DELIVERED_KEEP,
                            "watch_cooldown_ms": COOLDOWN, "breaker": "15 per 10 s, pause 30 s",
                            "max_attempts": MAX_ATTEMPTS}})
        elif cmd == "run":
            seq = msg.get("seq")
            try:
                c = msg.get("case")
                if not isinstance(c, dict):
                    raise ValueError("case is not an object")
                r = run_case(c)
                out({"seq": seq, "result": r})
            except Unsupported as e:
                out({"seq": seq, "skipped": str(e)})
            except Exception as e:
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
