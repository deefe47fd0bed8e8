//! `procroute judge TRACE OBSERVED` (PROTOCOL P-8, P-11): a gateway's
//! recorded run — the trace it was given and what it reported — held to
//! the oracle by the one judge, nothing run. A correct record passes; a
//! record of the foreground-routing bug fails with INV-6 (the foreground
//! thread) and a misroute elsewhere with INV-1; bad records are refused
//! with the reason (exit 2).

use procroute_suite::conform::trace::{execute, RawOrigin, Trace, TraceOp, TraceResult};

#[path = "support/scratch.rs"]
mod scratch;

fn topic(t: &str) -> RawOrigin {
    RawOrigin {
        platform: "telegram".into(),
        chat_type: "group".into(),
        chat_id: "-1001".into(),
        thread_id: Some(t.into()),
        user_id: Some("u1".into()),
        user_name: None,
    }
}

/// A build started in topic 1 finishes while topic 2 is the foreground;
/// topic 3 is a bystander.
fn build_trace() -> Trace {
    Trace {
        threads: vec![topic("1"), topic("2"), topic("3")],
        ops: vec![
            TraceOp::Message { thread: 0 },
            TraceOp::Message { thread: 2 },
            TraceOp::Spawn {
                thread: 0,
                process: "build".into(),
                watch: vec![],
                notify: true,
            },
            TraceOp::Output {
                process: "build".into(),
                text: "tok1ofbuild compiled\n".into(),
            },
            TraceOp::Message { thread: 1 },
            TraceOp::Exit {
                process: "build".into(),
                code: 0,
            },
        ],
    }
}

/// Runs `procroute judge` on the two texts; (exit code, stdout, stderr).
fn judge(scratch: &scratch::Scratch, trace: &str, observed: &str) -> (i32, String, String) {
    let (t, o) = (scratch.join("trace.json"), scratch.join("observed.json"));
    std::fs::write(&t, trace).expect("write");
    std::fs::write(&o, observed).expect("write");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_procroute"))
        .arg("judge")
        .arg(&t)
        .arg(&o)
        .output()
        .expect("procroute runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn recorded() -> (Trace, TraceResult) {
    let t = build_trace();
    let r = execute(&t).expect("the built-in router runs it");
    assert_eq!(r.deliveries.len(), 1, "one completion: {r:?}");
    (t, r)
}

#[test]
fn a_recorded_correct_run_passes_in_every_shape() {
    let s = scratch::Scratch::new("judge-pass");
    let (t, r) = recorded();
    let trace = serde_json::to_string(&t).unwrap();
    let report = serde_json::to_value(&r).unwrap();
    for observed in [
        report.clone(),
        serde_json::json!({ "trace": report }),
        serde_json::json!({ "seq": 7, "result": { "trace": report } }),
    ] {
        let (code, out, err) = judge(&s, &trace, &observed.to_string());
        assert_eq!(code, 0, "{out}{err}");
        assert!(out.contains("verdict: PASS"), "{out}");
    }
    // A stored trace file, with its own id, is read as such.
    let stored = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("spec/vectors/traces/fault-foreground-routing.json"),
    )
    .expect("stored trace");
    let file = procroute_suite::conform::trace::TraceFile::from_json(&stored).unwrap();
    let r = execute(&file.trace).unwrap();
    let (code, out, err) = judge(&s, &stored, &serde_json::to_string(&r).unwrap());
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.starts_with("trace/fault-foreground-routing"), "{out}");
}

#[test]
fn a_recorded_misroute_fails_with_its_rule() {
    let s = scratch::Scratch::new("judge-fail");
    let (t, r) = recorded();
    let trace = serde_json::to_string(&t).unwrap();
    for (to, rule) in [("2", "INV-6"), ("3", "INV-1")] {
        let mut bad = r.clone();
        bad.deliveries[0].destination.thread_id = Some(to.into());
        let (code, out, err) = judge(&s, &trace, &serde_json::to_string(&bad).unwrap());
        assert_eq!(code, 1, "{out}{err}");
        assert!(out.contains("verdict: FAIL"), "{out}");
        assert!(out.contains(&format!("  {rule}: ")), "topic {to}: {out}");
    }
}

#[test]
fn a_bad_record_is_refused_with_its_reason() {
    let s = scratch::Scratch::new("judge-bad");
    let (t, r) = recorded();
    let trace = serde_json::to_string(&t).unwrap();
    let report = serde_json::to_string(&r).unwrap();
    let cases = [
        (
            trace.clone(),
            report.replace("deliveries", "deliverys"),
            "\"deliverys\"",
        ),
        (
            trace.clone(),
            report.replace("\"kind\"", "\"knd\""),
            "\"knd\"",
        ),
        (
            trace.clone(),
            "{\"seq\":1,\"result\":{\"key\":\"x\"}}".into(),
            "without a `trace`",
        ),
        (trace.clone(), "not json".into(), "not JSON"),
        (
            "{\"threads\":[],\"ops\":[]}".into(),
            report.clone(),
            "threads is empty",
        ),
        ("{\"ops\":[]}".into(), report, "neither a trace file"),
    ];
    for (trace, observed, says) in cases {
        let (code, out, err) = judge(&s, &trace, &observed);
        assert_eq!(code, 2, "{says}: {out}{err}");
        assert!(err.contains(says), "expected {says:?} in: {err}");
    }
}
