// Drives one procroute trace (spec/PROTOCOL.md, P-8) through OpenClaw's own
// code. This is our code; everything that decides anything is OpenClaw's,
// running in a gateway process (gateway.mjs, a child process, so a crash
// can kill it and start a fresh one):
//
//   trace op        what happens here (OpenClaw 2026.9.6 code that runs)
//   -------------   ----------------------------------------------------------
//   spawn t p       the agent of t's session calls OpenClaw's exec tool
//                   (createExecTool, built as the agent runtime builds it for
//                   a run in thread t: session key and process scope,
//                   messageProvider "telegram", currentChannelId and
//                   currentThreadTs from the agent runtime's
//                   buildThreadingToolContext of t's inbound context, e.g.
//                   `telegram:-1001:topic:7` and `7`) with background:
//                   true; notifyOnExit is the
//                   spawn's notify flag. A real shell process runs (OpenClaw's
//                   process supervisor); its lines come from a FIFO we write.
//   output p text   we write `text` to the FIFO; we wait until OpenClaw's
//                   exec session has aggregated it.
//   exit p code     we tell the process to exit with `code`; OpenClaw's exit
//                   handling runs maybeNotifyOnExit, which enqueues the
//                   system event `Exec completed|failed (…)` for the session
//                   key with the delivery context captured at spawn.
//   kill p          SIGKILL to the process from outside (not the agent's own
//                   process(kill), a manual cancel OpenClaw stays silent on).
//   message t       an inbound message in thread t, as the Telegram Bot API
//                   delivers it (a message object: numeric chat and topic
//                   ids, a forum supergroup for a topic); OpenClaw's own
//                   Telegram helpers make its inbound context
//                   (resolveTelegramMessageThreadSpec,
//                   buildTelegramInboundOriginTarget, buildTelegramGroupFrom)
//                   and OpenClaw's recordInboundSession records it, for
//                   every message, as the Telegram message handler does:
//                   session metadata and the session's last route moved to
//                   this chat and topic (updateSessionLastRoute).
//   turn_start t /  t's session has a reply run in flight / no longer: the
//   turn_end t      heartbeat's busy check (isReplyRunActive,
//                   listActiveReplyRunSessionKeys) sees it.
//   read t p        the agent of t's session polls p (OpenClaw's process
//                   tool, createProcessTool, scoped to t's session key as
//                   the agent runtime scopes it): a poll that sees the end
//                   marks it observed and withdraws a queued completion.
//   advance ms      moves the trace's clock: the clocks of OpenClaw's wake
//                   scheduler and heartbeat runner scheduler jump by ms (their
//                   cooldowns, spacing and retries run on the trace's clock,
//                   gateway.mjs), and every 30 minutes of it OpenClaw's
//                   periodic heartbeat is requested, as its cron service
//                   requests it.
//   adapter up/down while down, the fake Telegram Bot API answers every call
//                   with 502 Bad Gateway (the adapter's state, not
//                   OpenClaw's); on coming back up, Telegram's reconnect
//                   drain of the outbound queue (drainPendingDeliveries).
//   restart s       the gateway crashes: its process is killed (exec
//                   sessions, system-event queues, wake state: all in
//                   memory, all gone; the session store and the outbound
//                   queue are files and stay) and a fresh one starts. With
//                   survive false the processes are killed first; with true
//                   they keep running, known to no gateway (OpenClaw has no
//                   checkpoint of them). Every turn ends.
//
// After every op the gateway settles: the wake scheduler's timers that are
// due on the trace's clock fire (maybeNotifyOnExit's wake: at once; a wake
// skipped because the session is busy: 1 s later; one deferred by the
// heartbeat runner's cooldown: when that ends), and OpenClaw's heartbeat
// runner runs runHeartbeatOnce with the agent's reply produced by a stub
// agent (deps.getReplyFromConfig) that relays every `Exec …` line of its
// prompt verbatim — the one part of the path that is a model in
// production. Its reply goes out through OpenClaw's real Telegram channel
// code to a fake Telegram Bot API on 127.0.0.1 (channels.telegram.apiRoot);
// every sendMessage it receives is a delivery, to the chat and topic it
// names, for each process whose event the heartbeat consumed, with the
// message's line that is that event. An event consumed without a message
// naming it is a dead letter (no_route when it carried no target).
import { mkdtempSync, rmSync, openSync, closeSync, writeSync, existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { createServer } from "node:http";
import { execFileSync } from "node:child_process";
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";

const WAIT_MS = 10_000;
const CALL_MS = 60_000;
const debug = (...a) => {
  if (process.env.PROCROUTE_DEBUG) console.error("[drive]", Math.round(performance.now()), ...a);
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export class Unexpressible extends Error {}

// The trace's clock is OpenClaw's where it decides when a completion is
// answered (the wake scheduler and the heartbeat runner's scheduler run on
// it: gateway.mjs); elsewhere OpenClaw keeps the machine's clock, which its
// delivery queue's leases need (a skewed clock in one thread breaks them:
// "Delivery platform claim was lost").

// One OpenClaw gateway: a child process running gateway.mjs.
class Gateway {
  static async start(dir) {
    const child = fork(fileURLToPath(new URL("./gateway.mjs", import.meta.url)), [], {
      env: {
        ...process.env,
        OPENCLAW_DIR: dir,
        ...(Gateway.index ? { PROCROUTE_OPENCLAW_INDEX: JSON.stringify(Gateway.index) } : {}),
      },
      // The protocol owns the harness's fd 1: whatever OpenClaw prints goes
      // to stderr.
      stdio: ["ignore", "pipe", "inherit", "ipc"],
    });
    child.stdout.pipe(process.stderr);
    const gw = new Gateway(child);
    await new Promise((resolve, reject) => {
      gw.ready = resolve;
      child.once("error", reject);
      child.once("exit", (code, sig) => reject(new Error(`OpenClaw gateway exited (${code ?? sig}) while starting`)));
    });
    return gw;
  }

  constructor(child) {
    this.child = child;
    this.next = 0;
    this.waiting = new Map();
    this.dead = null;
    child.on("message", (m) => {
      if (m.ready) {
        Gateway.index ??= m.index;
        return this.ready?.();
      }
      const w = this.waiting.get(m.id);
      if (!w) return;
      this.waiting.delete(m.id);
      clearTimeout(w.timer);
      if (m.error) w.reject(new Error(`OpenClaw ${w.method}: ${m.error}`));
      else w.resolve(m.result);
    });
    const fail = (why) => {
      this.dead ??= why;
      for (const w of this.waiting.values()) {
        clearTimeout(w.timer);
        w.reject(new Error(`OpenClaw gateway ${why} during ${w.method}`));
      }
      this.waiting.clear();
    };
    child.on("error", (e) => fail(`failed (${e?.message ?? e})`));
    child.on("exit", (code, sig) => fail(`exited (${code ?? sig})`));
  }

  call(method, args) {
    if (this.dead) return Promise.reject(new Error(`OpenClaw gateway ${this.dead}`));
    const id = this.next++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        reject(new Error(`OpenClaw ${method}: no answer in ${CALL_MS} ms`));
      }, CALL_MS);
      this.waiting.set(id, { resolve, reject, timer, method });
      this.child.send({ id, method, args });
    });
  }

  // A gateway booted ahead of a restart the trace has coming (booting takes
  // seconds: OpenClaw's module graph): it has only loaded OpenClaw's
  // modules, touched no state and run nothing, so taking it over at the
  // restart is the same as booting then.
  static spare(api) {
    if (!api.spare) {
      api.spare = Gateway.start(api.dir);
      api.spare.catch(() => {});
    }
  }

  static async next(api) {
    const gw = api.spare ?? Gateway.start(api.dir);
    api.spare = null;
    return await gw;
  }

  // A crash: SIGKILL, no shutdown code runs.
  async crash() {
    this.dead = "killed (a gateway crash)";
    const gone = new Promise((r) => this.child.once("exit", r));
    this.child.kill("SIGKILL");
    await gone;
  }
}

