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
import { openclaw, flushCompileCache } from "./openclaw.mjs";

// The trace's clock. The wake scheduler (heartbeat-wake-*.mjs: when a
// wake is due, its retries) and the heartbeat runner's scheduler
// (heartbeat-runner-scheduler-*.mjs: cooldowns, minimum spacing, flood
// guard) are the modules whose sense of time decides when a completion is
// answered: there, Date.now() and performance.now() are the trace's clock
// (an epoch the driver fixes, plus `skew`, the sum of the trace's
// `advance`s; both handed to a fresh gateway after a restart by `begin`):
// time stands still between the trace's advances, whatever the machine's
// load, and their timers fire when the trace's time reaches them (`settle`,
// after every op). Everywhere else OpenClaw runs on the machine's clock
// (its delivery queue's leases are kept by SQLite worker threads, which a
// clock of this thread alone would break).
const realNow = Date.now.bind(Date);
const realPerf = performance.now.bind(performance);
const realSetTimeout = globalThis.setTimeout;
const realClearTimeout = globalThis.clearTimeout;
let skew = 0; // set by `begin`, moved by `advance`
let epoch = realNow(); // set by `begin`
const PERF_BASE = 1e7;
let traceNow = 0;
const SCHEDULER = /[\\/]heartbeat-(?:wake|runner-scheduler)-[\w-]+\.mjs/;
const WAKE_MODULE = /[\\/]heartbeat-wake-[\w-]+\.mjs/;
// The module that called the caller of this function.
const caller = () => {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 3;
  const stack = new Error().stack ?? "";
  Error.stackTraceLimit = limit;
  return stack.split("\n")[3] ?? "";
};
Date.now = () => (SCHEDULER.test(caller()) ? epoch + skew : realNow());
performance.now = () => (SCHEDULER.test(caller()) ? PERF_BASE + skew : realPerf());
let lastActivity = realPerf();
let activity = 0; // wake activity seen (timers set or fired, heartbeats begun or ended)
const vtimers = new Map();
const vhandles = new WeakSet();
let vseq = 0;
globalThis.setTimeout = function setTimeout(fn, ms, ...args) {
  if (typeof fn !== "function" || !WAKE_MODULE.test(caller())) return realSetTimeout(fn, ms, ...args);
  const id = ++vseq;
  const h = {
    id,
    unref: () => h,
    ref: () => h,
    hasRef: () => false,
    refresh: () => h,
    [Symbol.toPrimitive]: () => id,
  };
  vhandles.add(h);
  vtimers.set(id, { due: traceNow + Math.max(0, Number(ms) || 0), seq: id, fn: () => fn(...args) });
  lastActivity = realPerf();
  activity++;
  return h;
};
globalThis.clearTimeout = function clearTimeout(h) {
  if (h && typeof h === "object" && vhandles.has(h)) {
    vtimers.delete(h.id);
    return;
  }
  return realClearTimeout(h);
};
const sleep = (ms) => new Promise((r) => realSetTimeout(r, ms));

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
  "startHeartbeatRunner",
  "requestSessionEventWake",
  "getSession",
  "getFinishedSession",
  "recordInboundSession",
  "resolveSessionStorePathCore",
  "drainPendingDeliveries",
  "resolveTelegramMessageThreadSpec",
  "buildTelegramInboundOriginTarget",
  "buildTelegramGroupFrom",
  "buildThreadingToolContext",
], index);
const routing = await oc.routing();
const debug = (...a) => {
  if (process.env.PROCROUTE_DEBUG) console.error("[gateway]", Math.round(realPerf()), ...a);
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
// the agent runtime derives from it (buildThreadingToolContext), exactly as
// that returns it: nothing is filled in from the message.
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
  return { ctx, isGroup, threadSpec, originatingTo, currentChannelId: tool.currentChannelId, currentThreadTs: tool.currentThreadTs };
}

