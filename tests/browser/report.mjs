// The `procroute report` page in a real browser: Debian's Chromium, driven
// headless by playwright-core (.ci/run installs both). It checks what a
// reader needs to see, not the markup: the matrix is visible with one
// column per implementation; a failure opens to its rule's text, an SVG
// swimlane and a replay command, all visible; a known failure opens its
// finding; a matrix link lands on the
// rule's failures; at 1280 px and at 390 px (a phone) the page never
// scrolls sideways as a whole (the matrix scrolls in its own box) and its
// text stays at a readable size; versions of one implementation draw a
// history chart each (HISTORIES of them, default 0). Screenshots are kept
// beside the page.
//
//   node tests/browser/report.mjs REPORT.html OUT_DIR IMPLEMENTATIONS [HISTORIES]
//
// Exit status 0 when every check holds; 1 with the failed check named.

import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import path from "node:path";
import fs from "node:fs";

const [page_path, out_dir, implementations, histories = "0"] = process.argv.slice(2);
if (!page_path || !out_dir || !implementations) {
  console.error("usage: node tests/browser/report.mjs REPORT.html OUT_DIR IMPLEMENTATIONS [HISTORIES]");
  process.exit(2);
}
// playwright-core is installed outside the repository (PLAYWRIGHT_DIR).
const require = createRequire(
  path.join(process.env.PLAYWRIGHT_DIR ?? process.cwd(), "package.json"),
);
const { chromium } = require("playwright-core");

