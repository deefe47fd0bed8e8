//! `procroute report`: one self-contained HTML page from one or more
//! `conform` JSON reports. An implementations × rules matrix on top; below
//! it, per implementation, every failure grouped by rule and expandable to
//! the rule's text, the judge's detail, the counterexample drawn as an
//! inline SVG swimlane, its trace file and the command that replays it; a
//! known failure links to its finding, whose FINDINGS.md section is copied
//! into the page. No network and no external assets: the page is one file
//! a CI system can keep as an artefact.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::render::{esc, timeline_svg};
use super::{Outcome, Report};

/// The specification, compiled in: the page quotes each rule's text.
/// SPEC.md, as built into the binary (rule texts, chapters).
pub const SPEC: &str = include_str!("../../spec/SPEC.md");

/// One column of the page: a `conform` report and what it points to.
#[derive(Debug, Clone)]
pub struct Input {
    /// The column's heading: the implementation's name and version.
    pub label: String,
    /// The report.
    pub report: Report,
    /// The text of the report's FINDINGS.md, when it could be read.
    pub findings: Option<String>,
}

impl Input {
    /// Reads a `conform --format json` (or `--json-out`) file and the
    /// FINDINGS.md it names; errors name the file and what is wrong.
    pub fn read(path: &std::path::Path) -> Result<Input, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
        let report: Report = serde_json::from_str(&text).map_err(|e| {
            format!(
                "{}: not a procroute conform JSON report: {e}",
                path.display()
            )
        })?;
        let label = match &report.implementation {
            Some(i) => format!("{} {}", i.name, i.version),
            None => path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| path.display().to_string()),
        };
        let findings = report
            .findings
            .as_ref()
            .and_then(|f| std::fs::read_to_string(f).ok());
        Ok(Input {
            label,
            report,
            findings,
        })
    }
}

/// Text as the page writes it ([`render`]'s escaping: markup characters as
/// entities, characters HTML should not carry as visible `\u{…}`).
pub fn escape(s: &str) -> String {
    esc(s)
}

/// Implementations with reports of two or more distinct versions, as history
/// series (`history`): versions in the order the reports were given, a
/// row per rule with cases in some version, the findings of each.
pub fn history_series(inputs: &[Input]) -> Vec<super::history::Series> {
    let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
    for (k, i) in inputs.iter().enumerate() {
        let Some(name) = i.report.implementation.as_ref().map(|m| m.name.clone()) else {
            continue;
        };
        match groups.iter_mut().find(|(n, _)| *n == name) {
            Some((_, ks)) => ks.push(k),
            None => groups.push((name, vec![k])),
        }
    }
    let all = matrix(inputs);
    let version = |k: &usize| {
        inputs[*k]
            .report
            .implementation
            .as_ref()
            .map(|m| m.version.clone())
            .unwrap_or_default()
    };
    groups
        .into_iter()
        // Two runs of one version are not a history.
        .filter(|(_, ks)| ks.iter().map(version).collect::<BTreeSet<_>>().len() > 1)
        .map(|(name, ks)| {
            let rows = all
                .iter()
                .map(|(rule, cells)| {
                    let counts = ks
                        .iter()
                        .map(|k| (cells[*k].passed, cells[*k].failed, cells[*k].known))
                        .collect::<Vec<_>>();
                    (rule.clone(), counts)
                })
                .filter(|(_, c)| c.iter().any(|(p, f, k)| p + f + k > 0))
                .collect();
            super::history::Series {
                id: format!("history-{}", super::render::slug(&name)),
                versions: ks.iter().map(version).collect(),
                findings: ks
                    .iter()
                    .map(|k| {
                        inputs[*k]
                            .report
                            .outcomes
                            .iter()
                            .filter_map(|o| o.finding.clone())
                            .collect()
                    })
                    .collect(),
                name,
                rows,
            }
        })
        .collect()
}

