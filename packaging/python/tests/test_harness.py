"""procroute.harness: the protocol side a harness inherits (stdlib unittest;
run by `cargo test` through tests/python_helper.rs)."""
import io
import json
import unittest

from procroute.harness import Harness, Report, Skip


class Gateway(Harness):
    name, version = "gw", "1.0"
    homepage = "https://example.org/gw"
    tick_ms = 0

    def trace(self, trace):
        print("chatter from the gateway")  # must not reach the protocol
        report = Report()
        report.deliver(0, trace["threads"][0], "p1", "completion", "done")
        return report

    def hermes_parse(self, case):
        if case["key"] == "skip":
            raise Skip("keys of this shape cannot be expressed")
        raise RuntimeError("boom")


def converse(harness, *messages):
    out = io.StringIO()
    harness.serve(io.StringIO("".join(
        (m if isinstance(m, str) else json.dumps(m)) + "\n" for m in messages)), out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


class HarnessTest(unittest.TestCase):
    def test_the_handshake_declares_what_is_defined(self):
        [hello] = converse(Gateway(), {"cmd": "start", "version": 1})
        self.assertEqual(hello["protocol"], 1)
        self.assertEqual(hello["implementation"],
                         {"name": "gw", "version": "1.0", "language": "python",
                          "homepage": "https://example.org/gw"})
        self.assertEqual(hello["operations"], ["hermes_parse", "trace"])
        self.assertEqual(hello["tick_ms"], 0)
        self.assertNotIn("policies", hello)

    def test_cases_answer_skip_and_error_without_stopping(self):
        origin = {"platform": "telegram", "chat_type": "group", "chat_id": "-1", "thread_id": "7",
                  "user_id": "u"}
        replies = converse(
            Gateway(),
            {"cmd": "start", "version": 1},
            {"cmd": "run", "seq": 1, "case": {"op": "trace", "trace": {"threads": [origin], "ops": []}}},
            {"cmd": "run", "seq": 2, "case": {"op": "hermes_parse", "key": "skip"}},
            {"cmd": "run", "seq": 3, "case": {"op": "hermes_parse", "key": "x"}},
            {"cmd": "run", "seq": 4, "case": {"op": "canonical_parse", "key": "x"}},
            "not json",
            {"cmd": "stop"},
            {"cmd": "run", "seq": 5, "case": {"op": "trace"}},
        )
        self.assertEqual(len(replies), 6, replies)  # nothing after stop
        trace = replies[1]["result"]["trace"]
        self.assertEqual(trace["deliveries"][0]["destination"],
                         {"platform": "telegram", "chat_type": "group", "chat_id": "-1", "thread_id": "7"})
        self.assertEqual(replies[2], {"seq": 2, "skipped": "keys of this shape cannot be expressed"})
        self.assertEqual(replies[3], {"seq": 3, "errored": "RuntimeError: boom"})
        self.assertEqual(replies[4]["skipped"], "operation 'canonical_parse' not supported")
        self.assertIn("not a JSON line", replies[5]["errored"])

    def test_another_version_is_refused(self):
        [reply] = converse(Gateway(), {"cmd": "start", "version": 2})
        self.assertIn("not supported", reply["errored"])

    def test_a_report_refuses_what_the_protocol_does_not_know(self):
        r = Report()
        with self.assertRaises(ValueError):
            r.deliver(0, {}, None, "notification", "x")
        with self.assertRaises(ValueError):
            r.dead_letter(0, {}, None, "completion", "x", reason="")
        with self.assertRaises(ValueError):
            r.dead_letter(0, {}, None, "completion", "x", reason="r", cause="gone")


if __name__ == "__main__":
    unittest.main()
