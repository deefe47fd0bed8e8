"""Probe: where does a nanobot-ai 0.3.5 background task's announcement land?

Run with the private venv's python:
    ~/.cache/procroute/venv-nanobot-0.3.5/bin/python spec/harnesses/nanobot/probe.py

What runs is nanobot's own code: MessageBus, AgentLoop (run loop, per-session
dispatch, pending-queue injection, TurnDeliveryFactory routing), SpawnTool,
SubagentManager (spawn, _run_subagent, _announce_result), SessionManager
(JSONL files), ChannelManager (outbound dispatcher, dedupe, retry) and
BaseChannel._handle_message (inbound authorisation). Replaced: the LLM
(`StubProvider`, a scripted LLMProvider) and the platform transports
(`FakeChannel`, a BaseChannel whose send() records what nanobot hands the
platform). One knob is set in scenarios 2, 3b, 4, 5 and 9: the module
constant `nanobot.agent.loop._SUBAGENT_TERMINAL_WAIT_SECONDS` (300 s by
default: how long a finished turn waits for its own session's subagents) is
lowered to 0.2 s so that the announcement arrives after the spawning turn has
ended, which is what happens in production for any subagent that runs longer
than 5 minutes. Scenarios 1, 3a, 6 and 10 keep the default.

Every scenario uses its own workspace under one temporary HOME; nothing
outside that directory is written, and it is removed at the end
(NANOBOT_PROBE_KEEP=1 keeps it, with nanobot's own DEBUG log).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

_ROOT = Path(tempfile.mkdtemp(prefix="nanobot-probe-"))
os.environ["HOME"] = str(_ROOT / "home")  # keep ~/.nanobot inside the probe dir
(_ROOT / "home").mkdir()

from loguru import logger  # noqa: E402

logger.remove()
logger.add(str(_ROOT / "nanobot.log"), level="DEBUG")

import nanobot  # noqa: E402
import nanobot.agent.loop as loop_mod  # noqa: E402
from nanobot.agent.loop import AgentLoop  # noqa: E402
from nanobot.agent.tools.context import current_request_context  # noqa: E402
from nanobot.agent.turn_delivery import TurnDeliveryFactory  # noqa: E402
from nanobot.bus.events import InboundMessage, OutboundMessage  # noqa: E402
from nanobot.bus.queue import MessageBus  # noqa: E402
from nanobot.channels.base import BaseChannel  # noqa: E402
from nanobot.channels.manager import ChannelManager  # noqa: E402
from nanobot.config.schema import Config  # noqa: E402
from nanobot.providers.base import LLMProvider, LLMResponse, ToolCallRequest  # noqa: E402
from nanobot.session.manager import SessionManager  # noqa: E402

DEFAULT_TERMINAL_WAIT = loop_mod._SUBAGENT_TERMINAL_WAIT_SECONDS
TIMEOUT = 20.0


# --------------------------------------------------------------------------
# The model: a scripted provider. Main-agent turns are recognised by their
# last input; subagent runs by nanobot's subagent system prompt
# (templates/agent/subagent_system.md starts with "# Subagent").
# --------------------------------------------------------------------------
class StubProvider(LLMProvider):
    def __init__(self) -> None:
        super().__init__(provider_name="stub")
        self.release: dict[str, asyncio.Event] = {}
        self.subagent_running: dict[str, asyncio.Event] = {}
        self.calls: list[dict[str, object]] = []
        self.session_target: str | None = None  # @handle for send_session_message
        self.hold = asyncio.Event()  # a foreground turn saying "hold" runs until this is set
        self.holding = asyncio.Event()

    def get_default_model(self) -> str:
        return "stub-model"

    def _events(self, task: str) -> tuple[asyncio.Event, asyncio.Event]:
        return (
            self.release.setdefault(task, asyncio.Event()),
            self.subagent_running.setdefault(task, asyncio.Event()),
        )

    @staticmethod
    def _text(message: dict) -> str:
        content = message.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return " ".join(
                str(part.get("text", "")) for part in content if isinstance(part, dict)
            )
        return ""

    async def chat(self, messages, tools=None, model=None, max_tokens=4096,
                   temperature=0.7, reasoning_effort=None, tool_choice=None, **_):
        ctx = current_request_context()
        where = f"{ctx.channel}:{ctx.chat_id} session={ctx.session_key}" if ctx else "?"
        system = self._text(messages[0]) if messages and messages[0].get("role") == "system" else ""
        last = messages[-1] if messages else {}
        text = self._text(last)
        if system.startswith("# Subagent"):
            task = text.strip()
            release, running = self._events(task)
            self.calls.append({"kind": "subagent", "task": task, "context": where})
            running.set()
            await release.wait()  # the background task "runs" until the probe releases it
            return LLMResponse(content=f"RESULT-OF-{task}")
        self.calls.append({"kind": "main", "context": where, "last_role": last.get("role")})
        if last.get("role") == "tool":
            return LLMResponse(content="Started it; I will report back.")
        if "[Subagent '" in text:
            result = next((ln for ln in text.splitlines() if ln.startswith("RESULT-OF-")), "?")
            return LLMResponse(content=f"ANNOUNCE {result}")
        if "hold" in text and "[Subagent '" not in text:
            self.holding.set()
            await self.hold.wait()  # a long foreground turn (turn_start .. turn_end)
            return LLMResponse(content=f"FOREGROUND-REPLY to: {text.strip()[-40:]}")
        if "message topic 9" in text and self.session_target:
            return LLMResponse(
                content=None,
                tool_calls=[ToolCallRequest(
                    id="call_session_msg", name="send_session_message",
                    arguments={"to": self.session_target, "content": "ping from topic 7",
                               "expect_reply": True, "reply_timeout_seconds": 5},
                )],
                finish_reason="tool_calls",
            )
        if "run job-" in text:
            task = "job-" + text.split("run job-", 1)[1].split()[0]
            self._events(task)
            return LLMResponse(
                content=None,
                tool_calls=[ToolCallRequest(
                    id=f"call_{task}", name="spawn",
                    arguments={"task": task, "label": task},
                )],
                finish_reason="tool_calls",
            )
        return LLMResponse(content=f"FOREGROUND-REPLY to: {text.strip()[-40:]}")


# --------------------------------------------------------------------------
# The platform edge: a BaseChannel that records every send. Inbound goes
# through nanobot's own BaseChannel._handle_message (authorisation, metadata,
# session_key_override), exactly as a real channel hands a message over.
# --------------------------------------------------------------------------
class FakeChannel(BaseChannel):
    def __init__(self, name: str, bus: MessageBus, sink: list[dict]) -> None:
        self.name = name
        super().__init__({"allow_from": ["*"]}, bus)
        self._sink = sink
        self._stop = asyncio.Event()

    async def start(self) -> None:
        self._running = True
        await self._stop.wait()

    async def stop(self) -> None:
        self._running = False
        self._stop.set()

    async def send(self, msg: OutboundMessage) -> None:
        self._sink.append({
            "channel": msg.channel,
            "chat_id": msg.chat_id,
            # what nanobot's TelegramChannel.send reads to pick a forum topic
            # (channels/telegram/runtime.py:1081-1086)
            "message_thread_id": msg.metadata.get("message_thread_id"),
            "event": type(msg.event).__name__ if msg.event is not None else None,
            "content": msg.content,
        })


class Gateway:
    """nanobot's objects wired the way cli/gateway_runtime.py wires them."""

    def __init__(self, workspace: Path, channel_names: list[str], *,
                 unified_session: bool = False) -> None:
        self.workspace = workspace
        self.bus = MessageBus()
        self.provider = StubProvider()
        self.sessions = SessionManager(workspace)
        self.agent = AgentLoop(
            bus=self.bus,
            provider=self.provider,
            workspace=workspace,
            session_manager=self.sessions,
            unified_session=unified_session,
        )
        config = Config()
        config.agents.defaults.workspace = str(workspace)
        self.channels = ChannelManager(
            config, self.bus, session_manager=self.sessions,
            config_path=_ROOT / "home" / ".nanobot" / "config.json",
        )
        self.sent: list[dict] = []
        self.fakes = {n: FakeChannel(n, self.bus, self.sent) for n in channel_names}
        self.channels.channels.update(self.fakes)
        self.tasks: list[asyncio.Task] = []

    async def start(self) -> None:
        self.tasks.append(asyncio.create_task(self.agent.run()))
        self.tasks.append(asyncio.create_task(self.channels.start_all()))
        await asyncio.sleep(0.05)

    async def user_message(self, channel: str, chat_id: str, text: str, *,
                           metadata: dict | None = None, session_key: str | None = None) -> None:
        await self.fakes[channel]._handle_message(
            sender_id="u-" + chat_id, chat_id=chat_id, content=text,
            metadata=dict(metadata or {}), session_key=session_key,
        )

    async def wait_for(self, predicate, what: str) -> None:
        async def _poll() -> None:
            while not predicate():
                await asyncio.sleep(0.02)
        try:
            await asyncio.wait_for(_poll(), TIMEOUT)
        except asyncio.TimeoutError:
            raise SystemExit(f"probe: timed out waiting for {what}") from None

    def replies(self) -> list[dict]:
        return [d for d in self.sent if d["event"] is None]

    async def stop(self) -> None:
        self.agent.stop()
        await self.channels.stop_all()
        for t in self.tasks:
            t.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        await self.agent.aclose()


