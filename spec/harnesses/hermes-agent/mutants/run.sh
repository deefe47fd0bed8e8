#!/usr/bin/env bash
# The hermes-agent mutant bank: does the harness catch a broken hermes-agent?
#
#   mutants/run.sh                      # every NN-*.patch here
#   mutants/run.sh 01 14-own-dedup-identity-by-session-key.patch   # some (number, name or file)
#   mutants/run.sh 01 -- --only 'gen/*' # after `--`: arguments for ../run.sh
#   CASES=100 JOBS=1 mutants/run.sh     # environment reaches ../run.sh
#   mutants/run.sh --list               # each mutant's header
#
# Arguments that name no mutant are passed through to ../run.sh as well.
# JOBS, CASES, KNOWN_FAILURES and PROCROUTE reach ../run.sh unchanged (today's
# ../run.sh sets --cases itself from CASES, so pass CASES=N, not --cases N).
# MUTANTS_KEEP=DIR keeps every mutant's overlay, output and report in DIR.
#
# Per mutant: a temporary overlay directory gets fresh copies of the
# top-level packages the patch touches (gateway/, tools/) from the venv's
# site-packages, the patch is applied there (a patch that does not apply is
# an error, exit 2), the overlay is checked to import (and to be what
# `import gateway.run` finds), and ../run.sh runs with PYTHONPATH=<overlay>.
# A mutant is CAUGHT when ../run.sh exits non-zero. Exit 1 when a mutant
# whose header has no `# equivalent:` / `# not-expressible:` line is not
# caught.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
harness="$here/../run.sh"
export HERMES_VERSION="${HERMES_VERSION:-0.19.0}"

header() { sed -n '/^# /p; /^--- /q' "$1" | sed '/^--- /d'; }

list=0
selected=()
pass=()
while [ $# -gt 0 ]; do
  case "$1" in
    --list) list=1 ;;
    --) shift; pass+=("$@"); break ;;
    *)
      hit=""
      for cand in "$here/$1" "$here/$1.patch"; do
        [ -f "$cand" ] && case "$cand" in *.patch) hit="$cand" ;; esac
      done
      if [ -z "$hit" ] && [[ "$1" =~ ^[0-9]+$ ]]; then
        hit="$(ls "$here/$1"-*.patch 2>/dev/null | head -n1 || true)"
      fi
      if [ -n "$hit" ]; then selected+=("$hit"); else pass+=("$1"); fi
      ;;
  esac
  shift
done
if [ ${#selected[@]} -eq 0 ]; then
  for f in "$here"/[0-9]*.patch; do selected+=("$f"); done
fi

if [ "$list" = 1 ]; then
  for f in "${selected[@]}"; do
    echo "## $(basename "$f" .patch)"
    header "$f"
    echo
  done
  exit 0
fi

python="$("$here/../venv.sh")"
site="$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
# MUTANTS_KEEP=DIR keeps each mutant's overlay, harness output and JSON
# report under DIR/<mutant>/ (default: a temporary directory, removed).
if [ -n "${MUTANTS_KEEP:-}" ]; then
  work="$MUTANTS_KEEP"
  mkdir -p "$work"
else
  work="$(mktemp -d "${TMPDIR:-/tmp}/procroute-mutants.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
fi

rows=()
uncaught=0
errors=0
for patchfile in "${selected[@]}"; do
  name="$(basename "$patchfile" .patch)"
  dir="$work/$name"
  overlay="$dir/overlay"
  rm -rf "$dir"
  mkdir -p "$overlay"
  # The top-level packages the patch touches.
  tops="$(sed -n 's|^+++ b/\([^/]*\)/.*|\1|p' "$patchfile" | sort -u)"
  [ -n "$tops" ] || { echo "mutant $name: no '+++ b/<package>/…' line" >&2; exit 2; }
  for top in $tops; do
    [ -d "$site/$top" ] || { echo "mutant $name: $site/$top is not a package" >&2; exit 2; }
    cp -r "$site/$top" "$overlay/$top"
    find "$overlay/$top" -name __pycache__ -prune -exec rm -rf {} +
    # Every process that imports this package from the overlay says so in
    # $dir/imported (PROCROUTE_MUTANT_MARK): proof the harness ran the patch.
    cat >>"$overlay/$top/__init__.py" <<'PY'

import os as _procroute_os
if _procroute_os.environ.get("PROCROUTE_MUTANT_MARK"):
    with open(_procroute_os.environ["PROCROUTE_MUTANT_MARK"], "a", encoding="utf-8") as _procroute_f:
        _procroute_f.write(__name__ + " " + __file__ + "\n")
PY
  done
  if ! patch -p1 --dry-run --no-backup-if-mismatch -s -d "$overlay" <"$patchfile" >"$dir/patch.log" 2>&1 ||
     ! patch -p1 --no-backup-if-mismatch -s -d "$overlay" <"$patchfile" >>"$dir/patch.log" 2>&1; then
    echo "mutant $name: the patch does not apply to hermes-agent $HERMES_VERSION:" >&2
    cat "$dir/patch.log" >&2
    exit 2
  fi
  # Import check, and proof that PYTHONPATH puts the patched copy first.
  mkdir -p "$dir/home"
  got="$(cd "$dir" && HOME="$dir/home" HERMES_HOME="$dir/home" PYTHONPATH="$overlay" "$python" -c '
import gateway.run, tools.process_registry, tools.terminal_tool
print("gateway", gateway.run.__file__); print("tools", tools.process_registry.__file__)' 2>"$dir/import.log")" || {
    echo "mutant $name: the patched copy does not import:" >&2
    cat "$dir/import.log" >&2
    exit 2
  }
  for top in $tops; do
    case "$top" in gateway | tools) ;; *) continue ;; esac
    echo "$got" | grep -q "^$top $overlay/$top/" ||
      { echo "mutant $name: $top was not imported from the overlay: $got" >&2; exit 2; }
  done
  echo "== $name: $(echo "$got" | tr '\n' ' ')" >&2

  start=$(date +%s)
  set +e
  PROCROUTE_MUTANT_MARK="$dir/imported" PYTHONPATH="$overlay" "$harness" --json-out "$dir/r.json" \
    --save "$dir/saved" "${pass[@]}" >"$dir/out.txt" 2>&1
  rc=$?
  set -e
  secs=$(( $(date +%s) - start ))
  for top in $tops; do
    case "$top" in gateway | tools) ;; *) continue ;; esac
    grep -qx "$top $overlay/$top/__init__.py" "$dir/imported" 2>/dev/null || {
      echo "mutant $name: the harness did not import $top from the overlay" >&2
      exit 2
    }
  done
  echo "== $name: the harness imported $(sort -u "$dir/imported" | tr '\n' ' ')" >&2

  summary="$("$python" - "$dir/r.json" "$here/../../../.." <<'PY'
