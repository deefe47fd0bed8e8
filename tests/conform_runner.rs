//! The runner never hangs and never fakes: crashes, garbage, oversized
//! lines, hangs and wrong sequence numbers become errored cases (quoting
//! what was wrong) and the run continues; unsupported operations are
//! skipped with the harness's reason (spec/PROTOCOL.md P-4..P-6).

use std::time::Duration;

use procroute_suite::conform::runner;
use procroute_suite::conform::vectors::KeyVectors;
use procroute_suite::conform::Outcome;

fn run(mode: &str, n: usize) -> (Vec<Outcome>, u32) {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/harnesses/misbehaving.py"
    );
    let file = KeyVectors::builtin().expect("vectors");
    let vectors: Vec<_> = file
        .vectors
        .iter()
        .filter(|v| v.case.operation() == "origin")
        .take(n)
        .cloned()
        .collect();
    let (_, out, restarts) = runner::run_vectors(
        "python3",
        &[script.to_owned(), mode.to_owned()],
        &vectors,
        Duration::from_millis(1500),
        false,
    )
    .expect("run completes");
    assert_eq!(out.len(), vectors.len(), "every case reported");
    (out, restarts)
}

/// Generated traces with schema validation, no saving.
fn trace_run(seed: u64, cases: usize) -> runner::TraceRun {
    runner::TraceRun {
        seed,
        cases,
        max_steps: 32,
        save_dir: None,
        max_shrink_runs: 100,
        max_shrunk: usize::MAX,
        svg: None,
        validate: true,
        known: Vec::new(),
        min_coverage: 0.0,
        stored: false,
        jobs: 1,
        unsteered: false,
    }
}

fn detail(o: &Outcome) -> &str {
    o.detail.as_deref().unwrap_or("")
}

#[test]
fn p4_a_crashing_harness_is_restarted_and_the_run_continues() {
    let (out, restarts) = run("crash", 6);
    // The script dies on every third case it serves: cases 3 and 6.
    assert!(detail(&out[2]).contains("crashed"), "{:?}", out[2]);
    assert!(detail(&out[5]).contains("crashed"), "{:?}", out[5]);
    assert!(
        out[3..5].iter().all(|o| !detail(o).contains("errored")),
        "later cases run: {out:?}"
    );
    assert_eq!(restarts, 2);
}

#[test]
fn p5_garbage_is_errored_quoting_the_bytes() {
    let (out, _) = run("garbage", 4);
    assert!(
        detail(&out[1]).contains("not a protocol reply")
            && detail(&out[1]).contains("\\x01 not json"),
        "{:?}",
        out[1]
    );
}

#[test]
fn p5_oversized_lines_are_errored() {
    let (out, _) = run("oversized", 3);
    assert!(detail(&out[0]).contains("oversized"), "{:?}", out[0]);
}

#[test]
fn p4_a_hanging_harness_times_out_and_is_restarted() {
    let (out, restarts) = run("hang", 3);
    assert!(detail(&out[0]).contains("no answer within"), "{:?}", out[0]);
    assert!(restarts >= 1);
}

#[test]
fn p5_a_reply_for_the_wrong_case_is_errored() {
    let (out, _) = run("wrongseq", 2);
    assert!(detail(&out[0]).contains("seq"), "{:?}", out[0]);
}

#[test]
fn p6_unsupported_operations_are_skipped_with_the_reason() {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/harnesses/misbehaving.py"
    );
    let file = KeyVectors::builtin().expect("vectors");
    let vectors: Vec<_> = file
        .vectors
        .iter()
        .filter(|v| v.case.operation() == "hermes_build")
        .take(3)
        .cloned()
        .collect();
    let (_, out, _) = runner::run_vectors(
        "python3",
        &[script.to_owned(), "partial".to_owned()],
        &vectors,
        Duration::from_secs(5),
        true,
    )
    .expect("run completes");
    assert!(
        out.iter()
            .all(|o| o.skipped.as_deref() == Some("no hermes keys here")),
        "{out:?}"
    );
}

#[test]
fn p1_the_builtin_harness_passes_every_vector_over_the_protocol() {
    let file = KeyVectors::builtin().expect("vectors");
    let exe = env!("CARGO_BIN_EXE_procroute");
    let (started, out, restarts) = runner::run_vectors(
        exe,
        &["harness".to_owned()],
        &file.vectors,
        Duration::from_secs(10),
        true,
    )
    .expect("run completes");
    assert_eq!(started.implementation.name, "procroute");
    assert_eq!(restarts, 0);
    let failed: Vec<_> = out.iter().filter(|o| !o.passed).collect();
    assert!(failed.is_empty(), "{failed:?}");
}

