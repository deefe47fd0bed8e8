#!/usr/bin/env python3
"""Clean-room procroute harness (PROTOCOL.md v1), written from SPEC.md alone.

Every guess where the text allows two readings is marked `GUESS:` and
controlled by a flag in GUESSES so that probes can flip it.
"""
import json
import os
import re
import sys
from collections import OrderedDict, deque

# ---------------------------------------------------------------------------
# Guesses (flipped by the probes in probe/)
GUESSES = {
    # canonical parse of namespace "default": reject (KEY-C6 canonicity)
    "canonical_reject_default_ns": True,
    # whatsapp dm: canonicalise (and maybe reject) the user id even when the chat id is usable
    "wa_dm_always_canon_user": False,
    # turn_end gives its origin a lane (DELIVER-8 lists message, turn start, reset, spawn)
    "turn_end_gives_lane": False,
    # read gives its origin a lane
    "read_gives_lane": False,
    # breaker pause: a chunk at exactly pause_start + 30 s passes (half-open interval)
    "breaker_pause_inclusive_end": False,
    # breaker window: a chunk at exactly window_start + 10 s is in a new window
    "breaker_window_inclusive_end": False,
    # watch_disabled counts toward the breaker
    "disabled_counts_breaker": False,
    # completion carries the output tail
    "completion_quotes_tail": True,
    # trailing white space trimmed from excerpt lines
    "trim_excerpt": False,
    # PROC-11: the acknowledgement also requires the thread's turn to be idle
    "ack_requires_idle": False,
    # PROC-11: read by any user of the home thread (DELIVER-2 thread) acknowledges
    "ack_thread_not_lane": True,
    # lost completions quote the tail restored from before the restart
    "lost_quotes_old_tail": True,
    # dead-lettered after 6 failed attempts
    "max_attempts": 6,
    # an incomplete last line of a chunk is carried into the next chunk (not matched alone)
    "watch_match_line_carry": False,
    # the incomplete last line of a chunk is a line that can match
    "partial_line_matches": True,
    # whatsapp: drop only a leading '+' (instead of the first '+' anywhere)
    "wa_plus_leading_only": False,
    # hermes parse reports namespace "default" as "main"
    "hermes_default_ns_as_main": False,
    # canonical user part: part_too_long reported after the '~' (instead of at it)
    # Amended by procroute for suite 0.3.0 (not clean-room code; ROUNDS.md):
    # SPEC KEY-6 now says a user part starts after its `~`.
    "user_part_pos_after_tilde": True,
    # platform: grammar checked before length
    "platform_grammar_first": False,
    # an adapter coming back up makes every waiting head due at once
    "adapter_up_resets_due": False,
    # breaker pause counted from the end of the window instead of the 16th chunk
    "pause_from_window_end": False,
    # PROC-11 edges
    "ack_only_unattempted": False,
    "ack_lost_runs": True,
    "ack_also_watch": False,
    "ack_adapter_ignored": False,
    "ack_other_thread": False,
    "ack_running": False,
    "ack_prev_runs": False,
    # shutdown notice per lane instead of per thread
    "shutdown_per_lane": False,
    # a strike per cooldown drop (instead of per window with drops)
    "strike_per_drop": False,
    # a breaker drop makes its window a window "with drops" (no strike reset)
    "breaker_drop_blocks_reset": False,
    # the chunk that causes the 3rd strike is not counted in watch_disabled's suppressed count
    "disabled_excludes_trigger": False,
    # output tail is the last 2,000 UTF-8 bytes (instead of characters)
    "tail_bytes": False,
}

READ_ACK = os.environ.get("READ_ACK") == "own_thread_after_delivery"

ORIGIN_FIELDS = ["platform", "chat_type", "chat_id", "thread_id", "user_id", "user_name"]
CHAT_TYPES = ("dm", "group", "channel", "thread")
PLATFORM_RE = re.compile(r"[a-z][a-z0-9_]*")
PROFILE_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")


def blen(s):
    return len(s.encode("utf-8", "surrogatepass"))


class Err(Exception):
    def __init__(self, kind, position=None, part=None, field=None, **extra):
        super().__init__(kind)
        self.kind = kind
        self.position = position
        self.part = part
        self.field = field
        self.extra = extra

    def to_json(self):
        e = {"kind": self.kind}
        if self.position is not None:
            e["position"] = self.position
        if self.part is not None:
            e["part"] = self.part
        if self.field is not None:
            e["field"] = self.field
        for k, v in self.extra.items():
            e[k] = v
        if self.position is not None:
            e["display"] = "byte %d: %s" % (self.position, self.kind)
        return {"error": e}


