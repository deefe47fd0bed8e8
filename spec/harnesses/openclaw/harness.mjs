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
// the laws skip them. Traces are declared unsupported: OpenClaw's
// exec-completion path runs inside its agent runtime (exec tool, system-event
// queue drained by the heartbeat runner) and cannot be driven from a harness
// without re-implementing that runtime, which the protocol forbids (P-6).
import { createInterface } from "node:readline";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const dir = process.env.OPENCLAW_DIR;
if (!dir) {
  process.stderr.write("OPENCLAW_DIR must name the directory openclaw was installed into\n");
  process.exit(2);
}
const pkgDir = join(dir, "node_modules", "openclaw");
const pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
const routing = await import(pathToFileURL(join(pkgDir, pkg.exports["./plugin-sdk/routing"].default)).href);

// The chunk defining parseSessionDeliveryRoute, and its alias for it.
async function internal(name) {
  const dist = join(pkgDir, "dist");
  for (const file of readdirSync(dist)) {
    if (!file.endsWith(".mjs")) continue;
    const text = readFileSync(join(dist, file), "utf8");
    if (!text.includes(`function ${name}(`)) continue;
    const m = text.match(new RegExp(`\\b${name} as (\\w+)\\b`));
    if (!m) continue;
    const mod = await import(pathToFileURL(join(dist, file)).href);
    if (typeof mod[m[1]] === "function") return mod[m[1]];
  }
  throw new Error(`openclaw ${pkg.version}: no dist chunk exports ${name}`);
}
const parseSessionDeliveryRoute = await internal("parseSessionDeliveryRoute");

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

const reply = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");
const UNSUPPORTED = {
  hermes_build: "hermes-agent's dialect; OpenClaw has its own key grammar (checked by dialect_build)",
  hermes_parse: "hermes-agent's dialect; OpenClaw has its own key grammar (checked by dialect_parse)",
  canonical_build: "procroute's canonical dialect; OpenClaw has its own key grammar",
  canonical_parse: "procroute's canonical dialect; OpenClaw has its own key grammar",
  origin: "OpenClaw does not validate origins as a separate step",
  trace:
    "OpenClaw's exec completions are routed inside its agent runtime (exec tool, " +
    "system-event queue, heartbeat wake); no public entry point drives them without that runtime",
};

// Console output from the package must not reach the protocol channel.
console.log = (...a) => process.stderr.write(a.join(" ") + "\n");
console.info = console.log;

const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of rl) {
  if (!line.trim()) continue;
  let msg;
  try {
    msg = JSON.parse(line);
  } catch (e) {
    reply({ errored: `not JSON: ${e.message}` });
    continue;
  }
  if (msg.cmd === "start") {
    if (msg.version !== 1) {
      reply({ errored: `protocol version ${msg.version} not supported` });
      continue;
    }
    reply({
      protocol: 1,
      implementation: { name: "openclaw", version: pkg.version, language: "javascript" },
      operations: ["dialect_build", "dialect_parse"],
      unsupported: UNSUPPORTED,
      limits: { system_events_per_session: 20 },
      policies: POLICIES,
    });
  } else if (msg.cmd === "run") {
    const c = msg.case;
    try {
      if (c.op === "dialect_build") reply({ seq: msg.seq, result: dialectBuild(c.origin, c.policy) });
      else if (c.op === "dialect_parse") reply({ seq: msg.seq, result: dialectParse(c.key) });
      else reply({ seq: msg.seq, skipped: UNSUPPORTED[c.op] ?? `operation ${c.op} not supported` });
    } catch (e) {
      reply({ seq: msg.seq, errored: `${e.name}: ${e.message}` });
    }
  } else if (msg.cmd === "stop") {
    break;
  } else {
    reply({ errored: `unknown command ${JSON.stringify(msg.cmd)}` });
  }
}
process.exit(0);