/// Generated traces over the protocol pass on the built-in harness, and
/// every one is judged on the model's invariants.
#[test]
fn p8_generated_traces_pass_on_the_builtin_harness() {
    let exe = env!("CARGO_BIN_EXE_procroute");
    let cfg = trace_run(11, 100);
    let out = runner::run_traces(
        exe,
        &["harness".to_owned()],
        &cfg,
        Duration::from_secs(10),
        |_| true,
    )
    .expect("runs");
    assert_eq!(out.len(), 100);
    let failed: Vec<_> = out.iter().filter(|o| !o.passed).collect();
    assert!(failed.is_empty(), "{failed:?}");
}

/// Trace replies take a typed fast path when `--validate` is off; a reply
/// that is not exactly right still falls to the checks that name the fault.
#[test]
fn p5_bad_trace_replies_are_errored_without_validation_too() {
    let relay = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/harnesses/relay.py");
    let exe = env!("CARGO_BIN_EXE_procroute");
    let cfg = runner::TraceRun {
        validate: false,
        max_shrink_runs: 0,
        max_shrunk: usize::MAX,
        ..trace_run(5, 3)
    };
    for (mode, says) in [
        ("wrongseq", "reply for seq"),
        ("extra", "unknown field `note`"),
    ] {
        let out = runner::run_traces(
            "python3",
            &[
                relay.to_owned(),
                mode.to_owned(),
                exe.to_owned(),
                "harness".to_owned(),
            ],
            &cfg,
            Duration::from_secs(10),
            |_| true,
        )
        .expect("runs");
        // An errored case restarts the harness, so each case meets a fresh
        // relay and its first (broken) reply.
        assert_eq!(out.len(), 3, "{mode}");
        for o in &out {
            assert!(!o.passed && detail(o).contains(says), "{mode}: {o:?}");
        }
    }
}

/// `--validate`: a reply with a field the schema does not allow is an
/// errored case naming the field; the built-in harness validates clean (p1).
#[test]
fn p9_schema_violations_are_errored() {
    use procroute_suite::conform::schema::Schema;
    let s = Schema::protocol();
    assert!(s
        .validate(
            "run_reply",
            &serde_json::json!({"seq": 1, "result": {"ok": true}})
        )
        .is_ok());
    let e = s
        .validate(
            "run_reply",
            &serde_json::json!({"seq": 1, "result": {"ok": true}, "extra": 2}),
        )
        .expect_err("extra field");
    assert!(e.contains("extra"), "{e}");
    let e = s
        .validate("run_reply", &serde_json::json!({"seq": "1"}))
        .expect_err("string seq");
    assert!(e.contains("$.seq"), "{e}");
    assert!(s
        .validate(
            "command",
            &serde_json::json!({"cmd": "start", "version": 1})
        )
        .is_ok());
    assert!(s
        .validate("command", &serde_json::json!({"cmd": "dance"}))
        .is_err());
}

/// The schema file uses only keywords the built-in validator implements.
#[test]
fn p9_schema_uses_only_supported_keywords() {
    use procroute_suite::conform::schema::{KEYWORDS, PROTOCOL_SCHEMA};
    fn walk(v: &serde_json::Value, in_props: bool, bad: &mut Vec<String>) {
        if let Some(o) = v.as_object() {
            for (k, x) in o {
                let is_name = in_props;
                if !is_name && !KEYWORDS.contains(&k.as_str()) {
                    bad.push(k.clone());
                }
                walk(x, k == "properties" || k == "$defs", bad);
            }
        } else if let Some(a) = v.as_array() {
            for x in a {
                walk(x, false, bad);
            }
        }
    }
    let mut bad = Vec::new();
    walk(
        &serde_json::from_str(PROTOCOL_SCHEMA).expect("json"),
        false,
        &mut bad,
    );
    assert!(bad.is_empty(), "unsupported keywords: {bad:?}");
}

/// The Python template in spec/harnesses/example-python passes the whole
/// suite: every key vector and the generated traces.
#[test]
fn p10_the_python_template_passes() {
    let harness = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/spec/harnesses/example-python/harness.py"
    );
    let cfg = trace_run(3, 200);
    let out = runner::run_traces(
        "python3",
        &[harness.to_owned()],
        &cfg,
        Duration::from_secs(10),
        |_| true,
    )
    .expect("runs");
    let failed: Vec<_> = out.iter().filter(|o| !o.passed).collect();
    assert!(failed.is_empty(), "{failed:?}");
    let file = KeyVectors::builtin().expect("vectors");
    let (_, keys, _) = runner::run_vectors(
        "python3",
        &[harness.to_owned()],
        &file.vectors,
        Duration::from_secs(10),
        true,
    )
    .expect("runs");
    let bad: Vec<_> = keys
        .iter()
        .filter(|o| !o.passed || o.skipped.is_some())
        .collect();
    assert!(bad.is_empty(), "{bad:?}");
}

