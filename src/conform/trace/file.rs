//! A trace as a file: the stored vectors in `spec/vectors/traces/` and the
//! counterexamples `conform --save` and `replay --save` write are one format
//! (schema `$defs/trace_file` in `spec/schema/protocol-v1.json`), so any
//! implementation can replay what the suite stores or finds.

use serde::{Deserialize, Serialize};

use super::{to_origin, well_formed, Cause, Observed, Trace, TraceResult};
use crate::model::oracle::{Kind, Place};

/// Traces longer than this are refused when read (a stored counterexample
/// is shrunk; a generated one has at most a few hundred ops).
pub const MAX_OPS: usize = 10_000;

/// One trace file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceFile {
    /// The suite version it was written for (S-3).
    pub suite_version: String,
    /// Stable id: `trace/<name>` for a stored vector; `gen/<seed>/<n>` for a
    /// generated case.
    pub id: String,
    /// The rules the trace exercises, from the oracle's view, sorted.
    pub rules: Vec<String>,
    /// What the trace is, in words.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
    /// Where the trace was found failing, if it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub found: Option<Found>,
    /// The trace.
    pub trace: Trace,
    /// What a correct implementation's report is judged.
    pub expect: Expect,
}

/// Where a counterexample was found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Found {
    /// The implementation (name and version) or the fault (`procroute
    /// harness --fault NAME`) that failed it.
    pub implementation: String,
    /// The rule the implementation broke first.
    pub rule: String,
    /// The judge's reason, as it was reported.
    pub violation: String,
    /// The generated case it was shrunk from and that case's length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shrunk_from: Option<ShrunkFrom>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
/// The generated case a counterexample was shrunk from.
pub struct ShrunkFrom {
    /// Its id (`gen/<seed>/<n>`).
    pub id: String,
    /// Its steps before quiescence.
    pub steps: usize,
}

/// The expected verdict, and optionally the observations that earn it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// A correct implementation passes the judge on this trace.
    pub verdict: Verdict,
    /// What a correct implementation reports (texts aside: the judge holds
    /// those to the rules, not to bytes). Informative: the verdict comes
    /// from the judge; `tests/traces.rs` holds the built-in router to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deliveries: Option<Vec<ExpectedObservation>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// What a correct implementation dead-letters (informative, as above).
    pub dead_letters: Option<Vec<ExpectedObservation>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
/// The only verdict a stored trace may expect: a correct implementation
/// passes.
pub enum Verdict {
    /// The judge finds nothing.
    Pass,
}

/// An observation without its text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectedObservation {
    /// The operation during which it happens.
    pub step: usize,
    /// The thread it reaches.
    pub destination: Place,
    /// The process it is about (`None` for a shutdown notice).
    pub process: Option<String>,
    /// What it is.
    pub kind: Kind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// For a dead letter, why (typed).
    pub cause: Option<Cause>,
}

impl From<&Observed> for ExpectedObservation {
    fn from(o: &Observed) -> ExpectedObservation {
        ExpectedObservation {
            step: o.step,
            destination: o.destination.clone(),
            process: o.process.clone(),
            kind: o.kind,
            cause: o.cause,
        }
    }
}

impl Expect {
    /// A pass, with the observations of `result`.
    pub fn observed(result: &TraceResult) -> Expect {
        Expect {
            verdict: Verdict::Pass,
            deliveries: Some(result.deliveries.iter().map(Into::into).collect()),
            dead_letters: Some(result.dead_letters.iter().map(Into::into).collect()),
        }
    }

    /// Where `result` differs from the listed observations (none listed:
    /// no difference), in words.
    pub fn differences(&self, result: &TraceResult) -> Vec<String> {
        let mut out = Vec::new();
        let lists = [
            ("delivery", &self.deliveries, &result.deliveries),
            ("dead letter", &self.dead_letters, &result.dead_letters),
        ];
        for (what, want, got) in lists {
            let Some(want) = want else { continue };
            let got: Vec<ExpectedObservation> = got.iter().map(Into::into).collect();
            for (i, w) in want.iter().enumerate() {
                match got.get(i) {
                    Some(g) if g == w => {}
                    Some(g) => {
                        out.push(format!("{what} {i}: expected {}, got {}", json(w), json(g)))
                    }
                    None => out.push(format!("{what} {i}: expected {}, missing", json(w))),
                }
            }
            for (i, g) in got.iter().enumerate().skip(want.len()) {
                out.push(format!("{what} {i}: unexpected {}", json(g)));
            }
        }
        out
    }
}

fn json(v: &impl Serialize) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

impl TraceFile {
    /// Parses and checks a trace file; the error names what is wrong.
    pub fn from_json(text: &str) -> Result<TraceFile, String> {
        let f: TraceFile =
            serde_json::from_str(text).map_err(|e| format!("not a trace file: {e}"))?;
        f.check()?;
        Ok(f)
    }

    /// Reads a trace file from disk.
    pub fn load(path: &std::path::Path) -> Result<TraceFile, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        TraceFile::from_json(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// The checks a trace file must pass before it is run.
    pub fn check(&self) -> Result<(), String> {
        if self.suite_version != crate::SUITE_VERSION {
            return Err(format!(
                "suite_version {:?}, this suite is {:?}",
                self.suite_version,
                crate::SUITE_VERSION
            ));
        }
        if self.id.is_empty() || self.id.len() > 200 || self.id.chars().any(char::is_whitespace) {
            return Err(format!(
                "id {:?} must be 1 to 200 non-space characters",
                self.id
            ));
        }
        if self.trace.ops.len() > MAX_OPS {
            return Err(format!(
                "{} ops, at most {MAX_OPS} are accepted",
                self.trace.ops.len()
            ));
        }
        if self.trace.threads.is_empty() {
            return Err("trace.threads is empty: a trace needs at least one thread".into());
        }
        for (i, t) in self.trace.threads.iter().enumerate() {
            to_origin(t).map_err(|e| format!("trace.threads[{i}]: {e}"))?;
        }
        for (i, op) in self.trace.ops.iter().enumerate() {
            if let Some(t) = op.thread() {
                if t >= self.trace.threads.len() {
                    return Err(format!(
                        "trace.ops[{i}] names thread {t}, the trace has {}",
                        self.trace.threads.len()
                    ));
                }
            }
        }
        if !well_formed(&self.trace) {
            return Err("trace.ops spawn a process id that is still running (P-8)".into());
        }
        Ok(())
    }

    /// The file as pretty JSON with a final newline.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }
}

/// The stored traces, compiled in (`build.rs`): (file name, contents).
pub const STORED: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/stored_traces.rs"));

/// Every stored trace, parsed and checked, in file-name order.
pub fn stored() -> Result<Vec<TraceFile>, String> {
    STORED
        .iter()
        .map(|(name, text)| {
            TraceFile::from_json(text).map_err(|e| format!("spec/vectors/traces/{name}: {e}"))
        })
        .collect()
}
