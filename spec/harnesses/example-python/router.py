"""A small, correct background-process router: the smallest thing that
passes procroute's trace suite. Read it next to spec/SPEC.md (chapters 4,
6 and 7) and spec/PROTOCOL.md (P-8).

The one idea: a process remembers the thread it was spawned from, and every
notification about it goes there. Nothing ever asks "which thread is active
now?". The rest is the spec's arithmetic: cooldowns, strikes, the breaker,
retries with backoff, shutdown notices.

Set PROCROUTE_TEMPLATE_BUG to one of BUGS to switch on one realistic bug
(the conformance suite must fail each; `.ci/bug-bank` checks it).
"""
import os

COOLDOWN_MS = 15_000          # PROC-4
STRIKES = 3                   # PROC-5
BREAKER_MAX = 15              # PROC-6
BREAKER_WINDOW_MS = 10_000
BREAKER_PAUSE_MS = 30_000
EXCERPT_LINES = 20            # PROC-3
EXCERPT_CHARS = 2_000
TAIL_CHARS = 2_000            # PROC-7
ATTEMPTS = 6                  # DELIVER-4
BACKOFF_FIRST_MS = 1_000
BACKOFF_CAP_MS = 60_000

BUGS = {
    "lifo": "a thread's queue is served newest first",
    "no-suppressed-count": "the suppressed count is never shown",
    "breaker-16": "the breaker admits 16 watch events per window",
    "kill-silent": "a killed process never notifies",
    "retry-forever": "a failed send is retried forever, never dead-lettered",
    "read-consumes": "an agent's read of an ended process cancels its queued completion",
    "tail-uncapped": "a completion quotes all of its run's output, not the last 2,000 characters",
    "excerpt-keeps-cr": "a watch excerpt keeps the \\r of a \\r\\n line end",
}
BUG = os.environ.get("PROCROUTE_TEMPLATE_BUG", "")

SHUTDOWN_TEXT = ("[The gateway is shutting down. Background processes started here "
                 "may be interrupted; you will be told what happened to them.]")


def safe(text):
    """TEXT-2: control, bidi and separator characters become visible."""
    out = []
    for c in text:
        o = ord(c)
        if (o < 0x20 or 0x7F <= o <= 0x9F or c in "\u061c\u200e\u200f\u2028\u2029\ufeff"
                or 0x202A <= o <= 0x202E or 0x2066 <= o <= 0x2069):
            out.append("\\u{%X}" % o)
        else:
            out.append(c)
    return "".join(out)


def quote(text):
    if not text:
        return "| (no output)"
    keep = BUG == "excerpt-keeps-cr"
    return "\n".join("| " + safe(line[:-1] if line.endswith("\r") and not keep else line)
                     for line in text.split("\n"))


def lines(text):
    """PROC-3: lines end at \\n only; a \\r before it is dropped."""
    keep = BUG == "excerpt-keeps-cr"
    parts = [p[:-1] if p.endswith("\r") and not keep else p for p in text.split("\n")]
    if text == "" or text.endswith("\n"):
        parts.pop()
    return parts


def excerpt(matched):
    out, chars = [], 0
    for i, line in enumerate(matched[:EXCERPT_LINES]):
        n = len(line) + (1 if i else 0)
        if chars + n > EXCERPT_CHARS:
            if i == 0:
                out = [line[:EXCERPT_CHARS]]
            break
        out.append(line)
        chars += n
    return "\n".join(out)


def suppressed_line(n):
    return f"\n({n} more matching output lines were suppressed by rate limits)" if n else ""


class Run:
    def __init__(self, pid, home, watch, notify):
        self.pid, self.home, self.watch, self.notify = pid, home, list(watch), notify
        self.running, self.disabled = True, False
        self.tail = ""
        self.cooldown_until = None
        self.strike_window = False
        self.strikes = 0
        self.suppressed = 0