/// P-12: a harness that refuses some inputs by design and declares it gets
/// no trace wasted on them: undeclared, the refused traces are skipped;
/// declared, the generator draws other threads and none is skipped (the
/// report lists the constraint: `report.rs`'s tests).
#[test]
fn p12_declared_constraints_waste_no_trace() {
    let relay = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/harnesses/relay.py");
    let exe = env!("CARGO_BIN_EXE_procroute");
    let cfg = runner::TraceRun {
        max_shrink_runs: 0,
        max_shrunk: usize::MAX,
        ..trace_run(11, 150)
    };
    let skipped = |mode: &str| {
        let args = [relay, mode, exe, "harness"].map(str::to_owned);
        let out = runner::run_traces("python3", &args, &cfg, Duration::from_secs(20), |id| {
            id.starts_with("gen/")
        })
        .expect("runs");
        assert_eq!(out.len(), 150);
        assert!(out.iter().all(|o| o.passed), "the built-in router passes");
        out.iter().filter(|o| o.skipped.is_some()).count()
    };
    let undeclared = skipped("refuse-nul");
    assert!(undeclared > 0, "the generator makes NUL ids sometimes");
    assert_eq!(skipped("refuse-nul-declared"), 0, "declared: none wasted");
}

/// `--jobs`: generated traces run on two harness processes give exactly
/// the outcomes of one (the Python template with a bug, so failures are
/// shrunk and reported too).
#[test]
fn parallel_workers_change_nothing_in_the_report() {
    let template = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/spec/harnesses/example-python/harness.py"
    );
    let args = vec![
        "-c".to_owned(),
        format!("PROCROUTE_TEMPLATE_BUG=lifo exec python3 {template}"),
    ];
    let run = |jobs| {
        let cfg = runner::TraceRun {
            validate: false,
            jobs,
            ..trace_run(11, 120)
        };
        runner::run_traces("sh", &args, &cfg, Duration::from_secs(20), |_| true).expect("runs")
    };
    let one = run(1);
    let two = run(2);
    assert_eq!(one.len(), 120);
    assert!(one.iter().any(|o| !o.passed), "the bug shows");
    assert_eq!(one, two);
}

