//! Badges (`procroute report --badges DIR`): shields.io endpoint JSON
//! (`spec/schema/shields-endpoint.json`) per implementation, overall and
//! per SPEC chapter, from `conform` JSON reports. A README shows one with
//! `https://img.shields.io/endpoint?url=<where the JSON is served>`.
//!
//! A badge says what the report says: a failing case counts as failing
//! whether or not it is a known failure.

use std::collections::BTreeSet;

use serde::Serialize;

use super::html::Input;

/// One shields.io endpoint badge (schema version 1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Badge {
    /// Always 1.
    pub schema_version: u8,
    /// The left side: `procroute` or `procroute <chapter>`.
    pub label: String,
    /// The right side: passed and failed counts.
    pub message: String,
    /// `brightgreen` when nothing fails, `red` when something does,
    /// `lightgrey` when nothing ran.
    pub color: String,
}

/// A SPEC chapter: its number, a short name for file names and labels,
/// and the ids of its rules.
#[derive(Debug, Clone)]
pub struct Chapter {
    /// `4` for "## 4. Background-process events".
    pub number: u32,
    /// `background-process-events`.
    pub slug: String,
    /// Its title, `Background-process events`.
    pub title: String,
    /// Rule ids written `**ID**` in it.
    pub rules: BTreeSet<String>,
}

/// SPEC's chapters with their rules (chapters without rules left out).
pub fn chapters(spec: &str) -> Vec<Chapter> {
    let mut out: Vec<Chapter> = Vec::new();
    for line in spec.lines() {
        if let Some(head) = line.strip_prefix("## ") {
            let Some((num, title)) = head.split_once(". ") else {
                continue;
            };
            let Ok(number) = num.trim().parse() else {
                continue;
            };
            let slug = title
                .to_ascii_lowercase()
                .split(|c: char| !c.is_ascii_alphanumeric())
                .filter(|w| !w.is_empty())
                .collect::<Vec<_>>()
                .join("-");
            out.push(Chapter {
                number,
                slug,
                title: title.trim().to_owned(),
                rules: BTreeSet::new(),
            });
        } else if let (Some(c), Some(rest)) = (out.last_mut(), line.strip_prefix("**")) {
            if let Some((id, _)) = rest.split_once("**") {
                if id.contains('-') && !id.contains(' ') {
                    c.rules.insert(id.to_owned());
                }
            }
        }
    }
    out.retain(|c| !c.rules.is_empty());
    out
}

/// Counts of cases run (skipped ones left out) and failed.
fn tally<'a>(outcomes: impl Iterator<Item = &'a super::Outcome>) -> (usize, usize) {
    let (mut run, mut failed) = (0, 0);
    for o in outcomes.filter(|o| o.skipped.is_none()) {
        run += 1;
        failed += usize::from(!o.passed);
    }
    (run, failed)
}

fn badge(label: String, (run, failed): (usize, usize)) -> Badge {
    let (message, color) = match (run, failed) {
        (0, _) => ("not run".to_owned(), "lightgrey"),
        (n, 0) => (format!("{n} passed"), "brightgreen"),
        (n, f) => (format!("{f} of {n} failing"), "red"),
    };
    Badge {
        schema_version: 1,
        label,
        message,
        color: color.into(),
    }
}

/// Every badge of one report: `(file name, badge)`, the overall one
/// first (`<impl>.json`), then one per chapter with cases
/// (`<impl>-<n>-<chapter>.json`).
pub fn badges(input: &Input, chapters: &[Chapter]) -> Vec<(String, Badge)> {
    let name = super::render::slug(&input.label);
    let outcomes = &input.report.outcomes;
    let mut out = vec![(
        format!("{name}.json"),
        badge("procroute".into(), tally(outcomes.iter())),
    )];
    for c in chapters {
        let cited = outcomes
            .iter()
            .filter(|o| o.rules.iter().any(|r| c.rules.contains(r)));
        let counts = tally(cited);
        if counts.0 == 0 {
            continue;
        }
        out.push((
            format!("{name}-{}-{}.json", c.number, c.slug),
            badge(
                format!("procroute {}", c.title.to_ascii_lowercase()),
                counts,
            ),
        ));
    }
    out
}
