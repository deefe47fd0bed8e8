//! The conformance suite: spec vectors and laws, checked rule by rule.
//!
//! Today the suite runs against the built-in implementation in-process; the
//! JSON-lines harness protocol for other implementations grows from here
//! (`spec/SPEC.md`, chapter on conformance).

pub mod badges;
pub mod constraint;
pub mod dialect;
pub mod harness;
pub mod history;
pub mod html;
pub mod junit;
pub mod laws;
pub mod protocol;
pub mod recorded;
pub mod render;
pub mod report;
pub mod runner;
pub mod schema;
pub mod select;
pub mod trace;
pub mod vectors;

use serde::{Deserialize, Serialize};

pub use report::Report;

/// The result of one case (a vector or one law instance).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    /// Stable id: the vector id, or `law/<rule>/<n>` for a generated case.
    pub id: String,
    /// The rule ids the case exercises.
    pub rules: Vec<String>,
    /// Whether the case passed (a skipped case counts as passed, never run).
    pub passed: bool,
    /// What went wrong, for a failed case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Why the case was not run (the implementation cannot express it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// Listed in `--known-failures` and failing as expected.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub expected_failure: bool,
    /// For a known failure: the finding its known-failures line names
    /// (`id  # FINDING`), explained in the implementation's FINDINGS.md.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finding: Option<String>,
    /// For a known failure: the upstream issue or pull request its
    /// known-failures line links (`id  # FINDING https://… SIG…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
    /// For a failing trace case: the signature of every violation the one
    /// judge found in it (`RULE`, `RULE:kind`, `RULE:kind@tN`; sorted, each
    /// once), on the trace as run (before shrinking). What a known-failures
    /// line pins (`select::check_pins`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub violations: Vec<String>,
    /// For a failing trace case: the counterexample as a trace file (what
    /// `procroute replay` runs) and what the implementation reported for
    /// it, so a report can draw it (`procroute report`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counterexample: Option<Box<Counterexample>>,
}

/// A failing trace and the implementation's report of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Counterexample {
    /// Shrunk, or as generated (then `file.found.shrunk_from` is absent).
    pub file: trace::TraceFile,
    /// What the implementation reported for it.
    pub result: trace::TraceResult,
}

impl Outcome {
    /// A passing case.
    pub fn pass(id: impl Into<String>, rules: &[&str]) -> Outcome {
        Outcome {
            id: id.into(),
            rules: rules.iter().map(|r| (*r).to_owned()).collect(),
            passed: true,
            detail: None,
            skipped: None,
            expected_failure: false,
            finding: None,
            upstream: None,
            violations: Vec::new(),
            counterexample: None,
        }
    }

    /// Not run, with the implementation's reason; counts as neither.
    pub fn skip(id: impl Into<String>, rules: &[&str], reason: String) -> Outcome {
        let mut o = Outcome::pass(id, rules);
        o.skipped = Some(reason);
        o
    }

    /// The harness could not answer (crash, timeout, garbage): a failure.
    pub fn errored(id: impl Into<String>, rules: &[&str], context: String) -> Outcome {
        Outcome::check(id, rules, Some(format!("errored: {context}")))
    }

    /// A case that failed with `failure`'s detail, or passed (`None`).
    pub fn check(id: impl Into<String>, rules: &[&str], failure: Option<String>) -> Outcome {
        let mut o = Outcome::pass(id, rules);
        if let Some(detail) = failure {
            o.passed = false;
            o.detail = Some(detail);
        }
        o
    }
}

/// How much generated work the law checks do.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    /// The seed every generated origin derives from.
    pub seed: u64,
    /// Generated origins per law.
    pub cases: usize,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            seed: 0x5EED,
            cases: 2000,
        }
    }
}

/// Runs every key vector through a harness process speaking the protocol,
/// the dialect laws and the generated traces through it, then (`laws`) the
/// key laws in-process (they exercise the built-in dialects).
pub fn run_protocol(
    program: &str,
    args: &[String],
    laws: Option<Config>,
    timeout: std::time::Duration,
    selection: &select::Selection,
    traces: &runner::TraceRun,
    dialect: dialect::DialectRun,
) -> Result<(Report, protocol::Started, u32), String> {
    let file = vectors::KeyVectors::builtin().map_err(|e| e.to_string())?;
    let chosen: Vec<vectors::Vector> = file
        .vectors
        .iter()
        .filter(|v| selection.wants(&v.id))
        .cloned()
        .collect();
    let (started, mut outcomes, restarts) =
        runner::run_vectors(program, args, &chosen, timeout, traces.validate)?;
    if dialect.cases > 0 {
        outcomes.extend(dialect::run_over(
            program,
            args,
            dialect,
            timeout,
            traces.validate,
            |id| selection.wants(id),
        )?);
    }
    let mut coverage = None;
    if traces.cases > 0 {
        let (o, c) =
            runner::run_traces_covered(program, args, traces, timeout, |id| selection.wants(id))?;
        outcomes.extend(o);
        if c.traces > 0 {
            // Trace features the harness refuses (P-12) take whole rules
            // out of reach: a shortfall there is what was not checked.
            let refused: Vec<String> = started
                .constraints
                .iter()
                .filter(|k| !k.ops.is_empty())
                .map(constraint::Constraint::describe)
                .collect();
            for (rule, n) in c.below(traces.min_coverage) {
                let id = format!("coverage/{rule}");
                let what = format!(
                    "the generator exercised {rule} in {n} of {} traces, below the required {}%",
                    c.traces, traces.min_coverage
                );
                // P-13: a shortfall only the declared profile causes is
                // what the profile leaves unchecked, not a weak generator.
                let plain = c.unsteered_by_rule.get(&rule).copied().unwrap_or(0);
                let floor = traces.min_coverage / 100.0 * c.traces as f64;
                outcomes.push(if !c.steered.is_empty() && plain as f64 >= floor {
                    Outcome::skip(
                        id,
                        &[rule.as_str()],
                        format!(
                            "{what}: the generation profile keeps it there \
                             (the same seeds without it: {plain}; `--unsteered` checks it)"
                        ),
                    )
                } else if refused.is_empty() {
                    Outcome::check(id, &[rule.as_str()], Some(what))
                } else {
                    Outcome::skip(
                        id,
                        &[rule.as_str()],
                        format!("{what}: the harness refuses {}", refused.join("; ")),
                    )
                });
            }
            coverage = Some(c);
        }
    }
    if let Some(config) = laws {
        outcomes.extend(
            laws::run(config)
                .into_iter()
                .filter(|o| selection.wants(&o.id)),
        );
    }
    let mut report = Report::new(file.suite_version.clone(), outcomes);
    report.coverage = coverage;
    report.declared = report::Declared::of(&started);
    Ok((report, started, restarts))
}

/// Runs every key vector and every key law against the built-in dialects.
pub fn run_builtin(config: Config) -> Result<Report, vectors::VectorFileError> {
    let file = vectors::KeyVectors::builtin()?;
    let mut outcomes: Vec<Outcome> = file.vectors.iter().map(vectors::run).collect();
    outcomes.extend(laws::run(config));
    Ok(Report::new(file.suite_version.clone(), outcomes))
}
