#!/usr/bin/env node
// procroute harness for OpenClaw (spec/PROTOCOL.md, version 1; P-10).
//
// Our code, importing the published package (npm `openclaw`, pinned to
// 2026.9.6 by run.sh, installed with --ignore-scripts into OPENCLAW_DIR).
// It exposes OpenClaw's own session-key dialect to the key-dialect laws:
//
//   dialect_build  buildAgentSessionKey (public, openclaw/plugin-sdk/routing)
//                  under the declared policy (POLICIES: dmScope
//                  "per-channel-peer" — the most isolating scope that needs
//                  no account id —, "per-peer", and a second agent), then, for a thread,
//                  resolveThreadSessionKeys (public) with its default
//                  thread-id normaliser.
//   dialect_parse  parseSessionDeliveryRoute, the function OpenClaw uses to
//                  read a delivery route back out of a session key. It is not
//                  re-exported by the plugin SDK, so we import the dist chunk
//                  that defines it and map its export alias from the chunk's
//                  `export { … }` line (aliases change per release).
//
// OpenClaw has no "thread" chat type (a thread is a suffix on a channel or
// group key), so origins of chat type thread are rejected as unsupported;
// the laws skip them. Traces run through OpenClaw's own exec runtime,
// system-event queue, heartbeat and Telegram channel (drive.mjs, whose
// header maps every trace op to the OpenClaw code that runs).
import { writeSync } from "node:fs";
import { openclaw } from "./openclaw.mjs";

// OpenClaw keeps state (its SQLite stores) under its state dir and HOME:
// private ones per harness process, never this machine's.
{
  const { mkdtempSync, rmSync } = await import("node:fs");
  const { tmpdir } = await import("node:os");
  process.env.OPENCLAW_STATE_DIR = mkdtempSync(`${tmpdir()}/procroute-openclaw-state-`);
  process.env.HOME = mkdtempSync(`${tmpdir()}/procroute-openclaw-home-`);
  const made = [process.env.OPENCLAW_STATE_DIR, process.env.HOME];
  process.on("exit", () => {
    for (const d of made) rmSync(d, { recursive: true, force: true });
  });
}
const dir = process.env.OPENCLAW_DIR;
if (!dir) {
  process.stderr.write("OPENCLAW_DIR must name the directory openclaw was installed into\n");
  process.exit(2);
}
const oc = openclaw(dir);
const pkg = oc.pkg;
const routing = await oc.routing();
const { parseSessionDeliveryRoute } = await oc.internals(["parseSessionDeliveryRoute"]);

// Traces (drive.mjs) need what OpenClaw itself needs: Node >= 24 (its session
// store is node:sqlite, its dependencies use ES2025 Set methods).
const NODE_MAJOR = Number(process.versions.node.split(".")[0]);
const TRACE_UNSUPPORTED =
  NODE_MAJOR >= 24 ? null : `OpenClaw ${pkg.version} needs Node >= 24 to run its exec runtime (this is ${process.version}); run.sh installs one`;
let drive = null;
async function runTrace(trace) {
  if (!drive) {
    const mod = await import("./drive.mjs");
    drive = { mod, api: await mod.init(dir, routing) };
  }
  try {
    return { trace: await drive.mod.runTrace(drive.api, trace, process.env.OPENCLAW_DM_SCOPE ?? "main") };
  } catch (e) {
    if (e instanceof drive.mod.Unexpressible) return { skipped: e.message };
    throw e;
  }
}

// What traces cannot use here (P-12): OpenClaw's channel code is driven for
// Telegram only (the fake Bot API), so threads are Telegram chats and topics
// with Telegram's id shapes; trace features without a driven counterpart yet
// are left out of generated traces, each with its reason.
const CONSTRAINTS = [
  { fields: ["platform"], one_of: ["telegram"],
    reason: "the harness drives OpenClaw's Telegram channel against a fake Telegram Bot API; other channels need their own fake" },
  { fields: ["chat_type"], one_of: ["dm", "group", "channel"],
    reason: "Telegram has private chats, groups and channels; a thread is a forum topic (thread_id) of a group" },
  { fields: ["chat_id"], integer: true, max_len: 14,
    reason: "Telegram chat ids are integers of at most 52 bits (-100xxxxxxxxxx); OpenClaw's Telegram channel refuses any other recipient" },
  { fields: ["thread_id"], integer: true, max_len: 9,
    reason: "Telegram forum topic ids (message_thread_id) are 32-bit message ids" },
  { ops: ["watch"], reason: "OpenClaw's exec tool has no output watch patterns; its only process notification is notifyOnExit" },
  { ops: ["shutdown", "reset"],
    reason: "not driven: OpenClaw's shutdown and /new reset run in its gateway server (server lifecycle, performGatewaySessionReset with the server's runtime config), which the harness does not start; neither sends a process notification (README.md, inventory)" },
];