// The session's last route that OpenClaw's Telegram message handler records
// with every inbound message (bot-message-*.mjs, buildTelegramInboundContextPayload,
// `updateLastRoute`: not exported, so its few lines are restated here from
// OpenClaw's own exported parts; README.md, "Routing functions").
function telegramLastRoute(seen, sessionKey, routing) {
  const mainSessionKey = routing.buildAgentMainSessionKey({ agentId: "main" });
  const route = { mainSessionKey, lastRoutePolicy: routing.deriveLastRoutePolicy({ sessionKey, mainSessionKey }) };
  const { threadSpec } = seen;
  const topic = threadSpec.scope === "forum" || threadSpec.scope === "direct-messages" ? threadSpec.id : undefined;
  const dmThread = threadSpec.scope === "dm" ? threadSpec.id : undefined;
  const threadId = seen.isGroup ? (topic != null ? String(topic) : undefined) : dmThread != null ? String(dmThread) : undefined;
  if (seen.isGroup && threadId == null) return undefined;
  return {
    sessionKey: routing.resolveInboundLastRouteSessionKey({ route, sessionKey }),
    channel: "telegram",
    to: seen.originatingTo,
    accountId: "default",
    threadId,
  };
}

const HEARTBEAT_EVERY_MS = 30 * 60_000; // agents.defaults.heartbeat.every
const busy = new Set();
let traceCfg = null;
let runner = null;
let inflight = 0;
// OpenClaw's heartbeat runner; each heartbeat it runs is OpenClaw's
// runHeartbeatOnce with two dependencies supplied: the agent's reply (a
// stub agent that relays every `Exec …` line of its prompt verbatim: the one
// part of the path that is a model in production) and the registry of
// running turns (the trace's turns).
function startRunner() {
  return api.startHeartbeatRunner({
    cfg: traceCfg,
    readCurrentConfig: () => {
      lastActivity = realPerf();
      activity++;
      return traceCfg;
    },
    runOnce: async (opts) => {
      inflight++;
      activity++;
      lastActivity = realPerf();
      try {
        const out = await api.runHeartbeatOnce({
          ...opts,
          deps: {
            ...opts.deps,
            getReplyFromConfig: async (ctx) => ({
              text: String(ctx.Body ?? "")
                .split("\n")
                .filter((l) => /^Exec (completed|failed)/.test(l))
                .join("\n"),
            }),
            isReplyRunActive: (k) => busy.has(k),
            listActiveReplyRunSessionKeys: () => [...busy],
          },
        });
        debug("heartbeat", opts.sessionKey ?? opts.agentId, opts.reason, JSON.stringify(out));
        return out;
      } finally {
        inflight--;
        activity++;
        lastActivity = realPerf();
      }
    },
  });
}
// Fires the due timers of the wake scheduler (in due order) until none is
// due, no heartbeat is running, and QUIET_POLLS turns of the event loop (at
// least QUIET_MS) saw no wake activity: counted in turns, not only in time,
// so a gateway the machine's load holds back does not end a settle early.
const QUIET_POLLS = 4;
const QUIET_MS = 15;
async function settle() {
  let quiet = 0;
  let seen = -1;
  for (;;) {
    const due = [...vtimers.values()].filter((t) => t.due <= traceNow).sort((a, b) => a.due - b.due || a.seq - b.seq);
    if (due.length) {
      for (const t of due) {
        vtimers.delete(t.seq);
        lastActivity = realPerf();
        activity++;
        t.fn();
      }
      quiet = 0;
      await sleep(1);
      continue;
    }
    if (inflight > 0 || activity !== seen) {
      seen = activity;
      quiet = 0;
    } else if (++quiet >= QUIET_POLLS && realPerf() - lastActivity >= QUIET_MS) {
      return;
    }
    await sleep(3);
  }
}

