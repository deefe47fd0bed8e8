#!/usr/bin/env bash
# Ensures a private venv with the pinned hermes-agent and prints its python.
# HERMES_VERSION picks the release (default 0.19.0; 0.13.0 also works).
# PROCROUTE_VENV overrides the venv directory.
set -euo pipefail
version="${HERMES_VERSION:-0.19.0}"
venv="${PROCROUTE_VENV:-$HOME/.cache/procroute/venv-hermes-$version}"
have() {
  [ -x "$venv/bin/python" ] && "$venv/bin/python" - "$version" <<'PY' 2>/dev/null
import importlib.metadata, sys
sys.exit(importlib.metadata.version("hermes-agent") != sys.argv[1])
PY
}
if ! have; then
  rm -rf "$venv"
  python3 -m venv "$venv" >&2
  # hermes-agent's own dependency set is large (LLM clients, web server…);
  # install the ones its gateway, session and process-registry modules
  # import, at the versions hermes-agent itself pins.
  "$venv/bin/pip" install -q --no-deps "hermes-agent==$version" >&2
  pins="$("$venv/bin/python" - <<'PY'
import importlib.metadata, re
wanted = {"pyyaml", "requests", "httpx", "python-dotenv", "psutil", "ptyprocess"}
for req in importlib.metadata.requires("hermes-agent") or []:
    if ";" in req and "extra" in req.split(";", 1)[1]:
        continue
    name = re.split(r"[<>=!~ ;\[]", req, 1)[0].strip().lower()
    if name in wanted:
        print(req.split(";", 1)[0].replace(" ", ""))
        wanted.discard(name)
print(*sorted(wanted))
PY
)"
  # shellcheck disable=SC2086
  "$venv/bin/pip" install -q $pins >&2
fi
echo "$venv/bin/python"