const PEER_KIND = { dm: "direct", group: "group", channel: "channel" };
const CHAT_TYPE = { direct: "dm", dm: "dm", group: "group", channel: "channel" };

// Policies for the key laws (P-10): OpenClaw's DM scopes that need no
// account id, and a second agent (its profile-like namespace). Each object
// is what buildAgentSessionKey takes besides the peer.
const POLICIES = {
  "per-channel-peer": { agentId: "main", dmScope: "per-channel-peer" },
  "per-peer": { agentId: "main", dmScope: "per-peer" },
  "agent-ops": { agentId: "ops", dmScope: "per-channel-peer" },
};

function dialectBuild(o, policy) {
  const kind = PEER_KIND[o.chat_type];
  if (!kind) return { error: { kind: "unsupported_chat_type" } };
  const p = policy ?? POLICIES["per-channel-peer"];
  const base = routing.buildAgentSessionKey({
    agentId: p.agentId,
    channel: o.platform,
    peer: { kind, id: o.chat_id },
    dmScope: p.dmScope,
  });
  if (o.thread_id == null) return { key: base };
  return { key: routing.resolveThreadSessionKeys({ baseSessionKey: base, threadId: o.thread_id }).sessionKey };
}

function dialectParse(key) {
  const r = parseSessionDeliveryRoute(key);
  if (!r) return { route: null };
  const chatType = CHAT_TYPE[r.peerKind];
  if (!chatType) return { route: null };
  const route = { platform: r.channel, chat_type: chatType, chat_id: r.peerId };
  if (r.threadId != null) route.thread_id = r.threadId;
  return { route };
}

// The protocol owns fd 1; anything OpenClaw prints (its loggers write to
// process.stdout) goes to stderr.
process.stdout.write = process.stderr.write.bind(process.stderr);
const UNSUPPORTED = {
  hermes_build: "hermes-agent's dialect; OpenClaw has its own key grammar (checked by dialect_build)",
  hermes_parse: "hermes-agent's dialect; OpenClaw has its own key grammar (checked by dialect_parse)",
  canonical_build: "procroute's canonical dialect; OpenClaw has its own key grammar",
  canonical_parse: "procroute's canonical dialect; OpenClaw has its own key grammar",
  origin: "OpenClaw does not validate origins as a separate step",
};

// Console output from the package must not reach the protocol channel.
console.log = (...a) => process.stderr.write(a.join(" ") + "\n");
console.info = console.log;

// The protocol loop is procroute/harness (npm `procroute`; from a checkout,
// packaging/npm/procroute/harness.mjs): this file declares and runs cases.
let helper;
try {
  helper = await import("procroute/harness");
} catch {
  helper = await import(new URL("../../../packaging/npm/procroute/harness.mjs", import.meta.url));
}
const { Harness, Skip } = helper;

class OpenClaw extends Harness {
  name = "openclaw";
  version = pkg.version;
  language = "javascript";
  unsupported = TRACE_UNSUPPORTED ? { ...UNSUPPORTED, trace: TRACE_UNSUPPORTED } : UNSUPPORTED;
  constraints = CONSTRAINTS;
  limits = { system_events_per_session: 20 };
  policies = POLICIES;

  operations() {
    return ["dialect_build", "dialect_parse", ...(TRACE_UNSUPPORTED ? [] : ["trace"])];
  }

  dialect_build(c) {
    return dialectBuild(c.origin, c.policy);
  }

  dialect_parse(c) {
    return dialectParse(c.key);
  }

  async trace(t) {
    if (TRACE_UNSUPPORTED) throw new Skip(TRACE_UNSUPPORTED);
    const r = await runTrace(t);
    if (r.skipped) throw new Skip(r.skipped);
    return r.trace;
  }
}

// Protocol lines go to fd 1 itself: process.stdout is the package's (stderr).
await new OpenClaw().serve(process.stdin, (line) => writeSync(1, line));
process.exit(0);
