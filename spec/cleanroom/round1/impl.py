#!/usr/bin/env python3
"""Clean-room procroute harness (PROTOCOL.md v1), written from SPEC.md only."""
import sys
import json
import re
from collections import deque

CHAT_TYPES = ("dm", "group", "channel", "thread")
ORIGIN_FIELDS = ("platform", "chat_type", "chat_id", "thread_id", "user_id", "user_name")
ID_LIMIT = 512
NAME_LIMIT = 256
KEY_LIMIT = 8192


class KeyError_(Exception):
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


def blen(s):
    return len(s.encode("utf-8", "surrogatepass"))


# ---------------------------------------------------------------- origins
PLATFORM_RE = re.compile(r"[a-z][a-z0-9_]*\Z")
PROFILE_RE = re.compile(r"[a-z0-9][a-z0-9_-]*\Z")


def check_platform(p, field="platform"):
    if not isinstance(p, str):
        raise KeyError_("malformed", field=field)
    if p == "":
        raise KeyError_("empty", field=field)
    if blen(p) > 32:
        raise KeyError_("too_long", field=field, length=blen(p), limit=32)
    if not PLATFORM_RE.match(p):
        raise KeyError_("bad_token", field=field)


def validate_origin(o):
    if not isinstance(o, dict):
        raise KeyError_("malformed")
    for k in o:
        if k not in ORIGIN_FIELDS:
            raise KeyError_("malformed", field=k)
    for k in ("platform", "chat_type", "chat_id"):
        if k not in o:
            raise KeyError_("malformed", field=k)
    check_platform(o["platform"])
    ct = o["chat_type"]
    if not isinstance(ct, str):
        raise KeyError_("malformed", field="chat_type")
    if ct not in CHAT_TYPES:
        raise KeyError_("unknown_chat_type", field="chat_type")
    for k in ("chat_id", "thread_id", "user_id", "user_name"):
        if k not in o:
            continue
        v = o[k]
        if not isinstance(v, str):
            raise KeyError_("malformed", field=k)
        if v == "":
            raise KeyError_("empty", field=k)
        lim = NAME_LIMIT if k == "user_name" else ID_LIMIT
        n = blen(v)
        if n > lim:
            raise KeyError_("too_long", field=k, length=n, limit=lim)
        try:
            v.encode("utf-8")
        except UnicodeEncodeError:
            raise KeyError_("invalid_unicode", field=k)
    return o


# ---------------------------------------------------------------- policy
def norm_policy(p):
    g, t, prof = True, False, None
    if isinstance(p, dict):
        g = bool(p.get("group_sessions_per_user", True))
        t = bool(p.get("thread_sessions_per_user", False))
        prof = p.get("profile")
    return g, t, prof


def namespace_of(prof):
    if prof is None or prof in ("main", "default"):
        return "main"
    if not isinstance(prof, str) or blen(prof) > 64 or not PROFILE_RE.match(prof):
        raise KeyError_("bad_profile", field="profile")
    return prof


def user_keyed(o, g, t):
    return o["chat_type"] != "dm" and g and ("thread_id" not in o or t)


# ---------------------------------------------------------------- canonical dialect
def c_escape(s):
    out = []
    for ch in s:
        c = ord(ch)
        if ch in "%:~" or c < 0x20 or c == 0x7F:
            out.append("%%%02X" % c)
        else:
            out.append(ch)
    return "".join(out)


def canonical_build(o, policy):
    validate_origin(o)
    g, t, prof = norm_policy(policy)
    ns = namespace_of(prof)
    parts = ["agent", ns, o["platform"], o["chat_type"], c_escape(o["chat_id"])]
    if "thread_id" in o:
        parts.append(c_escape(o["thread_id"]))
    if "user_id" in o and user_keyed(o, g, t):
        parts.append("~" + c_escape(o["user_id"]))
    return ":".join(parts)


HEX = "0123456789ABCDEF"


