//! `--only` / `--skip` globs, `--shard I/N` partitions, known failures.

use procroute_suite::conform::select::{
    apply_known_failures, forgive_flaky, glob, parse_known_failures, Selection,
};
use procroute_suite::conform::Outcome;

#[test]
fn globs_match_stable_ids() {
    assert!(glob("hermes-parse/*", "hermes-parse/err/no-chat"));
    assert!(glob("*/err/*", "canonical-parse/err/raw-tilde"));
    assert!(glob("law/KEY-C4/*", "law/KEY-C4/17"));
    assert!(!glob("hermes-parse/*", "hermes-build/dm/telegram"));
    assert!(glob("exact", "exact") && !glob("exact", "exact2"));
}

#[test]
fn shards_partition_the_cases() {
    let ids: Vec<String> = (0..500).map(|i| format!("law/KEY-C4/{i}")).collect();
    let mut seen = vec![0; ids.len()];
    for i in 1..=4 {
        let s = Selection {
            shard: Some((i, 4)),
            ..Selection::default()
        };
        for (k, id) in ids.iter().enumerate() {
            if s.wants(id) {
                seen[k] += 1;
            }
        }
    }
    assert!(
        seen.iter().all(|&n| n == 1),
        "every case in exactly one shard"
    );
    assert!(Selection::parse_shard("0/3").is_err() && Selection::parse_shard("4/3").is_err());
    assert_eq!(Selection::parse_shard("2/3"), Ok((2, 3)));
}

#[test]
fn known_failures_must_still_fail() {
    let known = parse_known_failures("# comment\nhermes-parse/*  # all of them\n\n");
    assert_eq!(known, vec!["hermes-parse/*"]);
    let mut outs = vec![
        Outcome::check("hermes-parse/a", &["KEY-H3"], Some("wrong".into())),
        Outcome::pass("hermes-parse/b", &["KEY-H3"]),
        Outcome::check("other/c", &["KEY-1"], Some("wrong".into())),
    ];
    let now_passing = apply_known_failures(&mut outs, &known);
    assert!(outs[0].expected_failure && !outs[2].expected_failure);
    assert_eq!(
        now_passing.into_iter().collect::<Vec<_>>(),
        vec!["hermes-parse/b".to_owned()]
    );
}

// --- known failures pinned to their violations (PROTOCOL.md) ---------------

use procroute_suite::conform::select::{check_pins, is_signature, parse_pins};

fn failing(id: &str, violations: &[&str]) -> Outcome {
    let mut o = Outcome::check(id, &["INV-4"], Some("INV-4: …".into()));
    o.violations = violations.iter().map(|v| (*v).to_owned()).collect();
    o
}

fn judged(outcomes: &mut [Outcome], list: &str) -> Vec<String> {
    apply_known_failures(outcomes, &parse_known_failures(list));
    check_pins(outcomes, &parse_pins(list))
}

#[test]
fn a_known_case_that_gains_a_violation_fails_the_run() {
    let list = "gen/1/7  # H-WATCH-DROPPED INV-4:watch_match\n";
    let mut same = [failing("gen/1/7", &["INV-4:watch_match"])];
    assert!(judged(&mut same, list).is_empty());
    assert!(
        same[0].expected_failure,
        "the pinned violations: still a known failure"
    );

    // The seed bug's shape: the same case now also leaks a notice into
    // another thread.
    let mut leaked = [failing(
        "gen/1/7",
        &["INV-1:watch_match@t1", "INV-4:watch_match"],
    )];
    let changed = judged(&mut leaked, list);
    assert!(!leaked[0].expected_failure, "a new violation is unexpected");
    assert_eq!(changed.len(), 1);
    assert!(
        changed[0].contains("new INV-1:watch_match@t1"),
        "{changed:?}"
    );
    assert!(leaked[0]
        .detail
        .as_deref()
        .unwrap()
        .starts_with("known failure gen/1/7 changed"));
}

