#!/usr/bin/env python3
"""procroute harness for hermes-agent (spec/PROTOCOL.md, version 1).

Our code, importing the published package (pip `hermes-agent`, pinned to
0.19.0 by run.sh; `HERMES_VERSION=0.13.0 run.sh` runs the older one).
Key operations go through hermes' own functions; traces through its real
session store, process registry, reader threads, watchers, drains and
checkpoint file (see drive.py). What hermes cannot express is declared
unsupported in the handshake, never faked.

hermes prints to stdout, so the protocol gets a private copy of the
original stdout and everything else (stdout included) goes to stderr.
"""
import json
import atexit
import gc
import os
import shutil
import sys
import tempfile

PROTO = os.fdopen(os.dup(1), "w", encoding="utf-8")
os.dup2(2, 1)
sys.stdout = sys.stderr

# The protocol loop is procroute.harness (pip `procroute`; from a checkout,
# packaging/python/src): this file only declares and runs cases.
try:
    from procroute.harness import Errored, Harness, Skip
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "..", "..", "packaging", "python", "src"))
    from procroute.harness import Errored, Harness, Skip

# hermes-agent fixes its paths at import time and writes state there.
def private_dir(prefix):
    """A temporary directory removed when the harness exits."""
    path = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


os.environ["HERMES_HOME"] = private_dir("procroute-hermes-")
# Display settings of the user's config.yaml: no tool-progress messages in
# chats (replies, not notifications). 0.19.0: no interim commentary either
# (its stream consumer would hold each turn's end for up to 5 s). 0.13.0
# polls for a stream consumer at every turn's end unless one exists, so
# there interim commentary stays on (hermes' default) and the consumer the
# gateway builds for it ends the turn promptly.
import importlib.metadata as _md  # noqa: E402
_interim = "" if _md.version("hermes-agent") == "0.13.0" else '  interim_assistant_messages: "off"\n'
# No automatic session titles (0.19.0; 0.13.0 has no switch): a title is
# written by a model (an auxiliary LLM call on a thread of its own after a
# session's first exchange), and the model is what the harness replaces;
# with a key that is never valid, each attempt only builds an HTTP client
# and fails, costing every trace CPU time on no routing path.
_titles = "auxiliary:\n  title_generation:\n    enabled: false\n"
with open(os.path.join(os.environ["HERMES_HOME"], "config.yaml"), "w", encoding="utf-8") as _f:
    _f.write('display:\n  tool_progress: "off"\n' + _interim + _titles)
os.environ.setdefault("HERMES_BACKGROUND_NOTIFICATIONS", "result")
os.environ.setdefault("TERMINAL_ENV", "local")
# Traces run through hermes' own message handler: every sender is
# authorised (no pairing flow), a message on a busy session is queued as a
# follow-up (busy_input_mode "queue": the trace's turn ends at its turn_end,
# not at the next message), and a provider is configured so hermes builds
# its agent, which drive.py replaces by a scripted one (no model, no
# network: the key is never sent anywhere).
os.environ["GATEWAY_ALLOW_ALL_USERS"] = "true"
os.environ["HERMES_GATEWAY_BUSY_INPUT_MODE"] = "queue"
os.environ.setdefault("OPENROUTER_API_KEY", "procroute-scripted-agent")
# hermes starts background processes with `bash -lic`: a login shell reads
# ~/.bashrc. A private HOME keeps this machine's rc files (pyenv, …) out of
# every spawn.
os.environ["HOME"] = private_dir("procroute-hermes-home-")

import importlib.metadata  # noqa: E402
import inspect  # noqa: E402
import logging  # noqa: E402
import traceback  # noqa: E402

logging.disable(logging.CRITICAL)

import gateway.run as gr  # noqa: E402
from gateway.config import Platform  # noqa: E402
from gateway.session import SessionSource, build_session_key  # noqa: E402

VERSION = importlib.metadata.version("hermes-agent")

UNSUPPORTED = {
    "canonical_build": "procroute's canonical dialect; hermes-agent has only its own key format",
    "canonical_parse": "procroute's canonical dialect; hermes-agent has only its own key format",
    "origin": "hermes-agent does not validate origins: SessionSource accepts any value",
}


