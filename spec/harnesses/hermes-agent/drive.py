"""Drives one procroute trace (spec/PROTOCOL.md, P-8) through hermes-agent's
own objects. This is our code; everything that decides anything is hermes':

  trace op          what happens here (hermes-agent 0.19.0 code that runs)
  ---------------   ----------------------------------------------------------
  message t         a user message in thread t on an idle thread runs a whole
                    turn: SessionStore.get_or_create_session(source),
                    GatewayRunner._cache_session_source, then the post-turn
                    block of run.py (start pending watchers, drain watch events
                    with _drain_gateway_watch_events, format them with
                    _format_gateway_process_notification, inject them with
                    GatewayRunner._inject_watch_notification). On a busy thread
                    it only touches the session (the running turn's end drains).
  turn_start t      the session is touched and marked running
                    (GatewayRunner._running_agents).
  turn_end t        the post-turn block runs, the session is no longer running.
  reset t           SessionStore.reset_session (what /new calls).
  spawn t p         the agent of t's session calls tools.terminal_tool with
                    background=True, notify_on_complete / watch_patterns, inside
                    the session context GatewayRunner._set_session_env sets.
                    A real process is started by ProcessRegistry.spawn_local
                    (bash, its own process group); its stdout is read by
                    hermes' own reader thread, which runs _check_watch_patterns.
                    On an idle thread the spawn is wrapped in a turn (hermes
                    only spawns from inside a turn; the turn's end starts the
                    watcher).
  output p text     the process prints `text` (we write it to a FIFO the
                    process copies to its stdout); we wait until hermes'
                    reader thread has consumed it (we observe its calls of
                    ProcessRegistry._check_watch_patterns, which it makes
                    once per chunk after buffering it).
  exit p code       the process exits with `code`; we wait for hermes' reader
                    thread to finish (_move_to_finished).
  kill p            the process is killed from outside (SIGKILL to its process
                    group, as the OS or a user would); hermes' reader thread
                    sees the exit. (The agent's own process(action="kill")
                    is a different thing: it hands the agent the output and
                    suppresses the completion on purpose, so it is not what a
                    trace's kill means.)
  advance ms        a virtual clock moves: `time.time()` inside
                    tools.process_registry and the asyncio loop's clock (the
                    watchers' asyncio.sleep) both read it. Timers fire in order.
  adapter up        the fake platform adapters start or stop failing
                    (ConnectionError from handle_message / send).
  restart survive   the gateway crashes: its registry, runner and event loop
                    are abandoned (their threads can no longer write the
                    checkpoint or queue events); processes are SIGKILLed unless
                    they survive; a new ProcessRegistry and GatewayRunner are
                    built on the same HERMES_HOME files, then the startup
                    steps of GatewayRunner.start run: recover_from_checkpoint
                    and the recovered watchers.
  shutdown          GatewayRunner._notify_active_sessions_of_shutdown.

A delivery is the gateway handing the synthetic MessageEvent to the
platform adapter (`adapter.handle_message`); its destination is the event's
`source`. An event hermes drops for want of a route (`_inject_watch_notification`
returns None) is reported as a dead letter, as P-8 requires.
"""
import asyncio
import contextvars
import json
import os
import queue
import re
import shutil
import signal
import tempfile
import threading
import time as _real_time

import gateway.run as gr
import tools.process_registry as pr
import tools.terminal_tool as tt
from gateway.config import GatewayConfig, Platform
from gateway.session import SessionSource, build_session_context

WAIT_S = 10.0

# hermes-agent before the "live output" fix (0.13.0) reads process output
# with TextIOWrapper.read(4096), which returns only at 4 KiB or EOF: its
# reader sees a trace's short output lines when the process exits. We then
# cannot wait for each line (hermes does not look at it yet), only for exit.
import inspect as _inspect
LIVE_OUTPUT = "read1" in _inspect.getsource(pr.ProcessRegistry._reader_loop)  # a real process or reader thread that takes longer is an error

# The process watcher task a delivery is made from (its event), for hermes
# versions whose watcher does not pass through _inject_watch_notification.
WATCHER_EVENT = contextvars.ContextVar("procroute_watcher_event", default=None)
EPOCH = 1_800_000_000.0
# The watcher's text-only notice for a completion the agent consumed
# (gateway/run.py, _run_process_watcher).
CONSUMED_NOTICE = re.compile(r"^\[Background process (\S+) finished with exit code ")


