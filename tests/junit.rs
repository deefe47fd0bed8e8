//! `--format junit` (conform, replay, explore): the XML parses, has the
//! shape CI systems read (testsuites > testsuite > testcase, totals that
//! match the children, at most one failure or skipped per case, unique
//! case names), failures carry their rule as `type`, and hostile text in
//! a counterexample cannot break the document.

use std::process::Command;

use procroute_suite::conform::{junit, Outcome};

/// Checks the conventions and returns (tests, failures, skipped, failure types).
fn check(xml: &str) -> (usize, usize, usize, Vec<String>) {
    let doc = roxmltree::Document::parse(xml).unwrap_or_else(|e| panic!("{e}:\n{xml}"));
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    let attr = |n: roxmltree::Node, a: &str| -> usize {
        n.attribute(a)
            .unwrap_or_else(|| panic!("<{}> has no {a}", n.tag_name().name()))
            .parse()
            .expect("a count")
    };
    let suites: Vec<_> = root.children().filter(|n| n.is_element()).collect();
    assert_eq!(suites.len(), 1);
    let suite = suites[0];
    assert_eq!(suite.tag_name().name(), "testsuite");
    assert!(suite.attribute("name").is_some_and(|n| !n.is_empty()));
    let (mut tests, mut failures, mut skipped, mut types) = (0, 0, 0, Vec::new());
    let mut names = std::collections::BTreeSet::new();
    for case in suite.children().filter(|n| n.is_element()) {
        assert_eq!(case.tag_name().name(), "testcase");
        assert!(case
            .attribute("classname")
            .is_some_and(|c| c.starts_with("procroute.")));
        let name = case.attribute("name").expect("a name");
        assert!(names.insert(name.to_owned()), "case {name} twice");
        tests += 1;
        let kids: Vec<_> = case.children().filter(|n| n.is_element()).collect();
        assert!(kids.len() <= 1, "{name}: {} results", kids.len());
        if let Some(k) = kids.first() {
            match k.tag_name().name() {
                "failure" => {
                    failures += 1;
                    assert!(k.attribute("message").is_some_and(|m| !m.is_empty()));
                    types.push(k.attribute("type").expect("a type").to_owned());
                }
                "skipped" => {
                    skipped += 1;
                    assert!(k.attribute("message").is_some());
                }
                other => panic!("{name}: unexpected <{other}>"),
            }
        }
    }
    for n in [root, suite] {
        assert_eq!(attr(n, "tests"), tests);
        assert_eq!(attr(n, "failures"), failures);
        assert_eq!(attr(n, "skipped"), skipped);
        assert_eq!(attr(n, "errors"), 0);
    }
    (tests, failures, skipped, types)
}

fn procroute(args: &[&str], env: &[(&str, &str)]) -> (String, bool) {
    let out = Command::new(env!("CARGO_BIN_EXE_procroute"))
        .args(args)
        .envs(env.iter().copied())
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("runs");
    (
        String::from_utf8(out.stdout).expect("UTF-8"),
        out.status.success(),
    )
}

const TEMPLATE: &str = "python3 spec/harnesses/example-python/harness.py";

#[test]
fn conform_junit_of_a_buggy_template_names_the_rule() {
    // 40 traces, no dialect laws, no coverage floor: a non-zero exit can
    // only come from a failing case.
    let conform = |bug: &[(&str, &str)]| {
        procroute(
            &[
                "conform",
                "--impl",
                TEMPLATE,
                "--cases",
                "40",
                "--dialect-cases",
                "0",
                "--min-coverage",
                "0",
                "--shrink-runs",
                "50",
                "--format",
                "junit",
            ],
            bug,
        )
    };
    let (xml, ok) = conform(&[("PROCROUTE_TEMPLATE_BUG", "kill-silent")]);
    assert!(!ok, "a failing run exits non-zero");
    let (tests, failures, _, types) = check(&xml);
    assert!(tests > 40, "{tests} cases");
    assert!(failures > 0);
    assert!(types.iter().any(|t| t == "PROC-7"), "{types:?}");
    // The same run without the bug: every case passes or is skipped.
    let (xml, ok) = conform(&[]);
    assert!(ok);
    assert_eq!(check(&xml).1, 0);
}

#[test]
fn replay_and_explore_junit() {
    let traces: Vec<String> =
        std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/spec/vectors/traces"))
            .expect("stored traces")
            .map(|e| e.expect("entry").path().display().to_string())
            .collect();
    let mut args = vec!["replay", "--format", "junit"];
    args.extend(traces.iter().map(String::as_str));
    let (xml, ok) = procroute(&args, &[]);
    assert!(ok);
    assert_eq!(check(&xml), (traces.len(), 0, 0, vec![]));
    let (xml, ok) = procroute(&["explore", "--depth", "2", "--format", "junit"], &[]);
    assert!(ok);
    assert_eq!(check(&xml).0, 1);
    let (xml, ok) = procroute(
        &[
            "explore", "--depth", "3", "--jobs", "2", "--format", "junit", "--impl", TEMPLATE,
        ],
        &[("PROCROUTE_TEMPLATE_BUG", "kill-silent")],
    );
    assert!(!ok);
    let (tests, failures, _, types) = check(&xml);
    assert!(tests > 100 && failures > 0, "{tests} {failures}");
    assert!(types.iter().all(|t| t == "PROC-7"), "{types:?}");
}

#[test]
fn hostile_text_stays_well_formed() {
    let nasty = "a\u{7}b\u{0}c ]]> <x> & \"q\" 'a' \u{202e}\u{ffff}\ttab";
    let outcomes = vec![
        Outcome::check(nasty, &["TEXT-2"], Some(format!("TEXT-2: {nasty}\nmore"))),
        Outcome::skip("gen/1/2", &[], nasty.to_owned()),
        Outcome::pass("gen/1/3", &["INV-1"]),
    ];
    let xml = junit::render("procroute conform", nasty, &outcomes);
    let (tests, failures, skipped, types) = check(&xml);
    assert_eq!((tests, failures, skipped), (3, 1, 1));
    assert_eq!(types, ["TEXT-2"]);
    let doc = roxmltree::Document::parse(&xml).expect("parses");
    let failure = doc
        .descendants()
        .find(|n| n.has_tag_name("failure"))
        .expect("a failure");
    let text = failure.text().expect("detail");
    assert!(text.contains("a\\u{7}b\\u{0}c ]]> <x> & \"q\""), "{text}");
    assert_eq!(
        failure.attribute("message"),
        Some(
            format!(
                "TEXT-2: {}",
                nasty
                    .replace('\u{7}', "\\u{7}")
                    .replace('\u{0}', "\\u{0}")
                    .replace('\u{ffff}', "\\u{ffff}")
            )
            .as_str()
        )
    );
}