#[test]
fn a_known_case_whose_violations_change_place_or_vanish_fails() {
    let list = "gen/1/8  # H-THREAD-USER INV-1:completion@t2 DELIVER-1:completion\n";
    let mut moved = [failing(
        "gen/1/8",
        &["DELIVER-1:completion", "INV-1:completion@t0"],
    )];
    let changed = judged(&mut moved, list);
    assert!(!moved[0].expected_failure);
    assert!(
        changed[0].contains("new INV-1:completion@t0"),
        "{changed:?}"
    );
    assert!(
        changed[0].contains("no longer INV-1:completion@t2"),
        "{changed:?}"
    );

    let mut fewer = [failing("gen/1/8", &["DELIVER-1:completion"])];
    let changed = judged(&mut fewer, list);
    assert!(!fewer[0].expected_failure && changed[0].contains("no longer INV-1:completion@t2"));
}

#[test]
fn pins_parse_finding_and_signatures_and_older_lines_match_by_id() {
    let pins = parse_pins(
        "# a comment line\nhermes-parse/profile  # H-PARSE-PROFILE\n\
         gen/2/3  # H-LATE DELIVER-1:completion PROC-8:completion@t? INV-6:watch_match@t10\n",
    );
    assert_eq!(pins.len(), 2);
    assert_eq!(pins[0].finding.as_deref(), Some("H-PARSE-PROFILE"));
    assert!(pins[0].signatures.is_empty());
    assert_eq!(pins[1].signatures.len(), 3);
    for good in [
        "INV-1",
        "DELIVER-6:shutdown",
        "INV-1:completion@t3",
        "INV-6:watch_match@t?",
    ] {
        assert!(is_signature(good), "{good}");
    }
    for bad in [
        "H-LATE",
        "INV-1:",
        "INV-1:bogus",
        "INV-1:completion@x",
        "inv-1",
        "INV-",
    ] {
        assert!(!is_signature(bad), "{bad}");
    }
    // A line without signatures keeps the old meaning: the id alone.
    let mut o = [failing("hermes-parse/profile", &["INV-4:watch_match"])];
    assert!(judged(&mut o, "hermes-parse/profile  # H-PARSE-PROFILE\n").is_empty());
    assert!(o[0].expected_failure);
}

#[test]
fn signatures_name_the_rule_the_kind_and_the_thread_a_notice_landed_in() {
    use procroute_suite::conform::trace::{Trace, TraceResult};
    use procroute_suite::model::judge::{judge, signatures};
    let trace: Trace = serde_json::from_value(serde_json::json!({
        "threads": [
            {"platform": "telegram", "chat_type": "group", "chat_id": "-100", "thread_id": "1"},
            {"platform": "telegram", "chat_type": "group", "chat_id": "-100", "thread_id": "2"}
        ],
        "ops": [
            {"spawn": {"thread": 0, "process": "p1", "watch": [], "notify": true}},
            {"message": {"thread": 1}},
            {"exit": {"process": "p1", "code": 0}}
        ]
    }))
    .unwrap();
    // The seed bug: the completion lands in the thread of the latest
    // foreground message.
    let result: TraceResult = serde_json::from_value(serde_json::json!({
        "deliveries": [{
            "step": 2, "process": "p1", "kind": "completion", "text": "p1 exited 0",
            "destination": {"platform": "telegram", "chat_type": "group", "chat_id": "-100", "thread_id": "2"}
        }],
        "dead_letters": []
    }))
    .unwrap();
    let v = judge(&trace, &result);
    let sigs = signatures(&trace, &v);
    assert!(
        sigs.iter().any(|s| s == "INV-6:completion@t1"),
        "{sigs:?} from {v:?}"
    );
    assert!(sigs.iter().all(|s| is_signature(s)), "{sigs:?}");
}

/// A line marked `flaky` forgives a pass (the harness does not run the
/// case deterministically) but still holds a failure to its pins; an
/// unmarked line does neither.
#[test]
fn a_flaky_line_forgives_a_pass_not_a_changed_failure() {
    let list = "gen/1/7  # H-PROMOTED flaky TEXT-4:watch_disabled\ngen/1/8  # H-LATE DELIVER-1\n";
    let pins = parse_pins(list);
    assert!(pins[0].flaky && !pins[1].flaky);
    assert_eq!(pins[0].finding.as_deref(), Some("H-PROMOTED"));
    assert!(!pins[0].signatures.contains("flaky"));
    let known = parse_known_failures(list);
    let mut passing = [
        Outcome::pass("gen/1/7", &["TEXT-4"]),
        Outcome::pass("gen/1/8", &["DELIVER-1"]),
    ];
    let mut now = apply_known_failures(&mut passing, &known);
    let forgiven = forgive_flaky(&mut now, &pins);
    assert_eq!(forgiven.len(), 1, "{forgiven:?}");
    assert!(forgiven[0].contains("gen/1/7"));
    assert_eq!(now.into_iter().collect::<Vec<_>>(), ["gen/1/8"]);
    let mut changed = [failing(
        "gen/1/7",
        &["TEXT-4:watch_disabled", "INV-1:completion@t0"],
    )];
    let why = judged(&mut changed, list);
    assert!(
        why.iter().any(|w| w.contains("new INV-1:completion@t0")),
        "{why:?}"
    );
}