def has_surrogate(s):
    return any(0xD800 <= ord(c) <= 0xDFFF for c in s)


# ---------------------------------------------------------------------------
# Origins (ORIGIN-1..6)

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
        if not isinstance(v, str) or has_surrogate(v):
            raise Err("malformed")
    p = o["platform"]
    if p == "":
        raise Err("empty", field="platform")
    if GUESSES["platform_grammar_first"] and not PLATFORM_RE.fullmatch(p):
        raise Err("bad_token", field="platform")
    if blen(p) > 32:
        raise Err("too_long", field="platform", length=blen(p), limit=32)
    if not PLATFORM_RE.fullmatch(p):
        raise Err("bad_token", field="platform")
    if o["chat_type"] not in CHAT_TYPES:
        raise Err("unknown_chat_type", field="chat_type")
    for f in ("chat_id", "thread_id", "user_id"):
        if f in o:
            v = o[f]
            if v == "":
                raise Err("empty", field=f)
            if blen(v) > 512:
                raise Err("too_long", field=f, length=blen(v), limit=512)
    if "user_name" in o:
        v = o["user_name"]
        if v == "":
            raise Err("empty", field="user_name")
        if blen(v) > 256:
            raise Err("too_long", field="user_name", length=blen(v), limit=256)
    return o


# ---------------------------------------------------------------------------
# Policies and namespaces (KEY-2, KEY-3, KEY-4)

def parse_policy(p):
    if p is None:
        p = {}
    if not isinstance(p, dict):
        raise Err("malformed", field="policy")
    g = p.get("group_sessions_per_user", True)
    t = p.get("thread_sessions_per_user", False)
    prof = p.get("profile")
    if not isinstance(g, bool) or not isinstance(t, bool):
        raise Err("malformed", field="policy")
    if prof is not None and not isinstance(prof, str):
        raise Err("malformed", field="profile")
    return g, t, prof


def namespace_of(profile):
    if profile is None or profile in ("main", "default"):
        return "main"
    if not PROFILE_RE.fullmatch(profile):
        raise Err("bad_token", field="profile")
    return profile


def user_keyed(o, g, t):
    if o["chat_type"] == "dm":
        return False
    if not g:
        return False
    if "thread_id" in o and not t:
        return False
    return "user_id" in o


# ---------------------------------------------------------------------------
# hermes dialect (KEY-H1..H4)

WA_OK = re.compile(r"[A-Za-z0-9@.+-]+\n?")


def wa_norm(x):
    x = x.strip()
    if GUESSES["wa_plus_leading_only"]:
        if x.startswith("+"):
            x = x[1:]
    else:
        x = x.replace("+", "", 1)
    x = x.split(":", 1)[0]
    x = x.split("@", 1)[0]
    return x


def wa_canon(x):
    """None when the first pass leaves nothing; raises when hermes would."""
    a = wa_norm(x)
    if a == "":
        return None
    b = wa_norm(a)
    if b == "" or not WA_OK.fullmatch(b):
        raise Err("whatsapp_id_rejected")
    return b


def hermes_build(o, policy):
    validate_origin(o)
    g, t, prof = parse_policy(policy)
    ns = "agent:" + namespace_of(prof)
    plat = o["platform"]
    ct = o["chat_type"]
    chat = o["chat_id"]
    thread = o.get("thread_id")
    user = o.get("user_id")
    wa = plat == "whatsapp"
    if ct == "dm":
        if wa:
            c = wa_canon(chat)
            if GUESSES["wa_dm_always_canon_user"] and user is not None:
                wa_canon(user)
            if c is None:
                if user is not None:
                    u = wa_canon(user)
                    c = u if u is not None else user
            chat = c
        if chat:
            if thread is not None:
                return "%s:%s:dm:%s:%s" % (ns, plat, chat, thread)
            return "%s:%s:dm:%s" % (ns, plat, chat)
        if thread is not None:
            return "%s:%s:dm:%s" % (ns, plat, thread)
        return "%s:%s:dm" % (ns, plat)
    if wa and user is not None:
        u = wa_canon(user)
        user = u if u is not None else user
    parts = [ns, plat, ct, chat]
    if thread is not None:
        parts.append(thread)
    isolate = g and (thread is None or t)
    if isolate and user is not None:
        parts.append(user)
    return ":".join(parts)


