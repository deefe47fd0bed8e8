#!/usr/bin/env bash
# The conformance suite against the real hermes-agent, one command:
#   spec/harnesses/hermes-agent/run.sh                # 0.19.0
#   HERMES_VERSION=0.13.0 spec/harnesses/hermes-agent/run.sh
# Extra arguments go to `procroute conform` (e.g. --only 'gen/*' --cases 50).
# Known failures are listed per version in known-failures-<version>.txt and
# explained in FINDINGS.md.
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
# JOBS harness processes (default: the cores). Each has its own HERMES_HOME,
# HOME and process registry; outcomes are the same for any number (only the
# random process ids hermes-agent writes into its texts differ)
# (BENCHMARKS.md, "Harness workers").
exec "$procroute" conform --validate --timeout-ms 30000 --cases "${CASES:-300}" --jobs "${JOBS:-$(nproc)}" \
  --impl "$python $here/harness.py" "${known_args[@]}" "$@"
