//! `procroute report --badges DIR`: shields.io endpoint JSON per
//! implementation, overall and per SPEC chapter, each valid against the
//! endpoint schema (`spec/schema/shields-endpoint.json`, from
//! https://shields.io/badges/endpoint-badge), and saying what the report
//! says: green when nothing fails, red with the count when something does.

use procroute_suite::conform::schema::Schema;

#[path = "support/scratch.rs"]
mod scratch;

fn endpoint_schema() -> Schema {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("spec/schema/shields-endpoint.json"),
    )
    .expect("the endpoint schema");
    Schema::from_json(&text).expect("valid JSON")
}

fn procroute(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_procroute"))
        .args(args)
        .output()
        .expect("procroute runs")
}

#[test]
fn badges_are_valid_endpoints_and_say_what_the_reports_say() {
    let s = scratch::Scratch::new("badges");
    let good = s.join("builtin.json");
    let bad = s.join("lifo.json");
    let out = procroute(&["conform", "--smoke", "--json-out", good.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let template = format!(
        "env PROCROUTE_TEMPLATE_BUG=lifo python3 {}/spec/harnesses/example-python/harness.py",
        env!("CARGO_MANIFEST_DIR")
    );
    let out = procroute(&[
        "conform",
        "--smoke",
        "--max-shrunk",
        "0",
        "--impl",
        &template,
        "--json-out",
        bad.to_str().unwrap(),
    ]);
    assert!(!out.status.success(), "the template with a LIFO bug fails");
    let dir = s.join("badges");
    let out = procroute(&[
        "report",
        "--badges",
        dir.to_str().unwrap(),
        good.to_str().unwrap(),
        bad.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty(), "--badges without -o writes no page");
    let schema = endpoint_schema();
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
        .expect("badges written")
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    assert!(files.len() > 4, "{files:?}");
    let read = |p: &std::path::Path| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(p).expect("readable")).expect("JSON")
    };
    for f in &files {
        let b = read(f);
        schema
            .validate("endpoint", &b)
            .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert!(
            !b["message"].as_str().unwrap_or("").is_empty(),
            "{}",
            f.display()
        );
    }
    let name = |p: &std::path::Path| p.file_name().unwrap().to_string_lossy().into_owned();
    let color = |n: &str| {
        read(&dir.join(n))["color"]
            .as_str()
            .unwrap_or("")
            .to_owned()
    };
    let names: Vec<String> = files.iter().map(|f| name(f)).collect();
    // The built-in router passes everything: its overall badge and every
    // chapter's are green.
    let builtin: Vec<&String> = names
        .iter()
        .filter(|n| n.starts_with("procroute-"))
        .collect();
    assert!(builtin.len() > 3, "{names:?}");
    for n in &builtin {
        assert_eq!(color(n), "brightgreen", "{n}");
    }
    // The template with a LIFO queue fails delivery order (DELIVER-5,
    // chapter 6): its overall and delivery badges are red.
    let template = |suffix: &str| {
        names
            .iter()
            .find(|n| n.starts_with("example-python-") && n.ends_with(suffix))
            .unwrap_or_else(|| panic!("no template badge *{suffix}: {names:?}"))
            .clone()
    };
    let overall = names
        .iter()
        .find(|n| n.starts_with("example-python-") && n.matches('-').count() == 2)
        .expect("the template's overall badge")
        .clone();
    assert_eq!(color(&overall), "red", "{overall}");
    assert_eq!(color(&template("-6-delivery.json")), "red");
    let red: Vec<&String> = names.iter().filter(|n| color(n) == "red").collect();
    for r in &red {
        let msg = read(&dir.join(r))["message"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        assert!(
            msg.contains(" of ") && msg.ends_with("failing"),
            "{r}: {msg}"
        );
    }
}

#[test]
fn the_endpoint_schema_refuses_a_bad_badge() {
    let schema = endpoint_schema();
    let ok = serde_json::json!({"schemaVersion": 1, "label": "procroute", "message": "9 passed", "color": "brightgreen"});
    schema.validate("endpoint", &ok).expect("a good badge");
    for bad in [
        serde_json::json!({"schemaVersion": 2, "label": "x", "message": "y"}),
        serde_json::json!({"schemaVersion": 1, "label": "x"}),
        serde_json::json!({"schemaVersion": 1, "label": "x", "message": "y", "colour": "red"}),
        serde_json::json!({"schemaVersion": 1, "label": 3, "message": "y"}),
    ] {
        assert!(schema.validate("endpoint", &bad).is_err(), "{bad}");
    }
}

#[test]
fn spec_chapters_carry_their_rules() {
    let chapters = procroute_suite::conform::badges::chapters(procroute_suite::conform::html::SPEC);
    let find = |slug: &str| {
        chapters.iter().find(|c| c.slug == slug).unwrap_or_else(|| {
            panic!(
                "no chapter {slug}: {:?}",
                chapters.iter().map(|c| &c.slug).collect::<Vec<_>>()
            )
        })
    };
    assert!(find("delivery").rules.contains("DELIVER-5"));
    assert!(find("session-keys")
        .rules
        .iter()
        .any(|r| r.starts_with("KEY-")));
    assert!(find("invariants-checked-against-the-reference-model")
        .rules
        .contains("INV-6"));
    // Every rule belongs to one chapter only.
    let mut seen = std::collections::BTreeSet::new();
    for c in &chapters {
        for r in &c.rules {
            assert!(seen.insert(r.clone()), "{r} in two chapters");
        }
    }
}
