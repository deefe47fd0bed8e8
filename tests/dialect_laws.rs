//! KEY-L1..L4 over the protocol (P-10): the built-in dialect keeps them,
//! and each lossy dialect of tests/harnesses/lossy_dialect.py breaks
//! exactly the laws its loss implies.

use std::collections::BTreeMap;
use std::time::Duration;

use procroute_suite::conform::dialect::{run_over, DialectRun};

const CFG: DialectRun = DialectRun {
    seed: 7,
    cases: 150,
    jobs: 1,
};

fn verdicts(program: &str, args: &[&str]) -> BTreeMap<String, bool> {
    let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
    run_over(program, &args, CFG, Duration::from_secs(20), true, |_| true)
        .expect("harness runs")
        .into_iter()
        .map(|o| (o.id, o.passed))
        .collect()
}

fn lossy(mode: &str) -> BTreeMap<String, bool> {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/harnesses/lossy_dialect.py"
    );
    verdicts("python3", &[script, mode])
}

fn failing(v: &BTreeMap<String, bool>) -> Vec<&str> {
    v.iter()
        .filter(|(_, p)| !**p)
        .map(|(k, _)| k.as_str())
        .collect()
}

#[test]
fn key_l1_l2_l3_hold_for_the_builtin_canonical_dialect() {
    let v = verdicts(env!("CARGO_BIN_EXE_procroute"), &["harness"]);
    // Four declared policies, eleven cases each.
    assert_eq!(v.len(), 44, "{v:?}");
    for policy in [
        "default",
        "shared-groups",
        "per-user-threads",
        "profile-coder",
    ] {
        let id = format!("dialect/{policy}/KEY-L4/rejects");
        assert_eq!(v.get(&id), Some(&true), "{v:?}");
    }
    assert!(failing(&v).is_empty(), "{v:?}");
}

#[test]
fn key_l1_l2_hold_for_an_exact_escaping_dialect() {
    assert!(failing(&lossy("exact")).is_empty());
}

#[test]
fn key_l1_and_key_l2_catch_case_folding() {
    let v = lossy("fold");
    let bad = failing(&v);
    // Each loss is its own case, named by family and class.
    assert!(
        bad.contains(&"dialect/default/KEY-L1/chat-case/chat-id-case"),
        "{bad:?}"
    );
    assert!(
        bad.contains(&"dialect/default/KEY-L1/thread-case/thread-id-case"),
        "{bad:?}"
    );
    assert!(
        bad.contains(&"dialect/default/KEY-L2/chat-id-case-folded"),
        "{bad:?}"
    );
    assert!(
        bad.contains(&"dialect/default/KEY-L2/thread-id-case-folded"),
        "{bad:?}"
    );
    assert!(
        bad.iter().all(|id| id.contains("case")),
        "folding case breaks nothing else: {bad:?}"
    );
    assert!(!bad.contains(&"dialect/default/KEY-L3/total"), "{bad:?}");
}

#[test]
fn key_l1_catches_trimming() {
    let bad = lossy("trim");
    let bad = failing(&bad);
    assert!(
        bad.contains(&"dialect/default/KEY-L1/whitespace/chat-id-whitespace"),
        "{bad:?}"
    );
    assert!(
        bad.contains(&"dialect/default/KEY-L2/chat-id-trimmed"),
        "{bad:?}"
    );
    assert!(!bad.iter().any(|id| id.contains("case")), "{bad:?}");
}

#[test]
fn key_l1_catches_unescaped_separators() {
    let v = lossy("raw");
    let bad = failing(&v);
    assert!(
        bad.contains(&"dialect/default/KEY-L1/colon-join/separator-in-id"),
        "{v:?}"
    );
    assert!(
        bad.contains(&"dialect/default/KEY-L2/chat-split-into-thread"),
        "{v:?}"
    );
}

#[test]
fn key_l3_catches_a_parse_that_cannot_answer() {
    let v = lossy("crash");
    let bad = failing(&v);
    assert!(bad.contains(&"dialect/default/KEY-L3/total"), "{bad:?}");
    // Building still works, so injectivity is unaffected.
    assert!(
        bad.iter()
            .all(|id| !id.starts_with("dialect/default/KEY-L1/")),
        "{bad:?}"
    );
}

/// KEY-L4: a parse that guesses at malformed keys (keeps broken escapes,
/// skips empty segments, strips padding) fails, one case per class; the
/// strict parse of the same keys passes.
#[test]
fn key_l4_catches_a_parse_that_guesses() {
    let v = lossy("lenient");
    let bad = failing(&v);
    assert!(
        bad.contains(&"dialect/default/KEY-L4/space-appended"),
        "{bad:?}"
    );
    assert!(
        bad.contains(&"dialect/default/KEY-L4/separator-appended"),
        "{bad:?}"
    );
    // Its keys stay injective and its parse total; stripping the key also
    // loses real padding (KEY-L2), which is the same guess seen from a
    // well-formed key.
    assert!(
        bad.iter()
            .all(|id| id.starts_with("dialect/default/KEY-L4/")
                || id.starts_with("dialect/default/KEY-L2/")),
        "{bad:?}"
    );
    assert_eq!(
        lossy("exact").get("dialect/default/KEY-L4/rejects"),
        Some(&true)
    );
}

/// P-10 policies: every declared policy is its own run, named in the case
/// ids, and its object reaches the harness. A loss only one policy has
/// (the user id after the chat id, read back as a thread) fails only under
/// that policy.
#[test]
fn laws_run_under_every_declared_policy() {
    let v = lossy("peruser");
    let bad = failing(&v);
    assert!(
        v.keys().any(|id| id.starts_with("dialect/default/"))
            && v.keys().any(|id| id.starts_with("dialect/per-user/")),
        "{v:?}"
    );
    assert!(
        bad.contains(&"dialect/per-user/KEY-L2/user-read-as-thread"),
        "{bad:?}"
    );
    assert!(
        bad.iter().all(|id| id.starts_with("dialect/per-user/")),
        "the default policy keeps the laws: {bad:?}"
    );
}

/// The laws' parts run on several harnesses and are put together in a
/// fixed order: every outcome, detail text included, is the same with one
/// harness and with three, for a dialect that breaks laws in many ways.
#[test]
fn parallel_harnesses_change_nothing_in_the_outcomes() {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/harnesses/lossy_dialect.py"
    );
    for mode in ["fold", "raw"] {
        let args = vec![script.to_owned(), mode.to_owned()];
        let run = |jobs| {
            let cfg = DialectRun { jobs, ..CFG };
            run_over(
                "python3",
                &args,
                cfg,
                Duration::from_secs(20),
                false,
                |_| true,
            )
            .expect("harness runs")
        };
        let (one, three) = (run(1), run(3));
        assert!(one.iter().any(|o| !o.passed), "{mode}: breaks no law");
        assert_eq!(
            format!("{one:?}"),
            format!("{three:?}"),
            "{mode}: outcomes differ with 3 harnesses"
        );
    }
}