def split_segments(key):
    segs = []
    pos = 0
    for piece in key.split(":"):
        segs.append((piece, pos))
        pos += blen(piece) + 1
    return segs


def parse_head(key, canonical):
    total = blen(key)
    if total > 8192:
        raise Err("too_long", 8192)
    if not key.startswith("agent:"):
        raise Err("missing_prefix", 0, "prefix")
    segs = split_segments(key)
    ns, nspos = segs[1]
    if ns == "":
        raise Err("empty", nspos, "namespace")
    if ns != "main" and not PROFILE_RE.fullmatch(ns):
        raise Err("bad_token", nspos, "namespace")
    if canonical and ns == "default" and GUESSES["canonical_reject_default_ns"]:
        raise Err("bad_token", nspos, "namespace")
    if len(segs) < 3:
        raise Err("missing", total, "platform")
    plat, ppos = segs[2]
    if plat == "":
        raise Err("empty", ppos, "platform")
    if GUESSES["platform_grammar_first"] and not PLATFORM_RE.fullmatch(plat):
        raise Err("bad_token", ppos, "platform")
    if blen(plat) > 32:
        raise Err("part_too_long", ppos, "platform")
    if not PLATFORM_RE.fullmatch(plat):
        raise Err("bad_token", ppos, "platform")
    if len(segs) < 4:
        raise Err("missing", total, "chat_type")
    ct, cpos = segs[3]
    if ct == "":
        raise Err("empty", cpos, "chat_type")
    if ct not in CHAT_TYPES:
        raise Err("unknown_chat_type", cpos, "chat_type")
    return ns, plat, ct, segs[4:], total


def hermes_parse(key):
    ns, plat, ct, tail, total = parse_head(key, False)
    absent = {"state": "absent"}
    if GUESSES["hermes_default_ns_as_main"] and ns == "default":
        ns = "main"
    if plat == "whatsapp" and ct == "dm":
        unk = {"state": "unknown", "value": "whats_app_canonical"}
        if len(tail) == 0:
            chat, thread, user = unk, absent, absent
        else:
            chat, thread, user = unk, unk, unk
    else:
        if len(tail) == 0:
            raise Err("missing", total, "chat_id")
        if len(tail) == 1:
            v, p = tail[0]
            if v == "":
                raise Err("empty", p, "chat_id")
            chat, thread, user = {"state": "known", "value": v}, absent, absent
        else:
            unk = {"state": "unknown", "value": "colon_split"}
            chat, thread, user = unk, unk, unk
            if ct == "dm":
                user = absent
    return {"namespace": ns, "platform": plat, "chat_type": ct,
            "chat_id": chat, "thread_id": thread, "user_id": user}


# ---------------------------------------------------------------------------
# canonical dialect (KEY-C1..C7)

HEXU = "0123456789ABCDEF"


def must_escape(ch):
    o = ord(ch)
    return ch in "%:~" or o < 0x20 or o == 0x7F


def esc(s):
    return "".join("%%%02X" % ord(c) if must_escape(c) else c for c in s)


def canonical_build(o, policy):
    validate_origin(o)
    g, t, prof = parse_policy(policy)
    key = "agent:%s:%s:%s:%s" % (namespace_of(prof), o["platform"], o["chat_type"], esc(o["chat_id"]))
    if "thread_id" in o:
        key += ":" + esc(o["thread_id"])
    if user_keyed(o, g, t):
        key += ":~" + esc(o["user_id"])
    return key


def decode(seg, pos, part, part_pos=None):
    if part_pos is None:
        part_pos = pos
    if seg == "":
        raise Err("empty", pos, part)
    out = []
    i = 0
    bpos = pos
    n = len(seg)
    while i < n:
        c = seg[i]
        if c == "%":
            if i + 2 < n + 0 and seg[i + 1] in HEXU and seg[i + 2] in HEXU:
                ch = chr(int(seg[i + 1:i + 3], 16))
                if not must_escape(ch):
                    raise Err("bad_escape", bpos, part)
                out.append(ch)
                i += 3
                bpos += 3
                continue
            raise Err("bad_escape", bpos, part)
        o = ord(c)
        if c == "~" or o < 0x20 or o == 0x7F:
            raise Err("unescaped", bpos, part)
        out.append(c)
        bpos += blen(c)
        i += 1
    r = "".join(out)
    if blen(r) > 512:
        raise Err("part_too_long", part_pos, part)
    return r