def show(title: str, gw: Gateway, note: str = "") -> list[dict]:
    print(f"\n== {title}")
    if note:
        print(f"   ({note})")
    for d in gw.replies():
        thread = f" topic={d['message_thread_id']}" if d["message_thread_id"] is not None else ""
        print(f"   delivered -> {d['channel']}:{d['chat_id']}{thread}: {d['content']!r}")
    return gw.replies()


def verdict(replies: list[dict], token: str, home: tuple, intruder: tuple) -> None:
    hits = [d for d in replies if token in d["content"]]
    if not hits:
        print(f"   VERDICT: announcement of {token} NOT delivered anywhere")
        return
    for d in hits:
        where = (d["channel"], d["chat_id"], d["message_thread_id"])
        label = ("chat A (home)" if where == home else
                 "chat B (the active chat)" if where == intruder else
                 f"neither A nor B: {where}")
        print(f"   VERDICT: announcement of {token} landed in {label}")


def workspace(name: str) -> Path:
    ws = _ROOT / name
    ws.mkdir()
    return ws


# --------------------------------------------------------------------------
async def scenario_injected() -> None:
    """A spawns; B talks while it runs; A's turn is still waiting (default 300 s)."""
    loop_mod._SUBAGENT_TERMINAL_WAIT_SECONDS = DEFAULT_TERMINAL_WAIT
    gw = Gateway(workspace("s1"), ["telegram"])
    await gw.start()
    await gw.user_message("telegram", "1001", "please run job-A1 in the background")
    await gw.wait_for(lambda: "job-A1" in gw.provider.subagent_running
                      and gw.provider.subagent_running["job-A1"].is_set(), "subagent start")
    await gw.user_message("telegram", "1002", "hello from B")
    await gw.wait_for(lambda: any(d["chat_id"] == "1002" for d in gw.replies()), "B reply")
    gw.provider.release["job-A1"].set()
    await gw.wait_for(lambda: any("RESULT-OF-job-A1" in d["content"] for d in gw.replies()),
                      "announcement")
    replies = show("1. subagent from chat A (telegram:1001), message in chat B (telegram:1002) "
                   "while it runs; A's turn still open", gw,
                   "path: _announce_result -> bus.inbound -> AgentLoop.run -> A's pending queue")
    verdict(replies, "RESULT-OF-job-A1", ("telegram", "1001", None), ("telegram", "1002", None))
    await gw.stop()