def c_decode(seg, start, part):
    """seg: raw segment text; start: byte offset of seg in key."""
    if seg == "":
        raise KeyError_("empty", position=start, part=part)
    out = []
    pos = start
    i = 0
    n = len(seg)
    while i < n:
        ch = seg[i]
        c = ord(ch)
        if ch == "%":
            if i + 2 <= n - 1 and seg[i + 1] in HEX and seg[i + 2] in HEX:
                v = int(seg[i + 1:i + 3], 16)
                vch = chr(v)
                if not (vch in "%:~" or v < 0x20 or v == 0x7F):
                    raise KeyError_("bad_escape", position=pos, part=part)
                out.append(vch)
                i += 3
                pos += 3
                continue
            raise KeyError_("bad_escape", position=pos, part=part)
        if ch == "~" or c < 0x20 or c == 0x7F:
            raise KeyError_("unescaped", position=pos, part=part)
        out.append(ch)
        pos += blen(ch)
        i += 1
    s = "".join(out)
    if blen(s) > ID_LIMIT:
        raise KeyError_("part_too_long", position=start, part=part)
    return s


def split_segments(key):
    """Return list of (segment, byte_offset)."""
    segs = []
    pos = 0
    cur_start = 0
    buf = []
    for ch in key:
        if ch == ":":
            segs.append(("".join(buf), cur_start))
            buf = []
            pos += 1
            cur_start = pos
        else:
            buf.append(ch)
            pos += blen(ch)
    segs.append(("".join(buf), cur_start))
    return segs


def parse_head(key):
    """Common prefix of both dialects. Returns (ns, platform, chat_type, tail_segments, keybytes)."""
    if not isinstance(key, str):
        raise KeyError_("not_a_string", position=0)
    kb = blen(key)
    if kb > KEY_LIMIT:
        raise KeyError_("too_long", position=KEY_LIMIT)
    if not key.startswith("agent:"):
        raise KeyError_("missing_prefix", position=0)
    segs = split_segments(key)
    # segs[0] == "agent"
    names = ["namespace", "platform", "chat_type"]
    vals = []
    for idx, name in enumerate(names, start=1):
        if idx >= len(segs):
            raise KeyError_("missing", position=kb, part=name)
        seg, off = segs[idx]
        if name == "namespace":
            if seg == "":
                raise KeyError_("empty", position=off, part=name)
            if not (seg == "main" or (blen(seg) <= 64 and PROFILE_RE.match(seg))):
                raise KeyError_("bad_token", position=off, part=name)
        elif name == "platform":
            if seg == "":
                raise KeyError_("empty", position=off, part=name)
            if blen(seg) > 32 or not PLATFORM_RE.match(seg):
                raise KeyError_("bad_token", position=off, part=name)
        else:
            if seg not in CHAT_TYPES:
                raise KeyError_("unknown_chat_type", position=off, part=name)
        vals.append(seg)
    return vals[0], vals[1], vals[2], segs[4:], kb


def canonical_parse(key):
    ns, platform, ct, tail, kb = parse_head(key)
    if ns == "default":
        raise KeyError_("bad_token", position=6, part="namespace")
    if not tail:
        raise KeyError_("missing", position=kb, part="chat_id")
    res = {"namespace": ns, "platform": platform, "chat_type": ct}
    seg, off = tail[0]
    res["chat_id"] = c_decode(seg, off, "chat_id")
    have_thread = False
    have_user = False
    for seg, off in tail[1:]:
        if seg.startswith("~"):
            if have_user:
                raise KeyError_("trailing", position=off - 1, part="user_id")
            if ct == "dm":
                raise KeyError_("user_in_dm", position=off, part="user_id")
            res["user_id"] = c_decode(seg[1:], off + 1, "user_id")
            have_user = True
        else:
            if have_user or have_thread:
                raise KeyError_("trailing", position=off - 1, part="thread_id")
            res["thread_id"] = c_decode(seg, off, "thread_id")
            have_thread = True
    return res