export async function init(dir, routing) {
  const api = { routing, dir, skew: 0, epoch: Date.now(), gateway: await Gateway.start(dir) };
  // The working directory of every process the exec tool starts: one per
  // harness process, not one per trace. OpenClaw's exec runtime keys its
  // login-shell snapshot by the working directory (shell-snapshot.ts:
  // captured by an interactive shell that runs a Node process, then
  // checked by another shell); per trace, every trace's first exec paid for
  // a new one. The shell, its environment and the command are the same for
  // every trace, and so is the snapshot; the processes read only their
  // FIFOs, which stay in the trace's own directory.
  api.cwd = mkdtempSync(join(tmpdir(), "procroute-openclaw-cwd-"));
  process.on("exit", () => rmSync(api.cwd, { recursive: true, force: true }));
  // The fake Telegram Bot API: records every call, answers like Telegram.
  // It lives here, not in the gateway: the platform outlives a crash.
  const calls = [];
  const server = createServer((req, res) => {
    let data = "";
    req.on("data", (c) => (data += c));
    req.on("end", () => {
      let body = {};
      try {
        body = JSON.parse(data || "{}");
      } catch {
        body = { raw: data };
      }
      const method = String(req.url).split("/").pop();
      // While the trace has the adapter down, Telegram answers every call
      // with a server error (the adapter's state is not the gateway's).
      if (api.down && method !== "getMe") {
        calls.push({ method, body, failed: true });
        res.statusCode = 502;
        res.setHeader("content-type", "application/json");
        res.end(JSON.stringify({ ok: false, error_code: 502, description: "Bad Gateway" }));
        return;
      }
      calls.push({ method, body });
      const chatId = Number(body.chat_id) || 0;
      const result =
        method === "getMe"
          ? { id: 1, is_bot: true, first_name: "procroute", username: "procroute_bot" }
          : {
              message_id: calls.length,
              date: 0,
              chat: { id: chatId, type: chatId < 0 ? "supergroup" : "private" },
              text: body.text,
              ...(body.message_thread_id != null
                ? { message_thread_id: body.message_thread_id, is_topic_message: true }
                : {}),
            };
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ ok: true, result }));
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  server.unref();
  api.calls = calls;
  api.apiRoot = `http://127.0.0.1:${server.address().port}`;
  return api;
}

// The session key OpenClaw's routing gives thread `o` (public routing
// functions; DMs under the configured dmScope, default "main").
function sessionKeyOf(api, o, dmScope) {
  const kind = o.chat_type === "dm" ? "direct" : o.chat_type;
  const base = api.routing.buildAgentSessionKey({
    agentId: "main",
    channel: o.platform,
    peer: { kind, id: o.chat_id },
    dmScope,
  });
  if (o.thread_id == null) return base;
  return api.routing.resolveThreadSessionKeys({ baseSessionKey: base, threadId: o.thread_id }).sessionKey;
}

// Whether a process has not ended yet. A process of a crashed gateway
// that has exited stays a zombie until init reaps it, on init's own
// schedule (here every 2 s or so); it has ended all the same, and waiting
// for the reaping cost 2 s per such process.
const PROC_STAT = existsSync("/proc/self/stat");
const alive = (pid) => {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  if (!PROC_STAT) return true;
  let stat;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return false; // gone between the two looks
  }
  const state = stat.charAt(stat.lastIndexOf(")") + 2);
  return state !== "Z" && state !== "X";
};

