//! The per-rule report and its closing `N passed, N failed` line.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::Outcome;

#[derive(Debug, Clone, Serialize, Deserialize)]
/// A run's outcomes, what the generated traces covered and what the
/// implementation declared: rendered as text, markdown, JSON or JUnit.
pub struct Report {
    /// The suite version of this build.
    pub suite_version: String,
    /// Every case's outcome, in run order.
    pub outcomes: Vec<Outcome>,
    /// How many generated traces exercised each judged rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coverage: Option<super::runner::Coverage>,
    /// What the implementation declared about itself in its handshake:
    /// observations about what was (not) checked, never passes.
    #[serde(default, skip_serializing_if = "Declared::is_empty")]
    pub declared: Declared,
    /// Who answered (the handshake's `implementation`), for a run over the
    /// protocol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub implementation: Option<super::protocol::Implementation>,
    /// The harness command (`--impl`), which a replay command needs; absent
    /// for the built-in harness.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The FINDINGS.md beside the known-failures file, whose `## NAME — …`
    /// sections explain the findings the known failures name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub findings: Option<String>,
}

/// The handshake's declarations a reader needs to weigh a report.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Declared {
    /// The policies the dialect laws ran under (P-10).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policies: Vec<String>,
    /// Inputs refused by design (P-12): never generated, so unchecked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub constraints: Vec<super::constraint::Constraint>,
    /// The delivery tick the judge allowed (P-14), in ms of the trace clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tick_ms: Option<u64>,
    /// The read policy the judge held it to (P-15), when not the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_acknowledges: Option<String>,
}

impl Declared {
    /// The declarations of a handshake.
    pub fn of(started: &super::protocol::Started) -> Declared {
        Declared {
            policies: if started.operations.iter().any(|o| o == "dialect_build") {
                started
                    .dialect_policies()
                    .into_iter()
                    .map(|(n, _)| n)
                    .collect()
            } else {
                Vec::new()
            },
            constraints: started.constraints.clone(),
            tick_ms: started.tick_ms.filter(|t| *t > 0),
            read_acknowledges: (started.read_acknowledges != crate::model::oracle::ReadAck::Never)
                .then(|| started.read_acknowledges.as_str().to_owned()),
        }
    }

    /// Whether it declared nothing.
    pub fn is_empty(&self) -> bool {
        self.policies.is_empty()
            && self.constraints.is_empty()
            && self.tick_ms.is_none()
            && self.read_acknowledges.is_none()
    }

    /// One line per declaration, for the text and markdown reports.
    fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.policies.is_empty() {
            out.push(format!(
                "key-dialect laws ran under {} polic{}: {}",
                self.policies.len(),
                if self.policies.len() == 1 { "y" } else { "ies" },
                self.policies.join(", ")
            ));
        }
        if let Some(t) = self.tick_ms {
            out.push(format!(
                "delivery tick {t} ms (P-14): a notification for an idle thread was accepted up to {t} ms of the trace clock after the step it became sendable (DELIVER-1)"
            ));
        }
        if let Some(a) = &self.read_acknowledges {
            out.push(format!(
                "implements SPEC D-1's policy read_acknowledges: {a} (P-15): a read by the home thread's agent after the run ended acknowledges its queued completion (PROC-11 judged, not PROC-10's default)"
            ));
        }
        for c in &self.constraints {
            out.push(format!(
                "not generated (declared constraint): {} — {}",
                c.describe(),
                c.reason
            ));
        }
        out
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
/// Per rule: cases passed, failed, skipped.
pub struct Tally {
    /// Cases that passed.
    pub passed: usize,
    /// Cases that failed.
    pub failed: usize,
    /// Cases skipped.
    pub skipped: usize,
}

impl Report {
    /// A report of these outcomes, with nothing else known.
    pub fn new(suite_version: String, outcomes: Vec<Outcome>) -> Report {
        Report {
            suite_version,
            outcomes,
            coverage: None,
            declared: Declared::default(),
            implementation: None,
            command: None,
            findings: None,
        }
    }

    /// Cases that passed (skipped ones not counted).
    pub fn passed(&self) -> usize {
        self.outcomes
            .iter()
            .filter(|o| o.passed && o.skipped.is_none())
            .count()
    }

    /// Cases that failed, known failures included.
    pub fn failed(&self) -> usize {
        self.outcomes.iter().filter(|o| !o.passed).count()
    }

    /// Failures not listed as known: these make the exit status non-zero.
    pub fn unexpected(&self) -> usize {
        self.outcomes
            .iter()
            .filter(|o| !o.passed && !o.expected_failure)
            .count()
    }