async def scenario_system_turn() -> None:
    """Same, but A's turn has ended: the announcement is a turn of its own."""
    loop_mod._SUBAGENT_TERMINAL_WAIT_SECONDS = 0.2
    gw = Gateway(workspace("s2"), ["telegram"])
    await gw.start()
    await gw.user_message("telegram", "1001", "please run job-A2 in the background")
    await gw.wait_for(lambda: any(d["chat_id"] == "1001" for d in gw.replies()),
                      "A's turn to end")
    await gw.user_message("telegram", "1002", "hello from B")
    await gw.wait_for(lambda: any(d["chat_id"] == "1002" for d in gw.replies()), "B reply")
    gw.provider.release["job-A2"].set()
    await gw.wait_for(lambda: any("RESULT-OF-job-A2" in d["content"] for d in gw.replies()),
                      "announcement")
    replies = show("2. as 1, but A's turn ended before the task finished (B spoke last)", gw,
                   "path: _announce_result -> AgentLoop._dispatch -> TurnDeliveryFactory._default_route")
    verdict(replies, "RESULT-OF-job-A2", ("telegram", "1001", None), ("telegram", "1002", None))
    await gw.stop()


async def scenario_topics(wait: float, label: str) -> None:
    """Telegram forum: A = topic 7, B = topic 9 of the same supergroup."""
    loop_mod._SUBAGENT_TERMINAL_WAIT_SECONDS = wait
    gw = Gateway(workspace("s3" + label), ["telegram"])
    await gw.start()
    chat = "-1005001"
    # key and metadata as TelegramChannel builds them
    # (_derive_topic_session_key runtime.py:1665-1670, _build_message_metadata :1673-1685)
    def meta(topic: int, mid: int) -> dict:
        return {"message_id": mid, "message_thread_id": topic, "is_group": True, "is_forum": True}
    task = f"job-T{label}"
    await gw.user_message("telegram", chat, f"please run {task} in the background",
                          metadata=meta(7, 11), session_key=f"telegram:{chat}:topic:7")
    await gw.wait_for(lambda: task in gw.provider.subagent_running
                      and gw.provider.subagent_running[task].is_set(), "subagent start")
    if wait < 1:
        await gw.wait_for(lambda: len(gw.replies()) >= 1, "A's turn to end")
    await gw.user_message("telegram", chat, "hello from topic 9",
                          metadata=meta(9, 12), session_key=f"telegram:{chat}:topic:9")
    await gw.wait_for(lambda: any(d["message_thread_id"] == 9 for d in gw.replies()), "B reply")
    gw.provider.release[task].set()
    await gw.wait_for(lambda: any(f"RESULT-OF-{task}" in d["content"] for d in gw.replies()),
                      "announcement")
    how = "A's turn still open" if wait >= 1 else "A's turn ended first"
    replies = show(f"3{label}. Telegram forum topics: task from topic 7, message in topic 9; {how}",
                   gw)
    verdict(replies, f"RESULT-OF-{task}", ("telegram", chat, 7), ("telegram", chat, 9))
    await gw.stop()