# Dialect policies for the key laws (P-10): the default (per-user groups,
# shared threads), each switch flipped, and a profile namespace.
POLICIES = {
    "default": {},
    "shared-groups": {"group_sessions_per_user": False},
    "per-user-threads": {"thread_sessions_per_user": True},
}
if "profile" in inspect.signature(build_session_key).parameters:  # not in 0.13.0
    POLICIES["profile-coder"] = {"profile": "coder"}

# Inputs hermes-agent refuses by design (P-12), so traces are not wasted on
# them. WhatsApp: build_session_key canonicalises a DM's chat id and a
# group member's user id (gateway/whatsapp_identity.py) and raises
# ValueError for an identity outside [A-Za-z0-9@.+-] once stripped and cut
# at ':'/'@' (KEY-H2). The set below is the plain subset of what it accepts.
WHATSAPP_IDENTITY = "A-Za-z0-9.+@:-"
CONSTRAINTS = [
    {"fields": ["chat_id", "thread_id", "user_id", "user_name"], "forbid": "\u0000",
     "reason": "hermes-agent hands routing ids to background processes in environment "
               "variables (HERMES_SESSION_*), which cannot hold NUL"},
    {"fields": ["chat_id"], "platforms": ["whatsapp"], "chat_types": ["dm"],
     "allow": WHATSAPP_IDENTITY,
     "reason": "a WhatsApp DM's chat id is a sender identity; hermes-agent raises ValueError "
               "for one it cannot canonicalise (KEY-H2)"},
    {"fields": ["user_id"], "platforms": ["whatsapp"], "chat_types": ["group", "channel", "thread"],
     "allow": WHATSAPP_IDENTITY,
     "reason": "a WhatsApp group member's user id is a sender identity; hermes-agent raises "
               "ValueError for one it cannot canonicalise (KEY-H2)"},
]


def _declared():
    """What this version declares (profile.json): the delivery tick (P-14)
    and the generation profile (P-13); a version without an entry, neither."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "profile.json")
    with open(path, encoding="utf-8") as f:
        return json.load(f).get(VERSION, {})


DECLARED = _declared()


def trace_support():
    """The trace mapping needs the routing fix (session-store origin first)."""
    needed = ["_build_process_event_source", "_inject_watch_notification", "_run_process_watcher"]
    missing = [n for n in needed if not hasattr(gr.GatewayRunner, n)]
    if missing:
        return f"hermes-agent {VERSION} lacks {', '.join(missing)}; the trace mapping needs them"
    return None


def hermes_build(case):
    o = case["origin"]
    policy = case.get("policy", {})
    try:
        platform = Platform(o["platform"])
    except ValueError:
        return {"error": {"kind": "unknown_platform"}}
    source = SessionSource(
        platform=platform,
        chat_id=o["chat_id"],
        chat_type=o["chat_type"],
        thread_id=o.get("thread_id"),
        user_id=o.get("user_id"),
        user_name=o.get("user_name"),
    )
    kwargs = {
        "group_sessions_per_user": policy.get("group_sessions_per_user", True),
        "thread_sessions_per_user": policy.get("thread_sessions_per_user", False),
    }
    if "profile" in inspect.signature(build_session_key).parameters:
        kwargs["profile"] = policy.get("profile")
    elif policy.get("profile") not in (None, "", "default"):
        return {"skipped": f"hermes-agent {VERSION} build_session_key has no profile"}
    try:
        return {"key": build_session_key(source, **kwargs)}
    except ValueError:
        # KEY-H2: hermes raises ValueError for a WhatsApp id it cannot canonicalise.
        return {"error": {"kind": "whatsapp_id_rejected"}}


def hermes_parse(case):
    """hermes' own `_parse_session_key`: whatever it returns, it claims as known."""
    got = gr._parse_session_key(case["key"])
    if got is None:
        return {"error": {"kind": "rejected"}}

    def known(field):
        v = got.get(field)
        return {"state": "known", "value": v} if v is not None else {"state": "absent"}

    parts = case["key"].split(":")
    return {"parsed": {
        "namespace": parts[1],
        "platform": got["platform"],
        "chat_type": got["chat_type"],
        "chat_id": known("chat_id"),
        "thread_id": known("thread_id"),
        "user_id": {"state": "absent"},
    }}


def dialect_build(case):
    """KEY-L1: hermes' own keys under the policy the case names (one of
    POLICIES; none: hermes' default, per-user groups)."""
    return hermes_build({"origin": case["origin"], "policy": case.get("policy", {})})