    /// A pull-request comment: per-rule table and the failures.
    pub fn render_markdown(&self, implementation: &str) -> String {
        let mut out = format!(
            "### procroute conform — suite {} against {}\n\n| rule | passed | failed | skipped |\n|---|---:|---:|---:|\n",
            self.suite_version, implementation
        );
        for (rule, t) in self.by_rule() {
            let _ = writeln!(
                out,
                "| {rule} | {} | {} | {} |",
                t.passed, t.failed, t.skipped
            );
        }
        let declared = self.declared.lines();
        if !declared.is_empty() {
            out.push_str("\nDeclared by the implementation (observations, not passes):\n\n");
            for l in &declared {
                let _ = writeln!(out, "- {l}");
            }
        }
        let failures: Vec<&Outcome> = self.outcomes.iter().filter(|o| !o.passed).collect();
        if !failures.is_empty() {
            out.push_str("\n<details><summary>failures</summary>\n\n");
            for o in failures.iter().take(100) {
                let _ = writeln!(
                    out,
                    "- `{}` [{}]{}\n\n  ```text\n{}\n  ```\n",
                    o.id,
                    o.rules.join(", "),
                    if o.expected_failure { " (known)" } else { "" },
                    o.detail
                        .as_deref()
                        .unwrap_or("")
                        .trim_end()
                        .lines()
                        .map(|l| format!("  {}", l.replace("```", "` ` `")))
                        .collect::<Vec<_>>()
                        .join("\n")
                );
            }
            out.push_str("\n</details>\n");
        }
        let skipped = self.skipped_by_reason();
        if !skipped.is_empty() {
            out.push_str("\n<details><summary>skipped</summary>\n\n");
            for (why, ids) in &skipped {
                let _ = writeln!(
                    out,
                    "- {} case(s): {}  \n  {}",
                    ids.len(),
                    why,
                    id_list(ids)
                );
            }
            out.push_str("\n</details>\n");
        }
        let _ = writeln!(
            out,
            "\n{} passed, {} failed, {} skipped",
            self.passed(),
            self.failed(),
            self.skipped()
        );
        out
    }

    /// Skipped cases grouped by the harness's reason, in first-seen order.
    pub fn skipped_by_reason(&self) -> Vec<(String, Vec<&str>)> {
        let mut groups: Vec<(String, Vec<&str>)> = Vec::new();
        for o in &self.outcomes {
            let Some(why) = &o.skipped else { continue };
            match groups.iter_mut().find(|(w, _)| w == why) {
                Some((_, ids)) => ids.push(&o.id),
                None => groups.push((why.clone(), vec![&o.id])),
            }
        }
        groups
    }

    /// Cases skipped.
    pub fn skipped(&self) -> usize {
        self.outcomes.iter().filter(|o| o.skipped.is_some()).count()
    }

    /// Cases per rule id; a case citing two rules counts for both.
    pub fn by_rule(&self) -> BTreeMap<String, Tally> {
        let mut map: BTreeMap<String, Tally> = BTreeMap::new();
        for o in &self.outcomes {
            for r in &o.rules {
                let t = map.entry(r.clone()).or_default();
                if o.skipped.is_some() {
                    t.skipped += 1;
                } else if o.passed {
                    t.passed += 1;
                } else {
                    t.failed += 1;
                }
            }
        }
        map
    }

