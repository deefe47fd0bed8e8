// Finds the installed OpenClaw package and the functions the harness calls.
// Our code. Imported by harness.mjs (the key dialect, the trace driver) and
// by gateway.mjs (each OpenClaw gateway the driver starts, in a worker
// thread with its own module graph).
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

export function openclaw(dir) {
  const pkgDir = join(dir, "node_modules", "openclaw");
  const pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
  const dist = join(pkgDir, "dist");
  // Functions OpenClaw does not re-export from its plugin SDK: the dist
  // chunk that defines each, under the alias its `export { … }` line gives
  // it (chunk names and aliases change per release, function names do
  // not). One pass over the dist directory (about 300 MB) for all names;
  // `index` (a previous answer's `index`) skips the pass.
  async function internals(names, index = null) {
    const found = {};
    const where = index ? { ...index } : {};
    const left = new Set(names.filter((n) => !where[n]));
    for (const file of left.size ? readdirSync(dist) : []) {
      if (left.size === 0) break;
      if (!file.endsWith(".mjs")) continue;
      const text = readFileSync(join(dist, file), "utf8");
      for (const name of [...left]) {
        if (!text.includes(`function ${name}(`)) continue;
        const m = text.match(new RegExp(`\\b${name} as (\\w+)\\b`));
        if (!m) continue;
        where[name] = [file, m[1]];
        left.delete(name);
      }
    }
    if (left.size > 0) throw new Error(`openclaw ${pkg.version}: no dist chunk exports ${[...left].join(", ")}`);
    for (const name of names) {
      const [file, alias] = where[name];
      const mod = await import(pathToFileURL(join(dist, file)).href);
      if (typeof mod[alias] !== "function") throw new Error(`openclaw ${pkg.version}: ${file} exports ${alias}, not the function ${name}`);
      found[name] = mod[alias];
    }
    return { ...found, index: where };
  }
  const routing = () => import(pathToFileURL(join(pkgDir, pkg.exports["./plugin-sdk/routing"].default)).href);
  return { pkgDir, pkg, internals, routing };
}
