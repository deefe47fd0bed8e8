//! Every rule of the core chapters is exercised by at least one named test
//! (the test name or a comment cites it), and every cited rule exists.

use std::collections::BTreeSet;

const SPEC: &str = include_str!("../spec/SPEC.md");
const PREFIXES: [&str; 6] = ["STORE", "PROC", "ROUTE", "DELIVER", "TEXT", "DRIVER"];

fn rules() -> BTreeSet<String> {
    SPEC.lines()
        .filter_map(|l| l.strip_prefix("**"))
        .filter_map(|l| l.split_once("**"))
        .map(|(id, _)| id.to_owned())
        .filter(|id| PREFIXES.iter().any(|p| id.starts_with(&format!("{p}-"))))
        .collect()
}

fn tests_text() -> String {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut all = String::new();
    for e in std::fs::read_dir(dir).expect("tests dir") {
        let p = e.expect("entry").path();
        if p.extension().is_some_and(|x| x == "rs") && !p.ends_with("spec_coverage.rs") {
            all.push_str(&std::fs::read_to_string(&p).expect("readable"));
        }
    }
    all
}

#[test]
fn every_core_rule_has_a_named_test() {
    let rules = rules();
    assert!(rules.len() >= 30, "core rules not found: {rules:?}");
    let text = tests_text();
    let missing: Vec<&String> = rules
        .iter()
        .filter(|id| {
            let snake = format!("fn {}_", id.to_lowercase().replace('-', "_"));
            !text.contains(id.as_str()) && !text.contains(&snake)
        })
        .collect();
    assert!(missing.is_empty(), "rules without a test: {missing:?}");
}
