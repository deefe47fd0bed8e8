#!/usr/bin/env python3
"""H-THREAD-USER, end to end through hermes-agent's own objects (drive.py):
a Telegram forum topic 42 and user 42 in the same group's topic-less chat
share one session key; user 42's background-process completion is delivered
into topic 42. Prints the delivery; exits 1 if the leak reproduces.

    spec/harnesses/hermes-agent/repro_thread_user.py   (uses venv.sh's python)
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if os.environ.get("PROCROUTE_REPRO_CHILD") != "1":
    python = subprocess.run([os.path.join(HERE, "venv.sh")], capture_output=True, text=True,
                            check=True).stdout.strip()
    env = dict(os.environ, PROCROUTE_REPRO_CHILD="1")
    sys.exit(subprocess.run([python, __file__], env=env).returncode)

import tempfile  # noqa: E402

os.environ["HERMES_HOME"] = tempfile.mkdtemp()
os.environ["HERMES_BACKGROUND_NOTIFICATIONS"] = "result"
os.environ["TERMINAL_ENV"] = "local"
os.environ["HOME"] = tempfile.mkdtemp()
sys.path.insert(0, HERE)
import logging  # noqa: E402

logging.disable(logging.CRITICAL)
import drive  # noqa: E402

TOPIC_42 = {"platform": "telegram", "chat_type": "group", "chat_id": "-1001234567890",
            "thread_id": "42", "user_id": "7001"}
USER_42 = {"platform": "telegram", "chat_type": "group", "chat_id": "-1001234567890",
           "user_id": "42"}
trace = {"threads": [TOPIC_42, USER_42], "ops": [
    {"message": {"thread": 0}},
    {"message": {"thread": 1}},
    {"spawn": {"thread": 1, "process": "p1", "watch": [], "notify": True}},
    {"output": {"process": "p1", "text": "build log of user 42\n"}},
    {"exit": {"process": "p1", "code": 0}},
    {"advance": {"ms": 61000}},
]}
result = drive.run_trace(trace)
leaked = False
for d in result["deliveries"]:
    print(f"{d['kind']} of {d['process']} (spawned by user 42, no topic) -> {d['destination']}")
    leaked |= d["destination"].get("thread_id") == "42"
print("LEAK: delivered into topic 42" if leaked else "no leak")
sys.exit(1 if leaked else 0)
