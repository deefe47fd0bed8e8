// procroute/harness (Node): the protocol side a harness inherits
// (node:test; run by `cargo test` through tests/node_helper.rs).
import { test } from "node:test";
import assert from "node:assert/strict";
import { Readable } from "node:stream";
import { Harness, Report, Skip } from "../procroute/harness.mjs";

class Gateway extends Harness {
  name = "gw";
  version = "1.0";
  homepage = "https://example.org/gw";
  tick_ms = 0;
  async trace(trace) {
    console.log("chatter from the gateway"); // must not reach the protocol
    const r = new Report();
    r.deliver(0, trace.threads[0], "p1", "completion", "done");
    return r;
  }
  hermes_parse(c) {
    if (c.key === "skip") throw new Skip("keys of this shape cannot be expressed");
    throw new Error("boom");
  }
}

async function converse(harness, ...messages) {
  const input = Readable.from(messages.map((m) => (typeof m === "string" ? m : JSON.stringify(m)) + "\n"));
  const out = [];
  await harness.serve(input, (line) => out.push(line));
  return out.join("").split("\n").filter(Boolean).map((l) => JSON.parse(l));
}

test("the handshake declares what is defined", async () => {
  const [hello] = await converse(new Gateway(), { cmd: "start", version: 1 });
  assert.equal(hello.protocol, 1);
  assert.deepEqual(hello.implementation, {
    name: "gw",
    version: "1.0",
    language: "javascript",
    homepage: "https://example.org/gw",
  });
  assert.deepEqual(hello.operations, ["hermes_parse", "trace"]);
  assert.equal(hello.tick_ms, 0);
  assert.ok(!("policies" in hello));
});

test("cases answer, skip and error without stopping; nothing after stop", async () => {
  const origin = { platform: "telegram", chat_type: "group", chat_id: "-1", thread_id: "7", user_id: "u" };
  const replies = await converse(
    new Gateway(),
    { cmd: "start", version: 1 },
    { cmd: "run", seq: 1, case: { op: "trace", trace: { threads: [origin], ops: [] } } },
    { cmd: "run", seq: 2, case: { op: "hermes_parse", key: "skip" } },
    { cmd: "run", seq: 3, case: { op: "hermes_parse", key: "x" } },
    { cmd: "run", seq: 4, case: { op: "canonical_parse", key: "x" } },
    "not json",
    { cmd: "stop" },
    { cmd: "run", seq: 5, case: { op: "trace" } },
  );
  assert.equal(replies.length, 6);
  assert.deepEqual(replies[1].result.trace.deliveries[0].destination, {
    platform: "telegram",
    chat_type: "group",
    chat_id: "-1",
    thread_id: "7",
  });
  assert.deepEqual(replies[2], { seq: 2, skipped: "keys of this shape cannot be expressed" });
  assert.deepEqual(replies[3], { seq: 3, errored: "Error: boom" });
  assert.equal(replies[4].skipped, 'operation "canonical_parse" not supported');
  assert.match(replies[5].errored, /not a JSON line/);
});

test("lines end at \\n only: a raw U+2028 inside a JSON string stays in it", async () => {
  const replies = await converse(
    new Gateway(),
    `{"cmd":"run","seq":1,"case":{"op":"trace","trace":{"threads":[{"platform":"telegram","chat_type":"group","chat_id":"a\u2028b","thread_id":"7"}],"ops":[]}}}`,
  );
  assert.equal(replies.length, 1, JSON.stringify(replies));
  assert.equal(replies[0].result.trace.deliveries[0].destination.chat_id, "a\u2028b");
});

test("another protocol version is refused", async () => {
  const [reply] = await converse(new Gateway(), { cmd: "start", version: 2 });
  assert.match(reply.errored, /not supported/);
});

test("a report refuses what the protocol does not know", () => {
  const r = new Report();
  assert.throws(() => r.deliver(0, {}, null, "notification", "x"), TypeError);
  assert.throws(() => r.deadLetter(0, {}, null, "completion", "x", ""), TypeError);
  assert.throws(() => r.deadLetter(0, {}, null, "completion", "x", "r", "gone"), TypeError);
});
