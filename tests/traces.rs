//! Every stored trace under `spec/vectors/traces/` is a protocol trace
//! (P-8) with a stable id: it parses and checks, the rules it lists are the
//! ones the oracle says it exercises, the built-in router passes the one
//! judge on it and reports exactly the stored observations. (`conform` runs
//! the same files against any harness; `tests/bug-bank/faults.rs` checks that each
//! historical fault still fails its trace.) On failure the trace is printed
//! as a per-thread swimlane timeline.

#[path = "support/traces.rs"]
mod traces;

use procroute_suite::conform::render;
use procroute_suite::conform::trace::{execute, TraceFile};
use procroute_suite::model::judge::{exercised, judge};

fn stored() -> Vec<(std::path::PathBuf, TraceFile)> {
    let mut files: Vec<_> = std::fs::read_dir(traces::traces_dir())
        .expect("spec/vectors/traces exists")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let f = TraceFile::load(&p).unwrap_or_else(|e| panic!("{e}"));
            (p, f)
        })
        .collect()
}

#[test]
fn stored_traces_replay() {
    let files = stored();
    assert!(
        files.len() >= 6,
        "expected at least the six fault traces, found {}",
        files.len()
    );
    let mut ids = std::collections::BTreeSet::new();
    for (path, t) in files {
        assert!(ids.insert(t.id.clone()), "duplicate trace id {}", t.id);
        let raw: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("readable")).expect("json");
        procroute_suite::conform::schema::Schema::protocol()
            .validate("trace_file", &raw)
            .unwrap_or_else(|e| panic!("{}: schema $defs/trace_file: {e}", t.id));
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        assert_eq!(t.id, format!("trace/{stem}"), "the id names the file");
        let rules: Vec<String> = exercised(&t.trace).into_iter().map(str::to_owned).collect();
        if std::env::var_os("PROCROUTE_WRITE_TRACES").is_some() && t.rules != rules {
            // The oracle's view changed: rewrite the list, nothing else.
            let mut f = t.clone();
            f.rules = rules.clone();
            std::fs::write(&path, f.to_json()).expect("write trace");
        } else {
            assert_eq!(
                t.rules, rules,
                "{}: rules are the oracle's view (PROCROUTE_WRITE_TRACES=1 rewrites them)",
                t.id
            );
        }
        let result = execute(&t.trace).unwrap_or_else(|e| panic!("{}: {e}", t.id));
        let v = judge(&t.trace, &result);
        let diff = t.expect.differences(&result);
        assert!(
            v.is_empty() && diff.is_empty(),
            "{} [{}] failed:\n{}\n{}\n{}",
            t.id,
            t.rules.join(", "),
            traces::show(&v),
            diff.join("\n"),
            render::timeline_text(&t.trace, &result)
        );
    }
}

/// A trace file that is wrong in any way is refused with a reason naming
/// what is wrong, never run.
#[test]
fn bad_trace_files_are_refused_with_a_reason() {
    let (_, good) = stored().into_iter().next().expect("a stored trace");
    let json = serde_json::to_value(&good).expect("json");
    type Breaker = Box<dyn Fn(&mut serde_json::Value)>;
    let cases: Vec<(&str, Breaker, &str)> = vec![
        (
            "version",
            Box::new(|v| v["suite_version"] = "9.9.9".into()),
            "suite_version",
        ),
        ("id", Box::new(|v| v["id"] = "a b".into()), "id"),
        (
            "no threads",
            Box::new(|v| v["trace"]["threads"] = serde_json::json!([])),
            "threads",
        ),
        (
            "bad thread",
            Box::new(|v| v["trace"]["threads"][0]["chat_id"] = "".into()),
            "trace.threads[0]",
        ),
        (
            "thread index",
            Box::new(|v| {
                v["trace"]["ops"] = serde_json::json!([{"message": {"thread": 99}}]);
            }),
            "trace.ops[0] names thread 99",
        ),
        (
            "respawn",
            Box::new(|v| {
                let s = serde_json::json!({"spawn": {"thread": 0, "process": "p", "watch": [], "notify": true}});
                v["trace"]["ops"] = serde_json::json!([s.clone(), s]);
            }),
            "still running",
        ),
        (
            "unknown field",
            Box::new(|v| v["extra"] = 1.into()),
            "unknown field",
        ),
        (
            "unknown op",
            Box::new(|v| v["trace"]["ops"] = serde_json::json!([{"explode": {}}])),
            "not a trace file",
        ),
    ];
    for (name, break_it, needle) in cases {
        let mut v = json.clone();
        break_it(&mut v);
        let err = TraceFile::from_json(&v.to_string()).expect_err(name);
        assert!(err.contains(needle), "{name}: {err}");
    }
}