def canonical_parse(key):
    ns, plat, ct, tail, total = parse_head(key, True)
    if len(tail) == 0:
        raise Err("missing", total, "chat_id")
    fields = {"namespace": ns, "platform": plat, "chat_type": ct}
    v, p = tail[0]
    fields["chat_id"] = decode(v, p, "chat_id")
    idx = 1
    have_thread = False
    have_user = False
    while idx < len(tail):
        v, p = tail[idx]
        if not have_user and v.startswith("~") and (idx == 1 or (idx == 2 and have_thread)):
            if ct == "dm":
                raise Err("user_in_dm", p, "user_id")
            fields["user_id"] = decode(v[1:], p + 1, "user_id",
                                       p + 1 if GUESSES["user_part_pos_after_tilde"] else p)
            have_user = True
        elif idx == 1:
            fields["thread_id"] = decode(v, p, "thread_id")
            have_thread = True
        else:
            raise Err("trailing", p - 1, "thread_id" if not v.startswith("~") else "user_id")
        idx += 1
    return fields


# ---------------------------------------------------------------------------
# own dialect (P-10): the canonical dialect under the default policy

def dialect_build(o, policy):
    return canonical_build(o, policy)


def dialect_parse(key, policy):
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
        if canonical_build(route, policy) != key:
            return None
    except Err:
        return None
    return route


# ---------------------------------------------------------------------------
# Texts (TEXT-1..4)

BIDI = set([0x061C, 0x200E, 0x200F, 0x2028, 0x2029, 0xFEFF]) | set(range(0x202A, 0x202F)) | set(range(0x2066, 0x206A))


def esc_char(c):
    o = ord(c)
    if o < 0x20 or 0x7F <= o <= 0x9F or o in BIDI or 0xD800 <= o <= 0xDFFF:
        return "\\u{%x}" % o
    return c


def esc_header(s):
    return "".join(esc_char(c) for c in s)


def quote_lines(text):
    if text == "":
        return []
    lines = text.split("\n")
    if text.endswith("\n"):
        lines = lines[:-1]
    return ["| " + esc_header(l) for l in lines]


def suppressed_line(n):
    return ["(%d matches suppressed)" % n] if n else []


SHUTDOWN_TEXT = "[Background process notice] The gateway is shutting down; background process notifications resume after it restarts."


# ---------------------------------------------------------------------------
# Trace engine (chapters 3-7 over PROTOCOL P-8)

COOLDOWN_MS = 15000
BREAKER_WINDOW_MS = 10000
BREAKER_PAUSE_MS = 30000
BREAKER_MAX = 15
TAIL_CHARS = 2000
EXCERPT_LINES = 20
EXCERPT_CHARS = 2000
MAX_QUEUED = 1000000
MAX_RUNNING = 100000
MAX_LANES = 1000000


def thread_key(o):
    return (o["platform"], o["chat_type"], o["chat_id"], o.get("thread_id"))


def dest_of(o):
    d = {"platform": o["platform"], "chat_type": o["chat_type"], "chat_id": o["chat_id"]}
    if "thread_id" in o:
        d["thread_id"] = o["thread_id"]
    return d


class Run:
    def __init__(self, run_id, pid, origin, lane, patterns, notify):
        self.run_id = run_id
        self.pid = pid
        self.origin = origin
        self.lane = lane
        self.patterns = patterns
        self.notify = notify
        self.watching = len(patterns) > 0
        self.running = True
        self.tail = ""
        self.partial = ""
        self.acked = False
        self.seq = 0
        self.reset_rate()
        self.completion = None
        self.lost = False

    def reset_rate(self):
        self.last_pass = None
        self.window_drop = False
        self.window_bdrop = False
        self.strikes = 0
        self.suppressed = 0


class Notif:
    __slots__ = ("nid", "tk", "dest", "process", "kind", "text", "attempts", "next_due", "run")

    def __init__(self, nid, tk, dest, process, kind, text, run):
        self.nid = nid
        self.tk = tk
        self.dest = dest
        self.process = process
        self.kind = kind
        self.text = text
        self.attempts = 0
        self.next_due = None
        self.run = run