const methods = {
  // The agent of a thread's session calls the exec tool, built as OpenClaw's
  // agent runtime builds it for a run in that thread.
  async spawn({ tool, call, command, inbound }) {
    const seen = telegramInbound(inbound);
    debug("exec tool context", seen.currentChannelId, seen.currentThreadTs);
    const t = api.createExecTool({
      ...tool,
      ...(seen.currentChannelId != null ? { currentChannelId: seen.currentChannelId } : {}),
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
  // Every inbound message: OpenClaw's recordInboundSession, as the Telegram
  // message handler calls it (session metadata, and the session's last
  // route moved to this message's chat and topic).
  async record({ store, inbound }) {
    const seen = telegramInbound(inbound);
    let failed = null;
    await api.recordInboundSession({
      storePath: api.resolveSessionStorePathCore(store, { agentId: "main" }),
      sessionKey: inbound.sessionKey,
      ctx: seen.ctx,
      updateLastRoute: telegramLastRoute(seen, inbound.sessionKey, routing),
      onRecordError: (err) => {
        failed = err;
      },
    });
    if (failed) throw new Error(`recording the inbound message failed: ${failed?.message ?? failed}`);
    return null;
  },
  // A trace begins (or goes on in a fresh gateway after a restart): its
  // config and clock; OpenClaw's heartbeat runner (startHeartbeatRunner, as
  // the gateway server starts it: the wake handler of the session-event
  // wake scheduler) is started afresh, so no cooldown of an earlier trace
  // carries over. Wakes an earlier trace left pending are run first, while
  // every queue is empty, by a runner that is then thrown away.
  async begin({ cfg, now, skew: ahead, epoch: at }) {
    // What the previous trace compiled on first use (OpenClaw's lazily
    // loaded chunks) goes to the code cache for the next gateway.
    flushCompileCache();
    skew = ahead;
    epoch = at;
    traceCfg = cfg;
    busy.clear();
    runner?.stop();
    runner = startRunner();
    // Far ahead on the scheduler's clock, so no stale wake is left waiting.
    for (let i = 0; i < 3 && vtimers.size; i++) {
      skew = ahead + 1e12;
      traceNow = Number.MAX_SAFE_INTEGER;
      await settle();
    }
    skew = ahead;
    runner.stop();
    vtimers.clear();
    traceNow = now;
    runner = startRunner();
    await settle();
    return null;
  },
  // A turn of a session starts or ends: the heartbeat's busy check
  // (isReplyRunActive, listActiveReplyRunSessionKeys) sees the running turns.
  busy({ key, on }) {
    if (on) busy.add(key);
    else busy.delete(key);
    return null;
  },
  // The trace's clock moves: OpenClaw's clocks jump by `ms`; at every 30
  // minutes of it the agent's periodic heartbeat is requested as OpenClaw's
  // cron service requests it (source "interval", intent "scheduled").
  advance({ ms }) {
    const before = traceNow;
    traceNow += ms;
    skew += ms;
    const every = HEARTBEAT_EVERY_MS;
    if (Math.floor(traceNow / every) > Math.floor(before / every)) {
      api.requestSessionEventWake({
        source: "interval",
        intent: "scheduled",
        reason: "interval",
        agentId: "main",
        scheduledEveryMs: every,
      });
    }
    return { skew };
  },
  // Runs the wake scheduler's timers that are due on the trace's clock and
  // waits until OpenClaw is done with what they started.
  async settle() {
    await settle();
    return { pending: vtimers.size, skew };
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
  const t0 = realPerf();
  const c0 = process.cpuUsage();
  try {
    process.send({ id, result: await methods[method](args ?? {}) });
  } catch (e) {
    process.send({ id, error: `${e?.name ?? "Error"}: ${e?.message ?? e}` });
  }
  // Where a gateway's time goes (PROCROUTE_DEBUG): calls of 100 ms or more.
  if (process.env.PROCROUTE_DEBUG && realPerf() - t0 >= 100) {
    const c = process.cpuUsage(c0);
    debug("call", method, Math.round(realPerf() - t0), "ms,", Math.round((c.user + c.system) / 1000), "ms CPU");
  }
});
// The driver going away ends the gateway too.
process.on("disconnect", () => process.exit(0));
{
  const c = process.cpuUsage();
  debug("booted", Math.round(realPerf()), "ms,", Math.round((c.user + c.system) / 1000), "ms CPU");
}
flushCompileCache();
process.send({ ready: true, index: api.index });
