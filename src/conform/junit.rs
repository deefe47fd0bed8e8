//! JUnit XML for CI dashboards (`--format junit` of `conform`, `replay`
//! and `explore`): one `<testcase>` per case id, a failure carrying its
//! headline rule and reason, a skipped case its reason.
//!
//! The shape is the one CI systems read (Jenkins' and GitLab's JUnit
//! importers, GitHub test reporters, `junitparser`): a `<testsuites>` root
//! with totals, one `<testsuite>` per run (the implementation) with
//! `tests`, `failures`, `errors` and `skipped`, and `<testcase
//! classname name>` children with at most one `<failure message type>` or
//! `<skipped message>`. A known failure that still fails (`--known-failures`)
//! is reported as skipped with that reason, since it fails no build.
//! Characters XML 1.0 cannot hold (control characters other than tab and
//! newline) are written as `\u{…}`, so hostile output in a counterexample
//! cannot make the file unreadable.

use std::fmt::Write as _;

use super::Outcome;

/// The XML document for `outcomes` of one run. `tool` names the command
/// (`procroute conform`), `implementation` the harness it ran against.
pub fn render(tool: &str, implementation: &str, outcomes: &[Outcome]) -> String {
    let failed = outcomes.iter().filter(|o| failing(o)).count();
    let skipped = outcomes.iter().filter(|o| skip_reason(o).is_some()).count();
    let tests = outcomes.len();
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        x,
        "<testsuites name=\"{}\" tests=\"{tests}\" failures=\"{failed}\" errors=\"0\" skipped=\"{skipped}\">",
        escape(tool)
    );
    let _ = writeln!(
        x,
        "  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failed}\" errors=\"0\" skipped=\"{skipped}\">",
        escape(&format!("{tool} against {implementation}"))
    );
    for o in outcomes {
        let _ = write!(
            x,
            "    <testcase classname=\"{}\" name=\"{}\"",
            escape(&classname(o)),
            escape(&o.id)
        );
        if let Some(why) = skip_reason(o) {
            let _ = writeln!(
                x,
                ">\n      <skipped message=\"{}\"/>\n    </testcase>",
                escape(&why)
            );
        } else if failing(o) {
            let detail = o.detail.as_deref().unwrap_or("failed");
            let headline = detail.lines().next().unwrap_or("failed");
            let rule = o.rules.first().map_or("", String::as_str);
            let _ = writeln!(
                x,
                ">\n      <failure message=\"{}\" type=\"{}\">{}</failure>\n    </testcase>",
                escape(headline),
                escape(rule),
                escape(detail)
            );
        } else {
            x.push_str("/>\n");
        }
    }
    x.push_str("  </testsuite>\n</testsuites>\n");
    x
}

fn failing(o: &Outcome) -> bool {
    !o.passed && !o.expected_failure
}

fn skip_reason(o: &Outcome) -> Option<String> {
    if let Some(why) = &o.skipped {
        return Some(why.clone());
    }
    o.expected_failure.then(|| {
        format!(
            "known failure, still failing: {}",
            o.detail
                .as_deref()
                .and_then(|d| d.lines().next())
                .unwrap_or("")
        )
    })
}

/// The case's family, for dashboards that group by class: the id up to
/// its first `/` (`gen`, `explore`, `dialect`, `trace`, `law`, …); the
/// rule a failure breaks is its `type`.
fn classname(o: &Outcome) -> String {
    let family: String =
        o.id.split('/')
            .next()
            .unwrap_or("case")
            .chars()
            .map(|c| {
                if c.is_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
    format!("procroute.{family}")
}

/// Escapes text for an XML attribute or element; characters XML 1.0
/// forbids become `\u{…}`.
fn escape(s: &str) -> String {
    super::render::escape_xml(s, true)
}