    /// The terminal report: per-rule table, coverage, declarations, failures,
    /// and the closing `N passed, N failed` line.
    pub fn render_text(&self, implementation: &str) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "procroute conform: suite {} against {}",
            self.suite_version, implementation
        );
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{:<10} {:>8} {:>8} {:>8}",
            "rule", "passed", "failed", "skipped"
        );
        let mut rules: Vec<(String, Tally)> = self.by_rule().into_iter().collect();
        rules.sort_by_key(|r| rule_order(&r.0));
        for (rule, t) in rules {
            let mark = if t.failed > 0 { "  FAIL" } else { "" };
            let _ = writeln!(
                out,
                "{:<10} {:>8} {:>8} {:>8}{}",
                rule, t.passed, t.failed, t.skipped, mark
            );
        }
        if let Some(c) = &self.coverage {
            let _ = writeln!(
                out,
                "\ncoverage: generated traces exercising each judged rule (model's view), of {}",
                c.traces
            );
            let mut line = String::new();
            for (i, rule) in c.judged().enumerate() {
                let n = c.by_rule.get(rule).copied().unwrap_or(0);
                let pct = 100.0 * n as f64 / c.traces.max(1) as f64;
                let _ = write!(line, "{:<10} {:>5} {:>5.1}%   ", rule, n, pct);
                if i % 3 == 2 {
                    let _ = writeln!(out, "{}", line.trim_end());
                    line.clear();
                }
            }
            if !line.is_empty() {
                let _ = writeln!(out, "{}", line.trim_end());
            }
            let _ = writeln!(
                out,
                "\nof which passed: {} ({:.0} %), exercising each judged rule",
                c.passed,
                100.0 * c.passed as f64 / c.traces.max(1) as f64
            );
            let mut line = String::new();
            for (i, rule) in c.judged().enumerate() {
                let n = c.passed_by_rule.get(rule).copied().unwrap_or(0);
                let _ = write!(line, "{:<10} {:>5}   ", rule, n);
                if i % 4 == 3 {
                    let _ = writeln!(out, "{}", line.trim_end());
                    line.clear();
                }
            }
            if !line.is_empty() {
                let _ = writeln!(out, "{}", line.trim_end());
            }
            if !c.steered.is_empty() {
                let _ = writeln!(
                    out,
                    "generated under the implementation's profile (P-13; --unsteered for none):"
                );
                for l in &c.steered {
                    let _ = writeln!(out, "  {l}");
                }
            }
        }
        let declared = self.declared.lines();
        if !declared.is_empty() {
            let _ = writeln!(
                out,
                "\ndeclared by the implementation (observations, not passes):"
            );
            for l in &declared {
                let _ = writeln!(out, "  {l}");
            }
        }
        let failures: Vec<&Outcome> = self.outcomes.iter().filter(|o| !o.passed).collect();
        if !failures.is_empty() {
            let _ = writeln!(out, "\nfailures:");
            for o in failures.iter().take(50) {
                let _ = writeln!(
                    out,
                    "  {}{} [{}]: {}",
                    o.id,
                    if o.expected_failure {
                        " (known failure)"
                    } else {
                        ""
                    },
                    o.rules.join(", "),
                    o.detail.as_deref().unwrap_or("")
                );
            }
            if failures.len() > 50 {
                let _ = writeln!(out, "  ... and {} more", failures.len() - 50);
            }
        }
        let skipped = self.skipped_by_reason();
        if !skipped.is_empty() {
            let _ = writeln!(out, "\nskipped (the harness's reasons):");
            for (why, ids) in &skipped {
                let _ = writeln!(
                    out,
                    "  {} case(s): {}\n    {}",
                    ids.len(),
                    why,
                    id_list(ids)
                );
            }
        }
        let _ = writeln!(out);
        if self.skipped() > 0 {
            let _ = writeln!(
                out,
                "{} passed, {} failed, {} skipped",
                self.passed(),
                self.failed(),
                self.skipped()
            );
        } else {
            let _ = writeln!(out, "{} passed, {} failed", self.passed(), self.failed());
        }
        if let Some(c) = self.coverage.as_ref().filter(|c| c.traces > 0) {
            let _ = writeln!(
                out,
                "generated traces: {} of {} passed ({:.0} %){}",
                c.passed,
                c.traces,
                100.0 * c.passed as f64 / c.traces as f64,
                if c.steered.is_empty() {
                    ""
                } else {
                    ", steered by the implementation's profile"
                }
            );
        }
        out
    }
}

/// At most 10 ids, then how many more.
fn id_list(ids: &[&str]) -> String {
    let mut s = ids.iter().take(10).copied().collect::<Vec<_>>().join(", ");
    if ids.len() > 10 {
        s.push_str(&format!(" … and {} more", ids.len() - 10));
    }
    s
}

/// `KEY-10` sorts after `KEY-9`, `KEY-C1` after `KEY-9`: split off the
/// trailing number.
fn rule_order(rule: &str) -> (String, u64) {
    let digits = rule.len() - rule.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let (head, num) = rule.split_at(rule.len() - digits);
    (head.to_owned(), num.parse().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Declarations are observations: listed in both renderings, never
    /// counted as passes.
    #[test]
    fn declarations_are_listed_not_counted() {
        let mut r = Report::new("0".into(), vec![Outcome::pass("a", &["KEY-1"])]);
        r.declared = Declared {
            policies: vec!["default".into(), "profile-x".into()],
            constraints: vec![super::super::constraint::Constraint {
                fields: vec![super::super::constraint::Field::UserId],
                platforms: vec!["whatsapp".into()],
                chat_types: vec!["group".into()],
                allow: Some("0-9".into()),
                forbid: None,
                one_of: vec![],
                integer: false,
                max_len: None,
                ops: vec![],
                reason: "identities are canonicalised".into(),
            }],
            tick_ms: Some(5_000),
            read_acknowledges: Some("own_thread_after_delivery".into()),
        };
        for text in [r.render_text("x"), r.render_markdown("x")] {
            assert!(text.contains("2 policies: default, profile-x"), "{text}");
            assert!(
                text.contains("read_acknowledges: own_thread_after_delivery (P-15)"),
                "{text}"
            );
            assert!(text.contains("delivery tick 5000 ms (P-14)"), "{text}");
            assert!(
                text.contains("not generated (declared constraint): user_id in whatsapp group origins: only [0-9] — identities are canonicalised"),
                "{text}"
            );
            assert!(text.contains("1 passed, 0 failed"), "{text}");
        }
    }
}
