//! The real-gateway harnesses' `classify.py` re-derive the finding of every
//! failing case after each run and fail the run when it differs from the
//! known list (TESTING.md, "Layers", harness classification: a case whose
//! derived finding changes fails the
//! run, not only one whose violations change). These tests feed each
//! script a one-case report and a list, and watch it pass when they agree
//! and fail, naming the case, when they do not. (Needs `python3`.)

use std::path::{Path, PathBuf};
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// A report with one failing stored trace, `trace/hermes-h-lost`, whose
/// violation is a lost completion after a restart (the finding H-LOST for
/// hermes-agent, O-RESTART-LOST for OpenClaw).
fn report(dir: &Path) -> PathBuf {
    let detail = "PROC-8: p1 completion to {\"platform\":\"telegram\",\"chat_type\":\"group\",\
                  \"chat_id\":\"-1001234567890\",\"thread_id\":\"7\"} emitted at step 1 (lost in a \
                  restart) was never delivered nor dead-lettered; the model delivers it at step 1\n\
                  stored trace spec/vectors/traces/hermes-h-lost.json; replay: procroute replay \
                  spec/vectors/traces/hermes-h-lost.json\n";
    let json = serde_json::json!({
        "suite_version": procroute_suite::SUITE_VERSION,
        "outcomes": [{
            "id": "trace/hermes-h-lost",
            "rules": ["PROC-8"],
            "passed": false,
            "detail": detail,
            "violations": ["PROC-8:completion"],
        }],
    });
    let path = dir.join("report.json");
    std::fs::write(&path, json.to_string()).expect("write report");
    path
}

fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("procroute-classify-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("saved")).expect("scratch dir");
    dir
}

/// Runs a classify.py; (exit status success, stdout + stderr).
fn classify(script: &str, args: &[&Path]) -> (bool, String) {
    let out = Command::new("python3")
        .arg(Path::new(ROOT).join(script))
        .args(args)
        .output()
        .expect("python3 runs");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

#[test]
fn hermes_classify_fails_a_case_whose_derived_finding_changes() {
    let dir = scratch("hermes");
    let report = report(&dir);
    // The list's name carries the version whose column of FINDINGS.md's
    // stored-trace table the script compares.
    let list = dir.join("known-failures-0.19.0.txt");
    let script = "spec/harnesses/hermes-agent/classify.py";
    let check = |line: &str| {
        std::fs::write(&list, format!("{line}\n")).expect("write list");
        classify(
            script,
            &[Path::new("--check"), &report, &dir.join("saved"), &list],
        )
    };
    let (ok, text) = check("trace/hermes-h-lost  # H-LOST PROC-8:completion");
    assert!(ok, "the list agrees with the derived finding:\n{text}");
    let (ok, text) = check("trace/hermes-h-lost  # H-CHECKPOINT PROC-8:completion");
    assert!(!ok, "a changed finding must fail the run:\n{text}");
    assert!(
        text.contains("trace/hermes-h-lost: the list says H-CHECKPOINT, this run derives H-LOST"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn openclaw_classify_fails_a_case_whose_derived_finding_or_signatures_change() {
    let dir = scratch("openclaw");
    let report = report(&dir);
    let list = dir.join("known.txt");
    let script = "spec/harnesses/openclaw/classify.py";
    let check = |line: &str| {
        std::fs::write(&list, format!("{line}\n")).expect("write list");
        classify(
            script,
            &[Path::new("check"), &report, &dir.join("saved"), &list],
        )
    };
    let (ok, text) = check("trace/hermes-h-lost  # O-RESTART-LOST PROC-8:completion");
    assert!(ok, "the list agrees with the derived finding:\n{text}");
    let (ok, text) = check("trace/hermes-h-lost  # O-STUCK PROC-8:completion");
    assert!(!ok, "a changed finding must fail the run:\n{text}");
    assert!(
        text.contains("trace/hermes-h-lost: O-RESTART-LOST"),
        "{text}"
    );
    let (ok, text) = check("trace/hermes-h-lost  # O-RESTART-LOST PROC-7:completion");
    assert!(!ok, "changed signatures must fail the run:\n{text}");
    let _ = std::fs::remove_dir_all(&dir);
}
