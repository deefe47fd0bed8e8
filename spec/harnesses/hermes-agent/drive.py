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
  turn_start t      a user message whose turn hermes starts and holds open
                    (its agent waits for the trace's next action); the
                    virtual clock moves, timer by timer and at most 1 s,
                    until hermes tracks the turn as running
                    (GatewayRunner._running_agents, set by a task polling
                    every 50 ms), as real time would.
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
  output p text     the process writes `text`, exactly and in one write (we
                    hand it a base64 line on a FIFO; it decodes it to its
                    stdout); we wait until hermes' reader thread has
                    consumed it (we observe its calls of
                    ProcessRegistry._check_watch_patterns, once per chunk).
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
import base64
import contextvars
import json
import os
import pathlib
import queue
import re
import shutil
import signal
import sys
import tempfile
import threading
import time as _real_time
import types

# ---------------------------------------------------------------------------
# The model, stubbed: hermes' run_agent.AIAgent is replaced by ScriptedAgent
# before gateway.run imports it. hermes builds it, caches it and calls
# run_conversation() from its own turn handler (GatewayRunner._run_agent, in
# an executor thread that carries the turn's session context); the scripted
# agent then makes the tool calls the trace asks for through hermes' own tool
# dispatcher (model_tools.handle_function_call), exactly as the model's tool
# calls are made, and ends the turn when the trace says so.
# ---------------------------------------------------------------------------
END = object()


class Action:
    """One tool call the trace asks of a turn's agent."""


    def __init__(self, tool, args):
        self.tool = tool
        self.args = args
        self.reply = None
        self.error = None
        self.done = threading.Event()
        self.then = None  # called with the action once it is made

    def perform(self, task_id, session_id):
        import model_tools
        try:
            self.reply = model_tools.handle_function_call(
                self.tool, dict(self.args), task_id=task_id, session_id=session_id)
        except BaseException as exc:  # handed back to the driver's thread
            self.error = exc
        finally:
            try:
                if self.then is not None and self.error is None:
                    self.then(self)
            except BaseException as exc:
                self.error = exc
            self.done.set()
            wake()


def wake():
    """Wakes the driver's loop (its selector) from another thread: an agent
    is now waiting for the trace's next action, or made the one it was given.
    The driver waits for these (and for hermes' executor jobs, whose results
    reach the loop through call_soon_threadsafe, which wakes it too) instead
    of polling."""
    driver = ScriptedAgent.driver
    loop = driver.loop if driver is not None else None
    if loop is not None:
        try:
            loop._write_to_self()
        except Exception:
            pass


class Turn:
    """What one turn's agent does: the driver's actions, one at a time."""

    # Agents blocked waiting for the trace's next action: their executor
    # jobs are pending on purpose (the loop is quiet without them). An agent
    # counts only while it has nothing to do: it is counted under the lock
    # that hands it an action, and uncounted by the hand-over itself, so the
    # driver never sees as blocked an agent that has an action to make (it
    # would call the loop quiet while that agent still works).
    _blocked = 0
    _lock = threading.Lock()

    def __init__(self, actions=()):
        self.actions = list(actions)
        self.waiting = False
        self.cond = threading.Condition(Turn._lock)
        self.started = threading.Event()
        self.finished = threading.Event()

    def put(self, action):
        with self.cond:
            self.actions.append(action)
            if self.waiting:
                self.waiting = False
                Turn._blocked -= 1
            self.cond.notify_all()

    def next(self):
        with self.cond:
            self.started.set()
            if not self.actions:
                self.waiting = True
                Turn._blocked += 1
        wake()
        with self.cond:
            while not self.actions:
                self.cond.wait()
            return self.actions.pop(0)

    @staticmethod
    def blocked():
        with Turn._lock:
            return Turn._blocked


class ScriptedAgent:
    """Stands in for run_agent.AIAgent: no model, only the trace's tool calls."""

    driver = None  # the Driver of the trace being run (one at a time)

    def __init__(self, *args, **kwargs):
        self.gateway_session_key = kwargs.get("gateway_session_key")
        self.session_id = kwargs.get("session_id")
        self.model = kwargs.get("model") or "procroute-scripted"
        self.provider = kwargs.get("provider")
        self.base_url = kwargs.get("base_url")
        self.api_mode = kwargs.get("api_mode")
        self.session_prompt_tokens = 0
        self.session_completion_tokens = 0
        self.session_total_tokens = 0

    def run_conversation(self, message, conversation_history=None, task_id=None, **_kw):
        turn = ScriptedAgent.driver.claim_turn(self.gateway_session_key)
        try:
            while True:
                action = turn.next()
                if action is END:
                    break
                action.perform(task_id, self.session_id)
        finally:
            turn.finished.set()
        history = list(conversation_history or [])
        history.append({"role": "user", "content": message})
        history.append({"role": "assistant", "content": "ok"})
        return {"final_response": "ok", "messages": history, "api_calls": 1, "completed": True}

    def interrupt(self, *_a, **_kw):
        pass

    def __getattr__(self, name):
        raise AttributeError(name)


_stub = types.ModuleType("run_agent")
_stub.AIAgent = ScriptedAgent
sys.modules["run_agent"] = _stub


import gateway.run as gr
import tools.process_registry as pr
from gateway.config import GatewayConfig, Platform, PlatformConfig
from gateway.platforms.base import BasePlatformAdapter, MessageEvent, SendResult
from gateway.session import SessionSource

# ---------------------------------------------------------------------------
# Boot work that does not depend on the trace, done once, in the harness
# process before its per-trace forks (harness.run_isolated), so that each
# fork does not redo it: hermes' modules that a trace imports lazily (its
# tool registry builds itself at import by parsing every tools/ module), its
# plugin discovery and deferred platform plugins (GatewayRunner.start() runs
# both; they are idempotent, so start() finds them done, as it does on a
# `restart`), and its config cache (keyed on the config file's mtime and
# size). Every trace still starts from one state, the harness's after this.
# The list is what traces import (a sys.modules diff over the stored and
# generated traces, 0.19.0 and 0.13.0); a name a version lacks is skipped.
# None of these modules starts a thread or opens a file at import. One binds
# the registry at import (tools.close_terminal_tool, a tool only a model
# calls, never a trace), as it bound the first boot's before.
# ---------------------------------------------------------------------------
PREIMPORT = """
    hermes_state hermes_cli.profiles tools.tirith_security tools.checkpoint_manager
    gateway.pairing gateway.hooks gateway.shutdown_forensics hermes_cli.security_advisories
    gateway.platform_registry hermes_cli.middleware hermes_cli.plugins
    agent.browser_provider agent.browser_registry hermes_cli.dashboard_auth.base
    hermes_cli.dashboard_auth.registry hermes_cli.dashboard_auth agent.image_gen_provider
    agent.image_gen_registry tools.xai_http agent.video_gen_provider
    agent.video_gen_registry agent.web_search_provider agent.web_search_registry
    tools.url_safety tools.website_policy gateway.relay agent.shell_hooks hermes_time
    cron.jobs cron.executions cron.scheduler cron gateway.channel_directory
    gateway.platforms.helpers gateway.platforms.whatsapp_common gateway.delivery_ledger
    gateway.scale_to_zero hermes_cli.sqlite_util toolsets hermes_cli.kanban_db
    gateway.drain_control gateway.session_context tools.clarify_gateway tools.slash_confirm
    tools.approval hermes_cli.commands hermes_cli.active_sessions agent.onboarding
    gateway.message_timestamps hermes_cli.nous_account tools.tool_backend_helpers
    tools.managed_tool_gateway hermes_cli.nous_subscription hermes_cli.cli_output
    hermes_cli.platforms hermes_cli.tools_config gateway.display_config
    gateway.status_phrases hermes_cli.codex_models agent.models_dev hermes_cli.models
    hermes_cli.model_catalog agent.auxiliary_client model_tools tools.tool_search
    acp_adapter acp_adapter.edit_approval tools.env_passthrough cron.lifecycle_guard
    hermes_cli.cron tools.ansi_strip agent.title_generator agent.aux_accounting
    hermes_cli.model_normalize agent.ssl_verify gateway.response_filters
    gateway.runtime_footer gateway.restart_loop_guard hermes_cli.timeouts
    agent.agent_runtime_helpers hermes_cli.kanban_decompose gateway.slash_access
    agent.memory_provider agent.memory_manager gateway.status
    agent.tool_result_classification agent.display gateway.stream_consumer agent.redact
    tools.openrouter_client tools.send_message_tool agent.model_metadata
    httpx httpcore psutil
""".split()


def prewarm():
    import importlib
    for name in PREIMPORT:
        try:
            importlib.import_module(name)
        except Exception:
            pass
    try:
        from hermes_cli.plugins import discover_plugins
        discover_plugins()
    except Exception:
        pass
    try:
        from gateway.platform_registry import platform_registry
        platform_registry.plugin_entries()
    except Exception:
        pass
    try:
        from hermes_cli.config import load_config
        load_config()
    except Exception:
        pass


prewarm()

WAIT_S = 10.0
# The longest the driver blocks waiting for another thread between two looks
# at what it waits for (it is woken as soon as the work lands).
POLL_S = 0.02

# hermes-agent before the "live output" fix (0.13.0) reads process output
# with TextIOWrapper.read(4096), which returns only at 4 KiB or EOF: its
# reader sees a trace's short output lines when the process exits. We then
# cannot wait for each line (hermes does not look at it yet), only for exit.
import inspect as _inspect
LIVE_OUTPUT = "read1" in _inspect.getsource(pr.ProcessRegistry._reader_loop)

# hermes-agent 0.13.0 ends every turn by waiting up to 5 s for a stream
# consumer that a turn without streaming never creates (0.19.0 cancels the
# wait): there the virtual clock moves through that wait, as a real one would.
TURN_END_WAITS = "_has_stream_consumer" not in _inspect.getsource(gr)

# The process watcher task a delivery is made from (its event), for hermes
# versions whose watcher does not pass through _inject_watch_notification.
WATCHER_EVENT = contextvars.ContextVar("procroute_watcher_event", default=None)
EPOCH = 1_800_000_000.0
# hermes' reader takes at most this many bytes per chunk (read1(4096)).
READ_CHUNK = 4096
# The watcher's text-only notice for a completion the agent consumed
# (gateway/run.py, _run_process_watcher).
# The hermes session id a notification's text names ("Background process
# proc_… matched", "disabled for process proc_…").
NOTICE_SESSION = re.compile(r"\b(proc_[0-9a-f]+)\b")
CONSUMED_NOTICE = re.compile(r"^\[Background process (\S+) finished with exit code ")
# hermes' onboarding reply to the first message of a chat without a home
# channel (gateway/run.py): a reply to the user, not a process notification.
ONBOARDING = "\N{OPEN MAILBOX WITH RAISED FLAG} No home channel is set"

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


class SeededUUID:
    """Stands in for the `uuid` module inside tools.process_registry: its
    uuid4() draws from a generator seeded by the trace, so the ids hermes
    gives a trace's processes (`proc_` and 12 hex digits of a uuid4) are the
    same on every run of that trace, as the clock's readings are. They are
    no less unique within the trace (128 random bits each); what hermes does
    with them is unchanged. Random ids made outcomes vary from run to run:
    the judge reads counts out of notification texts, and an id is part of
    some texts (`Watch patterns disabled for process proc_…`), so whether
    its hex happened to hold the count decided TEXT-4 (gen/24301/14, /5,
    /70; FINDINGS.md's H-PROMOTED)."""

    def __init__(self, trace):
        import hashlib
        import random
        import uuid
        self._uuid = uuid
        digest = hashlib.sha256(json.dumps(trace, sort_keys=True).encode("utf-8")).digest()
        self._rng = random.Random(digest)

    def uuid4(self):
        return self._uuid.UUID(int=self._rng.getrandbits(128), version=4)

    def __getattr__(self, name):
        return getattr(self._uuid, name)


class VirtualLoop(asyncio.SelectorEventLoop):
    def __init__(self, clock):
        super().__init__()
        self._vclock = clock
        # asyncio fires a timer when `when < time() + resolution`; at 1.8e9 s
        # the default 1e-9 vanishes in float rounding and a timer due exactly
        # now would never fire.
        self._clock_resolution = 1e-3
        self.in_flight = set()

    def time(self):
        return self._vclock.now

    def run_in_executor(self, executor, func, *args):
        # Work hermes hands to threads (the agent's turn, to_thread calls):
        # the driver waits for it before it calls the loop quiet.
        fut = super().run_in_executor(executor, func, *args)
        self.in_flight.add(fut)
        fut.add_done_callback(self.in_flight.discard)
        return fut


class Adapter(BasePlatformAdapter):
    """A platform adapter (the transport is the only part we own): records
    what the gateway hands it. hermes' own BasePlatformAdapter supplies
    everything else (start() wires the message handler into it)."""

    # Senders are authorised upstream (hermes' own flag for such adapters):
    # a trace's origins need not carry a user id, and authorisation is not
    # what the suite checks.
    authorization_is_upstream = True

    def __init__(self, driver, platform):
        super().__init__(PlatformConfig(enabled=True, token="procroute"), platform)
        self.driver = driver

    async def connect(self, *, is_reconnect=False):
        return True

    async def disconnect(self):
        pass

    async def get_chat_info(self, chat_id):
        return {"name": str(chat_id), "type": "group"}

    async def handle_message(self, event):
        # The gateway hands a synthetic (internal) event to the adapter to
        # inject a notification into its chat: that is the delivery.
        if not self.driver.adapter_up:
            raise ConnectionError("adapter down (trace op adapter up=false)")
        self.driver.delivered(event)

    async def send(self, chat_id, content, reply_to=None, metadata=None, **_kw):
        if not self.driver.adapter_up:
            # What a platform adapter answers when its platform is down.
            return SendResult(success=False, error="adapter down (trace op adapter up=false)",
                              retryable=True)
        self.driver.sent(self.platform, chat_id, content, metadata or {})
        return SendResult(success=True, message_id=f"m{len(self.driver.deliveries)}")


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
        self.chunks = 0  # how many chunks it consumed
        self.cond = threading.Condition()


def awaiting(task):
    """Where a pending task's coroutine chain waits (innermost last)."""
    frames, coro = [], task.get_coro()
    while coro is not None:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if frame is not None:
            frames.append(f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno} "
                          f"{frame.f_code.co_name}")
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
    return " > ".join(frames[-4:]) or "?"


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
        self.by_sid = {}  # hermes process session id -> Run
        self.turns = {}  # thread -> (Turn, the task running hermes' handler)
        self.parked = []  # message tasks hermes holds behind another turn
        self.actions = []  # every tool call asked of an agent
        self.fifos = 0
        self.scripted = {}  # hermes session key -> Turns waiting for its agent
        self.current_evt = None
        self.sources = [source_of(o) for o in trace["threads"]]
        platforms = {s.platform for s in self.sources}
        self.config = GatewayConfig(
            sessions_dir=pathlib.Path(self.dir, "sessions"),
            platforms={p: PlatformConfig(enabled=True, token="procroute") for p in platforms},
        )
        pr.CHECKPOINT_PATH = pathlib.Path(self.dir, "processes.json")
        pr.time = ClockedTime(self.clock)
        pr.uuid = SeededUUID(trace)
        ScriptedAgent.driver = self
        self.loop = None
        self.runner = None
        self._boot()

    # -- gateway lifecycle -------------------------------------------------
    def _boot(self):
        """A gateway process starting: a new registry and runner on the same
        files, then hermes' own GatewayRunner.start() (which connects the
        adapters, recovers processes from the checkpoint and resumes their
        watchers)."""
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
        # The platform transport is ours: start() asks for an adapter per
        # configured platform.
        runner._create_adapter = lambda platform, _config: Adapter(self, platform)
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
        self._await(runner.start(), "GatewayRunner.start()", move_clock=True)
        self._settle()

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
        # Agents blocked in a turn end (their results reach no one).
        for turn, _task in self.turns.values():
            turn.put(END)
        for turn, _task in self.turns.values():
            turn.finished.wait(WAIT_S)
        self.turns.clear()
        self.scripted.clear()
        self.loop.close()
        for run in list(self.runs.values()):
            if run.running and not survive:
                self._signal(run, signal.SIGKILL)
                self._join(run)
                run.running = False
        self._boot()

    def close(self):
        for turn, _task in self.turns.values():
            turn.put(END)
        for run in list(self.runs.values()):
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
        if ScriptedAgent.driver is self:
            ScriptedAgent.driver = None
        shutil.rmtree(self.dir, ignore_errors=True)

    # -- the event loop on the virtual clock ---------------------------------
    def _quiet(self):
        """Nothing ready, no timer due, and no thread work of hermes' in
        flight but agents blocked waiting for the trace's next action."""
        loop = self.loop
        if loop._ready:
            return False
        if any(not h._cancelled and h.when() <= loop.time() for h in loop._scheduled):
            return False
        busy = sum(1 for f in loop.in_flight if not f.done())
        return busy <= Turn.blocked()

    def _settle(self):
        """Runs the loop until it is quiet (`_quiet`), the virtual clock
        standing: what hermes does after an op is done before the next op."""
        self._pump_until(lambda: False, "settling", settle=True)

    def _pump_until(self, done, what, move_clock=False, parked=None, settle=False, clock_limit=None):
        """Runs the loop until `done()`, for work hermes does on other threads
        (the agent's executor). When the loop is quiet and `done()` does not
        hold: with `move_clock` the virtual clock moves to the next timer
        (hermes' startup sleeps, e.g. the adapters' settle second), but not
        past `clock_limit` (the wait ends there instead); with
        `parked` (a task) or `settle` the wait ends (hermes holds the task
        behind another turn's lease or queue); else it goes on until the
        work of other threads lands."""
        deadline = _real_time.monotonic() + WAIT_S
        while not done():
            if _real_time.monotonic() > deadline:
                raise RuntimeError(f"hermes did not finish {what} within {WAIT_S} s")
            self.loop.run_until_complete(asyncio.sleep(0))
            if self.loop._ready:
                continue
            if self._quiet():
                if done() or parked is not None or settle:
                    return
                if move_clock:
                    pending = [h.when() for h in self.loop._scheduled if not h._cancelled]
                    if clock_limit is not None:
                        pending = [w for w in pending if w <= clock_limit]
                        if not pending:
                            return
                    if pending:
                        self.clock.now = max(self.clock.now, min(pending))
                        continue
            # Wait for the other thread: its callbacks reach the loop through
            # call_soon_threadsafe and our agents' steps call wake(), both of
            # which write to the loop's self-pipe, so a select on the loop's
            # selector returns as soon as one lands (the loop reads the pipe
            # on its next turn). Checked again first: what landed before the
            # loop drained the pipe above is seen here. POLL_S bounds a wait
            # for work that lands without a wake-up.
            if done():
                continue
            self.loop._selector.select(POLL_S)
        if not settle:
            self._settle()

    def _await(self, coro, what, move_clock=False):
        return self._finish(self.loop.create_task(coro), what, move_clock)

    def _finish(self, task, what, move_clock=False):
        try:
            self._pump_until(task.done, what, move_clock)
        except RuntimeError as exc:
            raise RuntimeError(f"{exc}; it waits at {awaiting(task)}") from None
        return task.result()

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
    @staticmethod
    def _fields(evt, text):
        """The process event hermes is delivering, as a dict. hermes hands
        its own event dict; a regression may hand something else (the seed
        bug's post-turn drain passed the foreground MessageEvent): then the
        process and kind are read from the notification's text, so what
        hermes delivers is still reported where it went, not lost inside
        this observer."""
        if isinstance(evt, dict):
            return evt
        m = NOTICE_SESSION.search(text or "")
        kind = ("watch_disabled" if "Watch patterns disabled" in (text or "")
                else "watch_match" if "matched watch pattern" in (text or "")
                else "completion")
        return {"session_id": m.group(1) if m else "", "type": kind}

    def _report(self, evt, text, destination, reason=None):
        evt = self._fields(evt, text)
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
        evt = self.current_evt or WATCHER_EVENT.get()
        if evt is None:
            # An internal event that is no process notification: hermes'
            # startup resumes an interrupted turn (`resume_pending`) or
            # redelivers an answer the same way.
            return
        self.deliveries.append(self._report(evt, event.text, destination_of(event.source)))

    def sent(self, platform, chat_id, text, metadata):
        # adapter.send carries shutdown notices (no process), the watcher's
        # text-only notice for a completion the agent already consumed
        # (`[Background process <id> finished with exit code …`), and
        # replies to users, which are not notifications.
        if text.startswith(ONBOARDING):
            return
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
        evt = self._fields(evt, text)
        run = self.by_sid.get(str(evt.get("session_id") or ""))
        home = destination_of(self.sources[run.home]) if run else destination_of(self.sources[0])
        self.dead_letters.append(self._report(
            evt, text, home,
            "hermes-agent dropped the event: _inject_watch_notification found no "
            "route or no adapter (destination shown: the spawning thread)"))

    # -- messages and turns, through hermes' own handler ----------------------
    def key_of(self, t):
        return self.runner._session_key_for_source(self.sources[t])

    def claim_turn(self, session_key):
        """The scripted agent of a turn hermes starts for `session_key`: the
        trace's, or an empty one (a follow-up turn hermes runs by itself)."""
        waiting = self.scripted.get(session_key)
        if waiting:
            return waiting.pop(0)
        return Turn([END])

    def _event(self, t, text):
        source = self.sources[t]
        return MessageEvent(text=text, source=source, message_id=f"procroute-{self.step}")

    def _handle(self, t, text):
        """A user message in thread t, handed to hermes' message handler."""
        return self.runner._handle_message(self._event(t, text))

    def _deliver_message(self, t, text, until=None):
        """A user message in thread t: as a platform adapter does, hermes'
        handler runs in a task of its own; the loop runs until the task ends,
        `until()` holds, or the task parks (hermes holds it behind another
        turn of the same session: a queued follow-up or a turn lease)."""
        task = self.loop.create_task(self._handle(t, text))
        self._guard(t, lambda: self._pump_until(
            lambda: task.done() or (until is not None and until()),
            f"a message in thread {t}", move_clock=TURN_END_WAITS and until is None,
            parked=task))
        if task.done():
            self._guard(t, task.result)
        else:
            self.parked.append(task)
        return task

    def _whole_turn(self, t, actions=()):
        """A user message on an idle thread: hermes runs a whole turn (its
        agent makes `actions`, then ends), post-turn block included."""
        turn = Turn(list(actions) + [END])
        self.scripted.setdefault(self.key_of(t), []).append(turn)
        self._deliver_message(t, f"procroute step {self.step}")

    def _running(self, t):
        """The running turn of t's hermes session: t's own, or that of
        another trace thread hermes gives the same session key (then hermes
        runs one agent for both, as it would)."""
        if t in self.turns:
            return self.turns[t]
        key = self.key_of(t)
        return next((v for u, v in self.turns.items() if self.key_of(u) == key), None)

    def _turn_start(self, t):
        shared = self._running(t)
        if shared is not None:
            # hermes' session is busy with another thread's turn: the
            # message is queued by hermes' busy path, and t rides on the
            # running turn of its session.
            self._deliver_message(t, f"procroute step {self.step}")
            self.turns[t] = shared
            return
        turn = Turn()
        self.scripted.setdefault(self.key_of(t), []).append(turn)
        task = self._deliver_message(t, f"procroute step {self.step}", until=turn.started.is_set)
        self.turns[t] = (turn, task)
        self._tracked(t, task)

    def _tracked(self, t, task):
        """hermes counts a turn as running (GatewayRunner._running_agents,
        which the shutdown notices and the busy checks read) once a task of
        its turn handler, polling every 50 ms (`track_agent` in run.py),
        sees the agent built. Real time passes those 50 ms at once; the
        virtual clock only when moved: it is moved here, timer by timer as
        real time would, until hermes tracks the agent (at most 1 s; hermes
        skips the promotion for a stale run). Without this a running turn
        was never tracked and no shutdown notice was ever sent."""
        key = self.key_of(t)
        sentinel = getattr(gr, "_AGENT_PENDING_SENTINEL", None)

        def tracked():
            agent = self.runner._running_agents.get(key)
            return task.done() or (agent is not None and agent is not sentinel)

        self._pump_until(tracked, f"hermes tracking the turn in thread {t}",
                         move_clock=True, clock_limit=self.clock.now + 1.0)

    def _turn_end(self, t):
        turn, task = self.turns.pop(t)
        if any(v[0] is turn for v in self.turns.values()):
            return  # another thread of the same hermes session still runs it
        turn.put(END)
        if not turn.started.is_set():
            return  # hermes holds the turn behind another: it ends as soon as it runs
        self._finish(task, f"ending the turn in thread {t}", move_clock=TURN_END_WAITS)

    def _act(self, t, action):
        """A tool call by the agent of thread t: inside its running turn, or
        in a turn of its own."""
        self.actions.append(action)
        running = self._running(t)
        if running is not None:
            turn, task = running
            turn.put(action)
            if turn.started.is_set():
                self._pump_until(lambda: action.done.is_set() or task.done(),
                                 f"a {action.tool} call in thread {t}")
        else:
            self._whole_turn(t, [action])
        if action.error is not None:
            raise action.error
        if not action.done.is_set():
            return None  # hermes holds the turn: the call is made when it runs
        return json.loads(action.reply or "{}")

    def _guard(self, t, fn):
        try:
            return fn()
        except ValueError as exc:
            source = self.sources[t]
            if source.platform.value != "whatsapp":
                raise
            import traceback
            where = traceback.extract_tb(exc.__traceback__)[-1]
            raise Unexpressible(
                f"hermes-agent cannot open a session for thread {t} "
                f"({self.trace['threads'][t]!r}): ValueError: {exc} "
                f"at {os.path.basename(where.filename)}:{where.lineno} {where.name}")

    # -- processes ----------------------------------------------------------------
    def _consumed(self, session, chunk):
        run = self.by_sid.get(session.id)
        if run is not None:
            with run.cond:
                run.seen += chunk
                run.chunks += 1
                run.cond.notify_all()

    def _read(self, t, name):
        # The agent of thread t reads the process's log with hermes' own
        # process tool (`process(action="log")`; ids are global). On an ended
        # process whose whole output it shows, hermes marks the completion
        # consumed (ProcessRegistry.read_log).
        run = self.runs.get(name)
        if run is None:
            return
        self._act(t, Action("process", {"action": "log", "session_id": run.session.id}))

    def _spawn(self, t, name, watch, notify):
        self.fifos += 1
        fifo = os.path.join(self.dir, f"run{self.fifos}.fifo")
        os.mkfifo(fifo)
        fd = os.open(fifo, os.O_RDWR)
        command = (
            f"exec 3<{fifo}; while IFS= read -r l <&3; do case \"$l\" in "
            f"__exit__*) exit ${{l#__exit__ }};; *) printf '%s' \"$l\" | base64 -d;; esac; done"
        )
        args = {"command": command, "background": True, "notify_on_complete": bool(notify)}
        if watch:
            args["watch_patterns"] = list(watch)

        def started(action):
            # On the agent's thread, right after hermes' terminal tool
            # answered (now, or when hermes runs a turn it held).
            reply = json.loads(action.reply or "{}")
            sid = reply.get("session_id")
            if not sid:
                os.close(fd)
                if "embedded null byte" in str(reply.get("error")):
                    raise Unexpressible(
                        f"hermes-agent cannot start a background process from thread {t}: "
                        f"a routing id contains NUL ({reply.get('error')})")
                raise RuntimeError(f"the terminal tool did not start {name}: {reply}")
            run = Run(name, pr.process_registry.get(sid), fd, t)
            self.runs[name] = run
            self.by_sid[sid] = run

        action = Action("terminal", args)
        action.then = started
        self._act(t, action)

    def _output(self, name, text):
        run = self.runs.get(name)
        if run is None or not run.running:
            return
        # The op's text exactly, in the chunks hermes' reader takes when all
        # of it is there (`read1(4096)`: pieces of 4096 bytes): each piece
        # goes to the process as one base64 line, which it decodes and
        # writes in one write (atomic on a pipe), and the next is sent only
        # once hermes consumed it. So hermes never sees the text cut at a
        # point that depends on timing.
        data = text.encode("utf-8")
        for at in range(0, len(data), READ_CHUNK):
            piece = data[at:at + READ_CHUNK]
            with run.cond:
                before = run.chunks
            os.write(run.fifo_fd, base64.b64encode(piece) + b"\n")
            if not LIVE_OUTPUT:
                continue
            shown = piece.decode("utf-8", errors="replace")
            deadline = _real_time.monotonic() + WAIT_S
            with run.cond:
                while run.chunks == before or not run.seen.endswith(shown):
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
            t = arg.get("thread")
            if name == "message":
                if self._running(t) is not None:  # hermes' own busy path (queued follow-up)
                    self._deliver_message(t, f"procroute step {step}")
                else:
                    self._whole_turn(t)
            elif name == "turn_start":
                if t not in self.turns:
                    self._turn_start(t)
            elif name == "turn_end":
                if t in self.turns:
                    self._turn_end(t)
            elif name == "reset":
                if self._running(t) is not None:
                    # /new on a busy thread would end the running turn in
                    # hermes; the trace's turn goes on, so the store is
                    # reset directly (what /new calls).
                    entry = self._guard(t, lambda: self.runner.session_store.get_or_create_session(self.sources[t]))
                    self.runner.session_store.reset_session(entry.session_key)
                else:
                    self._deliver_message(t, "/new")
            elif name == "spawn":
                self._spawn(t, arg["process"], arg.get("watch", []), arg.get("notify", False))
            elif name == "output":
                self._output(arg["process"], arg["text"])
            elif name == "exit":
                self._exit(arg["process"], arg["code"])
            elif name == "kill":
                self._kill(arg["process"])
            elif name == "read":
                self._read(t, arg["process"])
            elif name == "advance":
                self._advance(arg["ms"] / 1000.0)
            elif name == "adapter":
                self.adapter_up = bool(arg["up"])
            elif name == "restart":
                self._crash(bool(arg["survive"]))
            elif name == "shutdown":
                self._await(self.runner._notify_active_sessions_of_shutdown(), "the shutdown notices")
            else:
                raise ValueError(f"unknown op {name!r}")
            self._settle()
        # A tool call hermes made late (in a turn it held) fails the run as
        # one made at once would.
        for action in self.actions:
            if action.error is not None:
                raise action.error
        return {"deliveries": self.deliveries, "dead_letters": self.dead_letters}


def run_trace(trace):
    driver = Driver(trace)
    try:
        return driver.run()
    finally:
        driver.close()