def dialect_parse(case):
    """KEY-L2: the route hermes' `_parse_session_key` reads out of a key —
    what `_build_process_event_source` falls back to."""
    got = gr._parse_session_key(case["key"])
    if got is None or got.get("chat_type") not in ("dm", "group", "channel", "thread"):
        return {"route": None}
    route = {"platform": got["platform"], "chat_type": got["chat_type"], "chat_id": got["chat_id"]}
    if got.get("thread_id"):
        route["thread_id"] = got["thread_id"]
    return {"route": route}


def run_isolated(drive, trace):
    """Runs one trace in a forked copy of this process: hermes keeps state
    in its modules (caches, registries, counters) that one trace would leave
    to the next, and which traces a harness process gets depends on how
    `conform --jobs` shares them out. Each trace starts from the state the
    harness had after importing hermes, whatever ran before it."""
    r, w = os.pipe()
    # What the harness process holds now (hermes' modules, drive.prewarm's
    # work) stays out of the fork's garbage collections, so the fork does
    # not copy those pages to scan them.
    gc.freeze()
    pid = os.fork()
    if pid == 0:  # the child: run, hand back one JSON document, exit at once
        os.close(r)
        try:
            try:
                out = {"result": {"trace": drive.run_trace(trace)}}
            except drive.Unexpressible as why:
                out = {"skipped": str(why)}
            except Exception as exc:
                print(traceback.format_exc(limit=4), file=sys.stderr)
                out = {"errored": f"{type(exc).__name__}: {exc}"}
            data = json.dumps(out).encode("utf-8")
        except BaseException as exc:  # even a result that cannot be encoded
            data = json.dumps({"errored": f"{type(exc).__name__}: {exc}"}).encode("utf-8")
        with os.fdopen(w, "wb") as f:
            f.write(data)
        sys.stderr.flush()
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    if not data:
        return {"errored": f"the trace's process ended without a result (wait status {status})"}
    return json.loads(data)


def _answer(result):
    """A key operation's result, or its skip (hermes without a profile)."""
    if "skipped" in result:
        raise Skip(result["skipped"])
    return result


class Hermes(Harness):
    """hermes-agent behind procroute.harness: the helper owns the protocol
    loop; this says what hermes declares and runs each case through it."""

    name, version, language = "hermes-agent", VERSION, "python"
    limits = {"watch_min_interval_s": 15, "watch_strike_limit": 3,
              "watch_global_max_per_window": 15, "watch_global_window_s": 10,
              "watch_global_cooldown_s": 30, "watcher_poll_s": 5,
              "completion_dedup_entries": 2048}
    policies = POLICIES
    constraints = CONSTRAINTS
    # P-13 and P-14 (profile.json): completions are sent by
    # _run_process_watcher, which polls every watcher_interval (5 s) rather
    # than at the step a process ends.
    tick_ms = DECLARED.get("tick_ms")
    steer = DECLARED.get("steer")

    def __init__(self):
        unknown = set(DECLARED) - {"tick_ms", "steer"}
        if unknown:
            raise SystemExit(f"profile.json declares {sorted(unknown)}, which harness.py does not pass on")
        self.no_trace = trace_support()
        self.unsupported = dict(UNSUPPORTED)
        if self.no_trace:
            self.unsupported["trace"] = self.no_trace
        self.drive = None

    def operations(self):
        return ["hermes_build", "hermes_parse", "dialect_build", "dialect_parse"] + (
            [] if self.no_trace else ["trace"])

    def hermes_build(self, case):
        return _answer(hermes_build(case))

    def hermes_parse(self, case):
        return _answer(hermes_parse(case))

    def dialect_build(self, case):
        return _answer(dialect_build(case))

    def dialect_parse(self, case):
        return _answer(dialect_parse(case))

    def trace(self, trace):
        if self.no_trace:
            raise Skip(self.no_trace)
        if self.drive is None:
            import drive as drive_mod
            self.drive = drive_mod
        out = run_isolated(self.drive, trace)
        if "errored" in out:
            raise Errored(out["errored"])
        if not out.get("result"):
            raise Skip(out.get("skipped"))
        return out["result"]["trace"]


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    Hermes().serve(stdout=PROTO)