# ---------------------------------------------------------------- hermes dialect
PY_WS = set(" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004"
            "\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
WA_RE = re.compile(r"[A-Za-z0-9@.+\-]+\n?\Z")


def wa_norm(s):
    s = s.strip()  # python whitespace, same as hermes
    s = s.replace("+", "", 1)
    s = s.split(":", 1)[0]
    s = s.split("@", 1)[0]
    return s


class WARejected(Exception):
    pass


def wa_canon(raw):
    """Returns canonical id, or '' when the first pass leaves nothing; raises WARejected."""
    n1 = wa_norm(raw)
    if n1 == "":
        return ""
    n2 = wa_norm(n1)
    if n2 == "" or not WA_RE.match(n2):
        raise WARejected()
    return n2


def hermes_build(o, policy):
    validate_origin(o)
    g, t, prof = norm_policy(policy)
    ns = "agent:" + namespace_of(prof)
    platform = o["platform"]
    ct = o["chat_type"]
    chat = o["chat_id"]
    thread = o.get("thread_id")
    user = o.get("user_id")
    try:
        if platform == "whatsapp":
            if ct == "dm":
                c = wa_canon(chat)
                u = None
                if user is not None:
                    u = wa_canon(user)
                if c == "":
                    if user is not None:
                        c = u if u else user
                chat = c
            else:
                if user is not None:
                    u = wa_canon(user)
                    user = u if u else user
    except WARejected:
        raise KeyError_("whatsapp_id_rejected")
    if ct == "dm":
        if chat:
            if thread:
                return f"{ns}:{platform}:dm:{chat}:{thread}"
            return f"{ns}:{platform}:dm:{chat}"
        if thread:
            return f"{ns}:{platform}:dm:{thread}"
        return f"{ns}:{platform}:dm"
    parts = [ns, platform, ct]
    if chat:
        parts.append(chat)
    if thread:
        parts.append(thread)
    iso = g
    if thread and not t:
        iso = False
    if iso and user:
        parts.append(str(user))
    return ":".join(parts)


def hermes_parse(key):
    ns, platform, ct, tail, kb = parse_head(key)
    res = {"namespace": ns, "platform": platform, "chat_type": ct}
    if platform == "whatsapp" and ct == "dm":
        u = {"unknown": "whats_app_canonical"}
        if not tail:
            res.update(chat_id=u, thread_id="absent", user_id="absent")
        else:
            res.update(chat_id=u, thread_id=u, user_id=u)
        return res
    if not tail:
        raise KeyError_("missing", position=kb, part="chat_id")
    if len(tail) == 1:
        seg, off = tail[0]
        if seg == "":
            raise KeyError_("empty", position=off, part="chat_id")
        res.update(chat_id={"known": seg}, thread_id="absent", user_id="absent")
        return res
    u = {"unknown": "colon_split"}
    res.update(chat_id=u, thread_id=u, user_id=("absent" if ct == "dm" else u))
    return res


# ---------------------------------------------------------------- dialect laws (canonical dialect)
def dialect_build(o, policy):
    return canonical_build(o, policy)


def dialect_parse(key, policy):
    try:
        f = canonical_parse(key)
    except KeyError_:
        return None
    g, t, prof = norm_policy(policy)
    try:
        ns = namespace_of(prof)
    except KeyError_:
        return None
    if f["namespace"] != ns:
        return None
    route = {"platform": f["platform"], "chat_type": f["chat_type"], "chat_id": f["chat_id"]}
    if "thread_id" in f:
        route["thread_id"] = f["thread_id"]
    if "user_id" in f:
        route["user_id"] = f["user_id"]
    # only answer with fields that rebuild exactly this key
    try:
        if dialect_build(dict(route), policy) != key:
            return None
    except KeyError_:
        return None
    return route


# ---------------------------------------------------------------- texts
BIDI = {0x061C, 0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E,
        0x2066, 0x2067, 0x2068, 0x2069, 0x2028, 0x2029, 0xFEFF}


def esc(s):
    out = []
    for ch in s:
        c = ord(ch)
        if c < 0x20 or 0x7F <= c <= 0x9F or c in BIDI or 0xD800 <= c <= 0xDFFF:
            out.append("\\u{%x}" % c)
        else:
            out.append(ch)
    return "".join(out)


def quote_lines(lines):
    return ["| " + esc(l) for l in lines]


def suppressed_line(n):
    return ["(suppressed: %d)" % n] if n else []


RUST_WS = set("\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
              "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")


def rtrim(s):
    i = len(s)
    while i > 0 and s[i - 1] in RUST_WS:
        i -= 1
    return s[:i]


def split_lines(text):
    lines = text.split("\n")
    res = []
    for i, l in enumerate(lines):
        last = i == len(lines) - 1
        if last:
            if l == "":
                continue
            res.append(l)
        else:
            if l.endswith("\r"):
                l = l[:-1]
            res.append(l)
    return res


SHUTDOWN_TEXT = "The gateway is shutting down; notifications about background processes will resume after it restarts."

# ---------------------------------------------------------------- gateway model
COOLDOWN_MS = 15000
BREAKER_WINDOW_MS = 10000
BREAKER_MAX = 15
BREAKER_PAUSE_MS = 30000
MAX_ATTEMPTS = 6
MAX_QUEUED = 1_000_000
MAX_RUNNING = 100_000
MAX_LANES = 1_000_000
TAIL_CHARS = 2000


def route_of(o):
    r = (o.get("platform"), o.get("chat_type"), o.get("chat_id"), o.get("thread_id"))
    return r


def dest_of(route):
    d = {"platform": route[0], "chat_type": route[1], "chat_id": route[2]}
    if route[3] is not None:
        d["thread_id"] = route[3]
    return d


class Run:
    def __init__(self, rid, pid, origin, lane, watch, notify):
        self.rid = rid
        self.pid = pid
        self.origin = origin
        self.lane = lane
        self.watch = list(watch)
        self.notify = notify
        self.promoted = False
        self.watching = bool(watch)
        self.running = True
        self.next_seq = 0
        self.tail = ""
        self.reset_volatile()

    def reset_volatile(self):
        self.win_start = None
        self.win_drop = False
        self.strikes = 0
        self.suppressed = 0

    def owed(self):
        return self.notify or self.promoted


class Notif:
    __slots__ = ("nid", "route", "process", "kind", "text", "attempts", "next_at", "order")


class Gateway:
    def __init__(self, threads):
        self.threads = threads
        self.policy = None  # defaults
        self.now = 0
        self.step = 0
        self.lanes = {}  # lane key -> origin
        self.runs = {}
        self.latest = {}
        self.next_run = 1
        self.queues = {}
        self.nqueued = 0
        self.turns = set()  # routes (threads) with a running turn
        self.adapter_up = True
        self.delivered = set()
        self.delivered_order = deque()
        self.known_ids = set()
        self.deliveries = []
        self.dead = []
        self.epoch = 0
        self.order = 0
        self.reset_breaker()

    def reset_breaker(self):
        self.br_start = None
        self.br_count = 0
        self.br_paused_until = None

    # ---- lanes
    def lane_of(self, o):
        try:
            return canonical_build(o, self.policy)
        except KeyError_:
            return None
        except Exception:
            return None

    def touch(self, i):
        o = self.threads[i]
        lane = self.lane_of(o)
        if lane is None:
            return None
        if lane not in self.lanes:
            if len(self.lanes) >= MAX_LANES:
                return None  # STORE-3: a full store refuses a new lane, never evicts
            self.lanes[lane] = o
        return lane

    # ---- events
    def emit(self, run, kind, text_fn):
        seq = run.next_seq
        run.next_seq += 1
        sup = run.suppressed
        run.suppressed = 0
        text = text_fn(sup)
        nid = ("run", run.rid, seq)
        self.route_and_queue(nid, run, kind, text)

    def route_and_queue(self, nid, run, kind, text):
        captured = run.origin
        stored = self.lanes.get(run.lane) if run.lane is not None else None
        if stored is not None and route_of(stored) != route_of(captured):
            self.dead_letter_raw(route_of(captured), run.pid, kind, text,
                                 "stored and captured origins name different threads",
                                 "origin_conflict", len(self.ops))
            return
        o = stored if stored is not None else captured
        try:
            validate_origin(o)
        except KeyError_:
            self.dead_letter_raw(route_of(o), run.pid, kind, text, "no route for the event",
                                 "no_route", len(self.ops))
            return
        self.enqueue(nid, route_of(o), run.pid, kind, text)

    def enqueue(self, nid, route, process, kind, text):
        if nid in self.known_ids:
            return
        n = Notif()
        n.nid = nid
        n.route = route
        n.process = process
        n.kind = kind
        n.text = text
        n.attempts = 0
        n.next_at = 0
        self.order += 1
        n.order = self.order
        if self.nqueued >= MAX_QUEUED:
            self.known_ids.add(nid)
            self.dead_letter(n, "queue full (back-pressure)", "backpressure")
            return
        self.known_ids.add(nid)
        self.queues.setdefault(route, deque()).append(n)
        self.nqueued += 1

    def dead_letter_raw(self, route, process, kind, text, reason, cause, step):
        d = {"step": step, "destination": dest_of(route), "process": process, "kind": kind,
             "text": text, "reason": reason, "cause": cause}
        self.dead.append(d)

    def dead_letter(self, n, reason, cause):
        self.dead_letter_raw(n.route, n.process, n.kind, n.text, reason, cause, self.step)

    def busy(self, route):
        return route in self.turns

    def deliver(self):
        while True:
            best = None
            for route, q in self.queues.items():
                if not q:
                    continue
                h = q[0]
                if h.next_at > self.now or self.busy(route):
                    continue
                if best is None or h.order < best.order:
                    best = h
            if best is None:
                return
            q = self.queues[best.route]
            if self.adapter_up:
                q.popleft()
                self.nqueued -= 1
                self.deliveries.append({"step": self.step, "destination": dest_of(best.route),
                                        "process": best.process, "kind": best.kind, "text": best.text})
                self.delivered.add(best.nid)
                self.delivered_order.append(best.nid)
                if len(self.delivered_order) > 65536:
                    self.delivered.discard(self.delivered_order.popleft())
            else:
                best.attempts += 1
                if best.attempts >= MAX_ATTEMPTS:
                    q.popleft()
                    self.nqueued -= 1
                    self.dead_letter(best, "adapter failed %d times; giving up" % best.attempts,
                                     "adapter_failed")
                else:
                    best.next_at = self.now + min(2 ** (best.attempts - 1), 60) * 1000

    # ---- texts
    def header(self, run, what):
        return "[Background process %s %s]" % (esc(run.pid), what)

    def match_text(self, run, pattern, excerpt):
        def f(sup):
            lines = [self.header(run, "matched a watch pattern"),
                     "Command: " + esc(run.pid), "Pattern: " + esc(pattern)]
            lines += quote_lines(excerpt)
            lines += suppressed_line(sup)
            return "\n".join(lines)
        return f

    def disabled_text(self, run):
        def f(sup):
            lines = [self.header(run, "watch disabled"), "Command: " + esc(run.pid),
                     "Reason: too many matches; you will be notified when the process ends"]
            lines += suppressed_line(sup)
            return "\n".join(lines)
        return f

    def completion_text(self, run, what):
        tail = run.tail[-TAIL_CHARS:]

        def f(sup):
            lines = [self.header(run, what), "Command: " + esc(run.pid)]
            lines += quote_lines(split_lines(tail))
            lines += suppressed_line(sup)
            return "\n".join(lines)
        return f

    # ---- ops
    def op_spawn(self, a):
        i = a["thread"]
        pid = a["process"]
        watch = a.get("watch") or []
        notify = bool(a.get("notify"))
        if not isinstance(pid, str) or pid == "" or blen(pid) > 128:
            return
        if len(watch) > 32 or any((not isinstance(p, str)) or p == "" or blen(p) > 256 for p in watch):
            return
        if pid in self.latest and self.runs[self.latest[pid]].running:
            return
        if sum(1 for r in self.runs.values() if r.running) >= MAX_RUNNING:
            return
        lane = self.touch(i)
        rid = self.next_run
        self.next_run += 1
        run = Run(rid, pid, self.threads[i], lane, watch, notify)
        self.runs[rid] = run
        self.latest[pid] = rid

    def running(self, pid):
        rid = self.latest.get(pid)
        if rid is None:
            return None
        r = self.runs[rid]
        return r if r.running else None

    def breaker_admit(self, t):
        if self.br_paused_until is not None:
            if t < self.br_paused_until:
                return False
            self.br_paused_until = None
            self.br_start = None
        if self.br_start is None or t >= self.br_start + BREAKER_WINDOW_MS:
            self.br_start = t
            self.br_count = 1
            return True
        self.br_count += 1
        if self.br_count <= BREAKER_MAX:
            return True
        self.br_paused_until = t + BREAKER_PAUSE_MS
        self.br_start = None
        return False

    def op_output(self, a):
        r = self.running(a.get("process"))
        if r is None:
            return
        text = a.get("text", "")
        r.tail = (r.tail + text)[-(TAIL_CHARS * 4):]
        if not r.watching:
            return
        lines = split_lines(text)
        matching = [l for l in lines if any(p in l for p in r.watch)]
        if not matching:
            return
        t = self.now
        nm = len(matching)
        if r.win_start is not None and t < r.win_start + COOLDOWN_MS:
            r.suppressed += nm
            if not r.win_drop:
                r.win_drop = True
                r.strikes += 1
                if r.strikes >= 3:
                    r.watching = False
                    r.promoted = True
                    self.emit(r, "watch_disabled", self.disabled_text(r))
            return
        # passes the cooldown
        if r.win_start is not None and not r.win_drop:
            r.strikes = 0
        r.win_start = t
        r.win_drop = False
        if not self.breaker_admit(t):
            r.suppressed += nm
            return
        first = matching[0]
        pattern = next(p for p in r.watch if p in first)
        ex = []
        total = 0
        for l in matching:
            l = rtrim(l)
            add = len(l) + (1 if ex else 0)
            if len(ex) >= 20:
                break
            if total + add > 2000:
                if not ex:
                    ex.append(l[:2000])
                break
            ex.append(l)
            total += add
        self.emit(r, "watch_match", self.match_text(r, pattern, ex))

    def finish(self, r, what):
        r.running = False
        r.watching = False
        if r.owed():
            self.emit(r, "completion", self.completion_text(r, what))

    def op_exit(self, a):
        r = self.running(a.get("process"))
        if r is None:
            return
        code = a.get("code", 0)
        self.finish(r, "exited with code %d" % code if isinstance(code, int) else "exited")

    def op_kill(self, a):
        r = self.running(a.get("process"))
        if r is None:
            return
        self.finish(r, "was killed")

    def op_restart(self, a):
        survive = bool(a.get("survive"))
        self.turns.clear()
        self.reset_breaker()
        for rid in sorted(self.runs):
            r = self.runs[rid]
            if not r.running:
                continue
            r.reset_volatile()
            if not survive:
                self.finish(r, "was lost (the gateway restarted and the process did not survive)")

    def op_shutdown(self):
        self.epoch += 1
        seen = []
        for lane, o in self.lanes.items():
            rt = route_of(o)
            if rt not in seen:
                seen.append(rt)
        for idx, rt in enumerate(seen):
            self.enqueue(("shutdown", self.epoch, idx), rt, None, "shutdown", SHUTDOWN_TEXT)

    def run_trace(self, ops):
        self.ops = ops
        for k, op in enumerate(ops):
            self.step = k
            self.apply(op)
            self.deliver()
        return {"deliveries": self.deliveries, "dead_letters": self.dead}

    def apply(self, op):
        if op == "shutdown":
            self.op_shutdown()
            return
        if not isinstance(op, dict) or len(op) != 1:
            raise ValueError("bad op")
        (name, a), = op.items()
        if name == "message":
            self.touch(a["thread"])
        elif name == "turn_start":
            self.touch(a["thread"])
            self.turns.add(route_of(self.threads[a["thread"]]))
        elif name == "turn_end":
            self.turns.discard(route_of(self.threads[a["thread"]]))
        elif name == "reset":
            self.touch(a["thread"])
        elif name == "spawn":
            self.op_spawn(a)
        elif name == "output":
            self.op_output(a)
        elif name == "exit":
            self.op_exit(a)
        elif name == "kill":
            self.op_kill(a)
        elif name == "read":
            pass
        elif name == "advance":
            ms = a.get("ms", 0)
            if isinstance(ms, int) and ms > 0:
                self.now += ms
        elif name == "adapter":
            self.adapter_up = bool(a.get("up"))
        elif name == "restart":
            self.op_restart(a)
        elif name == "shutdown":
            self.op_shutdown()
        else:
            raise ValueError("unknown op %r" % name)


def run_trace(case):
    tr = case.get("trace")
    if not isinstance(tr, dict):
        raise ValueError("trace missing")
    threads = tr.get("threads") or []
    ops = tr.get("ops") or []
    for op in ops:
        if isinstance(op, dict):
            for v in op.values():
                if isinstance(v, dict) and "thread" in v:
                    ti = v["thread"]
                    if not isinstance(ti, int) or ti < 0 or ti >= len(threads):
                        raise ValueError("op names a thread past the end")
    g = Gateway(threads)
    return {"trace": g.run_trace(ops)}


# ---------------------------------------------------------------- protocol
OPERATIONS = ["hermes_build", "canonical_build", "canonical_parse", "hermes_parse",
              "origin", "trace", "dialect_build", "dialect_parse"]


def handle_case(case):
    op = case.get("op")
    try:
        if op == "canonical_build":
            return {"key": canonical_build(case.get("origin"), case.get("policy"))}
        if op == "hermes_build":
            return {"key": hermes_build(case.get("origin"), case.get("policy"))}
        if op == "canonical_parse":
            return {"fields": canonical_parse(case.get("key"))}
        if op == "hermes_parse":
            return {"parsed": hermes_parse(case.get("key"))}
        if op == "origin":
            if "json" in case and isinstance(case["json"], str):
                try:
                    o = json.loads(case["json"])
                except Exception:
                    raise KeyError_("json")
            else:
                o = case.get("origin")
            validate_origin(o)
            return {"ok": True}
        if op == "dialect_build":
            return {"key": dialect_build(case.get("origin"), case.get("policy"))}
        if op == "dialect_parse":
            return {"route": dialect_parse(case.get("key"), case.get("policy"))}
        if op == "trace":
            return run_trace(case)
    except KeyError_ as e:
        return {"error": e.d}
    return None


def out(obj):
    s = json.dumps(obj, ensure_ascii=True, separators=(",", ":"))
    sys.__stdout__.write(s + "\n")
    sys.__stdout__.flush()


def main():
    sys.stdout = sys.stderr  # nothing else on stdout (P-1)
    inp = sys.stdin.buffer
    while True:
        line = inp.readline()
        if not line:
            return
        line = line.strip()
        if not line:
            continue
        try:
            msg = json.loads(line.decode("utf-8", "replace"))
        except Exception as e:
            out({"seq": 0, "errored": "unparseable command: %s" % e})
            continue
        if not isinstance(msg, dict):
            out({"seq": 0, "errored": "command is not an object"})
            continue
        cmd = msg.get("cmd")
        if cmd == "start":
            if msg.get("version") != 1:
                out({"errored": "unsupported protocol version %r" % msg.get("version")})
                continue
            out({"protocol": 1,
                 "implementation": {"name": "cleanroom-py", "version": "0.1.0", "language": "python"},
                 "operations": OPERATIONS,
                 "unsupported": {},
                 "limits": {"max_lanes": 1000000, "max_queued": MAX_QUEUED,
                            "watch_cooldown_ms": COOLDOWN_MS, "breaker": "15 per 10 s, pause 30 s",
                            "max_running": MAX_RUNNING}})
        elif cmd == "stop":
            return
        elif cmd == "run":
            seq = msg.get("seq", 0)
            if not isinstance(seq, int):
                seq = 0
            case = msg.get("case")
            try:
                if not isinstance(case, dict):
                    raise ValueError("case is not an object")
                r = handle_case(case)
                if r is None:
                    out({"seq": seq, "skipped": "operation %r not supported" % case.get("op")})
                else:
                    out({"seq": seq, "result": r})
            except Exception as e:
                out({"seq": seq, "errored": "%s: %s" % (type(e).__name__, e)})
        else:
            out({"seq": msg.get("seq", 0) if isinstance(msg.get("seq"), int) else 0,
                 "errored": "unknown command %r" % cmd})


if __name__ == "__main__":
    main()