class Gateway:
    def __init__(self, threads):
        self.threads = threads
        self.lanes = OrderedDict()  # lane -> recorded origin
        self.lane_refusals = []
        self.queues = OrderedDict()  # thread key -> deque
        self.queued = 0
        self.turns = set()
        self.procs = {}
        self.all_runs = []
        self.next_run_id = 1
        self.clock = 0
        self.adapter_up = True
        self.reset_breaker()
        self.shutdown_epoch = 0
        self.delivered = set()
        self.deliveries = []
        self.dead = []
        self.step = 0

    def reset_breaker(self):
        self.bwin_start = None
        self.bwin_count = 0
        self.bpause_until = None

    def lane_for(self, o):
        lane = canonical_build(o, None)
        if lane not in self.lanes:
            if len(self.lanes) >= MAX_LANES:
                # STORE-3: a full store refuses a new lane and never evicts; routing of
                # this origin's events falls back to the captured origin (ROUTE-2 (2))
                self.lane_refusals.append(("store_full", lane))
                return lane
            self.lanes[lane] = dict(o)
        return lane

    # -- notifications
    def emit(self, run, kind, text, nid=None):
        if nid is None:
            nid = ("run", run.run_id, run.seq)
            run.seq += 1
        stored = self.lanes.get(run.lane)
        if stored is None:
            stored = run.origin
        if thread_key(stored) != thread_key(run.origin):
            self.dead.append({"step": None, "destination": dest_of(run.origin), "process": run.pid,
                              "kind": kind, "text": text,
                              "reason": "stored origin and captured origin name different threads",
                              "cause": "origin_conflict"})
            return None
        n = Notif(nid, thread_key(stored), dest_of(stored), run.pid, kind, text, run)
        return self.enqueue(n)

    def enqueue(self, n):
        if n.nid in self.delivered:
            return None
        if self.queued >= MAX_QUEUED:
            self.dead.append(self.observed(n, "queue full (1,000,000 notifications): back-pressure", "backpressure"))
            return None
        self.queues.setdefault(n.tk, deque()).append(n)
        self.queued += 1
        return n

    def observed(self, n, reason=None, cause=None):
        d = {"step": self.step, "destination": n.dest, "process": n.process, "kind": n.kind, "text": n.text}
        if reason is not None:
            d["reason"] = reason
        if cause is not None:
            d["cause"] = cause
        return d

    def deliver(self):
        maxa = GUESSES["max_attempts"]
        for tk in list(self.queues.keys()):
            q = self.queues[tk]
            if tk in self.turns:
                continue
            while q:
                n = q[0]
                if n.next_due is not None and self.clock < n.next_due:
                    break
                if self.adapter_up:
                    q.popleft()
                    self.queued -= 1
                    self.delivered.add(n.nid)
                    self.deliveries.append(self.observed(n))
                    continue
                n.attempts += 1
                if n.attempts >= maxa:
                    q.popleft()
                    self.queued -= 1
                    self.dead.append(self.observed(
                        n, "adapter failed %d attempts (adapter down); dead-lettered" % n.attempts,
                        "adapter_failed"))
                    continue
                n.next_due = self.clock + min(2 ** (n.attempts - 1), 60) * 1000
                break
            if not q:
                del self.queues[tk]

    # -- texts
    def header_pid(self, run):
        return esc_header(run.pid)

    def completion(self, run, how):
        sup = run.suppressed
        run.suppressed = 0
        lines = ["[Background process %s %s]" % (self.header_pid(run), how)]
        if GUESSES["completion_quotes_tail"]:
            lines += quote_lines(run.tail)
        lines += suppressed_line(sup)
        n = self.emit(run, "completion", "\n".join(lines))
        run.completion = n

    # -- watch (PROC-3..6)
    def watch(self, run, text):
        if GUESSES["watch_match_line_carry"]:
            text = run.partial + text
            cut = text.rfind("\n")
            run.partial = text[cut + 1:]
            text = text[:cut + 1]
            if text == "":
                return
        segs = text.split("\n")
        last_partial = not text.endswith("\n") and GUESSES["partial_line_matches"]
        lines = []
        for idx, s in enumerate(segs):
            is_last = idx == len(segs) - 1
            if is_last:
                if last_partial:
                    lines.append(s)
            else:
                if s.endswith("\r"):
                    s = s[:-1]
                lines.append(s)
        matching = [l for l in lines if any(p in l for p in run.patterns)]
        if not matching:
            return
        t = self.clock
        passes = run.last_pass is None or t >= run.last_pass + COOLDOWN_MS
        if not passes:
            run.suppressed += len(matching)
            if GUESSES["strike_per_drop"] and run.window_drop and run.watching:
                run.window_drop = False
            if not run.window_drop:
                run.window_drop = True
                run.strikes += 1
                if run.strikes >= 3:
                    run.watching = False
                    run.notify = True
                    sup = run.suppressed
                    run.suppressed = 0
                    if GUESSES["disabled_excludes_trigger"]:
                        sup -= len(matching)
                    lines = ["[Background process %s: watching disabled after repeated matches; "
                             "its completion will be reported]" % self.header_pid(run)]
                    lines += suppressed_line(sup)
                    self.emit(run, "watch_disabled", "\n".join(lines))
                    if GUESSES["disabled_counts_breaker"]:
                        if self.bwin_start is None or t >= self.bwin_start + BREAKER_WINDOW_MS:
                            self.bwin_start = t
                            self.bwin_count = 0
                        self.bwin_count += 1
            return
        # passes the cooldown
        if run.last_pass is not None and not run.window_drop \
                and not (GUESSES["breaker_drop_blocks_reset"] and run.window_bdrop):
            run.strikes = 0
        run.last_pass = t
        run.window_drop = False
        run.window_bdrop = False
        # breaker (PROC-6)
        if self.bpause_until is not None:
            paused = t < self.bpause_until if not GUESSES["breaker_pause_inclusive_end"] else t <= self.bpause_until
            if paused:
                run.suppressed += len(matching)
                run.window_bdrop = True
                return
            self.bpause_until = None
            self.bwin_start = None
        if self.bwin_start is not None:
            end = self.bwin_start + BREAKER_WINDOW_MS
            expired = t >= end if not GUESSES["breaker_window_inclusive_end"] else t > end
            if expired:
                self.bwin_start = None
        if self.bwin_start is None:
            self.bwin_start = t
            self.bwin_count = 0
        self.bwin_count += 1
        if self.bwin_count > BREAKER_MAX:
            run.suppressed += len(matching)
            run.window_bdrop = True
            self.bpause_until = t + BREAKER_PAUSE_MS
            if GUESSES["pause_from_window_end"]:
                self.bpause_until = self.bwin_start + BREAKER_WINDOW_MS + BREAKER_PAUSE_MS
            self.bwin_start = None
            return
        first = matching[0]
        pat = next(p for p in run.patterns if p in first)
        ex = []
        total = 0
        for l in matching[:EXCERPT_LINES]:
            if GUESSES["trim_excerpt"]:
                l = l.rstrip()
            add = len(l) + (1 if ex else 0)
            if not ex and len(l) > EXCERPT_CHARS:
                ex.append(l[:EXCERPT_CHARS])
                break
            if total + add > EXCERPT_CHARS:
                break
            ex.append(l)
            total += add
        sup = run.suppressed
        run.suppressed = 0
        out = ['[Background process %s matched watch pattern "%s"]' % (self.header_pid(run), esc_header(pat))]
        out += ["| " + esc_header(l) for l in ex]
        out += suppressed_line(sup)
        self.emit(run, "watch_match", "\n".join(out))

    # -- ops
    def thread(self, i):
        if not isinstance(i, int) or isinstance(i, bool) or i < 0 or i >= len(self.threads):
            raise Err("malformed", field="thread")
        return self.threads[i]

    def latest(self, pid):
        return self.procs.get(pid)

    def running_count(self):
        return sum(1 for r in self.procs.values() if r.running)

    def op(self, op):
        if op == "shutdown":
            return self.shutdown()
        if not isinstance(op, dict) or len(op) != 1:
            raise Err("malformed")
        (name, a), = op.items()
        if not isinstance(a, dict):
            raise Err("malformed")
        if name == "message":
            self.lane_for(self.thread(a.get("thread")))
        elif name == "turn_start":
            o = self.thread(a.get("thread"))
            self.lane_for(o)
            self.turns.add(thread_key(o))
        elif name == "turn_end":
            o = self.thread(a.get("thread"))
            if GUESSES["turn_end_gives_lane"]:
                self.lane_for(o)
            self.turns.discard(thread_key(o))
        elif name == "reset":
            self.lane_for(self.thread(a.get("thread")))
        elif name == "spawn":
            o = self.thread(a.get("thread"))
            lane = self.lane_for(o)
            pid = a.get("process")
            watch = a.get("watch", [])
            notify = a.get("notify", False)
            if not isinstance(pid, str) or not isinstance(watch, list) or not all(isinstance(w, str) for w in watch) \
                    or not isinstance(notify, bool):
                raise Err("malformed")
            if pid == "" or blen(pid) > 128 or len(watch) > 32 or any(w == "" or blen(w) > 256 for w in watch):
                return
            prev = self.procs.get(pid)
            if prev is not None and prev.running:
                return
            if self.running_count() >= MAX_RUNNING:
                return
            run = Run(self.next_run_id, pid, dict(o), lane, list(watch), notify)
            self.next_run_id += 1
            self.procs[pid] = run
            self.all_runs.append(run)
        elif name == "output":
            run = self.latest(a.get("process"))
            text = a.get("text")
            if not isinstance(text, str):
                raise Err("malformed")
            if run is None or not run.running:
                return
            run.tail = (run.tail + text)[-TAIL_CHARS:]
            if GUESSES["tail_bytes"]:
                b = run.tail.encode("utf-8", "surrogatepass")[-TAIL_CHARS:]
                run.tail = b.decode("utf-8", "ignore")
            if run.watching:
                self.watch(run, text)
        elif name == "exit":
            run = self.latest(a.get("process"))
            code = a.get("code")
            if run is None or not run.running:
                return
            run.running = False
            if run.notify and not run.acked:
                self.completion(run, "exited with code %s" % code)
        elif name == "kill":
            run = self.latest(a.get("process"))
            if run is None or not run.running:
                return
            run.running = False
            if run.notify and not run.acked:
                self.completion(run, "was killed")
        elif name == "read":
            o = self.thread(a.get("thread"))
            if GUESSES["read_gives_lane"]:
                self.lane_for(o)
            run = self.latest(a.get("process"))
            if run is None or not READ_ACK:
                return
            self.read_ack(o, run)
        elif name == "advance":
            ms = a.get("ms")
            if not isinstance(ms, int) or isinstance(ms, bool):
                raise Err("malformed")
            self.clock += max(0, ms)
        elif name == "adapter":
            up = a.get("up")
            if not isinstance(up, bool):
                raise Err("malformed")
            self.adapter_up = up
            if up and GUESSES["adapter_up_resets_due"]:
                for q in self.queues.values():
                    for n in q:
                        n.next_due = None
        elif name == "restart":
            survive = a.get("survive")
            if not isinstance(survive, bool):
                raise Err("malformed")
            self.restart(survive)
        else:
            raise Err("malformed")

    def read_ack(self, o, run):
        runs = [run]
        if GUESSES["ack_prev_runs"]:
            runs = [r for r in self.all_runs if r.pid == run.pid]
        for r in runs:
            self.read_ack_one(o, r)

    def read_ack_one(self, o, run):
        if not self.adapter_up and not GUESSES["ack_adapter_ignored"]:
            return
        if not GUESSES["ack_other_thread"]:
            if GUESSES["ack_thread_not_lane"]:
                if thread_key(o) != thread_key(run.origin):
                    return
            else:
                if canonical_build(o, None) != run.lane:
                    return
        if run.running:
            if GUESSES["ack_running"]:
                run.acked = True
            return
        if run.lost and not GUESSES["ack_lost_runs"]:
            return
        targets = [run.completion] if run.completion is not None else []
        if GUESSES["ack_also_watch"]:
            targets = [n for q in self.queues.values() for n in q if n.run is run]
        for n in targets:
            q = self.queues.get(n.tk)
            if not q or n not in q:
                continue
            if GUESSES["ack_requires_idle"] and n.tk in self.turns:
                continue
            if GUESSES["ack_only_unattempted"] and n.attempts > 0:
                continue
            q.remove(n)
            self.queued -= 1
            self.delivered.add(n.nid)  # acknowledged: never sent afterwards
            if not q:
                del self.queues[n.tk]

    def restart(self, survive):
        self.turns.clear()
        self.reset_breaker()
        runs = sorted((r for r in self.procs.values() if r.running), key=lambda r: r.run_id)
        for r in runs:
            r.reset_rate()
        if not survive:
            for r in runs:
                r.running = False
                r.lost = True
                if not GUESSES["lost_quotes_old_tail"]:
                    r.tail = ""
                if r.notify:
                    self.completion(r, "was lost: the gateway restarted and the process did not survive")

    def shutdown(self):
        epoch = self.shutdown_epoch
        self.shutdown_epoch += 1
        seen = []
        for lane, o in self.lanes.items():
            tk = thread_key(o)
            if GUESSES["shutdown_per_lane"]:
                seen.append(lane)
            else:
                if tk in seen:
                    continue
                seen.append(tk)
            n = Notif(("shutdown", epoch, len(seen) - 1), tk, dest_of(o), None, "shutdown", SHUTDOWN_TEXT, None)
            self.enqueue(n)

    def run_trace(self, ops):
        for k, op in enumerate(ops):
            self.step = k
            self.op(op)
            self.deliver()
        nops = len(ops)
        for d in self.dead:
            if d["step"] is None:
                d["step"] = nops
        return {"trace": {"deliveries": self.deliveries, "dead_letters": self.dead}}