/// The rules of SPEC.md in order, each with its text (the paragraph that
/// starts `**ID**`, without the id).
pub fn spec_rules() -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut current: Option<(String, String)> = None;
    for line in SPEC.lines() {
        let starts = line
            .strip_prefix("**")
            .and_then(|rest| rest.split_once("**"))
            .filter(|(id, _)| is_rule_id(id));
        if let Some((id, rest)) = starts {
            out.extend(current.take());
            current = Some((id.to_owned(), rest.trim().to_owned()));
        } else if line.trim().is_empty() || line.starts_with('#') {
            out.extend(current.take());
        } else if let Some((_, text)) = current.as_mut() {
            text.push(' ');
            text.push_str(line.trim());
        }
    }
    out.extend(current);
    out
}

/// A rule id (`PROC-7`) or a finding's name (`H-PARSE-PROFILE`): upper-case
/// letters, digits and at least one `-`.
fn is_rule_id(s: &str) -> bool {
    s.contains('-')
        && s.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '-')
}

/// The `## NAME — title` sections of a FINDINGS.md, by NAME, each with its
/// heading line and body.
pub fn findings_sections(text: &str) -> BTreeMap<String, (String, String)> {
    let mut out = BTreeMap::new();
    let mut current: Option<(String, String, String)> = None;
    for line in text.lines() {
        if let Some(head) = line.strip_prefix("## ") {
            if let Some((name, title, body)) = current.take() {
                out.insert(name, (title, body));
            }
            let name = head.split_whitespace().next().unwrap_or("");
            if is_rule_id(name) {
                current = Some((name.to_owned(), head.to_owned(), String::new()));
            }
        } else if line.starts_with("# ") {
            if let Some((name, title, body)) = current.take() {
                out.insert(name, (title, body));
            }
        } else if let Some((_, _, body)) = current.as_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    if let Some((name, title, body)) = current {
        out.insert(name, (title, body));
    }
    out
}

/// Per rule and implementation: passed, failed unexpectedly, failed as
/// known, skipped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cell {
    /// Cases that passed.
    pub passed: usize,
    /// Cases that failed and are not known failures.
    pub failed: usize,
    /// Known failures that failed as expected.
    pub known: usize,
    /// Cases the implementation could not express.
    pub skipped: usize,
}

impl Cell {
    fn add(&mut self, o: &Outcome) {
        if o.skipped.is_some() {
            self.skipped += 1;
        } else if o.passed {
            self.passed += 1;
        } else if o.expected_failure {
            self.known += 1;
        } else {
            self.failed += 1;
        }
    }

    fn class(&self) -> &'static str {
        if self.failed > 0 {
            "fail"
        } else if self.known > 0 {
            "known"
        } else if self.passed > 0 {
            "pass"
        } else if self.skipped > 0 {
            "skip"
        } else {
            "none"
        }
    }

    fn text(&self) -> String {
        let ran = self.passed + self.failed + self.known;
        match self.class() {
            "fail" | "known" => {
                let mut t = format!("✗ {} of {ran}", self.failed + self.known);
                if self.known > 0 && self.failed > 0 {
                    let _ = write!(t, " ({} known)", self.known);
                } else if self.known > 0 {
                    t.push_str(" known");
                }
                t
            }
            "pass" => format!("✓ {}", self.passed),
            "skip" => format!("skipped {}", self.skipped),
            _ => "—".into(),
        }
    }
}

/// The matrix: every rule any report cites, in SPEC's order (rules SPEC
/// does not know last), with one cell per input.
pub fn matrix(inputs: &[Input]) -> Vec<(String, Vec<Cell>)> {
    let mut cited = BTreeSet::new();
    for i in inputs {
        for o in &i.report.outcomes {
            cited.extend(o.rules.iter().cloned());
        }
    }
    let mut order: Vec<String> = spec_rules()
        .into_iter()
        .map(|(id, _)| id)
        .filter(|id| cited.remove(id))
        .collect();
    order.extend(cited);
    order
        .into_iter()
        .map(|rule| {
            let cells = inputs
                .iter()
                .map(|i| {
                    let mut c = Cell::default();
                    for o in i.report.outcomes.iter().filter(|o| o.rules.contains(&rule)) {
                        c.add(o);
                    }
                    c
                })
                .collect();
            (rule, cells)
        })
        .collect()
}

