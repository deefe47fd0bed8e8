#!/usr/bin/env bash
# Packs the npm packages (the esbuild/biome layout): the binary in its
# platform package (@procroute/linux-x64), and the `procroute` package with
# the command's wrapper and the Node helper (procroute/harness).
#
#   packaging/npm/pack.sh BINARY OUT_DIR
#
# Writes OUT_DIR/procroute-linux-x64-<v>.tgz and OUT_DIR/procroute-<v>.tgz.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
binary="${1:?usage: pack.sh BINARY OUT_DIR}"
out="${2:?usage: pack.sh BINARY OUT_DIR}"
[ -x "$binary" ] || { echo "pack.sh: $binary is not an executable" >&2; exit 2; }
mkdir -p "$out"
out="$(cd "$out" && pwd)"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
cp -r "$here/linux-x64" "$here/procroute" "$stage/"
mkdir -p "$stage/linux-x64/bin"
cp "$binary" "$stage/linux-x64/bin/procroute"
strip "$stage/linux-x64/bin/procroute" 2>/dev/null || true
cp "$here/../../LICENSE-MIT" "$here/../../LICENSE-APACHE" "$stage/procroute/"
cp "$here/../../LICENSE-MIT" "$here/../../LICENSE-APACHE" "$stage/linux-x64/"
cp "$here/README.md" "$stage/procroute/README.md"
for p in linux-x64 procroute; do
  (cd "$stage/$p" && npm pack -q --pack-destination "$out" >/dev/null)
done
ls "$out"