class Router:
    def __init__(self, threads):
        self.threads = threads          # index -> origin dict
        self.places = [place(o) for o in threads]
        self.lanes = set()              # places that have talked to us
        self.current = {}               # process id -> its latest Run
        self.runs = []                  # every Run, in spawn order
        self.queues = {}                # place key -> [pending notification]
        self.busy = set()
        self.adapter_up = True
        self.now = 0
        self.breaker_start = None
        self.breaker_hits = 0
        self.breaker_paused_until = None
        self.delivered = []
        self.dead = []

    # -- foreground traffic: it never decides where anything goes
    def message(self, t):
        self.lanes.add(self.places[t])

    def turn_start(self, t):
        self.lanes.add(self.places[t])
        self.busy.add(self.places[t])

    def turn_end(self, t):
        self.busy.discard(self.places[t])

    # -- processes
    def spawn(self, t, pid, watch, notify):
        self.lanes.add(self.places[t])
        if not pid or len(pid.encode()) > 128 or len(watch) > 32 or any(
                not w or len(w.encode()) > 256 for w in watch):
            return
        run = Run(pid, self.places[t], watch, notify)
        self.current[pid] = run
        self.runs.append(run)

    def _emit(self, run, kind, text):
        text += suppressed_line(0 if BUG == "no-suppressed-count" else run.suppressed)
        run.suppressed = 0
        self._queue(run.home, run.pid, kind, text)

    def output(self, pid, text):
        run = self.current.get(pid)
        if not run or not run.running:
            return
        run.tail = run.tail + text
        if BUG != "tail-uncapped":
            run.tail = run.tail[-TAIL_CHARS:]
        if not run.watch or run.disabled:
            return
        matched, pattern = [], None
        for line in lines(text):
            hit = next((w for w in run.watch if w in line), None)
            if hit is not None:
                matched.append(line.rstrip(" \t") if BUG == "excerpt-keeps-cr" else line.rstrip())
                pattern = pattern or hit
        if pattern is None:
            return
        if run.cooldown_until is not None and self.now < run.cooldown_until:
            run.suppressed += len(matched)
            if not run.strike_window:
                run.strike_window = True
                run.strikes += 1
                if run.strikes >= STRIKES:
                    run.disabled, run.notify = True, True
                    self._emit(run, "watch_disabled",
                               f"[Background process {safe(pid)}: watch patterns disabled "
                               "after repeated rate limiting; you will be told when it exits]")
            return
        if run.cooldown_until is not None and not run.strike_window:
            run.strikes = 0
        run.strike_window = False
        run.cooldown_until = self.now + COOLDOWN_MS
        if self.breaker_paused_until is not None:
            if self.now < self.breaker_paused_until:
                run.suppressed += len(matched)
                return
            self.breaker_paused_until, self.breaker_start = None, None
        if self.breaker_start is None or self.now - self.breaker_start >= BREAKER_WINDOW_MS:
            self.breaker_start, self.breaker_hits = self.now, 0
        limit = BREAKER_MAX + (1 if BUG == "breaker-16" else 0)
        if self.breaker_hits >= limit:
            self.breaker_paused_until = self.now + BREAKER_PAUSE_MS
            run.suppressed += len(matched)
            return
        self.breaker_hits += 1
        self._emit(run, "watch_match",
                   f"[Background process {safe(pid)} matched watch pattern \"{safe(pattern)}\"]\n"
                   + quote(excerpt(matched)))

    def finish(self, run, how):
        if not run.running:
            return
        run.running = False
        if run.notify and not (BUG == "kill-silent" and how == "was killed"):
            self._emit(run, "completion",
                       f"[Background process {safe(run.pid)} {how}]\n" + quote(run.tail))

    def end(self, pid, how):
        run = self.current.get(pid)
        if run:
            self.finish(run, how)

    def read(self, pid):
        # PROC-10: a read changes nothing about notifications.
        if BUG == "read-consumes":
            run = self.current.get(pid)
            if run and not run.running:
                for q in self.queues.values():
                    q[:] = [n for n in q if not (n["process"] == pid and n["kind"] == "completion")]

    def restart(self, survive):
        # A crash: turns die with the gateway, the rate-limit state is
        # volatile (PROC-8), queued notifications and lanes are durable.
        self.busy.clear()
        self.breaker_start, self.breaker_hits, self.breaker_paused_until = None, 0, None
        for run in self.runs:
            if run.running:
                run.cooldown_until, run.strike_window = None, False
                run.strikes, run.suppressed = 0, 0
                if not survive:
                    self.finish(run, "was lost in a restart")

    def shutdown(self):
        for p in sorted(self.lanes, key=repr):
            self._queue(p, None, "shutdown", SHUTDOWN_TEXT)

    # -- delivery: per-thread FIFO, held while a turn runs, retried with backoff
    def _queue(self, p, pid, kind, text):
        item = {"place": p, "process": pid, "kind": kind, "text": text,
                "attempts": 0, "not_before": self.now}
        q = self.queues.setdefault(p, [])
        if BUG == "lifo":
            q.insert(0, item)
        else:
            q.append(item)

    def flush(self, step):
        for p, q in self.queues.items():
            if p in self.busy:
                continue
            while q and q[0]["not_before"] <= self.now:
                n = q[0]
                n["attempts"] += 1
                if self.adapter_up:
                    q.pop(0)
                    self.delivered.append(report(n, step))
                    continue
                if n["attempts"] >= ATTEMPTS and BUG != "retry-forever":
                    q.pop(0)
                    self.dead.append(dict(report(n, step), reason="adapter failed 6 times",
                                          cause="adapter_failed"))
                    continue
                n["not_before"] = self.now + min(BACKOFF_FIRST_MS * 2 ** (n["attempts"] - 1),
                                                 BACKOFF_CAP_MS)
                break


def place(origin):
    return (origin["platform"], origin["chat_type"], origin["chat_id"], origin.get("thread_id"))


def report(n, step):
    platform, chat_type, chat_id, thread_id = n["place"]
    d = {"platform": platform, "chat_type": chat_type, "chat_id": chat_id}
    if thread_id is not None:
        d["thread_id"] = thread_id
    return {"step": step, "destination": d, "process": n["process"], "kind": n["kind"],
            "text": n["text"]}


def run_trace(trace):
    r = Router(trace["threads"])
    for step, op in enumerate(trace["ops"]):
        name, arg = (op, {}) if isinstance(op, str) else next(iter(op.items()))
        if name in ("message", "reset"):
            r.message(arg["thread"])
        elif name == "turn_start":
            r.turn_start(arg["thread"])
        elif name == "turn_end":
            r.turn_end(arg["thread"])
        elif name == "spawn":
            r.spawn(arg["thread"], arg["process"], arg["watch"], arg["notify"])
        elif name == "output":
            r.output(arg["process"], arg["text"])
        elif name == "exit":
            r.end(arg["process"], f"exited with code {arg['code']}")
        elif name == "kill":
            r.end(arg["process"], "was killed")
        elif name == "read":
            r.read(arg["process"])
        elif name == "advance":
            r.now += arg["ms"]
        elif name == "adapter":
            r.adapter_up = arg["up"]
        elif name == "restart":
            r.restart(arg["survive"])
        elif name == "shutdown":
            r.shutdown()
        else:
            raise ValueError(f"unknown op {name!r}")
        r.flush(step)
    return {"deliveries": r.delivered, "dead_letters": r.dead}
