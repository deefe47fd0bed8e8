#!/usr/bin/env python3
"""The router's bug bank, kept as a patch (tests/bug-bank/README.md).

The router crate has no test switches. Its bank of realistic bugs lives in
router.patch, applied to a copy of the workspace the way the real gateways'
mutant banks are applied to copies of their packages.

usage:
  bank.py copy DEST   copy the workspace (tracked and new files, nothing
                      ignored) to DEST, replacing it, and apply router.patch
  bank.py write COPY  rewrite router.patch from the difference between the
                      workspace and COPY (a copy made by `copy`, then edited)

Exit 1 with the reason if the patch no longer applies or a file is missing.
"""
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PATCH = os.path.join(HERE, "router.patch")
# What the patch may touch: the router crate, the suite's manifest and its
# one bank module. `write` diffs exactly these.
COVERED = ["Cargo.toml", "crates/procroute", "src/bank.rs"]


def fail(msg):
    print(f"bank.py: {msg}", file=sys.stderr)
    sys.exit(1)


def workspace_files():
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True).stdout
    names = [n for n in out.decode().split("\0") if n]
    return sorted(n for n in names if os.path.isfile(os.path.join(ROOT, n)))


def copy(dest):
    dest = os.path.abspath(dest)
    if dest == ROOT or ROOT.startswith(dest + os.sep):
        fail(f"{dest} would overwrite the workspace itself")
    shutil.rmtree(dest, ignore_errors=True)
    for name in workspace_files():
        target = os.path.join(dest, name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(os.path.join(ROOT, name), target)
    p = subprocess.run(["git", "apply", "--whitespace=nowarn", PATCH],
                       cwd=dest, capture_output=True, text=True)
    if p.returncode != 0:
        fail("router.patch no longer applies to this workspace (the router changed "
             "where a bug of the bank lives):\n" + p.stderr +
             "port it: make a copy at a commit where it applies, carry your change "
             "into the copy's files, then `bank.py write COPY` (tests/bug-bank/README.md)")
    print(dest)


def rel_files(base):
    found = set()
    for c in COVERED:
        path = os.path.join(base, c)
        if os.path.isfile(path):
            found.add(c)
        for d, dirs, files in os.walk(path):
            dirs[:] = [x for x in dirs if x != "target"]
            for f in files:
                found.add(os.path.relpath(os.path.join(d, f), base))
    return found


def write(copy_dir):
    copy_dir = os.path.abspath(copy_dir)
    hunks = []
    for name in sorted(rel_files(ROOT) | rel_files(copy_dir)):
        a, b = os.path.join(ROOT, name), os.path.join(copy_dir, name)
        if not os.path.exists(b):
            fail(f"{name} is in the workspace but not in the copy: the bank removes no file")
        old = a if os.path.exists(a) else "/dev/null"
        p = subprocess.run(["diff", "-u", "--label", "a/" + name if old != "/dev/null" else old,
                            "--label", "b/" + name, old, b], capture_output=True, text=True)
        if p.returncode > 1:
            fail(f"diff {name}: {p.stderr}")
        hunks.append(p.stdout)
    text = "".join(hunks)
    if not text:
        fail(f"{copy_dir} does not differ from the workspace: the bank would be empty")
    with open(PATCH, "w") as f:
        f.write(text)
    hunks = sum(1 for line in text.splitlines() if line.startswith("@@"))
    print(f"{os.path.relpath(PATCH, ROOT)}: {hunks} hunks")


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("copy", "write"):
        fail("usage: bank.py copy DEST | bank.py write COPY")
    (copy if sys.argv[1] == "copy" else write)(sys.argv[2])


if __name__ == "__main__":
    main()