const failures = [];
function check(ok, what) {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}`);
  if (!ok) failures.push(what);
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  // This machine's network is closed: no background connections.
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ],
});
const url = pathToFileURL(path.resolve(page_path)).href;
fs.mkdirSync(out_dir, { recursive: true });
const requests = [];

try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.on("request", (r) => {
    if (!r.url().startsWith("file:")) requests.push(r.url());
  });
  await page.goto(url);

  // The matrix: visible, one column per implementation, a row per rule.
  const matrix = page.locator("#matrix-table");
  check(await matrix.isVisible(), "the rules × implementations matrix is visible");
  const columns = await matrix.locator("thead th").count();
  check(
    columns === Number(implementations) + 1,
    `the matrix has ${Number(implementations)} implementation columns (found ${columns - 1})`,
  );
  const rows = await matrix.locator("tbody tr").count();
  check(rows >= 20, `the matrix has a row per cited rule (${rows} rows)`);
  check(await page.locator("#summary").isVisible(), "the per-implementation summary is visible");
  await page.screenshot({ path: path.join(out_dir, "report-1280.png") });

  // Versions of one implementation: a history chart each, drawn with a
  // cell per rule and version.
  const charts = page.locator("svg.history");
  check(
    (await charts.count()) === Number(histories),
    `the page draws ${Number(histories)} history chart(s) (found ${await charts.count()})`,
  );
  if (Number(histories) > 0) {
    const chart = charts.first();
    await chart.scrollIntoViewIfNeeded();
    check(await chart.isVisible(), "the history chart is visible");
    const hbox = await chart.boundingBox();
    check(hbox !== null && hbox.width > 150 && hbox.height > 100, `the history chart has a real size (${hbox?.width}×${hbox?.height})`);
    const cells = await chart.locator("rect.cell").count();
    check(cells >= 20, `the history chart has a cell per rule and version (${cells})`);
    check(await page.locator("ul.history-findings li").first().isVisible(), "the findings fixed and introduced are listed");
    await page.locator("h2[id^=history-]").first().screenshot({ path: path.join(out_dir, "history-title-1280.png") });
    await chart.screenshot({ path: path.join(out_dir, "history-1280.png") });
  }

  // A failure with a drawn counterexample opens to its rule, SVG and replay.
  const failure = page.locator("details.failure:has(svg)").first();
  check((await failure.count()) === 1, "some failure carries a drawn counterexample");
  await failure.locator(":scope > summary").click();
  check(await failure.evaluate((d) => d.open), "clicking a failure opens it");
  check(await failure.locator("blockquote.rule").first().isVisible(), "the opened failure shows its rule's text");
  const svg = failure.locator("figure.timeline svg");
  check(await svg.isVisible(), "the opened failure shows its SVG swimlane");
  const box = await svg.boundingBox();
  check(box !== null && box.width > 100 && box.height > 50, `the swimlane has a real size (${box?.width}×${box?.height})`);
  check(await failure.locator("code.replay").isVisible(), "the opened failure shows its replay command");
  await failure.screenshot({ path: path.join(out_dir, "failure-1280.png") });

  // A matrix cell links to the rule's failures, opened and in view.
  const link = matrix.locator("td.fail a, td.known a").first();
  if ((await link.count()) === 1) {
    const target = decodeURIComponent((await link.getAttribute("href")).slice(1));
    await link.click();
    const heading = page.locator(`[id="${target}"]`);
    check(await heading.isVisible(), `a matrix link lands on ${target}`);
    check(await heading.evaluate((e) => {
      const r = e.getBoundingClientRect();
      // scrollIntoView aligns to the top, up to a fraction of a pixel.
      return r.top > -2 && r.top < window.innerHeight;
    }), "the linked heading is scrolled into view");
  } else {
    check(false, "the matrix has a failing cell to follow");
  }

  // A known failure links to its finding, which opens.
  const known = page.locator("details.failure.known:has(a[href*='-finding-'])").first();
  if ((await known.count()) === 1) {
    await known.locator(":scope > summary").click();
    const a = known.locator("a[href*='-finding-']").first();
    const target = decodeURIComponent((await a.getAttribute("href")).slice(1));
    await a.click();
    check(await page.locator(`[id="${target}"] pre`).isVisible(), `a known failure's finding opens (${target})`);
  }

  const wide = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
  check(wide[0] <= wide[1], `no sideways scrolling at 1280 px (${wide[0]} ≤ ${wide[1]})`);

  // A phone: the page fits, the matrix scrolls in its box, text readable.
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(url);
  const narrow = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
  check(narrow[0] <= narrow[1], `no sideways scrolling at 390 px (${narrow[0]} ≤ ${narrow[1]})`);
  check(await matrix.isVisible(), "the matrix is visible at 390 px");
  const font = await page.evaluate(() => parseFloat(getComputedStyle(document.body).fontSize));
  check(font >= 12, `body text is readable at 390 px (${font} px)`);
  await page.screenshot({ path: path.join(out_dir, "report-390.png") });
  const opened = page.locator("details.failure:has(svg)").first();
  await opened.locator(":scope > summary").click();
  // The swimlane keeps its natural size (legible text) and scrolls in its
  // figure rather than shrinking to a phone's width.
  const figure = opened.locator("figure.timeline");
  check(await figure.isVisible(), "the swimlane is visible at 390 px");
  const fig = await figure.evaluate((f) => {
    const svg = f.querySelector("svg");
    return { natural: Number(svg.getAttribute("width")), drawn: svg.getBoundingClientRect().width, box: f.clientWidth };
  });
  check(fig.drawn >= fig.natural - 1, `the swimlane keeps its size at 390 px (${fig.drawn} of ${fig.natural} px)`);
  check(fig.box <= 390, `the swimlane scrolls within a phone-wide box (${fig.box} px)`);
  const after = await page.evaluate(() => document.documentElement.scrollWidth);
  check(after <= 390, `an opened failure does not widen the page at 390 px (${after})`);
  await opened.screenshot({ path: path.join(out_dir, "failure-390.png") });
} finally {
  await browser.close();
}
check(requests.length === 0, `the page loads nothing but itself (${requests.join(", ") || "no other requests"})`);

if (failures.length > 0) {
  console.error(`${failures.length} check(s) failed: ${failures.join("; ")}`);
  process.exit(1);
}
console.log(`report page checks passed; screenshots in ${out_dir}`);
