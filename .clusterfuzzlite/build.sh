#!/bin/bash -eu
# Builds every cargo-fuzz target of procroute and copies it, with its seed
# corpus (fuzz/regressions/<target>/) and the key dictionary, to $OUT.
# Runs inside the OSS-Fuzz base-builder-rust image (which sets $SRC, $OUT,
# and the sanitizer flags cargo fuzz picks up), and locally without Docker:
#   SRC=$PWD/.. OUT=/tmp/cflite-out .clusterfuzzlite/build.sh
if [ -n "${SRC:-}" ] && [ -d "$SRC/procroute/fuzz" ]; then
  cd "$SRC/procroute/fuzz"
else
  cd "$(dirname "$0")/../fuzz"
fi
OUT="${OUT:?set OUT to the output directory}"
mkdir -p "$OUT"
targets=$(cargo fuzz list)
cargo fuzz build -O --debug-assertions ${FUZZ_BUILD_ARGS:-}
for t in $targets; do
  bin=target/x86_64-unknown-linux-gnu/release/$t
  cp "$bin" "$OUT/$t"
  if [ -d "regressions/$t" ] && [ -n "$(ls -A "regressions/$t")" ]; then
    (cd "regressions/$t" && zip -q -r "$OUT/${t}_seed_corpus.zip" .)
  fi
  case "$t" in
    key_*) cp keys.dict "$OUT/$t.dict" ;;
  esac
done
echo "built: $targets"
