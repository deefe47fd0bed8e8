"""A tiny, correct background-process router: the smallest thing that
passes procroute's trace suite. Read it next to spec/SPEC.md.

The one idea: a process remembers the thread it was spawned from, and every
notification about it goes there. Nothing ever asks "which thread is active
now?".
"""


class Router:
    def __init__(self, threads):
        self.threads = threads          # index -> origin dict
        self.lanes = set()              # threads that have talked to us
        self.procs = {}                 # process id -> state of its latest run
        self.queues = {}                # thread index -> [notification]
        self.busy = set()               # threads with a turn in progress
        self.adapter_up = True
        self.delivered = []             # what reached the chat, in order

    # -- foreground traffic: it never decides where anything goes
    def message(self, t):
        self.lanes.add(t)

    def turn_start(self, t):
        self.lanes.add(t)
        self.busy.add(t)

    def turn_end(self, t):
        self.busy.discard(t)

    # -- processes
    def spawn(self, t, pid, watch, notify):
        self.lanes.add(t)
        self.procs[pid] = {"home": t, "watch": list(watch), "notify": notify,
                           "running": True, "output": ""}

    def output(self, pid, text):
        p = self.procs.get(pid)
        if not p or not p["running"]:
            return
        p["output"] += text
        hits = [line for line in text.splitlines() if any(w in line for w in p["watch"])]
        if hits:
            self._queue(p["home"], pid, "watch_match",
                        f"[Background process {pid} matched watch pattern]\n"
                        + "\n".join("| " + h for h in hits))

    def finish(self, pid, how):
        p = self.procs.get(pid)
        if not p or not p["running"]:
            return
        p["running"] = False
        if p["notify"]:
            tail = p["output"][-2000:]
            self._queue(p["home"], pid, "completion",
                        f"[Background process {pid} {how}]\n"
                        + "\n".join("| " + line for line in tail.splitlines()))

    def restart(self, survive):
        # Everything here stands for persisted state, except turns, which
        # die with the gateway. Processes that did not survive are "lost".
        self.busy.clear()
        if not survive:
            for pid, p in list(self.procs.items()):
                if p["running"]:
                    self.finish(pid, "was lost in a restart")

    def shutdown(self):
        for t in sorted(self.lanes):
            self._queue(t, None, "shutdown", "[The gateway is shutting down]")

    # -- delivery: per-thread FIFO, held while a turn runs or the adapter is down
    def _queue(self, t, pid, kind, text):
        self.queues.setdefault(t, []).append((pid, kind, text))

    def flush(self, step):
        if not self.adapter_up:
            return
        for t, q in self.queues.items():
            if t in self.busy:
                continue
            while q:
                pid, kind, text = q.pop(0)
                self.delivered.append({"step": step, "destination": destination(self.threads[t]),
                                       "process": pid, "kind": kind, "text": text})


def destination(origin):
    d = {k: origin[k] for k in ("platform", "chat_type", "chat_id")}
    if origin.get("thread_id") is not None:
        d["thread_id"] = origin["thread_id"]
    return d


def run_trace(trace):
    r = Router(trace["threads"])
    for step, op in enumerate(trace["ops"]):
        name, arg = (op, {}) if isinstance(op, str) else next(iter(op.items()))
        if name == "message":
            r.message(arg["thread"])
        elif name == "turn_start":
            r.turn_start(arg["thread"])
        elif name == "turn_end":
            r.turn_end(arg["thread"])
        elif name == "reset":
            r.message(arg["thread"])
        elif name == "spawn":
            r.spawn(arg["thread"], arg["process"], arg["watch"], arg["notify"])
        elif name == "output":
            r.output(arg["process"], arg["text"])
        elif name == "exit":
            r.finish(arg["process"], f"exited with code {arg['code']}")
        elif name == "kill":
            r.finish(arg["process"], "was killed")
        elif name == "adapter":
            r.adapter_up = arg["up"]
        elif name == "restart":
            r.restart(arg["survive"])
        elif name == "shutdown":
            r.shutdown()
        elif name != "advance":
            raise ValueError(f"unknown op {name!r}")
        r.flush(step)
    return {"deliveries": r.delivered, "dead_letters": []}
