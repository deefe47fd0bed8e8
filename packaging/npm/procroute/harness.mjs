// Write a procroute harness by writing only your gateway's handlers (the
// Node twin of the Python package's procroute.harness).
//
// A harness speaks the protocol of spec/PROTOCOL.md (version 1) on stdin
// and stdout: a handshake, then one case per line. `Harness` owns all of
// it — the JSON-lines loop, the handshake built from what you declare, the
// answer's shape, skips and errors — so a subclass only answers cases:
//
//   import { Harness, Report } from "procroute/harness";
//
//   class MyGateway extends Harness {
//     name = "my-gateway";
//     version = "1.2.0";
//     async trace(trace) {               // P-8: run the ops, report
//       const report = new Report();
//       // … drive your gateway's own code …
//       report.deliver(step, destination, process, kind, text);
//       return report;
//     }
//   }
//   await new MyGateway().serve();
//
// Define any of `trace`, `hermes_build`, `canonical_build`,
// `canonical_parse`, `hermes_parse`, `origin`, `dialect_build`,
// `dialect_parse` (sync or async): the operations you define are the ones
// declared. Throw `Skip` for a case your gateway cannot express (reported
// as skipped, never passed); any other error is the case's error, and the
// run goes on. Only protocol lines go to stdout: `console.log` of a
// handler is sent to stderr while it runs.


export const PROTOCOL = 1;
export const KEY_OPERATIONS = [
  "hermes_build",
  "canonical_build",
  "canonical_parse",
  "hermes_parse",
  "origin",
  "dialect_build",
  "dialect_parse",
];
export const OPERATIONS = [...KEY_OPERATIONS, "trace"];
export const KINDS = ["watch_match", "watch_disabled", "completion", "shutdown"];
export const CAUSES = ["adapter_failed", "backpressure", "no_route", "origin_conflict"];

/** Thrown by a handler: this case is not run, for this reason (P-6, P-12). */
export class Skip extends Error {}

/** What a gateway reported for one trace (P-8). */
export class Report {
  deliveries = [];
  dead_letters = [];

  static #notification(step, destination, process, kind, text, reason, cause) {
    if (!KINDS.includes(kind)) throw new TypeError(`kind ${JSON.stringify(kind)} is not one of ${KINDS}`);
    if (cause !== undefined && !CAUSES.includes(cause)) {
      throw new TypeError(`cause ${JSON.stringify(cause)} is not one of ${CAUSES}`);
    }
    const d = {};
    for (const k of ["platform", "chat_type", "chat_id", "thread_id"]) {
      if (destination[k] !== undefined && destination[k] !== null) d[k] = destination[k];
    }
    const n = { step, destination: d, process: process ?? null, kind, text };
    if (reason !== undefined) n.reason = reason;
    if (cause !== undefined) n.cause = cause;
    return n;
  }

  /** The adapter accepted a notification during op `step`. */
  deliver(step, destination, process, kind, text) {
    this.deliveries.push(Report.#notification(step, destination, process, kind, text));
  }

  /** A notification given up on, with its reason in words (and its typed cause). */
  deadLetter(step, destination, process, kind, text, reason, cause) {
    if (!reason) throw new TypeError("a dead letter carries its reason (P-8)");
    this.dead_letters.push(Report.#notification(step, destination, process, kind, text, reason, cause));
  }

  toJSON() {
    return { deliveries: this.deliveries, dead_letters: this.dead_letters };
  }
}

/**
 * Lines end at "\n" only (P-1): node:readline would also split at "\r"
 * and at U+2028, which a JSON string may hold raw.
 */
export async function* protocolLines(input) {
  let buf = "";
  if (typeof input.setEncoding === "function") input.setEncoding("utf8");
  for await (const chunk of input) {
    buf += chunk;
    let at;
    while ((at = buf.indexOf("\n")) >= 0) {
      yield buf.slice(0, at);
      buf = buf.slice(at + 1);
    }
  }
  if (buf) yield buf;
}

/** The protocol's side of a harness: subclass it, declare, define, serve. */
export class Harness {
  name = "gateway";
  version = "0";
  language = "javascript";
  // Optional http(s) links shown in every report (P-2).
  homepage = undefined;
  source = undefined;
  issues = undefined;
  // Optional declarations (P-2, P-10, P-12..P-15); undefined leaves one out.
  unsupported = undefined;
  limits = undefined;
  policies = undefined;
  constraints = undefined;
  steer = undefined;
  tick_ms = undefined;
  read_acknowledges = undefined;

  /** The operations this harness defines, in protocol order. */
  operations() {
    return OPERATIONS.filter((op) => typeof this[op] === "function");
  }

  /** The answer to `start` (P-2). */
  handshake() {
    const implementation = { name: this.name, version: this.version, language: this.language };
    for (const k of ["homepage", "source", "issues"]) if (this[k]) implementation[k] = this[k];
    const answer = { protocol: PROTOCOL, implementation, operations: this.operations() };
    for (const k of ["unsupported", "limits", "policies", "constraints", "steer", "tick_ms", "read_acknowledges"]) {
      if (this[k] !== undefined) answer[k] = this[k];
    }
    return answer;
  }

  /** One case's `result` (P-3, P-8). */
  async runCase(c) {
    const op = c?.op;
    if (!OPERATIONS.includes(op) || typeof this[op] !== "function") {
      throw new Skip(`operation ${JSON.stringify(op)} not supported`);
    }
    if (op === "trace") {
      const report = await this.trace(c.trace);
      return { trace: report instanceof Report ? report.toJSON() : report };
    }
    return await this[op](c);
  }

  /** The reply to one message, or null for `stop`. */
  async answer(message) {
    const cmd = message?.cmd;
    if (cmd === "start") {
      if (message.version !== PROTOCOL) {
        return { errored: `protocol version ${message.version} is not supported (only ${PROTOCOL})` };
      }
      return this.handshake();
    }
    if (cmd === "run") {
      const seq = message.seq;
      const log = console.log;
      console.log = (...a) => console.error(...a);
      try {
        return { seq, result: await this.runCase(message.case) };
      } catch (e) {
        if (e instanceof Skip) return { seq, skipped: e.message || "not supported" };
        return { seq, errored: `${e?.name ?? "Error"}: ${e?.message ?? e}` };
      } finally {
        console.log = log;
      }
    }
    if (cmd === "stop") return null;
    return { errored: `unknown command ${JSON.stringify(cmd)}` };
  }

  /** Answers the runner until `stop` or the end of input. */
  async serve(input = process.stdin, write = (line) => process.stdout.write(line)) {
    for await (const line of protocolLines(input)) {
      if (!line.trim()) continue;
      let reply;
      try {
        const message = JSON.parse(line);
        reply =
          message && typeof message === "object" && !Array.isArray(message)
            ? await this.answer(message)
            : { errored: "a protocol line is a JSON object" };
      } catch (e) {
        reply = { errored: `not a JSON line: ${e.message}` };
      }
      if (reply === null) return;
      write(JSON.stringify(reply) + "\n");
    }
  }
}
