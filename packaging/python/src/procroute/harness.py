"""Write a procroute harness by writing only your gateway's handlers.

A harness speaks the protocol of spec/PROTOCOL.md (version 1) on stdin and
stdout: a handshake, then one case per line. :class:`Harness` owns all of
it — the JSON-lines loop, the handshake built from what you declare, the
answer's shape, skips and errors — so a subclass only answers cases::

    from procroute.harness import Harness, Report

    class MyGateway(Harness):
        name, version = "my-gateway", "1.2.0"

        def trace(self, trace):            # P-8: run the ops, report
            report = Report()
            ...                            # drive your gateway's own code
            report.deliver(step, destination, process, kind, text)
            return report

    if __name__ == "__main__":
        MyGateway().serve()

Define any of ``trace``, ``hermes_build``, ``canonical_build``,
``canonical_parse``, ``hermes_parse``, ``origin``, ``dialect_build``,
``dialect_parse``: the operations you define are the ones declared. Raise
:class:`Skip` for a case your gateway cannot express (reported as
skipped, never as passed); any other exception is reported as the case's
error (:class:`Errored` to give its text exactly), and the run goes on.
Nothing but protocol lines goes to stdout:
the loop sends ``print`` output of handlers to stderr.
"""

import contextlib
import json
import sys
import traceback

PROTOCOL = 1
KEY_OPERATIONS = (
    "hermes_build",
    "canonical_build",
    "canonical_parse",
    "hermes_parse",
    "origin",
    "dialect_build",
    "dialect_parse",
)
OPERATIONS = KEY_OPERATIONS + ("trace",)
KINDS = ("watch_match", "watch_disabled", "completion", "shutdown")
CAUSES = ("adapter_failed", "backpressure", "no_route", "origin_conflict")


class Skip(Exception):
    """Raised by a handler: this case is not run, for this reason (P-6,
    P-12). The report counts it as skipped, never as passed."""


class Errored(Exception):
    """Raised by a handler: this case errored, with exactly this text as its
    context (any other exception is reported as ``Type: message``)."""


class Report:
    """What a gateway reported for one trace (P-8): deliveries in the order
    the adapter accepted them, and dead letters."""

    def __init__(self):
        self.deliveries = []
        self.dead_letters = []

    @staticmethod
    def _notification(step, destination, process, kind, text, reason=None, cause=None):
        if kind not in KINDS:
            raise ValueError(f"kind {kind!r} is not one of {KINDS}")
        if cause is not None and cause not in CAUSES:
            raise ValueError(f"cause {cause!r} is not one of {CAUSES}")
        d = {
            key: destination[key]
            for key in ("platform", "chat_type", "chat_id", "thread_id")
            if destination.get(key) is not None
        }
        n = {"step": int(step), "destination": d, "process": process, "kind": kind, "text": text}
        if reason is not None:
            n["reason"] = reason
        if cause is not None:
            n["cause"] = cause
        return n

    def deliver(self, step, destination, process, kind, text):
        """The adapter accepted a notification during op ``step``."""
        self.deliveries.append(self._notification(step, destination, process, kind, text))

    def dead_letter(self, step, destination, process, kind, text, reason, cause=None):
        """A notification given up on, with its reason in words (and its
        typed cause when known)."""
        if not reason:
            raise ValueError("a dead letter carries its reason (P-8)")
        self.dead_letters.append(
            self._notification(step, destination, process, kind, text, reason, cause))

    def to_json(self):
        """The report as the protocol carries it."""
        return {"deliveries": self.deliveries, "dead_letters": self.dead_letters}


class Harness:
    """The protocol's side of a harness. Subclass it, set who you are and
    what you declare, define the operations you can run, call
    :meth:`serve`."""

    name = "gateway"
    version = "0"
    language = "python"
    #: Optional http(s) links shown in every report (P-2).
    homepage = None
    source = None
    issues = None
    #: Optional declarations (P-2, P-10, P-12..P-15); ``None`` leaves one out.
    unsupported = None
    limits = None
    policies = None
    constraints = None
    steer = None
    tick_ms = None
    read_acknowledges = None

    def operations(self):
        """The operations this harness defines, in protocol order."""
        return [op for op in OPERATIONS if callable(getattr(self, op, None))]

    def handshake(self):
        """The answer to ``start`` (P-2)."""
        implementation = {"name": self.name, "version": self.version, "language": self.language}
        for key in ("homepage", "source", "issues"):
            if getattr(self, key):
                implementation[key] = getattr(self, key)
        answer = {"protocol": PROTOCOL, "implementation": implementation,
                  "operations": self.operations()}
        for key in ("unsupported", "limits", "policies", "constraints", "steer", "tick_ms",
                    "read_acknowledges"):
            value = getattr(self, key)
            if value is not None:
                answer[key] = value
        return answer

    def run_case(self, case):
        """One case's ``result`` (P-3, P-8)."""
        op = case.get("op")
        handler = getattr(self, op, None) if op in OPERATIONS else None
        if not callable(handler):
            raise Skip(f"operation {op!r} not supported")
        if op == "trace":
            report = handler(case["trace"])
            return {"trace": report.to_json() if isinstance(report, Report) else report}
        return handler(case)

    def answer(self, message):
        """The reply to one message, or ``None`` for ``stop``."""
        cmd = message.get("cmd")
        if cmd == "start":
            if message.get("version") != PROTOCOL:
                return {"errored": f"protocol version {message.get('version')} is not supported "
                                   f"(only {PROTOCOL})"}
            return self.handshake()
        if cmd == "run":
            seq = message.get("seq")
            try:
                with contextlib.redirect_stdout(sys.stderr):
                    return {"seq": seq, "result": self.run_case(message["case"])}
            except Skip as why:
                return {"seq": seq, "skipped": str(why) or "not supported"}
            except Errored as why:
                return {"seq": seq, "errored": str(why) or "errored"}
            except Exception as exc:  # the run goes on; the case is errored
                print(traceback.format_exc(limit=4), file=sys.stderr)
                return {"seq": seq, "errored": f"{type(exc).__name__}: {exc}"}
        if cmd == "stop":
            return None
        return {"errored": f"unknown command {cmd!r}"}

    def serve(self, stdin=None, stdout=None):
        """Answers the runner until ``stop`` or the end of input."""
        stdin = stdin or sys.stdin
        stdout = stdout or sys.stdout
        for line in stdin:
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError as exc:
                reply = {"errored": f"not a JSON line: {exc}"}
            else:
                reply = self.answer(message) if isinstance(message, dict) else {
                    "errored": "a protocol line is a JSON object"}
            if reply is None:
                return
            stdout.write(json.dumps(reply) + "\n")
            stdout.flush()