def run_trace(case):
    tr = case.get("trace")
    if not isinstance(tr, dict):
        raise Err("malformed", field="trace")
    threads = tr.get("threads")
    ops = tr.get("ops")
    if not isinstance(threads, list) or not isinstance(ops, list):
        raise Err("malformed", field="trace")
    for t in threads:
        validate_origin(t)
    g = Gateway(threads)
    return g.run_trace(ops)


# ---------------------------------------------------------------------------
# Protocol

OPERATIONS = ["hermes_build", "canonical_build", "canonical_parse", "hermes_parse", "origin", "trace",
              "dialect_build", "dialect_parse"]


def handshake():
    h = {
        "protocol": 1,
        "implementation": {"name": "cleanroom4-procroute", "version": "0.1.0", "language": "python"},
        "operations": OPERATIONS,
        "unsupported": {},
        "limits": {"max_lanes": 1000000, "max_queued": MAX_QUEUED, "watch_cooldown_ms": COOLDOWN_MS,
                   "breaker": "15 per 10 s, pause 30 s", "max_running": MAX_RUNNING},
    }
    if READ_ACK:
        h["read_acknowledges"] = "own_thread_after_delivery"
    return h


def handle_case(case):
    if not isinstance(case, dict):
        raise Err("malformed")
    op = case.get("op")
    if op == "hermes_build":
        return {"key": hermes_build(case.get("origin"), case.get("policy"))}
    if op == "canonical_build":
        return {"key": canonical_build(case.get("origin"), case.get("policy"))}
    if op == "canonical_parse":
        k = case.get("key")
        if not isinstance(k, str):
            raise Err("malformed", field="key")
        return {"fields": canonical_parse(k)}
    if op == "hermes_parse":
        k = case.get("key")
        if not isinstance(k, str):
            raise Err("malformed", field="key")
        return {"parsed": hermes_parse(k)}
    if op == "origin":
        validate_origin(case.get("origin"))
        return {"ok": True}
    if op == "trace":
        return run_trace(case)
    if op == "dialect_build":
        return {"key": dialect_build(case.get("origin"), case.get("policy"))}
    if op == "dialect_parse":
        k = case.get("key")
        if not isinstance(k, str):
            return {"route": None}
        return {"route": dialect_parse(k, case.get("policy"))}
    return None


