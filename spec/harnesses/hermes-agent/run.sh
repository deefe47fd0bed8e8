#!/usr/bin/env bash
# The conformance suite against the real hermes-agent, one command:
#   spec/harnesses/hermes-agent/run.sh                # 0.19.0
#   HERMES_VERSION=0.13.0 spec/harnesses/hermes-agent/run.sh
# Extra arguments go to `procroute conform` (e.g. --only 'gen/*' --cases 50).
# Known failures are listed per version in known-failures-<version>.txt,
# each pinned to its finding and the signatures of all its violations, and
# explained in FINDINGS.md. After the run, classify.py --check re-derives
# the finding of every failing case and fails when one differs from the list.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
version="${HERMES_VERSION:-0.19.0}"
python="$("$here/venv.sh")"
procroute="${PROCROUTE:-$root/target/release/procroute}"
[ -x "$procroute" ] || (cd "$root" && cargo build --release -q)
# KNOWN_FAILURES= (empty) runs without the list: failures are then shrunk
# and rendered, which is how FINDINGS.md reproduces each counterexample.
known="${KNOWN_FAILURES-$here/known-failures-$version.txt}"
known_args=()
[ -n "$known" ] && [ -f "$known" ] && known_args=(--known-failures "$known")
# The report and the saved traces classify.py reads: the caller's
# --json-out / --save where given, else a temporary folder.
work="$(mktemp -d "${TMPDIR:-/tmp}/procroute-hermes-run-XXXXXX")"
trap 'rm -rf "$work"' EXIT
report="$work/report.json" save="$work/save" args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --json-out) report="$2"; shift 2 ;;
    --save) save="$2"; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
# JOBS harness processes (default: the cores). Each has its own HERMES_HOME,
# HOME and process registry (BENCHMARKS.md, "Harness workers").
status=0
"$procroute" conform --validate --timeout-ms 60000 --cases "${CASES:-100}" --jobs "${JOBS:-$(nproc)}" \
  --impl "$python $here/harness.py" --json-out "$report" --save "$save" \
  "${known_args[@]}" "${args[@]}" || status=$?
# STRICT_FINDINGS=0 only reports a changed finding (while writing a list).
if [ -n "$known" ] && [ -f "$known" ] && [ -f "$report" ]; then
  if ! python3 "$here/classify.py" --check "$report" "$save" "$known"; then
    [ "${STRICT_FINDINGS:-1}" = 1 ] && status=1
  fi
fi
# The seed bug as a hand-written trace (seed-revert.json): a watch match of
# topic 7 drained by the post-turn block of a message in topic 9. 0.19.0
# delivers it into topic 7 within its declared tick (P-14), so it passes;
# 0.13.0 fails exactly with H-WATCH-LOST's rule. A notice in topic 9
# (INV-6) is the seed bug back.
"$procroute" replay "$here/seed-revert.json" --json --timeout-ms 60000 \
  --impl "$python $here/harness.py" > "$work/seed.json" 2>/dev/null || true
python3 - "$work/seed.json" "$version" <<'PY' || status=1
import json, sys
want = {"0.19.0": set(), "0.13.0": {"INV-4"}}
r = json.load(open(sys.argv[1]))
r = r[0] if isinstance(r, list) else r
rules = {v["rule"] for v in r.get("violations", [])}
expected = want.get(sys.argv[2], set())
if rules != expected:
    sys.exit(f"seed-revert.json on hermes-agent {sys.argv[2]}: rules {sorted(rules)}, "
             f"expected {sorted(expected)} (FINDINGS.md, 'The seed fix, reverted'): "
             + "; ".join(f"{v['rule']}: {v['detail']}" for v in r.get("violations", [])))
print(f"seed-revert.json on hermes-agent {sys.argv[2]}: {sorted(rules)} as expected")
PY
exit "$status"