class Unexpressible(Exception):
    """The trace needs something hermes-agent cannot represent (skipped)."""


class Clock:
    def __init__(self):
        self.now = EPOCH


class ClockedTime:
    """Stands in for the `time` module inside tools.process_registry."""

    def __init__(self, clock):
        self._clock = clock

    def time(self):
        return self._clock.now

    def __getattr__(self, name):
        return getattr(_real_time, name)


class VirtualLoop(asyncio.SelectorEventLoop):
    def __init__(self, clock):
        super().__init__()
        self._vclock = clock
        # asyncio fires a timer when `when < time() + resolution`; at 1.8e9 s
        # the default 1e-9 vanishes in float rounding and a timer due exactly
        # now would never fire.
        self._clock_resolution = 1e-3

    def time(self):
        return self._vclock.now


class Adapter:
    """A platform adapter: records what the gateway hands it."""

    supports_async_delivery = True

    def __init__(self, driver, platform):
        self.driver = driver
        self.platform = platform

    async def handle_message(self, event):
        if not self.driver.adapter_up:
            raise ConnectionError("adapter down (trace op adapter up=false)")
        self.driver.delivered(event)

    async def send(self, chat_id, text, metadata=None, **_kw):
        if not self.driver.adapter_up:
            raise ConnectionError("adapter down (trace op adapter up=false)")
        self.driver.sent(self.platform, chat_id, text, metadata or {})


def source_of(origin):
    try:
        platform = Platform(origin["platform"])
    except ValueError:
        raise Unexpressible(f"hermes-agent has no platform {origin['platform']!r}")
    return SessionSource(
        platform=platform,
        chat_id=origin["chat_id"],
        chat_type=origin["chat_type"],
        thread_id=origin.get("thread_id"),
        user_id=origin.get("user_id"),
        user_name=origin.get("user_name"),
    )


def destination_of(source):
    d = {
        "platform": source.platform.value,
        "chat_type": source.chat_type,
        "chat_id": str(source.chat_id),
    }
    if source.thread_id:
        d["thread_id"] = str(source.thread_id)
    return d


def drain_watch_events(q):
    """run.py's post-turn drain. 0.19.0 has it as a function; 0.13.0 inlines
    the same loop in the post-turn block (pop everything, keep the watch
    events, leave completions to the watcher tasks), which we repeat."""
    if hasattr(gr, "_drain_gateway_watch_events"):
        return gr._drain_gateway_watch_events(q)
    events = []
    while not q.empty():
        evt = q.get_nowait()
        if evt.get("type", "completion") in {"watch_match", "watch_disabled"}:
            events.append(evt)
    return events


KINDS = {"watch_match": "watch_match", "watch_disabled": "watch_disabled", "completion": "completion"}


class Run:
    """One run of a trace process: hermes' ProcessSession and our FIFO."""

    def __init__(self, name, session, fifo_fd, home):
        self.name = name
        self.session = session
        self.fifo_fd = fifo_fd
        self.home = home
        self.running = True
        self.seen = ""  # output hermes' reader thread has consumed
        self.cond = threading.Condition()


