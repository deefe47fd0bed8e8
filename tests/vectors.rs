//! Every spec vector through one data-driven check (spec S-2, S-3).

use std::collections::BTreeSet;

use procroute_suite::conform::vectors::{self, KeyVectors};

const SPEC: &str = include_str!("../spec/SPEC.md");

fn spec_rules() -> BTreeSet<String> {
    // Rule ids are defined as "**KEY-C4**" at the start of a rule line.
    SPEC.split("**")
        .skip(1)
        .step_by(2)
        .filter(|t| {
            t.split_once('-').is_some_and(|(h, n)| {
                h.chars().all(|c| c.is_ascii_uppercase())
                    && n.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
                    && n.chars().all(|c| c.is_ascii_alphanumeric())
            })
        })
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_key_vector_passes() {
    let file = KeyVectors::builtin().expect("vector file is valid");
    let failures: Vec<String> = file
        .vectors
        .iter()
        .map(vectors::run)
        .filter(|o| !o.passed)
        .map(|o| format!("{}: {}", o.id, o.detail.unwrap_or_default()))
        .collect();
    assert!(
        failures.is_empty(),
        "failing vectors:\n{}",
        failures.join("\n")
    );
}

#[test]
fn vector_file_has_enough_unique_ids_and_a_version() {
    let file = KeyVectors::builtin().expect("vector file is valid");
    assert!(
        file.vectors.len() >= 80,
        "only {} vectors",
        file.vectors.len()
    );
    assert_eq!(file.suite_version, procroute_suite::SUITE_VERSION);
    let ids: BTreeSet<&str> = file.vectors.iter().map(|v| v.id.as_str()).collect();
    assert_eq!(ids.len(), file.vectors.len());
}

#[test]
fn every_cited_rule_is_in_the_spec_and_every_key_rule_is_cited() {
    let rules = spec_rules();
    assert!(rules.len() > 20, "spec rules not found: {rules:?}");
    let file = KeyVectors::builtin().expect("vector file is valid");
    let cited: BTreeSet<String> = file.vectors.iter().flat_map(|v| v.rules.clone()).collect();
    let unknown: Vec<&String> = cited.difference(&rules).collect();
    assert!(
        unknown.is_empty(),
        "vectors cite rules the spec lacks: {unknown:?}"
    );
    let uncited: Vec<&String> = rules
        .iter()
        .filter(|r| r.starts_with("KEY-") || r.starts_with("ORIGIN-"))
        .filter(|r| !cited.contains(*r))
        // Laws are exercised by generated cases, not vectors (the dialect
        // laws KEY-L1..L4 in tests/dialect_laws.rs).
        .filter(|r| {
            ![
                "KEY-C4", "KEY-C5", "KEY-H5", "KEY-L1", "KEY-L2", "KEY-L3", "KEY-L4",
            ]
            .contains(&r.as_str())
        })
        .collect();
    assert!(uncited.is_empty(), "rules without a vector: {uncited:?}");
}

/// The check must be able to fail: corrupt each kind of expectation.
#[test]
fn a_wrong_expectation_fails() {
    let file = KeyVectors::builtin().expect("vector file is valid");
    let mut broken = 0;
    for v in &file.vectors {
        let mut json = serde_json::to_value(v).expect("serialises");
        let expect = json.get_mut("expect").expect("has expect");
        if let Some(key) = expect.get_mut("key") {
            *key = serde_json::Value::String(format!("{}x", key.as_str().unwrap_or("")));
        } else if let Some(pos) = expect.get_mut("error").and_then(|e| e.get_mut("kind")) {
            *pos = serde_json::Value::String("not_a_kind".into());
        } else if let Some(f) = expect.get_mut("fields") {
            f["chat_id"] = serde_json::Value::String("zz-not-it".into());
        } else if let Some(p) = expect.get_mut("parsed") {
            p["namespace"] = serde_json::Value::String("zz".into());
        } else {
            *expect = serde_json::json!({"error": {"kind": "empty"}});
        }
        let v2: vectors::Vector = serde_json::from_value(json).expect("still a vector");
        assert!(
            !vectors::run(&v2).passed,
            "{} still passes when corrupted",
            v.id
        );
        broken += 1;
    }
    assert_eq!(broken, file.vectors.len());
}

#[test]
fn duplicate_ids_are_rejected_with_the_id() {
    let text = r#"{"suite":"s","suite_version":"0.3.0","vectors":[
      {"id":"a","rules":["KEY-1"],"op":"hermes_parse","key":"","expect":{"error":{"kind":"missing_prefix"}}},
      {"id":"a","rules":["KEY-1"],"op":"hermes_parse","key":"","expect":{"error":{"kind":"missing_prefix"}}}]}"#;
    let err = KeyVectors::parse("x.json", text).expect_err("duplicate");
    assert!(err.to_string().contains("\"a\" appears 2 times"), "{err}");
}

/// `procroute conform` runs every vector plus the laws and reports nothing
/// failed (KEY laws, spec S-4).
#[test]
fn conform_builtin_passes() {
    let report = procroute_suite::conform::run_builtin(procroute_suite::conform::Config {
        seed: 7,
        cases: 300,
    })
    .expect("runs");
    assert_eq!(report.failed(), 0, "{}", report.render_text("built-in"));
    let text = report.render_text("built-in");
    assert!(text
        .trim_end()
        .ends_with(&format!("{} passed, 0 failed", report.passed())));
}

/// S-1: rule ids are unique (a rule is never defined twice).
#[test]
fn s_1_rule_ids_are_unique() {
    let mut seen = std::collections::BTreeSet::new();
    for l in include_str!("../spec/SPEC.md").lines() {
        if let Some((id, _)) = l.strip_prefix("**").and_then(|l| l.split_once("**")) {
            if id.contains('-') && id.chars().next().is_some_and(|c| c.is_ascii_uppercase()) {
                assert!(seen.insert(id.to_owned()), "{id} is defined twice");
            }
        }
    }
}
