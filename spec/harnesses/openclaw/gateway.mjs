// One OpenClaw gateway for drive.mjs: a child process (forked by the
// driver, with an IPC channel) that imports OpenClaw's modules and runs
// OpenClaw's functions on request. Our code; what it calls is OpenClaw's.
// A gateway crash (`restart`) is the driver killing this process with
// SIGKILL: everything OpenClaw keeps in memory (exec sessions, system-event
// queues, wake state) dies with it, what it keeps on disk (the session
// store, the outbound delivery queue) stays, and the next gateway is a
// fresh process. (Not a worker thread: OpenClaw's SQLite layer refuses to
// run off the main thread without its host broker.)
//
// Requests: { id, method, args } over IPC; answers { id, result } or
// { id, error }.
import { openclaw } from "./openclaw.mjs";

if (!process.send) {
  process.stderr.write("gateway.mjs runs as a child of drive.mjs (an IPC channel)\n");
  process.exit(2);
}

// OpenClaw's loggers write to stdout: the driver pipes this process's
// stdout to its stderr, and console.log goes there too.
console.log = (...a) => process.stderr.write(a.join(" ") + "\n");
console.info = console.log;

const oc = openclaw(process.env.OPENCLAW_DIR);
// Where each function is: found by the first gateway, handed to the next
// by the driver (a restart need not read 300 MB again).
const index = process.env.PROCROUTE_OPENCLAW_INDEX ? JSON.parse(process.env.PROCROUTE_OPENCLAW_INDEX) : null;
const api = await oc.internals([
  "createExecTool",
  "createProcessTool",
  "peekSystemEventEntries",
  "resetSystemEventsForTest",
  "runHeartbeatOnce",
  "getSession",
  "getFinishedSession",
  "recordInboundSessionMeta",
  "resolveSessionStorePathCore",
  "loadUnfinishedDeliveries",
  "drainPendingDeliveries",
  "resolveTelegramMessageThreadSpec",
  "buildTelegramInboundOriginTarget",
  "buildTelegramGroupFrom",
  "buildThreadingToolContext",
], index);
const debug = (...a) => {
  if (process.env.PROCROUTE_DEBUG) console.error("[gateway]", ...a);
};

// What the driver may see of an exec session and of an event: plain data.
const sessionView = (s) =>
  s && {
    aggregated: String(s.aggregated ?? ""),
    exited: Boolean(s.exited),
    notifyOnExit: Boolean(s.notifyOnExit),
    backgrounded: Boolean(s.backgrounded),
    exitNotified: s.exitNotified === true,
  };
const eventView = (e) => ({
  id: e.id,
  text: String(e.text),
  contextKey: e.contextKey ?? null,
  to: e.deliveryContext?.to ?? null,
  threadId: e.deliveryContext?.threadId ?? null,
});

// The inbound context of a message in a Telegram chat, as OpenClaw's
// Telegram ingress builds it from the Bot API's message object (numbers
// for ids, `telegram:<chat>[:topic:<n>]` targets), and the tool context
// the agent runtime derives from it (buildThreadingToolContext).
function telegramInbound({ cfg, message, sessionKey }) {
  const isGroup = message.chat.type === "group" || message.chat.type === "supergroup";
  const threadSpec = api.resolveTelegramMessageThreadSpec(message, message.chat.is_forum === true);
  const originatingTo = api.buildTelegramInboundOriginTarget(message.chat.id, threadSpec);
  const ctx = {
    From: isGroup ? api.buildTelegramGroupFrom(message.chat.id, threadSpec) : `telegram:${message.chat.id}`,
    To: originatingTo,
    OriginatingChannel: "telegram",
    OriginatingTo: originatingTo,
    Provider: "telegram",
    Surface: "telegram",
    AccountId: "default",
    MessageSid: String(message.message_id),
    SenderId: String(message.from.id),
    ChatType: isGroup ? "group" : message.chat.type === "channel" ? "channel" : "direct",
    MessageThreadId: threadSpec.id,
    SessionKey: sessionKey,
  };
  const tool = api.buildThreadingToolContext({ sessionCtx: ctx, config: cfg }) ?? {};
  const thread = tool.currentThreadTs ?? (ctx.MessageThreadId != null ? String(ctx.MessageThreadId) : undefined);
  return { ctx, currentChannelId: tool.currentChannelId ?? originatingTo, currentThreadTs: thread };
}

