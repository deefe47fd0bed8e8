//! History: the per-rule trend of one implementation across versions,
//! drawn as an SVG (one column per version in the order the reports were
//! given, one row per rule, each cell the share of its cases that passed,
//! coloured as the matrix is), and the findings fixed or introduced from
//! one version to the next. Pure drawing from data: `html` gathers the
//! [`Series`] from the reports (`html::history_series`) and places the
//! drawing in its page.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::render::esc;

/// One rule's cases in one version: passed, failed unexpectedly, known
/// failures.
pub type Counts = (usize, usize, usize);

/// One implementation's reports, version by version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Series {
    /// The implementation's name.
    pub name: String,
    /// The element id of its section.
    pub id: String,
    /// Its versions, in the order the reports were given.
    pub versions: Vec<String>,
    /// Per rule with cases in some version: per version, `(passed,
    /// failed unexpectedly, known failures)`.
    pub rows: Vec<(String, Vec<Counts>)>,
    /// Per version, the findings its known failures name.
    pub findings: Vec<BTreeSet<String>>,
}

impl Series {
    /// From version `v` to `v + 1`: the findings fixed and those
    /// introduced.
    pub fn changes(&self, v: usize) -> (Vec<&String>, Vec<&String>) {
        let (a, b) = (&self.findings[v], &self.findings[v + 1]);
        (a.difference(b).collect(), b.difference(a).collect())
    }
}

/// Rows and columns of a chart, in pixels.
const ROW: usize = 18;
const COL: usize = 92;
const LEFT: usize = 96;
const TOP: usize = 34;

fn cell(
    s: &mut String,
    rule: &str,
    version: &str,
    (x, y): (usize, usize),
    counts: (usize, usize, usize),
) {
    let (passed, failed, known) = counts;
    let ran = passed + failed + known;
    let fill = match (failed, known, ran) {
        (_, _, 0) => "#e6e6e6",
        (0, 0, _) => "#9fd89f",
        (0, _, _) => "#f3c27a",
        _ => "#e88d8d",
    };
    let full = COL - 6;
    let width = if ran == 0 {
        full
    } else {
        (full * passed).checked_div(ran).unwrap_or(0).max(2)
    };
    let known_note = if known > 0 {
        format!(", {known} known failures")
    } else {
        String::new()
    };
    let _ = writeln!(
        s,
        "<rect x=\"{x}\" y=\"{}\" width=\"{full}\" height=\"{}\" fill=\"#f4f4f4\"/>\
         <rect class=\"cell\" data-rule=\"{}\" data-version=\"{}\" x=\"{x}\" y=\"{}\" width=\"{width}\" \
         height=\"{}\" fill=\"{fill}\"><title>{} {}: passed {passed} of {ran}{known_note}</title></rect>",
        y + 2,
        ROW - 4,
        esc(rule),
        esc(version),
        y + 2,
        ROW - 4,
        esc(rule),
        esc(version),
    );
    let label = if ran == 0 {
        "–".to_owned()
    } else {
        format!("{passed}/{ran}")
    };
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\">{label}</text>",
        x + full / 2,
        y + ROW - 6,
    );
}

/// The chart of one series.
pub fn chart(series: &Series) -> String {
    let width = LEFT + COL * series.versions.len() + 8;
    let height = TOP + ROW * series.rows.len() + 8;
    let mut s = format!(
        "<svg class=\"history\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" \
         height=\"{height}\" viewBox=\"0 0 {width} {height}\" role=\"img\" \
         aria-label=\"{} per rule and version\">\n",
        esc(&series.name)
    );
    for (v, version) in series.versions.iter().enumerate() {
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\" font-weight=\"600\">{}</text>",
            LEFT + COL * v + COL / 2,
            TOP - 14,
            esc(version)
        );
    }
    for (r, (rule, counts)) in series.rows.iter().enumerate() {
        let y = TOP + ROW * r;
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{}</text>",
            LEFT - 6,
            y + ROW - 5,
            esc(rule)
        );
        for (v, c) in counts.iter().enumerate() {
            cell(&mut s, rule, &series.versions[v], (LEFT + COL * v, y), *c);
        }
    }
    s.push_str("</svg>\n");
    s
}

/// The sections of every series: heading, chart, findings fixed and
/// introduced between consecutive versions.
pub fn render(all: &[Series]) -> String {
    let mut h = String::new();
    for series in all {
        let _ = writeln!(
            h,
            "<h2 id=\"{}\">History: {} ({})</h2>\n<p class=\"muted\">Per rule, the cases that \
             passed in each version, in the order the reports were given; amber: only known \
             failures, red: unexpected ones.</p>\n<div class=\"scroll\">",
            esc(&series.id),
            esc(&series.name),
            esc(&series.versions.join(" → "))
        );
        h.push_str(&chart(series));
        h.push_str("</div>\n<ul class=\"history-findings\">\n");
        for v in 0..series.versions.len().saturating_sub(1) {
            let (fixed, introduced) = series.changes(v);
            let list = |f: &[&String]| {
                if f.is_empty() {
                    "none".to_owned()
                } else {
                    f.iter().map(|x| esc(x)).collect::<Vec<_>>().join(", ")
                }
            };
            let _ = writeln!(
                h,
                "<li>{} → {}: fixed {}; introduced {}</li>",
                esc(&series.versions[v]),
                esc(&series.versions[v + 1]),
                list(&fixed),
                list(&introduced)
            );
        }
        h.push_str("</ul>\n");
    }
    h
}