async def scenario_reset() -> None:
    """A spawns, then sends /new while the task runs."""
    loop_mod._SUBAGENT_TERMINAL_WAIT_SECONDS = 0.2
    gw = Gateway(workspace("s4"), ["telegram"])
    await gw.start()
    await gw.user_message("telegram", "1001", "please run job-A4 in the background")
    await gw.wait_for(lambda: any(d["chat_id"] == "1001" for d in gw.replies()),
                      "A's turn to end")
    await gw.user_message("telegram", "1001", "/new")
    await gw.wait_for(lambda: any("New session" in d["content"] for d in gw.replies()), "/new")
    gw.provider.release["job-A4"].set()
    await asyncio.sleep(1.0)
    replies = show("4. task started in A, then /new in A while it runs", gw,
                   "command/builtin.py:316 cmd_new -> AgentLoop._cancel_active_tasks -> "
                   "SubagentManager.cancel_by_session")
    verdict(replies, "RESULT-OF-job-A4", ("telegram", "1001", None), ("telegram", "1002", None))
    await gw.stop()


async def scenario_restart() -> None:
    """A spawns; the gateway is rebuilt from its persisted files while it runs."""
    loop_mod._SUBAGENT_TERMINAL_WAIT_SECONDS = 0.2
    ws = workspace("s5")
    gw = Gateway(ws, ["telegram"])
    await gw.start()
    await gw.user_message("telegram", "1001", "please run job-A5 in the background")
    await gw.wait_for(lambda: any(d["chat_id"] == "1001" for d in gw.replies()),
                      "A's turn to end")
    await gw.stop()  # the gateway goes away while the subagent still runs
    gw2 = Gateway(ws, ["telegram"])  # rebuilt from the same workspace / session files
    await gw2.start()
    await asyncio.sleep(1.0)
    print("\n== 5. task started in A; gateway stopped and rebuilt from its files while it ran")
    print("   (a crash is the same case: SubagentManager keeps running tasks only in memory,"
          " agent/subagent.py:153-155)")
    print(f"   deliveries after the rebuild: {len(gw2.replies())}")
    session = gw2.sessions.get_or_create("telegram:1001")
    promised = [m for m in session.messages if m.get("role") == "tool"]
    for m in promised:
        print(f"   persisted in telegram:1001 history: tool {m.get('name')!r} -> {m.get('content')!r}")
    files = sorted(
        str(p.relative_to(_ROOT)) for base in (ws, gw2.sessions.sessions_dir)
        for p in base.rglob("*") if p.is_file() and not p.name.startswith(".")
    )
    print(f"   persisted files (workspace + session dir), none naming the subagent: {files}")
    print("   VERDICT: announcement of RESULT-OF-job-A5 NOT delivered anywhere (lost, no notice)")
    await gw2.stop()