/// `?SIG` on a line: a violation the case may or may not show (a flaky
/// case's varying part). With it or without it the case is as pinned; any
/// other change still fails, and the word is not a fixed pin.
#[test]
fn a_maybe_signature_may_come_and_go_and_nothing_else() {
    let list = "gen/1/9  # H-WATCH-DROPPED flaky INV-4:watch_match ?PROC-7:completion\n";
    let pins = parse_pins(list);
    assert!(pins[0].maybe.contains("PROC-7:completion"));
    assert!(!pins[0].signatures.contains("PROC-7:completion"));
    for sigs in [
        &["INV-4:watch_match"][..],
        &["INV-4:watch_match", "PROC-7:completion"][..],
    ] {
        let mut o = [failing("gen/1/9", sigs)];
        assert!(judged(&mut o, list).is_empty(), "{sigs:?}");
    }
    let mut o = [failing("gen/1/9", &["PROC-7:completion"])];
    let why = judged(&mut o, list);
    assert!(
        why.iter()
            .any(|w| w.contains("no longer INV-4:watch_match")),
        "{why:?}"
    );
    let mut o = [failing(
        "gen/1/9",
        &["INV-4:watch_match", "INV-1:completion@t0"],
    )];
    let why = judged(&mut o, list);
    assert!(
        why.iter().any(|w| w.contains("new INV-1:completion@t0")),
        "{why:?}"
    );
}

/// A known-failures line may link its finding's upstream issue: the first
/// `http(s)://` word of its comment, set on the known failure it matches
/// (neither a finding nor a signature: the pins stay as they were).
#[test]
fn known_failures_carry_their_upstream_links() {
    use procroute_suite::conform::select::{
        apply_known_failures, parse_known_failures, parse_upstream_links, tag_upstream,
    };
    let list = "gen/1/7  # H-BUSY https://github.com/o/r/issues/12 INV-4:completion\n\
                gen/1/8  # H-LATE DELIVER-1\n";
    let mut outcomes = vec![
        failing("gen/1/7", &["INV-4:completion"]),
        failing("gen/1/8", &["DELIVER-1"]),
    ];
    apply_known_failures(&mut outcomes, &parse_known_failures(list));
    tag_upstream(&mut outcomes, &parse_upstream_links(list));
    assert_eq!(
        outcomes[0].upstream.as_deref(),
        Some("https://github.com/o/r/issues/12")
    );
    assert_eq!(outcomes[1].upstream, None);
    let pins = parse_pins(list);
    assert_eq!(pins[0].finding.as_deref(), Some("H-BUSY"));
    assert_eq!(
        pins[0].signatures.iter().collect::<Vec<_>>(),
        ["INV-4:completion"]
    );
    assert!(check_pins(&mut outcomes, &pins).is_empty());
}

/// A handshake's links must be http(s) URLs: anything else is refused with
/// the field named.
#[test]
fn implementation_links_are_urls() {
    use procroute_suite::conform::protocol::Implementation;
    let mut i = Implementation::named("gw", "1.0", "python");
    i.homepage = Some("https://example.org/gw".into());
    i.issues = Some("http://example.org/gw/issues".into());
    assert!(i.check_links().is_ok());
    assert_eq!(
        i.links(),
        [
            ("homepage", "https://example.org/gw"),
            ("issues", "http://example.org/gw/issues")
        ]
    );
    for bad in [
        "ftp://example.org",
        "https://a b",
        "javascript:alert(1)",
        &format!("https://{}", "a".repeat(600)),
    ] {
        let mut j = i.clone();
        j.source = Some(bad.to_owned());
        let e = j.check_links().expect_err(bad);
        assert!(e.contains("implementation.source"), "{e}");
    }
}
