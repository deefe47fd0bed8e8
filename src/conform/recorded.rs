//! Judging a recorded run (`procroute judge TRACE OBSERVED`): a gateway that
//! cannot host a harness logs the inputs it was given, in the trace
//! language (P-8), and what it reported, in the harness's answer format
//! (P-8), from its own test suite or a staging system; the one judge holds
//! the record to the oracle, with the report `replay` gives.
//!
//! Nothing runs here: this is the judge alone, over two files.

use super::runner::Replay;
use super::trace::{Trace, TraceFile, TraceResult};
use crate::model::judge::{judge_declared, Declared};

/// The largest record accepted, in bytes (a trace file of 10,000 ops and
/// its report fit well within it).
pub const MAX_RECORD_BYTES: usize = 64 * 1024 * 1024;

/// A recorded trace: a trace file (P-11), or a bare `{threads, ops}` as a
/// harness receives it in a `run` command (P-8), which gets the id
/// `recorded`. The error names what is wrong.
pub fn trace_from_json(text: &str) -> Result<TraceFile, String> {
    check_size(text, "the trace")?;
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("the trace is not JSON: {e}"))?;
    if value.get("suite_version").is_some() {
        return TraceFile::from_json(text);
    }
    let trace: Trace = serde_json::from_value(value).map_err(|e| {
        format!("the trace is neither a trace file (P-11) nor {{threads, ops}} (P-8): {e}")
    })?;
    let file = TraceFile {
        suite_version: crate::SUITE_VERSION.to_owned(),
        id: "recorded".into(),
        rules: crate::model::judge::exercised(&trace)
            .into_iter()
            .map(str::to_owned)
            .collect(),
        note: String::new(),
        found: None,
        trace,
        expect: super::trace::file::Expect {
            verdict: super::trace::file::Verdict::Pass,
            deliveries: None,
            dead_letters: None,
        },
    };
    file.check()?;
    Ok(file)
}

/// What a gateway reported for a trace, in any of the shapes P-8 gives it:
/// `{deliveries, dead_letters}`, `{"trace": …}`, or the whole answer line
/// `{"seq": N, "result": {"trace": …}}`. Unknown fields of the report and
/// of its notifications are refused.
pub fn observed_from_json(text: &str) -> Result<TraceResult, String> {
    check_size(text, "the observations")?;
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("the observations are not JSON: {e}"))?;
    let inner = match &value {
        serde_json::Value::Object(m) if m.contains_key("result") => {
            m.get("result").and_then(|r| r.get("trace")).ok_or(
                "the observations have a `result` without a `trace`: a trace case's answer is {\"seq\":N,\"result\":{\"trace\":…}}",
            )?
        }
        serde_json::Value::Object(m) if m.contains_key("trace") => &m["trace"],
        _ => &value,
    };
    known_fields(inner)?;
    let result: TraceResult = serde_json::from_value(inner.clone()).map_err(|e| {
        format!("the observations are not a trace report {{deliveries, dead_letters}} (P-8): {e}")
    })?;
    Ok(result)
}

/// A typo in a field name would otherwise read as an empty list: every
/// field of the report and of each notification must be P-8's.
fn known_fields(report: &serde_json::Value) -> Result<(), String> {
    const REPORT: [&str; 2] = ["deliveries", "dead_letters"];
    const NOTIFICATION: [&str; 7] = [
        "step",
        "destination",
        "process",
        "kind",
        "text",
        "reason",
        "cause",
    ];
    let Some(m) = report.as_object() else {
        return Err(
            "the observations are not a JSON object {deliveries, dead_letters} (P-8)".into(),
        );
    };
    if let Some(k) = m.keys().find(|k| !REPORT.contains(&k.as_str())) {
        return Err(format!(
            "the observations have an unknown field {k:?} (P-8: deliveries, dead_letters)"
        ));
    }
    for list in REPORT {
        let items = m.get(list).and_then(|v| v.as_array()).into_iter().flatten();
        for (i, n) in items.enumerate() {
            let fields = n.as_object().into_iter().flat_map(|o| o.keys());
            if let Some(k) = fields
                .into_iter()
                .find(|k| !NOTIFICATION.contains(&k.as_str()))
            {
                return Err(format!("{list}[{i}] has an unknown field {k:?} (P-8)"));
            }
        }
    }
    Ok(())
}

fn check_size(text: &str, what: &str) -> Result<(), String> {
    if text.len() > MAX_RECORD_BYTES {
        return Err(format!(
            "{what}: {} bytes, at most {MAX_RECORD_BYTES} are accepted",
            text.len()
        ));
    }
    Ok(())
}

/// The one judge's verdict on a recorded run, as `replay` reports one
/// (`differences` against the file's listed observations included).
pub fn judge(file: &TraceFile, observed: TraceResult, declared: &Declared) -> Replay {
    let violations = judge_declared(&file.trace, &observed, declared);
    Replay {
        suite_version: crate::SUITE_VERSION.to_owned(),
        id: file.id.clone(),
        implementation: super::protocol::Implementation::named("recorded run", "", ""),
        verdict: if violations.is_empty() {
            "pass"
        } else {
            "fail"
        }
        .into(),
        skipped: None,
        differences: file.expect.differences(&observed),
        violations,
        result: observed,
    }
}