async def scenario_session_message() -> None:
    """Cross-session message with a reply timeout (agent/tools/session_messages.py)."""
    loop_mod._SUBAGENT_TERMINAL_WAIT_SECONDS = DEFAULT_TERMINAL_WAIT
    from nanobot.session.session_handles import SessionHandleResolver

    gw = Gateway(workspace("s7"), ["telegram"])
    await gw.start()
    chat = "-1005001"

    def meta(topic: int, mid: int) -> dict:
        return {"message_id": mid, "message_thread_id": topic, "is_group": True, "is_forum": True}
    await gw.user_message("telegram", chat, "hello from topic 9",
                          metadata=meta(9, 21), session_key=f"telegram:{chat}:topic:9")
    await gw.wait_for(lambda: len(gw.replies()) >= 1, "topic 9 reply")
    handle = SessionHandleResolver(gw.sessions).handle_for_session(f"telegram:{chat}:topic:9")
    gw.provider.session_target = f"@{handle.name}"
    await gw.user_message("telegram", chat, "please message topic 9 for me",
                          metadata=meta(7, 22), session_key=f"telegram:{chat}:topic:7")
    await gw.wait_for(lambda: any("No reply from" in d["content"] for d in gw.replies()),
                      "reply-timeout notice (5 s)")
    show("6. send_session_message from topic 7 to topic 9 (expect_reply, 5 s timeout)", gw,
         "the target turn and the timeout notice are system turns addressed by session key;"
         " TelegramChannel.send does int(chat_id) (runtime.py:1075-1079) and drops the"
         " message on ValueError")
    await gw.stop()


async def scenario_two_tasks() -> None:
    """Two tasks from one chat; the second finishes first (default 300 s terminal wait)."""
    loop_mod._SUBAGENT_TERMINAL_WAIT_SECONDS = DEFAULT_TERMINAL_WAIT
    gw = Gateway(workspace("s10"), ["telegram"])
    await gw.start()
    await gw.user_message("telegram", "1001", "please run job-P1 in the background")
    await gw.wait_for(lambda: "job-P1" in gw.provider.subagent_running
                      and gw.provider.subagent_running["job-P1"].is_set(), "P1 start")
    await gw.user_message("telegram", "1001", "also run job-P2 in the background")
    await gw.wait_for(lambda: "job-P2" in gw.provider.subagent_running
                      and gw.provider.subagent_running["job-P2"].is_set(), "P2 start")
    gw.provider.release["job-P2"].set()
    await asyncio.sleep(2.0)
    early = len(gw.replies())
    gw.provider.release["job-P1"].set()
    await gw.wait_for(lambda: any("RESULT-OF-job-P1" in d["content"] for d in gw.replies()),
                      "P1 announcement")
    await asyncio.sleep(0.5)
    replies = show("10. two tasks from chat A; P2 finishes first, P1 two seconds later", gw,
                   f"deliveries in the 2 s after P2 finished: {early}; the spawning turn waits for"
                   " every subagent of its session (loop.py:1073-1105) and only its final content"
                   " is sent (loop.py:2063-2086)")
    verdict(replies, "RESULT-OF-job-P2", ("telegram", "1001", None), ("telegram", "1002", None))
    verdict(replies, "RESULT-OF-job-P1", ("telegram", "1001", None), ("telegram", "1002", None))
    await gw.stop()