/// An id usable in an HTML `id` and a fragment: letters, digits, `-`, `_`;
/// anything else as `.` and its hex code.
fn anchor(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
            out.push(c);
        } else {
            let _ = write!(out, ".{:x}", c as u32);
        }
    }
    out
}

/// Shell-quotes a word for a command a reader copies.
fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:@%+,".contains(c))
    {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

const STYLE: &str = r#"
:root { --pass:#d9f2d9; --fail:#f8d0d0; --known:#fbe7c6; --skip:#e6e6e6; --ink:#1a1a1a; }
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink);
       margin: 0 auto; padding: 1rem; max-width: 1200px; overflow-wrap: anywhere; }
h1 { font-size: 1.5rem; margin: .2rem 0 .6rem; }
h2 { font-size: 1.25rem; border-bottom: 2px solid #ccc; margin-top: 2.2rem; }
h3 { font-size: 1.05rem; margin: 1.4rem 0 .4rem; }
code, pre { font: 13px/1.4 ui-monospace, "DejaVu Sans Mono", monospace; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f6f6f6; padding: .6rem;
      border-radius: 4px; margin: .4rem 0; }
.scroll { overflow-x: auto; max-width: 100%; border: 1px solid #ddd; }
table { border-collapse: collapse; }
th, td { border: 1px solid #ddd; padding: .3rem .5rem; text-align: left; white-space: nowrap; }
thead th { position: sticky; top: 0; background: #fafafa; }
tbody th { position: sticky; left: 0; background: #fafafa; font-weight: 600; }
td.pass { background: var(--pass); } td.fail { background: var(--fail); font-weight: 600; }
td.known { background: var(--known); } td.skip { background: var(--skip); color: #555; }
td.none { color: #aaa; }
td a { color: inherit; }
.summary td { text-align: right; }
details.failure { border: 1px solid #ddd; border-left: 4px solid #c33; border-radius: 4px;
                  margin: .35rem 0; padding: .2rem .6rem; }
details.failure.known { border-left-color: #d90; }
details.failure > summary { cursor: pointer; overflow-wrap: anywhere; }
details.failure[open] > summary { margin-bottom: .4rem; }
.badge { display: inline-block; font-size: 12px; padding: 0 .4rem; border-radius: 3px;
         background: var(--known); margin-left: .3rem; }
blockquote.rule { margin: .4rem 0; padding: .3rem .7rem; border-left: 3px solid #88a;
                  background: #f3f3fa; }
figure.timeline { margin: .5rem 0; overflow-x: auto; }
figure.timeline svg { max-width: 100%; height: auto; border: 1px solid #eee; }
.muted { color: #666; }
.warn { background: var(--known); padding: .4em .6em; }
@media (max-width: 600px) {
  body { padding: .5rem; font-size: 14px; }
  th, td { padding: .2rem .3rem; }
  /* A swimlane keeps its size (its text stays legible) and scrolls. */
  figure.timeline svg { max-width: none; }
}
"#;

/// Opens the failure or finding a fragment names (and every `<details>`
/// around it), so a link from the matrix lands on something visible.
const SCRIPT: &str = r#"
function openTarget() {
  var id = decodeURIComponent(location.hash.slice(1));
  var el = id && document.getElementById(id);
  for (var e = el; e; e = e.parentElement) { if (e.tagName === 'DETAILS') e.open = true; }
  if (el) el.scrollIntoView();
}
window.addEventListener('hashchange', openTarget);
window.addEventListener('DOMContentLoaded', openTarget);
"#;

/// Labels that repeat (two runs of one implementation) get their input's
/// number, so every column is told apart.
fn labels(inputs: &[Input]) -> Vec<String> {
    inputs
        .iter()
        .enumerate()
        .map(|(k, i)| {
            if inputs.iter().filter(|j| j.label == i.label).count() > 1 {
                format!("{} (#{})", i.label, k + 1)
            } else {
                i.label.clone()
            }
        })
        .collect()
}

/// The page.
pub fn render(inputs: &[Input]) -> String {
    let labels = labels(inputs);
    let spec = spec_rules();
    let rules_order: Vec<String> = spec.iter().map(|(id, _)| id.clone()).collect();
    let rules: BTreeMap<String, String> = spec.into_iter().collect();
    let suites: BTreeSet<&str> = inputs
        .iter()
        .map(|i| i.report.suite_version.as_str())
        .collect();
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>procroute conformance report</title>\n<style>{STYLE}</style>\n\
         <script>{SCRIPT}</script>\n</head>\n<body>\n\
         <h1>procroute conformance report</h1>\n<p class=\"muted\">Suite {} · {} implementation{} · \
         rules from spec/SPEC.md, judged by the one judge. A cell counts the cases citing the rule; \
         ✗ links to the failures.</p>\n",
        esc(&suites.iter().copied().collect::<Vec<_>>().join(", ")),
        inputs.len(),
        if inputs.len() == 1 { "" } else { "s" }
    );
    if suites.len() > 1 {
        // Reports of different suite versions judged by different texts:
        // say so before a reader compares them rule for rule.
        let _ = writeln!(
            h,
            "<p class=\"warn\">These reports come from {} suite versions ({}): a rule may mean \
             something else in each (spec/CHANGELOG.md); compare them rule for rule with care.</p>",
            suites.len(),
            esc(&suites.iter().copied().collect::<Vec<_>>().join(", "))
        );
    }
    summary(&mut h, inputs, &labels);
    let m = matrix(inputs);
    h.push_str("<h2 id=\"matrix\">Rules × implementations</h2>\n<div class=\"scroll\"><table id=\"matrix-table\">\n<thead><tr><th>rule</th>");
    for label in &labels {
        let _ = write!(h, "<th>{}</th>", esc(label));
    }
    h.push_str("</tr></thead>\n<tbody>\n");
    for (rule, cells) in &m {
        let title = rules.get(rule).map(|t| esc(t)).unwrap_or_default();
        let _ = write!(h, "<tr><th title=\"{title}\">{}</th>", esc(rule));
        for (k, c) in cells.iter().enumerate() {
            let class = c.class();
            let counts = format!(
                "passed {}, failed {} ({} known), skipped {}",
                c.passed,
                c.failed + c.known,
                c.known,
                c.skipped
            );
            if class == "fail" || class == "known" {
                let _ = write!(
                    h,
                    "<td class=\"{class}\" title=\"{counts}\"><a href=\"#{}\">{}</a></td>",
                    anchor(&format!("i{k}-{rule}")),
                    esc(&c.text())
                );
            } else {
                let _ = write!(
                    h,
                    "<td class=\"{class}\" title=\"{counts}\">{}</td>",
                    esc(&c.text())
                );
            }
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody></table></div>\n");
    h.push_str(&super::history::render(&history_series(inputs)));
    for (k, input) in inputs.iter().enumerate() {
        section(&mut h, k, input, &labels[k], &rules, &rules_order);
    }
    h.push_str("</body>\n</html>\n");
    h
}

fn summary(h: &mut String, inputs: &[Input], labels: &[String]) {
    h.push_str("<div class=\"scroll\"><table class=\"summary\" id=\"summary\">\n<thead><tr><th>implementation</th><th>passed</th><th>failed</th><th>of which known</th><th>skipped</th></tr></thead>\n<tbody>\n");
    for (k, i) in inputs.iter().enumerate() {
        let mut c = Cell::default();
        for o in &i.report.outcomes {
            c.add(o);
        }
        let _ = writeln!(
            h,
            "<tr><th><a href=\"#i{k}\">{}</a></th><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&labels[k]),
            c.passed,
            c.failed + c.known,
            c.known,
            c.skipped
        );
    }
    h.push_str("</tbody></table></div>\n");
}

fn section(
    h: &mut String,
    k: usize,
    input: &Input,
    label: &str,
    rules: &BTreeMap<String, String>,
    rules_order: &[String],
) {
    let r = &input.report;
    let _ = writeln!(h, "<h2 id=\"i{k}\">{}</h2>", esc(label));
    if let Some(i) = &r.implementation {
        let _ = write!(
            h,
            "<p class=\"muted\">{} ({})",
            esc(&i.name),
            esc(&i.language)
        );
        match &r.command {
            Some(cmd) => {
                let _ = write!(h, ", harness <code>{}</code>", esc(cmd));
            }
            None => h.push_str(", the built-in harness"),
        }
        for (what, url) in i.links() {
            let _ = write!(h, " · <a href=\"{}\">{what}</a>", esc(url));
        }
        h.push_str("</p>\n");
    }
    for line in declared_lines(r) {
        let _ = writeln!(h, "<p class=\"muted\">{}</p>", esc(&line));
    }
    let sections = input
        .findings
        .as_deref()
        .map(findings_sections)
        .unwrap_or_default();
    // Failures by their first rule, in SPEC's order (unknown rules last).
    let spec_order: BTreeMap<&str, usize> =
        rules_order.iter().map(String::as_str).zip(0..).collect();
    let mut by_rule: BTreeMap<(usize, String), Vec<(usize, &Outcome)>> = BTreeMap::new();
    for (n, o) in r.outcomes.iter().enumerate().filter(|(_, o)| !o.passed) {
        let rule = o.rules.first().cloned().unwrap_or_else(|| "(none)".into());
        let pos = spec_order.get(rule.as_str()).copied().unwrap_or(usize::MAX);
        by_rule.entry((pos, rule)).or_default().push((n, o));
    }
    if by_rule.is_empty() {
        h.push_str("<p>Every case it ran passed.</p>\n");
    }
    // A failure citing several rules is listed under its first; the matrix
    // links each of its rules here too.
    let mut anchored: BTreeSet<String> = BTreeSet::new();
    let mut also: BTreeMap<String, String> = BTreeMap::new();
    for ((_, rule), fails) in &by_rule {
        anchored.insert(rule.clone());
        for (_, o) in fails {
            for other in o.rules.iter().skip(1) {
                also.entry(other.clone()).or_insert_with(|| rule.clone());
            }
        }
    }
    for (other, first) in &also {
        if !anchored.contains(other) {
            let _ = writeln!(
                h,
                "<p id=\"{}\" class=\"muted\">{} failures are listed with their first rule, <a href=\"#{}\">{}</a>.</p>",
                anchor(&format!("i{k}-{other}")),
                esc(other),
                anchor(&format!("i{k}-{first}")),
                esc(first)
            );
        }
    }
    for ((_, rule), fails) in &by_rule {
        let _ = writeln!(
            h,
            "<h3 id=\"{}\">{} — {} failing case{}</h3>",
            anchor(&format!("i{k}-{rule}")),
            esc(rule),
            fails.len(),
            if fails.len() == 1 { "" } else { "s" }
        );
        for (n, o) in fails {
            failure(h, k, *n, o, rules, &sections, r.command.as_deref());
        }
    }
    if !sections.is_empty() {
        let _ = writeln!(
            h,
            "<h3 id=\"i{k}-findings\">Findings ({})</h3>",
            esc(r.findings.as_deref().unwrap_or("FINDINGS.md"))
        );
        for (name, (title, body)) in &sections {
            let _ = writeln!(
                h,
                "<details class=\"finding\" id=\"{}\"><summary>{}</summary><pre>{}</pre></details>",
                anchor(&format!("i{k}-finding-{name}")),
                esc(title),
                esc(body.trim())
            );
        }
    }
}

fn declared_lines(r: &Report) -> Vec<String> {
    let mut out = Vec::new();
    if !r.declared.policies.is_empty() {
        out.push(format!(
            "key-dialect laws ran under: {}",
            r.declared.policies.join(", ")
        ));
    }
    if let Some(t) = r.declared.tick_ms {
        out.push(format!(
            "delivery tick {t} ms (P-14): notifications for idle threads accepted up to {t} ms late"
        ));
    }
    if let Some(a) = &r.declared.read_acknowledges {
        out.push(format!(
            "implements SPEC D-1's policy read_acknowledges: {a} (P-15, PROC-11)"
        ));
    }
    for c in &r.declared.constraints {
        out.push(format!(
            "not generated (declared constraint): {} — {}",
            c.describe(),
            c.reason
        ));
    }
    if let Some(c) = &r.coverage {
        for l in &c.steered {
            out.push(format!("generation profile (P-13): {l}"));
        }
    }
    out
}

fn failure(
    h: &mut String,
    k: usize,
    n: usize,
    o: &Outcome,
    rules: &BTreeMap<String, String>,
    sections: &BTreeMap<String, (String, String)>,
    command: Option<&str>,
) {
    let detail = o.detail.as_deref().unwrap_or("");
    let headline: String = detail
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(160)
        .collect();
    let class = if o.expected_failure {
        "failure known"
    } else {
        "failure"
    };
    let _ = write!(
        h,
        "<details class=\"{class}\" id=\"i{k}-case-{n}\"><summary><code>{}</code>",
        esc(&o.id)
    );
    if o.expected_failure {
        let _ = write!(
            h,
            "<span class=\"badge\">known{}</span>",
            match &o.finding {
                Some(f) => format!(": {}", esc(f)),
                None => String::new(),
            }
        );
        if let Some(url) = &o.upstream {
            let _ = write!(
                h,
                " <a class=\"upstream\" href=\"{}\">upstream</a>",
                esc(url)
            );
        }
    }
    let _ = writeln!(h, " — {}</summary>", esc(&headline));
    for rule in &o.rules {
        let text = rules
            .get(rule)
            .map(String::as_str)
            .unwrap_or("(not a rule of this SPEC.md)");
        let _ = writeln!(
            h,
            "<blockquote class=\"rule\"><b>{}</b> {}</blockquote>",
            esc(rule),
            esc(text)
        );
    }
    if let Some(f) = &o.finding {
        if sections.contains_key(f) {
            let _ = writeln!(
                h,
                "<p>Known failure, explained by <a href=\"#{}\">{}</a>.</p>",
                anchor(&format!("i{k}-finding-{f}")),
                esc(f)
            );
        } else {
            let _ = writeln!(
                h,
                "<p>Known failure: finding {} (no such section in the FINDINGS.md read).</p>",
                esc(f)
            );
        }
    }
    let _ = writeln!(h, "<pre>{}</pre>", esc(detail));
    if let Some(cx) = &o.counterexample {
        let shrunk = cx
            .file
            .found
            .as_ref()
            .and_then(|f| f.shrunk_from.as_ref())
            .map(|s| format!(", shrunk from {}", s.steps))
            .unwrap_or_else(|| ", as generated or stored (not shrunk)".into());
        let _ = writeln!(
            h,
            "<figure class=\"timeline\">{}<figcaption class=\"muted\">The counterexample: {} steps before quiescence{shrunk}. One lane per thread; a notification in red landed away from its process's thread.</figcaption></figure>",
            timeline_svg(&cx.file.trace, &cx.result),
            super::runner::body_len(&cx.file.trace)
        );
        let file_name = format!("{}.json", anchor(&cx.file.id.replace('/', "-")));
        let replay = match command {
            Some(cmd) => format!(
                "procroute replay {} --impl {}",
                shell_word(&file_name),
                shell_word(cmd)
            ),
            None => format!("procroute replay {}", shell_word(&file_name)),
        };
        let _ = writeln!(
            h,
            "<p>Replay: save the trace file below as <code>{}</code>, then run <code class=\"replay\">{}</code></p>\n<details><summary>trace file ({})</summary><pre>{}</pre></details>",
            esc(&file_name),
            esc(&replay),
            esc(&cx.file.id),
            esc(&cx.file.to_json())
        );
    }
    h.push_str("</details>\n");
}