class Driver:
    def __init__(self, trace):
        self.trace = trace
        self.dir = tempfile.mkdtemp(prefix="procroute-hermes-trace-")
        self.clock = Clock()
        self.adapter_up = True
        self.step = 0
        self.deliveries = []
        self.dead_letters = []
        self.runs = {}  # trace process name -> latest Run
        self.by_sid = {}  # hermes session id -> Run
        self.busy = set()
        self.current_evt = None
        self.sources = [source_of(o) for o in trace["threads"]]
        self.config = GatewayConfig(sessions_dir=__import__("pathlib").Path(self.dir, "sessions"))
        pr.CHECKPOINT_PATH = __import__("pathlib").Path(self.dir, "processes.json")
        pr.time = ClockedTime(self.clock)
        self.loop = None
        self.runner = None
        self._boot()

    # -- gateway lifecycle -------------------------------------------------
    def _boot(self):
        self.loop = VirtualLoop(self.clock)
        asyncio.set_event_loop(self.loop)
        registry = pr.ProcessRegistry()
        # Observe (not change) the reader thread: it calls this once per
        # chunk, after appending the chunk to the output buffer.
        check = registry._check_watch_patterns

        def observed_check(session, text):
            try:
                check(session, text)
            finally:
                self._consumed(session, text)

        registry._check_watch_patterns = observed_check
        pr.process_registry = registry
        runner = gr.GatewayRunner(self.config)
        runner.adapters = {s.platform: Adapter(self, s.platform) for s in self.sources}
        original = runner._inject_watch_notification

        async def observed(text, evt):
            self.current_evt = evt
            before = len(self.deliveries)
            try:
                result = await original(text, evt)
            finally:
                self.current_evt = None
            # 0.19.0 returns None when it finds no route or adapter; 0.13.0
            # returns None always, so a drop is a None with nothing handed
            # to an adapter.
            if result is None and len(self.deliveries) == before:
                self._dropped(evt, text)
            return result

        runner._inject_watch_notification = observed

        # hermes-agent 0.13.0's watcher hands its completion straight to
        # adapter.handle_message (0.19.0 goes through
        # _inject_watch_notification): the watcher task's process is known
        # to every call made inside that task.
        original_watcher = runner._run_process_watcher

        async def observed_watcher(watcher):
            WATCHER_EVENT.set({"session_id": watcher.get("session_id"), "type": "completion"})
            return await original_watcher(watcher)

        runner._run_process_watcher = observed_watcher
        self.runner = runner

    def _crash(self, survive):
        old = pr.process_registry
        # The old gateway is dead: whatever its threads do now reaches no file
        # and no queue anyone reads.
        old._write_checkpoint = lambda: None
        old.completion_queue = queue.Queue()
        old.pending_watchers = []
        for task in asyncio.all_tasks(self.loop):
            task.cancel()
        self.loop.run_until_complete(asyncio.sleep(0))
        self.loop.run_until_complete(asyncio.sleep(0))
        self.loop.close()
        self.busy.clear()
        for run in self.runs.values():
            if run.running and not survive:
                self._signal(run, signal.SIGKILL)
                self._join(run)
                run.running = False
        self._boot()
        registry = pr.process_registry
        registry.recover_from_checkpoint()
        watchers, registry.pending_watchers = registry.pending_watchers, []
        for w in watchers:
            self.loop.create_task(self.runner._run_process_watcher(w))
        self._settle()

    def close(self):
        for run in self.runs.values():
            if run.running:
                self._signal(run, signal.SIGKILL)
        for run in self.by_sid.values():
            try:
                os.close(run.fifo_fd)
            except OSError:
                pass
            t = run.session._reader_thread
            if t is not None:
                t.join(WAIT_S)
        try:
            for task in asyncio.all_tasks(self.loop):
                task.cancel()
            self.loop.run_until_complete(asyncio.sleep(0))
            self.loop.close()
        except Exception:
            pass
        shutil.rmtree(self.dir, ignore_errors=True)

    # -- the event loop on the virtual clock ---------------------------------
    def _settle(self):
        loop = self.loop
        for _ in range(100_000):
            loop.run_until_complete(asyncio.sleep(0))
            due = [h for h in loop._scheduled if not h._cancelled and h.when() <= loop.time()]
            if not loop._ready and not due:
                return
        raise RuntimeError(
            f"hermes' event loop did not settle: ready={list(loop._ready)[:3]} "
            f"due={[h for h in loop._scheduled if h.when() <= loop.time()][:3]}")

    def _advance(self, seconds):
        target = self.clock.now + seconds
        while True:
            pending = sorted(h.when() for h in self.loop._scheduled if not h._cancelled)
            nxt = next((w for w in pending if w <= target), None)
            if nxt is None:
                break
            self.clock.now = max(self.clock.now, nxt)
            self._settle()
        self.clock.now = target
        self._settle()

    # -- what hermes hands the adapters ---------------------------------------
    def _report(self, evt, text, destination, reason=None):
        run = self.by_sid.get(str(evt.get("session_id") or ""))
        d = {
            "step": self.step,
            "destination": destination,
            "process": run.name if run else None,
            "kind": KINDS.get(evt.get("type"), "completion"),
            "text": text,
        }
        if reason is not None:
            d["reason"] = reason
        return d

    def delivered(self, event):
        evt = self.current_evt or WATCHER_EVENT.get() or {}
        self.deliveries.append(self._report(evt, event.text, destination_of(event.source)))

    def sent(self, platform, chat_id, text, metadata):
        # adapter.send carries shutdown notices (no process) and the watcher's
        # text-only notice for a completion the agent already consumed
        # (`[Background process <id> finished with exit code …`).
        thread_id = metadata.get("thread_id")
        chat_type = next(
            (s.chat_type for s in self.sources
             if s.platform == platform and str(s.chat_id) == str(chat_id)
             and (s.thread_id or None) == (thread_id or None)),
            "dm",
        )
        d = {"platform": platform.value, "chat_type": chat_type, "chat_id": str(chat_id)}
        if thread_id:
            d["thread_id"] = str(thread_id)
        m = CONSUMED_NOTICE.match(text)
        run = self.by_sid.get(m.group(1)) if m else None
        self.deliveries.append({"step": self.step, "destination": d,
                                "process": run.name if run else None,
                                "kind": "completion" if m else "shutdown", "text": text})

    def _dropped(self, evt, text):
        run = self.by_sid.get(str(evt.get("session_id") or ""))
        home = destination_of(self.sources[run.home]) if run else destination_of(self.sources[0])
        self.dead_letters.append(self._report(
            evt, text, home,
            "hermes-agent dropped the event: _inject_watch_notification found no "
            "route or no adapter (destination shown: the spawning thread)"))

    # -- sessions and turns -------------------------------------------------------
    def _touch(self, t):
        source = self.sources[t]
        try:
            entry = self.runner.session_store.get_or_create_session(source)
        except ValueError as exc:
            if source.platform.value != "whatsapp":
                raise
            import traceback
            where = traceback.extract_tb(exc.__traceback__)[-1]
            raise Unexpressible(
                f"hermes-agent cannot open a session for thread {t} "
                f"({self.trace['threads'][t]!r}): ValueError: {exc} "
                f"at {os.path.basename(where.filename)}:{where.lineno} {where.name}")
        cache = getattr(self.runner, "_cache_session_source", None)
        if cache is not None:  # 0.19.0's live LRU of sources (absent in 0.13.0)
            cache(entry.session_key, source)
        return entry

    async def _post_turn(self):
        registry = pr.process_registry
        watchers, registry.pending_watchers = registry.pending_watchers, []
        for w in watchers:
            asyncio.get_event_loop().create_task(self.runner._run_process_watcher(w))
        for evt in drain_watch_events(registry.completion_queue):
            text = gr._format_gateway_process_notification(evt)
            if text:
                try:
                    await self.runner._inject_watch_notification(text, evt)
                except Exception:
                    pass  # run.py logs and goes on

    def _turn_end(self, t):
        entry = self._touch(t)
        self.loop.run_until_complete(self._post_turn())
        self.runner._running_agents.pop(entry.session_key, None)
        self.busy.discard(t)
        self._settle()

    # -- processes ----------------------------------------------------------------
    def _consumed(self, session, chunk):
        run = self.by_sid.get(session.id)
        if run is not None:
            with run.cond:
                run.seen += chunk
                run.cond.notify_all()

    def _read(self, t, name):
        # The agent of thread t's turn reads the process's log with hermes'
        # own process tool (`process(action="log")`; ids are global). On an
        # ended process whose whole output it shows, hermes marks the
        # completion consumed (ProcessRegistry.read_log).
        run = self.runs.get(name)
        if run is None:
            return
        entry = self._touch(t)
        context = build_session_context(self.sources[t], self.runner.config, entry)
        tokens = self.runner._set_session_env(context)
        try:
            pr._handle_process({"action": "log", "session_id": run.session.id},
                               task_id=entry.session_key)
        finally:
            self.runner._clear_session_env(tokens)

    def _spawn(self, t, name, watch, notify):
        entry = self._touch(t)
        inside_turn = t in self.busy
        fifo = os.path.join(self.dir, f"run{len(self.by_sid) + 1}.fifo")
        os.mkfifo(fifo)
        fd = os.open(fifo, os.O_RDWR)
        command = (
            f"exec 3<{fifo}; while IFS= read -r l <&3; do case \"$l\" in "
            f"__exit__*) exit ${{l#__exit__ }};; *) printf '%s\\n' \"$l\";; esac; done"
        )
        context = build_session_context(self.sources[t], self.runner.config, entry)
        tokens = self.runner._set_session_env(context)
        try:
            reply = json.loads(tt.terminal_tool(
                command=command,
                background=True,
                notify_on_complete=bool(notify),
                watch_patterns=list(watch) or None,
                task_id=entry.session_key,
            ))
        finally:
            self.runner._clear_session_env(tokens)
        sid = reply.get("session_id")
        if not sid:
            os.close(fd)
            if "embedded null byte" in str(reply.get("error")):
                raise Unexpressible(
                    f"hermes-agent cannot start a background process from thread {t}: "
                    f"a routing id contains NUL ({reply.get('error')})")
            raise RuntimeError(f"terminal_tool did not start {name}: {reply}")
        run = Run(name, pr.process_registry.get(sid), fd, t)
        self.runs[name] = run
        self.by_sid[sid] = run
        if not inside_turn:
            self.loop.run_until_complete(self._post_turn())
            self._settle()

    def _output(self, name, text):
        run = self.runs.get(name)
        if run is None or not run.running:
            return
        lines = text.splitlines()
        payload = "".join(line + "\n" for line in lines)
        if any(line.startswith("__exit__") for line in lines):
            raise Unexpressible("output line collides with the harness's exit marker")
        want = run.seen + payload
        os.write(run.fifo_fd, payload.encode("utf-8"))
        if not LIVE_OUTPUT:
            return
        deadline = _real_time.monotonic() + WAIT_S
        with run.cond:
            while not run.seen.endswith(payload) or len(run.seen) < len(want):
                left = deadline - _real_time.monotonic()
                if left <= 0:
                    raise RuntimeError(f"hermes' reader thread did not consume output of {name}")
                run.cond.wait(left)

    def _signal(self, run, sig):
        try:
            os.killpg(run.session.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def _join(self, run):
        t = run.session._reader_thread
        if t is not None:
            t.join(WAIT_S)
            if t.is_alive():
                raise RuntimeError(f"hermes' reader thread of {run.name} did not finish")

    def _exit(self, name, code):
        run = self.runs.get(name)
        if run is None or not run.running:
            return
        os.write(run.fifo_fd, f"__exit__ {int(code)}\n".encode())
        self._join(run)
        run.running = False

    def _kill(self, name):
        run = self.runs.get(name)
        if run is None or not run.running:
            return
        self._signal(run, signal.SIGKILL)
        self._join(run)
        run.running = False

    # -- the trace ------------------------------------------------------------------
    def run(self):
        for step, op in enumerate(self.trace["ops"]):
            self.step = step
            name, arg = (op, {}) if isinstance(op, str) else next(iter(op.items()))
            if name == "message":
                self._touch(arg["thread"])
                if arg["thread"] not in self.busy:
                    self._turn_end(arg["thread"])
            elif name == "turn_start":
                entry = self._touch(arg["thread"])
                self.busy.add(arg["thread"])
                self.runner._running_agents[entry.session_key] = object()
            elif name == "turn_end":
                if arg["thread"] in self.busy:
                    self._turn_end(arg["thread"])
            elif name == "reset":
                entry = self._touch(arg["thread"])
                self.runner.session_store.reset_session(entry.session_key)
            elif name == "spawn":
                self._spawn(arg["thread"], arg["process"], arg.get("watch", []), arg.get("notify", False))
            elif name == "output":
                self._output(arg["process"], arg["text"])
            elif name == "exit":
                self._exit(arg["process"], arg["code"])
            elif name == "kill":
                self._kill(arg["process"])
            elif name == "read":
                self._read(arg["thread"], arg["process"])
            elif name == "advance":
                self._advance(arg["ms"] / 1000.0)
            elif name == "adapter":
                self.adapter_up = bool(arg["up"])
            elif name == "restart":
                self._crash(bool(arg["survive"]))
            elif name == "shutdown":
                self.loop.run_until_complete(self.runner._notify_active_sessions_of_shutdown())
            else:
                raise ValueError(f"unknown op {name!r}")
            self._settle()
        return {"deliveries": self.deliveries, "dead_letters": self.dead_letters}


def run_trace(trace):
    driver = Driver(trace)
    try:
        return driver.run()
    finally:
        driver.close()
