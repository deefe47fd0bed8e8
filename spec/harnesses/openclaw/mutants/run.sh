#!/usr/bin/env bash
# The real-code mutant bank of the OpenClaw harness:
#   spec/harnesses/openclaw/mutants/run.sh [NN-name.patch ...]
# For each patch (default: every *.patch here), a copy of the installed
# package (node_modules hard-linked: cheap; every file the patch touches is
# copied before patching, so the cached install is never altered) gets the
# patch (`patch -p1` in node_modules/openclaw; a patch that does not apply
# fails loudly), and ../run.sh runs against the copy (JOBS, CASES as there;
# default CASES=0: the key-dialect cases, the suite's stored vectors and the
# harness's stored traces (o-*.json, compared with FINDINGS.md) are the
# bank's oracle, a few minutes a mutant; CASES=N adds N generated traces;
# JOBS default 1; SHRINK_RUNS bounds shrinking, default 10).
# A mutant is caught when run.sh fails; the table names the rules of its
# unexpected failures (classify.py unexpected on --json-out), the stored
# traces or known cases that changed, and the counterexample's length.
# Exits 1 if a mutant survives that is not marked `# equivalent: <reason>`
# or `# not-expressible: <reason>`, or if a patch does not apply.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
harness="$(cd "$here/.." && pwd)"
version="${OPENCLAW_VERSION:-2026.9.6}"
base="${OPENCLAW_DIR:-$HOME/.cache/procroute/openclaw-$version}"
if [ ! -f "$base/node_modules/openclaw/package.json" ]; then
  echo "mutants/run.sh: no OpenClaw install at $base (run ../run.sh once first)" >&2
  exit 2
fi
if [ $# -gt 0 ]; then
  patches=()
  for p in "$@"; do
    case "$p" in */*) patches+=("$p") ;; *) patches+=("$here/$p") ;; esac
  done
else
  patches=("$here"/*.patch)
fi
for p in "${patches[@]}"; do
  [ -f "$p" ] || { echo "mutants/run.sh: no such patch: $p" >&2; exit 2; }
done
work="$(mktemp -d "${TMPDIR:-/tmp}/procroute-openclaw-mutants-XXXXXX")"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$work"' EXIT
rows=()
survivors=0
for p in "${patches[@]}"; do
  name="$(basename "$p" .patch)"
  marked="$(sed -n 's/^# \(equivalent\|not-expressible\): \(.*\)$/\1: \2/p' "$p" | head -n 1)"
  copy="$work/$name"
  mkdir -p "$copy"
  # The package and its dependencies, hard-linked; the Node run.sh installed
  # beside them, linked.
  cp -al "$base/node_modules" "$copy/node_modules"
  for n in "$base"/node-*; do [ -e "$n" ] && ln -s "$n" "$copy/$(basename "$n")"; done
  pkg="$copy/node_modules/openclaw"
  # Copy-on-patch: every file the patch names becomes a file of its own.
  while IFS= read -r f; do
    [ -f "$pkg/$f" ] || { echo "mutants/run.sh: $name: the patch names $f, which the package does not have" >&2; exit 2; }
    cp --remove-destination "$base/node_modules/openclaw/$f" "$pkg/$f"
  done < <(sed -n 's|^+++ b/\([^[:space:]]*\).*$|\1|p' "$p")
  if ! patch -p1 --forward --batch --silent -d "$pkg" < "$p"; then
    echo "mutants/run.sh: $name does not apply to openclaw $version" >&2
    exit 2
  fi
  echo "== $name" >&2
  out="$copy/out"
  mkdir -p "$out"
  start=$(date +%s)
  rc=0
  OPENCLAW_DIR="$copy" OPENCLAW_OUT="$out" JOBS="${JOBS:-1}" CASES="${CASES:-0}" \
    "$harness/run.sh" --shrink-runs "${SHRINK_RUNS:-10}" > "$out/run.out" 2> "$out/run.err" || rc=$?
  secs=$(( $(date +%s) - start ))
  if [ "$rc" = 0 ]; then
    if [ -n "$marked" ]; then
      rows+=("| $name | not caught (${marked%%:*}) | — | — | ${marked#*: } |")
    else
      rows+=("| $name | **NOT CAUGHT** | — | — | ${secs} s |")
      survivors=$((survivors + 1))
    fi
  else
    rules=() steps=()
    if [ -f "$out/conform.json" ]; then
      while IFS=$'\t' read -r id r s; do
        rules+=("$r ($id)")
        steps+=("$s")
      done < <(python3 "$harness/classify.py" unexpected "$out/conform.json")
    fi
    while IFS= read -r l; do
      [[ "$l" =~ \(([0-9]+)\ steps\) ]] && steps+=("${BASH_REMATCH[1]}")
      l="$(sed -e 's|^stored trace trace/openclaw-\(o-[a-z0-9-]*\) ([0-9?]* steps): \(.*\); FINDINGS.md says.*$|\1 gives \2|' \
        -e 's|^classify.py check: ||' <<< "$l" | cut -c1-160)"
      rules+=("$l")
    done < <(grep -h -e '^stored trace .*FINDINGS.md says' -e '^classify.py check: ' "$out/run.out" "$out/run.err" 2>/dev/null \
      | grep -v 'as FINDINGS.md says\|every failing case has' | sed 's/|/\\|/g' | head -n 4)
    if [ ${#rules[@]} -eq 0 ]; then
      rules=("run.sh failed (exit $rc): $(tail -n 1 "$out/run.err" | cut -c1-160 | sed 's/|/\\|/g')")
    fi
    shortest="—"
    for s in "${steps[@]}"; do
      [[ "$s" =~ ^[0-9]+$ ]] && { [ "$shortest" = "—" ] || [ "$s" -lt "$shortest" ]; } && shortest="$s"
    done
    joined="$(printf '%s; ' "${rules[@]:0:4}")"
    rows+=("| $name | caught | ${joined%; } | $shortest | ${secs} s${marked:+; marked ${marked%%:*}} |")
  fi
  [ -n "${KEEP:-}" ] || rm -rf "$copy"
done
echo "| mutant | caught? | by (rules; stored traces or known cases that changed) | counterexample steps | run |"
echo "|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
if [ "$survivors" -gt 0 ]; then
  echo "mutants/run.sh: $survivors mutant(s) not caught" >&2
  exit 1
fi