def main():
    out = sys.stdout
    sys.stdout = sys.stderr  # nothing else may reach stdout (P-1)

    def reply(obj):
        out.write(json.dumps(obj, ensure_ascii=False) + "\n")
        out.flush()

    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            msg = json.loads(line)
        except Exception as e:
            reply({"errored": "not JSON: %s" % e})
            continue
        if not isinstance(msg, dict):
            reply({"errored": "not an object"})
            continue
        cmd = msg.get("cmd")
        if cmd == "start":
            if msg.get("version") != 1:
                reply({"errored": "unsupported protocol version %r (only 1)" % (msg.get("version"),)})
            else:
                reply(handshake())
        elif cmd == "stop":
            return
        elif cmd == "run":
            seq = msg.get("seq")
            if not isinstance(seq, int):
                reply({"errored": "run without an integer seq"})
                continue
            case = msg.get("case")
            try:
                r = handle_case(case)
                if r is None:
                    op = case.get("op") if isinstance(case, dict) else None
                    reply({"seq": seq, "skipped": "operation %s not supported" % (op,)})
                else:
                    reply({"seq": seq, "result": r})
            except Err as e:
                if isinstance(case, dict) and case.get("op") == "trace":
                    reply({"seq": seq, "errored": "invalid trace: %s %s" % (e.kind, e.field or "")})
                else:
                    reply({"seq": seq, "result": e.to_json()})
            except Exception as e:  # never crash
                reply({"seq": seq, "errored": "internal error: %s: %s" % (type(e).__name__, e)})
        else:
            reply({"errored": "unknown command %r" % (cmd,)})


if __name__ == "__main__":
    main()
