#!/usr/bin/env node
// The `procroute` command of the npm package: runs the binary of this
// platform's package (@procroute/<platform>-<arch>, an optional dependency
// npm installs only where it fits), passing arguments, standard streams
// and the exit status through.
"use strict";
const { spawnSync } = require("node:child_process");

const target = `${process.platform}-${process.arch}`;
const supported = { "linux-x64": "@procroute/linux-x64" };
const pkg = supported[target];
let binary;
try {
  if (!pkg) throw new Error(`no package for ${target}`);
  binary = require.resolve(`${pkg}/bin/procroute`);
} catch (e) {
  process.stderr.write(
    `procroute: no binary for ${target} (${e.message}); packages exist for: ${Object.keys(supported).join(", ")}. ` +
      "Reinstall without --no-optional, or build from source: cargo install procroute-suite\n",
  );
  process.exit(2);
}
const r = spawnSync(binary, process.argv.slice(2), { stdio: "inherit" });
if (r.error) {
  process.stderr.write(`procroute: cannot run ${binary}: ${r.error.message}\n`);
  process.exit(2);
}
process.exit(r.status === null ? 1 : r.status);
