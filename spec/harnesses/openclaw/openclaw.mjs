// Finds the installed OpenClaw package and the functions the harness calls.
// Our code. Imported by harness.mjs (the key dialect, the trace driver) and
// by gateway.mjs (each OpenClaw gateway the driver starts, in a worker
// thread with its own module graph).
import { readFileSync, readdirSync, writeFileSync, renameSync } from "node:fs";
import module from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

// Node's on-disk code cache for the modules compiled from here on (V8
// bytecode, keyed by each file's content): every harness process and every
// gateway loads the same few thousand OpenClaw modules, and compiles them
// once per install instead of once per process. What runs is unchanged.
// PROCROUTE_OPENCLAW_COMPILE_CACHE=0 turns it off.
export function compileCache(dir) {
  const at = process.env.PROCROUTE_OPENCLAW_COMPILE_CACHE ?? join(dir, "node-compile-cache");
  if (at === "0") return;
  try {
    module.enableCompileCache?.(at);
  } catch {}
}
export const flushCompileCache = () => {
  try {
    module.flushCompileCache?.();
  } catch {}
};

export function openclaw(dir) {
  compileCache(dir);
  const pkgDir = join(dir, "node_modules", "openclaw");
  const pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
  const dist = join(pkgDir, "dist");
  // Functions OpenClaw does not re-export from its plugin SDK: the dist
  // chunk that defines each, under the alias its `export { … }` line gives
  // it (chunk names and aliases change per release, function names do
  // not). One pass over the dist directory (about 300 MB) for all names;
  // `index` (a previous answer's `index`) skips the pass. What a pass finds
  // is kept next to the install (an installed release's dist does not
  // change) and every entry taken from there is checked against its chunk
  // again, as the pass would find it; a stale one is looked up afresh.
  const indexFile = join(dir, `procroute-dist-index-${pkg.version}.json`);
  const stored = () => {
    try {
      const j = JSON.parse(readFileSync(indexFile, "utf8"));
      return j && typeof j === "object" && !Array.isArray(j) ? j : {};
    } catch {
      return {};
    }
  };
  const texts = new Map();
  const chunk = (file) => {
    if (!texts.has(file)) texts.set(file, readFileSync(join(dist, file), "utf8"));
    return texts.get(file);
  };
  const holds = (name, entry) => {
    try {
      const [file, alias] = entry;
      if (!/^[\w.-]+\.mjs$/.test(file)) return false;
      const text = chunk(file);
      return text.includes(`function ${name}(`) && text.match(new RegExp(`\\b${name} as (\\w+)\\b`))?.[1] === alias;
    } catch {
      return false;
    }
  };
  async function internals(names, index = null) {
    const found = {};
    const where = index ? { ...index } : {};
    const kept = stored();
    for (const name of names) if (!where[name] && kept[name] && holds(name, kept[name])) where[name] = kept[name];
    texts.clear();
    const left = new Set(names.filter((n) => !where[n]));
    const scanned = left.size > 0;
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
    if (scanned) {
      try {
        const tmp = `${indexFile}.${process.pid}.tmp`;
        writeFileSync(tmp, JSON.stringify({ ...stored(), ...where }, null, 1));
        renameSync(tmp, indexFile);
      } catch {}
    }
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