/// P-13 and the coverage floor: a rule that only restarts reach is under
/// the floor when a profile steers every restart off. That shortfall is
/// the profile's (the same seeds reach it without the profile), so it is
/// reported as skipped with the reason, not as a failure; `--unsteered`
/// meets the floor.
#[test]
fn p13_a_shortfall_the_profile_causes_is_skipped_with_its_reason() {
    let relay = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/harnesses/relay.py");
    let exe = env!("CARGO_BIN_EXE_procroute");
    let dir = std::env::temp_dir().join(format!("procroute-p13-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let conform = |extra: &[&str]| -> Vec<serde_json::Value> {
        let json = dir.join("r.json");
        let inner = format!("python3 {relay} no-restart-profile {exe} harness");
        let status = std::process::Command::new(exe)
            .args([
                "conform",
                "--impl",
                &inner,
                "--cases",
                "100",
                "--only",
                "coverage/*",
            ])
            .args(["--only", "gen/*", "--max-shrunk", "0", "--json-out"])
            .arg(&json)
            .args(extra)
            .stdout(std::process::Stdio::null())
            .status()
            .expect("runs");
        assert!(status.success(), "the built-in router passes: {status}");
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).expect("report")).expect("json");
        r["outcomes"]
            .as_array()
            .expect("outcomes")
            .iter()
            .filter(|o| o["id"].as_str().is_some_and(|i| i.starts_with("coverage/")))
            .cloned()
            .collect()
    };
    let steered = conform(&[]);
    let restart_only = steered
        .iter()
        .find(|o| o["id"] == "coverage/DELIVER-6")
        .unwrap_or_else(|| panic!("DELIVER-6 needs a restart: {steered:?}"));
    let why = restart_only["skipped"]
        .as_str()
        .expect("skipped, not failed");
    assert!(
        why.contains("the generation profile keeps it there") && why.contains("--unsteered"),
        "{why}"
    );
    assert!(steered
        .iter()
        .all(|o| o["passed"] == true || o["skipped"].is_string()));
    assert!(
        conform(&["--unsteered"]).is_empty(),
        "unsteered, every rule meets the floor"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// P-15 end to end (SPEC D-1, PROC-10, PROC-11): the read policy a harness
/// declares in its handshake is the one the judge holds it to, in `replay`
/// and in `conform`. One hand-written trace (the turn's own agent reads
/// the ended build while its completion waits for the turn): the built-in
/// (never) passes; a relay that declares the policy and leaves the
/// acknowledged completion out passes; the same behaviour undeclared fails
/// PROC-10; the built-in's behaviour under the declaration fails PROC-11.
/// Over 100 generated traces, a harness that declares the policy and does
/// not implement it fails, on PROC-11 alone, and the generator reaches
/// PROC-11 above the coverage floor; without a declaration PROC-11 is not
/// in play (no `coverage/PROC-11` case).
#[test]
fn p15_the_declared_read_policy_is_the_one_judged() {
    let relay = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/harnesses/relay.py");
    let trace = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/harnesses/d1-read-acknowledges.json"
    );
    let exe = env!("CARGO_BIN_EXE_procroute");
    let inner = format!("{exe} harness");
    let via = |mode: &str| format!("python3 {relay} {mode} {inner}");
    let replay = |imp: &str| {
        let out = std::process::Command::new(exe)
            .args(["replay", trace, "--impl", imp])
            .output()
            .expect("runs");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    assert!(replay(&inner).0, "{}", replay(&inner).1);
    assert!(replay(&via("read-ack")).0, "{}", replay(&via("read-ack")).1);
    let (ok, text) = replay(&via("read-ack-undeclared"));
    assert!(
        !ok && text.contains("  PROC-10: build completion"),
        "{text}"
    );
    let (ok, text) = replay(&via("declare-read-ack"));
    assert!(
        !ok && text.contains("  PROC-11: build completion")
            && text.contains("read the ended run at step 4"),
        "{text}"
    );

    let dir = std::env::temp_dir().join(format!("procroute-p15-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let conform = |imp: &str| -> serde_json::Value {
        let json = dir.join("r.json");
        let status = std::process::Command::new(exe)
            .args(["conform", "--impl", imp, "--cases", "100"])
            .args([
                "--only",
                "gen/*",
                "--only",
                "coverage/*",
                "--max-shrunk",
                "0",
            ])
            .arg("--json-out")
            .arg(&json)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .expect("runs");
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).expect("report")).expect("json");
        assert_eq!(
            status.success(),
            r["outcomes"]
                .as_array()
                .expect("outcomes")
                .iter()
                .all(|o| o["passed"] != false)
        );
        r
    };
    let failed = |r: &serde_json::Value| -> Vec<serde_json::Value> {
        r["outcomes"]
            .as_array()
            .expect("outcomes")
            .iter()
            .filter(|o| o["passed"] == false)
            .cloned()
            .collect()
    };
    let claimed = conform(&via("declare-read-ack"));
    let bad = failed(&claimed);
    assert!(!bad.is_empty(), "a false declaration is caught");
    for o in &bad {
        assert_eq!(
            o["violations"],
            serde_json::json!(["PROC-11:completion"]),
            "{o}"
        );
    }
    let reached = claimed["coverage"]["by_rule"]["PROC-11"]
        .as_u64()
        .unwrap_or(0);
    assert!(reached >= 2, "PROC-11 reached by {reached} of 100");
    assert_eq!(
        claimed["declared"]["read_acknowledges"],
        "own_thread_after_delivery"
    );
    let plain = conform(&inner);
    assert!(failed(&plain).is_empty());
    assert!(plain["coverage"]["by_rule"].get("PROC-11").is_none());
    assert!(!plain["outcomes"]
        .as_array()
        .expect("outcomes")
        .iter()
        .any(|o| o["id"] == "coverage/PROC-11"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `conform --smoke` (a pre-commit check): passes on the built-in router,
/// and its few generated traces reach every judged rule the
/// implementation is judged on (the coverage floor: at least one trace
/// each).
#[test]
fn the_smoke_run_reaches_every_judged_rule() {
    let exe = env!("CARGO_BIN_EXE_procroute");
    let out = std::process::Command::new(exe)
        .args(["conform", "--smoke", "--format", "json"])
        .output()
        .expect("procroute runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    let coverage = &report["coverage"];
    assert_eq!(coverage["traces"], 50, "the smoke run's generated traces");
    let not_judged: Vec<&str> = coverage["not_judged"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str())
        .collect();
    let unreached: Vec<&&str> = procroute_suite::model::judge::JUDGED
        .iter()
        .filter(|r| !not_judged.contains(r))
        .filter(|r| coverage["by_rule"][**r].as_u64().unwrap_or(0) == 0)
        .collect();
    assert!(
        unreached.is_empty(),
        "the smoke run reaches none of {unreached:?}"
    );
    let outcomes = report["outcomes"].as_array().expect("outcomes");
    assert!(
        outcomes
            .iter()
            .any(|o| o["id"].as_str().is_some_and(|id| id.starts_with("trace/"))),
        "the smoke run includes the stored traces"
    );
    // Conflicting sizes are refused rather than silently overridden.
    let both = std::process::Command::new(exe)
        .args(["conform", "--smoke", "--cases", "10"])
        .output()
        .expect("procroute runs");
    assert_eq!(both.status.code(), Some(2));
}