const methods = {
  // The agent of a thread's session calls the exec tool, built as OpenClaw's
  // agent runtime builds it for a run in that thread.
  async spawn({ tool, call, command, inbound }) {
    const seen = telegramInbound(inbound);
    debug("exec tool context", seen.currentChannelId, seen.currentThreadTs);
    const t = api.createExecTool({
      ...tool,
      currentChannelId: seen.currentChannelId,
      ...(seen.currentThreadTs != null ? { currentThreadTs: seen.currentThreadTs } : {}),
    });
    const res = await t.execute(call, { command, background: true });
    const id = res?.details?.sessionId;
    if (!id) throw new Error(`exec did not start: ${JSON.stringify(res).slice(0, 300)}`);
    return { id, pid: res.details.pid };
  },
  // The agent of a thread's session polls a process with OpenClaw's process
  // tool, scoped as the agent runtime scopes it (to the session key).
  async read({ scopeKey, call, id }) {
    const t = api.createProcessTool({ scopeKey });
    const res = await t.execute(call, { action: "poll", sessionId: id });
    return JSON.stringify(res?.details ?? res ?? null).slice(0, 300);
  },
  session({ id }) {
    return sessionView(api.getFinishedSession(id) ?? api.getSession(id)) ?? null;
  },
  peek({ key }) {
    return api.peekSystemEventEntries(key).map(eventView);
  },
  resetEvents() {
    api.resetSystemEventsForTest();
    return null;
  },
  async record({ store, inbound }) {
    await api.recordInboundSessionMeta({
      storePath: api.resolveSessionStorePathCore(store, { agentId: "main" }),
      sessionKey: inbound.sessionKey,
      ctx: telegramInbound(inbound).ctx,
    });
    return null;
  },
  // The session-event wake: one heartbeat for a session key, the agent's
  // reply made by a stub agent that relays every `Exec …` line of its
  // prompt verbatim; the busy check sees the trace's running turns.
  async heartbeat({ cfg, key, busy }) {
    const running = new Set(busy);
    const out = await api.runHeartbeatOnce({
      cfg,
      agentId: "main",
      sessionKey: key,
      source: "exec-event",
      reason: "exec-event",
      intent: "event",
      deps: {
        getReplyFromConfig: async (ctx) => ({
          text: String(ctx.Body ?? "")
            .split("\n")
            .filter((l) => /^Exec (completed|failed)/.test(l))
            .join("\n"),
        }),
        isReplyRunActive: (k) => running.has(k),
        listActiveReplyRunSessionKeys: () => [...running],
      },
    });
    if (process.env.PROCROUTE_DEBUG) {
      const q = await api.loadUnfinishedDeliveries(process.env.OPENCLAW_STATE_DIR);
      debug("unfinished outbound deliveries", q.length, JSON.stringify(q).slice(0, 300));
    }
    return { status: out?.status ?? null, reason: out?.reason ?? null };
  },
  // Telegram's polling monitor, on reconnect, drains the outbound queue.
  async drain({ cfg }) {
    await api.drainPendingDeliveries({
      drainKey: "telegram:default",
      logLabel: "Telegram reconnect drain",
      cfg,
      log: { info: debug, warn: debug, error: debug },
      selectEntry: (entry) => ({
        match: entry.channel === "telegram" && (entry.accountId ?? "default") === "default",
        bypassBackoff: false,
      }),
    });
    return null;
  },
};

process.on("message", async ({ id, method, args }) => {
  try {
    process.send({ id, result: await methods[method](args ?? {}) });
  } catch (e) {
    process.send({ id, error: `${e?.name ?? "Error"}: ${e?.message ?? e}` });
  }
});
// The driver going away ends the gateway too.
process.on("disconnect", () => process.exit(0));
process.send({ ready: true, index: api.index });