async def scenario_unified() -> None:
    """agents.defaults.unifiedSession = true (one session for every chat)."""
    loop_mod._SUBAGENT_TERMINAL_WAIT_SECONDS = 0.2
    gw = Gateway(workspace("s9"), ["telegram"], unified_session=True)
    await gw.start()
    await gw.user_message("telegram", "1001", "please run job-A9 in the background")
    await gw.wait_for(lambda: any(d["chat_id"] == "1001" for d in gw.replies()),
                      "A's turn to end")
    await gw.user_message("telegram", "1002", "hello from B, hold on")
    await gw.wait_for(lambda: gw.provider.holding.is_set(), "B's turn to start")
    gw.provider.release["job-A9"].set()  # the task finishes while B's turn runs
    await asyncio.sleep(0.5)
    gw.provider.hold.set()  # B's turn ends
    await gw.wait_for(lambda: any("RESULT-OF-job-A9" in d["content"] for d in gw.replies()),
                      "announcement")
    replies = show("9. unifiedSession: task from chat A; it finishes while a turn of chat B runs", gw,
                   "the announcement's session_key_override is 'unified:default', the key of the"
                   " running turn (loop.py:1339-1373)")
    verdict(replies, "RESULT-OF-job-A9", ("telegram", "1001", None), ("telegram", "1002", None))
    await gw.stop()


def key_parsing() -> None:
    """TurnDeliveryFactory._default_route on system messages whose chat_id is a
    session key (what SendSessionMessageTool publishes, session_messages.py:257-265)."""
    print("\n== 7. _default_route of a system turn addressed by session key "
          "(turn_delivery.py:152-174)")
    keys = [
        "telegram:1001",
        "telegram:-1005001:topic:7",
        "slack:C024BE91L:1700000000.000100",
        "discord:111:thread:222",
        "matrix:!room:example.org",
        "matrix:!room:example.org:thread:$root",
        "feishu:oc_1:om_root",
    ]
    for key in keys:
        msg = InboundMessage(channel="system", sender_id="session", chat_id=key,
                             content="x", session_key_override=key, input_role="user")
        route = TurnDeliveryFactory._default_route(msg, key)
        print(f"   {key!r:44} -> channel={route.channel!r} chat_id={route.chat_id!r}"
              f" metadata={json.dumps(route.metadata)}")
    from nanobot.cli.gateway_runtime import _pick_heartbeat_target_from_sessions

    print("\n== 8. heartbeat target = most recently updated session, key split at the first ':'"
          " (cli/gateway_runtime.py:200-227)")
    for key in ("telegram:-1005001:topic:7", "slack:C024BE91L:1700000000.000100"):
        target = _pick_heartbeat_target_from_sessions(
            enabled_channels=["telegram", "slack"],
            sessions=[{"key": key}, {"key": "telegram:1001"}],
            archived_keys=[],
        )
        print(f"   latest session {key!r:38} -> heartbeat goes to {target}")


async def main() -> None:
    print(f"nanobot-ai {nanobot.__version__} from {Path(nanobot.__file__).parent}")
    print(f"python {sys.version.split()[0]}; scratch dir {_ROOT}")
    await scenario_injected()
    await scenario_system_turn()
    await scenario_topics(DEFAULT_TERMINAL_WAIT, "a")
    await scenario_topics(0.2, "b")
    await scenario_reset()
    await scenario_restart()
    await scenario_session_message()
    key_parsing()
    await scenario_unified()
    await scenario_two_tasks()
    if os.environ.get("NANOBOT_PROBE_KEEP"):
        print(f"\n(nanobot's own log: {_ROOT / 'nanobot.log'})")
    else:
        shutil.rmtree(_ROOT, ignore_errors=True)
        print("\n(scratch dir removed; NANOBOT_PROBE_KEEP=1 keeps it with nanobot's DEBUG log)")


if __name__ == "__main__":
    asyncio.run(main())