import json, os, re, sys
try:
    report = json.load(open(sys.argv[1], encoding="utf-8"))
except Exception as exc:  # no report: the run died before writing it
    print(f"(no report: {type(exc).__name__})\t")
    sys.exit(0)
# The rule a failing case broke: a trace counterexample names it
# (found.rule); otherwise the rules the case cites.
rules, lengths, unshrunk = [], [], []
for o in report.get("outcomes", []):
    if o.get("passed") or o.get("expected_failure"):
        continue
    ce = o.get("counterexample") or {}
    f = ce.get("file") or {}
    found = f.get("found") or {}
    for r in [found["rule"]] if found.get("rule") else o.get("rules", []):
        if r not in rules:
            rules.append(r)
    if found.get("shrunk_from"):
        # Steps before quiescence, as the report says ("shrunk from N to M
        # step(s)"); else the trace's ops, quiescence suffix included.
        m = re.search(r"shrunk from \d+ to (\d+) step", o.get("detail") or "")
        lengths.append(int(m.group(1)) if m else len((f.get("trace") or {}).get("ops", [])))
        continue
    # Not shrunk (a changed known case, or --max-shrunk 0): the saved
    # trace as generated, its steps before the quiescence suffix (an
    # adapter-up, a turn end per thread, 12 advances).
    m = re.search(r"saved (\S+\.json)", o.get("detail") or "")
    path = m.group(1) if m else None
    if path is None:
        # A stored trace (spec/vectors/traces/…): its file in the repository.
        m = re.search(r"stored trace (spec/vectors/traces/\S+\.json)", o.get("detail") or "")
        path = os.path.join(sys.argv[2], m.group(1)) if m else None
    try:
        t = json.load(open(path, encoding="utf-8"))["trace"] if path else None
    except (OSError, ValueError, KeyError):
        t = None
    if t:
        unshrunk.append(len(t["ops"]) - 13 - len(t["threads"]))
n = sum(1 for o in report.get("outcomes", []) if not o.get("passed") and not o.get("expected_failure"))
length = str(min(lengths)) if lengths else f"({min(unshrunk)} unshrunk)" if unshrunk else "-"
print(f"{n} unexpected: {', '.join(rules) or '-'}\t{length}")
PY
)"
  rules="${summary%%$'\t'*}"
  length="${summary#*$'\t'}"
  marked="$(grep -m1 -oE '^# (equivalent|not-expressible):' "$patchfile" | sed 's/^# //; s/:$//' || true)"
  if [ ! -s "$dir/r.json" ]; then
    # Killed, or died before judging anything: neither caught nor missed.
    caught="error (exit $rc, no report)"
    errors=$((errors + 1))
  elif [ "$rc" -ne 0 ]; then
    caught="yes"
  elif [ -n "$marked" ]; then
    caught="no ($marked)"
  else
    caught="**NO**"
    uncaught=$((uncaught + 1))
  fi
  # Keep the harness output of a run that did not produce a report.
  if [ ! -s "$dir/r.json" ]; then
    echo "mutant $name: ../run.sh exited $rc without a report; its last lines:" >&2
    tail -n 20 "$dir/out.txt" >&2
  fi
  rows+=("| $name | $caught | $rules | $length | ${secs}s |")
  echo "== $name: rc=$rc caught=$caught ($rules) ${secs}s" >&2
done

echo
echo "| mutant | caught? | rules (unexpected failures) | counterexample steps | time |"
echo "|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo
if [ "$errors" -gt 0 ]; then
  echo "$errors mutant run(s) ended without a report (see above); rerun them"
  exit 2
fi
if [ "$uncaught" -gt 0 ]; then
  echo "$uncaught mutant(s) not caught (and not marked equivalent / not-expressible)"
  exit 1
fi
echo "every mutant caught or marked"