export async function runTrace(api, trace, dmScope = "main") {
  const work = mkdtempSync(join(tmpdir(), "procroute-openclaw-"));
  const cfg = {
    agents: { defaults: {} },
    session: { store: join(work, "sessions.sqlite"), dmScope },
    channels: { telegram: { enabled: true, botToken: "123456:procroute", apiRoot: api.apiRoot } },
    tools: { exec: { host: "gateway", security: "full", ask: "off" } },
  };
  // OpenClaw's durable state outside the session store (the outbound
  // delivery queue) lives under the harness process's state dir, shared by
  // its traces (a state dir per trace opens SQLite stores OpenClaw never
  // closes, up to its limit of 64). A send an earlier trace left queued
  // can only be drained to that trace's chats, with text naming that
  // trace's exec sessions: no delivery of this trace is attributed to it.
  await api.gateway.call("resetEvents");
  await api.gateway.call("begin", { cfg, now: 0, skew: api.skew, epoch: api.epoch });
  const restarts = trace.ops.filter((op) => typeof op === "object" && "restart" in op).length;
  let restarted = 0;
  if (restarts > 0) Gateway.spare(api);
  api.calls.length = 0;
  const threads = trace.threads;
  const keys = threads.map((o) => sessionKeyOf(api, o, dmScope));
  const runs = new Map(); // process name -> { id, pid, fifo, fd, thread, gateway }
  const byId = new Map(); // OpenClaw exec session id -> process name
  const homeById = new Map(); // OpenClaw exec session id -> the spawning thread
  const deliveries = [];
  const deadLetters = [];
  let fifoN = 0;
  let now = 0; // the trace's clock (ms): only `advance` moves it
  api.down = false;
  const gw = () => api.gateway;

  const waitFor = async (what, ok) => {
    const until = Date.now() + WAIT_MS;
    while (!(await ok())) {
      if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
      await sleep(5);
    }
  };

  // Which trace thread a Telegram send went to (chat + topic), as P-8's
  // destination; a destination no thread has is reported as sent.
  const destination = (body) => {
    const chat = String(body.chat_id);
    const topic = body.message_thread_id != null ? String(body.message_thread_id) : undefined;
    const home = threads.find((o) => o.chat_id === chat && (o.thread_id ?? undefined) === topic);
    const chatType = home?.chat_type ?? threads.find((o) => o.chat_id === chat)?.chat_type ?? "group";
    return { platform: "telegram", chat_type: chatType, chat_id: chat, ...(topic ? { thread_id: topic } : {}) };
  };

  // OpenClaw's own wake scheduler decides when a completion is answered:
  // maybeNotifyOnExit requests a session-event wake, the scheduler (its
  // timers on the trace's clock, gateway.mjs) runs OpenClaw's heartbeat
  // runner, whose busy check, cooldowns and retries are OpenClaw's. After
  // every op the gateway settles (runs what is due on the trace's clock);
  // the events that were queued before and are gone after were consumed,
  // and every message the fake Bot API received meanwhile is attributed to
  // the events whose lines it carries. A send that failed leaves its events
  // queued; OpenClaw's periodic heartbeat (every 30 minutes of the trace's
  // clock, requested as its cron service requests it) may answer them.
  const seen = new Map(); // event id -> every exec event seen in a queue
  // Each event's notification is its own line of a message: the stub agent
  // relays each event's line of the prompt verbatim (the event text, or for
  // a failure without output the text and " without captured
  // stdout/stderr."). The process is named in it only by the first 8
  // characters of its exec session id, which two processes can share, so
  // lines are matched by their whole text. Returns the events found.
  const attribute = (step, calls, events) => {
    const found = new Set();
    const sent = calls.filter((c) => c.method === "sendMessage" && !c.failed);
    for (const e of events) {
      const id = String(e.contextKey ?? "").replace(/^exec:/, "");
      const line = e.text.trim();
      for (const s of sent) {
        const mine = String(s.body.text ?? "")
          .split("\n")
          .filter((l) => l.trim() === line || l.trim() === `${line} without captured stdout/stderr.`)
          .join("\n");
        if (!mine) continue;
        found.add(e.id);
        deliveries.push({ step, destination: destination(s.body), process: byId.get(id) ?? null, kind: "completion", text: mine });
      }
    }
    return found;
  };
  const settle = async (step) => {
    const before = api.calls.length;
    const pending = new Map();
    for (const key of new Set(keys)) {
      for (const e of await gw().call("peek", { key })) {
        if (!/^Exec /.test(e.text)) continue;
        pending.set(e.id, e);
        seen.set(e.id, e);
      }
    }
    await gw().call("settle");
    const left = new Set();
    for (const key of new Set(keys)) for (const e of await gw().call("peek", { key })) left.add(e.id);
    const consumed = [...pending.values()].filter((e) => !left.has(e.id));
    if (consumed.length) debug("consumed", consumed.map((e) => e.text));
    const found = attribute(step, api.calls.slice(before), consumed);
    for (const e of consumed) {
      if (found.has(e.id)) continue;
      const id = String(e.contextKey ?? "").replace(/^exec:/, "");
      const quiet = /^Exec completed \([^)]*, code 0\)$/.test(e.text.trim());
      // The event's delivery context names its target as OpenClaw does
      // (`telegram:<chat>[:topic:<n>]`, the agent runtime's
      // currentChannelId): the chat and topic it means. An event without
      // one had no route: a dead letter with that reason, reported at the
      // thread that started the process (P-8 wants a destination).
      const target = String(e.to ?? "").match(/^(?:telegram:)?(-?\d+)(?::topic:(\d+))?$/);
      const home = homeById.has(id) ? threads[homeById.get(id)] : null;
      if (!target && !quiet) {
        deadLetters.push({
          step,
          destination: home ? destination({ chat_id: home.chat_id, message_thread_id: home.thread_id }) : destination({ chat_id: "unknown" }),
          process: byId.get(id) ?? null,
          kind: "completion",
          text: e.text,
          reason: `consumed without a message, and its event carried no delivery target (no message of OpenClaw's heartbeat named it)`,
          cause: "no_route",
        });
        continue;
      }
      deadLetters.push({
        step,
        destination: target ? destination({ chat_id: target[1], message_thread_id: target[2] ?? e.threadId }) : destination({ chat_id: home?.chat_id ?? "unknown", message_thread_id: home?.thread_id }),
        process: byId.get(id) ?? null,
        kind: "completion",
        text: e.text,
        reason: quiet
          ? "consumed without a message: OpenClaw's exec prompt leaves out a successful completion without output (formatExecEventPromptText)"
          : "consumed by OpenClaw's heartbeat without a message naming it",
      });
    }
  };

  // Thread t's message as the Telegram Bot API delivers it (numbers for
  // ids; a topic of a forum supergroup, a thread of a private chat); the
  // gateway turns it into OpenClaw's inbound context with OpenClaw's own
  // Telegram helpers.
  const inbound = (t, step) => {
    const o = threads[t];
    const type = o.chat_type === "dm" ? "private" : o.chat_type === "channel" ? "channel" : "supergroup";
    const forum = type === "supergroup" && o.thread_id != null;
    const sender = /^[1-9]\d{0,14}$/.test(o.user_id ?? "") ? Number(o.user_id) : 1000 + t;
    return {
      cfg,
      sessionKey: keys[t],
      message: {
        message_id: step + 1,
        date: 0,
        chat: { id: Number(o.chat_id), type, ...(forum ? { is_forum: true } : {}) },
        from: { id: sender, is_bot: false, first_name: "procroute" },
        ...(o.thread_id != null ? { message_thread_id: Number(o.thread_id), ...(forum ? { is_topic_message: true } : {}) } : {}),
      },
    };
  };

  // A run still known to the gateway that started it (not lost in a crash).
  const current = (r) => r.gateway === api.gateway;
  const running = (name) => {
    const r = runs.get(name);
    if (!r || r.ended) return null;
    return r;
  };
  const ended = async (r) => {
    if (!current(r)) return !alive(r.pid);
    const s = await gw().call("session", { id: r.id });
    return !s || s.exited;
  };

  try {
    for (let step = 0; step < trace.ops.length; step++) {
      const op = trace.ops[step];
      const [kind, arg] = typeof op === "string" ? [op, {}] : Object.entries(op)[0];
      switch (kind) {
        case "message":
          await gw().call("record", { store: cfg.session.store, inbound: inbound(arg.thread, step) });
          break;
        case "turn_start":
        case "turn_end":
          await gw().call("busy", { key: keys[arg.thread], on: kind === "turn_start" });
          break;
        case "spawn": {
          const fifo = join(work, `fifo${fifoN++}`);
          execFileSync("mkfifo", [fifo]);
          const fd = openSync(fifo, "r+");
          const command =
            `exec 3<${fifo}; while IFS= read -r l <&3; do case "$l" in ` +
            `__exit__*) exit \${l#__exit__ };; *) printf '%s\\n' "$l";; esac; done`;
          const { id, pid } = await gw().call("spawn", {
            inbound: inbound(arg.thread, step),
            tool: {
              sessionKey: keys[arg.thread],
              scopeKey: keys[arg.thread],
              agentId: "main",
              messageProvider: "telegram",
              accountId: "default",
              notifyOnExit: arg.notify === true,
              host: "gateway",
              security: "full",
              ask: "off",
              cwd: api.cwd,
              config: cfg,
            },
            call: `call-${step}`,
            command,
          });
          runs.set(arg.process, { id, pid, fifo, fd, thread: arg.thread, gateway: api.gateway });
          byId.set(id, arg.process);
          homeById.set(id, arg.thread);
          break;
        }
        case "output": {
          const r = running(arg.process);
          if (!r) break;
          if (arg.text.startsWith("__exit__")) throw new Unexpressible("output line collides with the harness's exit marker");
          const payload = arg.text.endsWith("\n") ? arg.text : `${arg.text}\n`;
          writeSync(r.fd, payload);
          // The generator puts a unique token on every line; wait until
          // OpenClaw's session has the last one (lines without one, or a
          // process no running gateway reads: a short pause for the pipe).
          const want = arg.text.match(/tok\d+of[A-Za-z0-9_]+/g)?.at(-1);
          if (want && current(r)) {
            await waitFor(`output of ${arg.process}`, async () => {
              const s = await gw().call("session", { id: r.id });
              return String(s?.aggregated ?? "").includes(want);
            });
          } else {
            await sleep(50);
          }
          break;
        }
        case "exit":
        case "kill": {
          const r = running(arg.process);
          if (!r) break;
          if (kind === "exit") writeSync(r.fd, `__exit__ ${arg.code}\n`);
          else {
            try {
              process.kill(r.pid, "SIGKILL");
            } catch {}
          }
          // Ended, and OpenClaw's exit handling has decided on the event
          // (maybeNotifyOnExit sets exitNotified before enqueueing).
          await waitFor(`end of ${arg.process}`, async () => {
            if (!current(r)) return !alive(r.pid);
            const s = await gw().call("session", { id: r.id });
            return Boolean(s?.exited) && (!s.notifyOnExit || !s.backgrounded || s.exitNotified === true);
          });
          await sleep(20);
          r.ended = true;
          closeSync(r.fd);
          break;
        }
        case "read": {
          // The agent of the thread's session polls the process (OpenClaw's
          // process tool, scoped to that session key: another session's
          // agent does not see it).
          const r = runs.get(arg.process);
          if (!r || !current(r)) break;
          const out = await gw().call("read", { scopeKey: keys[arg.thread], call: `call-${step}`, id: r.id });
          debug("read", arg.process, "from", keys[arg.thread], out);
          break;
        }
        case "advance":
          now += arg.ms;
          api.skew += arg.ms;
          await gw().call("advance", { ms: arg.ms });
          break;
        case "adapter": {
          const wasDown = api.down;
          api.down = arg.up === false;
          if (wasDown && !api.down) {
            // Telegram's polling monitor, on reconnect, drains the outbound
            // delivery queue (sends a failed or interrupted send left
            // there): OpenClaw's drainPendingDeliveries, as it calls it.
            const before = api.calls.length;
            await gw().call("drain", { cfg });
            attribute(step, api.calls.slice(before), [...seen.values()]);
          }
          break;
        }
        case "restart": {
          // The gateway process dies. Its children die with it unless the
          // trace says they survive (survive: true), and then no gateway
          // knows them: OpenClaw keeps no checkpoint of exec sessions.
          if (!arg.survive) {
            for (const r of runs.values()) {
              if (r.ended) continue;
              try {
                process.kill(r.pid, "SIGKILL");
              } catch {}
              r.ended = true;
              closeSync(r.fd);
            }
          }
          await api.gateway.crash();
          api.gateway = await Gateway.next(api);
          if (++restarted < restarts) Gateway.spare(api);
          await gw().call("begin", { cfg, now, skew: api.skew, epoch: api.epoch });
          break;
        }
        default:
          throw new Unexpressible(`trace op ${kind} is not driven by this harness yet`);
      }
      if (process.env.PROCROUTE_DEBUG) {
        const counts = [];
        for (const k of keys) counts.push((await gw().call("peek", { key: k })).length);
        debug("step", step, kind, JSON.stringify(arg), "pending", counts);
      }
      await settle(step);
    }
  } finally {
    // Processes still running at the end are killed, and we wait for the
    // gateway to finish their exit handling: a late completion event would
    // otherwise land in the next trace's queue (DM sessions share a key).
    for (const r of runs.values()) {
      if (r.ended) continue;
      try {
        process.kill(r.pid, "SIGKILL");
      } catch {}
      try {
        await waitFor(`end of ${r.id}`, () => ended(r));
      } catch {}
      try {
        closeSync(r.fd);
      } catch {}
    }
    await sleep(20);
    try {
      await gw().call("resetEvents");
    } catch {}
    rmSync(work, { recursive: true, force: true });
  }
  return { deliveries, dead_letters: deadLetters };
}
