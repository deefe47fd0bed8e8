//! `procroute report` (the HTML page): from real `conform --json-out`
//! reports, the matrix has a column per implementation and a row per cited
//! rule with the right counts; every failure is listed, each drawn
//! counterexample is an inline SVG, every link lands on an element of the
//! page, nothing is fetched from elsewhere; hostile text stays text; known
//! failures link to their finding. tests/browser/report.mjs checks the
//! same page in a real browser (CI).

#[path = "support/scratch.rs"]
mod scratch;
use scratch::Scratch;

use std::collections::BTreeSet;
use std::process::Command;

use procroute_suite::conform::html::{self, Input};
use procroute_suite::conform::{Outcome, Report};

fn procroute(args: &[&str], env: &[(&str, &str)]) -> bool {
    let mut c = Command::new(env!("CARGO_BIN_EXE_procroute"));
    c.args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("procroute runs").status.success()
}

/// `conform` of the Python template (with `bug`, if any) with a small
/// budget, its JSON report read back as the page's input.
fn template_report(dir: &std::path::Path, name: &str, bug: Option<&str>) -> Input {
    let template = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/spec/harnesses/example-python/harness.py"
    );
    let json = dir.join(format!("{name}.json"));
    let cmd = format!("python3 {template}");
    let env: Vec<(&str, &str)> = bug
        .map(|b| ("PROCROUTE_TEMPLATE_BUG", b))
        .into_iter()
        .collect();
    let ok = procroute(
        &[
            "conform",
            "--impl",
            &cmd,
            "--cases",
            "80",
            "--dialect-cases",
            "20",
            "--min-coverage",
            "0",
            "--shrink-runs",
            "40",
            "--save",
            &dir.join("saved").display().to_string(),
            "--json-out",
            &json.display().to_string(),
            "--format",
            "json",
        ],
        &env,
    );
    assert_eq!(ok, bug.is_none(), "exit status of the {name} run");
    Input::read(&json).expect("the JSON report reads back")
}

fn ids_and_links(page: &str) -> (BTreeSet<String>, Vec<String>) {
    let grab = |attr: &str| -> Vec<String> {
        page.split(attr)
            .skip(1)
            .filter_map(|rest| rest.split('"').next().map(str::to_owned))
            .collect()
    };
    let ids = grab(" id=\"").into_iter().collect();
    let links = grab(" href=\"");
    (ids, links)
}

#[test]
fn the_page_shows_every_failure_and_draws_counterexamples() {
    let scratch = Scratch::new("report-page");
    let dir = scratch.path().to_path_buf();
    let good = template_report(&dir, "good", None);
    let bad = template_report(&dir, "bad", Some("kill-silent"));
    let failed: Vec<&Outcome> = bad.report.outcomes.iter().filter(|o| !o.passed).collect();
    assert!(!failed.is_empty(), "the bug fails cases");
    let drawn = failed.iter().filter(|o| o.counterexample.is_some()).count();
    assert!(drawn >= 1, "shrunk failures carry their counterexample");
    let page = html::render(&[good.clone(), bad.clone()]);

    // The matrix: two implementation columns (told apart), a row per rule.
    let matrix = html::matrix(&[good.clone(), bad.clone()]);
    let table = page
        .split("<table id=\"matrix-table\">")
        .nth(1)
        .and_then(|t| t.split("</table>").next())
        .expect("the matrix table");
    let head = table.split("</thead>").next().expect("a head");
    assert_eq!(head.matches("<th>").count(), 3, "rule + 2 columns: {head}");
    assert!(head.contains("example-python 0.1.0 (#1)") && head.contains("(#2)"));
    assert_eq!(table.matches("<tr><th title=").count(), matrix.len());
    // The bug's rule fails in its column only, and links to its failures.
    let (rule, cells) = matrix
        .iter()
        .find(|(_, c)| c[1].failed > 0)
        .expect("a failing rule");
    assert_eq!(
        cells[0].failed + cells[0].known,
        0,
        "{rule} fails for the good run"
    );
    let c = cells[1];
    assert!(page.contains(&format!(
        "<td class=\"fail\" title=\"passed {}, failed {} (0 known), skipped {}\"><a href=\"#i1-{rule}\">",
        c.passed, c.failed, c.skipped
    )));

    // Every failure is listed once; each counterexample is drawn inline.
    assert_eq!(
        page.matches("<details class=\"failure").count(),
        failed.len()
    );
    assert_eq!(page.matches("<svg ").count(), drawn);
    assert_eq!(page.matches("code class=\"replay\"").count(), drawn);
    let cx = failed
        .iter()
        .find_map(|o| o.counterexample.as_ref())
        .expect("a counterexample");
    assert!(
        page.contains(&html::escape(&cx.file.to_json())),
        "its trace file is on the page"
    );

    // Links land on the page; nothing comes from elsewhere.
    let (ids, links) = ids_and_links(&page);
    for l in &links {
        let target = l
            .strip_prefix('#')
            .unwrap_or_else(|| panic!("a link leaves the page: {l}"));
        assert!(
            ids.contains(target),
            "a link to #{target}, which is not on the page"
        );
    }
    for outside in [" src=", "url(", "@import", "href=\"http", "<link"] {
        assert!(
            !page.contains(outside),
            "the page loads something ({outside})"
        );
    }
}

#[test]
fn hostile_text_stays_text() {
    let mut o = Outcome::check(
        "gen/1/<script>alert(1)</script>",
        &["PROC-1"],
        Some("PROC-1: \u{0}</pre><img src=x onerror=alert(1)> \u{202e}bidi \u{7}".into()),
    );
    o.expected_failure = true;
    o.finding = Some("H-<b>".into());
    let input = Input {
        label: "evil <i>impl</i>".into(),
        report: Report::new("0.1.0".into(), vec![o]),
        findings: Some("## H-X — </pre><script>x()</script>\nbody \u{0}\n".into()),
    };
    let page = html::render(&[input]);
    for raw in [
        "<script>alert",
        "<img",
        "<i>impl",
        "</pre><script>",
        "\u{0}",
        "\u{7}",
        "H-<b>",
    ] {
        assert!(!page.contains(raw), "{raw:?} reached the page raw");
    }
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(page.contains("\\u{0}") && page.contains("\\u{7}"));
    // The only scripts are the page's own.
    assert_eq!(page.matches("<script>").count(), 1);
}

/// Reports of two suite versions on one page: the page says so, naming
/// both (a rule may mean something else in each, spec/CHANGELOG.md); one
/// version alone carries no such warning.
#[test]
fn a_page_over_two_suite_versions_says_so() {
    let one = |v: &str| Input {
        label: format!("impl {v}"),
        report: Report::new(v.into(), vec![Outcome::pass("trace/x", &["INV-1"])]),
        findings: None,
    };
    let page = html::render(&[one("0.1.0"), one("0.2.0")]);
    assert!(
        page.contains("These reports come from 2 suite versions (0.1.0, 0.2.0)"),
        "{}",
        &page[..page.len().min(2000)]
    );
    let page = html::render(&[one("0.2.0"), one("0.2.0")]);
    assert!(!page.contains("suite versions ("));
}

#[test]
fn known_failures_link_to_their_findings() {
    let mut o = Outcome::check(
        "hermes-parse/profile",
        &["KEY-H3"],
        Some("KEY-H3: no".into()),
    );
    o.expected_failure = true;
    o.finding = Some("H-PARSE-PROFILE".into());
    let mut other = o.clone();
    other.id = "hermes-parse/other".into();
    other.finding = Some("H-NOT-WRITTEN".into());
    let findings = "# hermes\n\n## H-PARSE-PROFILE — profile keys do not parse\n\nThe story.\n\n## H-LATE — late\n\nx\n";
    let input = Input {
        label: "hermes-agent 0.19.0".into(),
        report: Report::new("0.1.0".into(), vec![o, other]),
        findings: Some(findings.into()),
    };
    let page = html::render(&[input]);
    assert!(page.contains("<a href=\"#i0-finding-H-PARSE-PROFILE\">H-PARSE-PROFILE</a>"));
    assert!(page.contains("id=\"i0-finding-H-PARSE-PROFILE\""));
    assert!(page.contains("The story."));
    assert!(page.contains("H-NOT-WRITTEN (no such section in the FINDINGS.md read)"));
    // Known failures are counted apart in the matrix.
    assert!(page.contains(
        "<td class=\"known\" title=\"passed 0, failed 2 (2 known), skipped 0\"><a href=\"#i0-KEY-H3\">✗ 2 of 2 known</a></td>"
    ));
}

#[test]
fn spec_rules_are_every_rule_paragraph_of_spec_md() {
    let spec = include_str!("../spec/SPEC.md");
    let rules = html::spec_rules();
    let ids: Vec<&str> = rules.iter().map(|(id, _)| id.as_str()).collect();
    let written = spec
        .lines()
        .filter(|l| {
            l.strip_prefix("**")
                .and_then(|r| r.split_once("**"))
                .is_some_and(|(id, _)| {
                    id.contains('-')
                        && id
                            .chars()
                            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '-')
                })
        })
        .count();
    assert_eq!(ids.len(), written);
    let unique: BTreeSet<&str> = ids.iter().copied().collect();
    assert_eq!(unique.len(), ids.len(), "a rule id twice");
    let proc5 = rules.iter().find(|(id, _)| id == "PROC-5").expect("PROC-5");
    assert!(proc5.1.starts_with("A cooldown window"), "{}", proc5.1);
    assert!(
        proc5.1.contains("watch_disabled"),
        "the paragraph continues over lines"
    );
}

#[test]
fn a_file_that_is_not_a_report_is_named() {
    let scratch = Scratch::new("report-garbage");
    let path = scratch.join("garbage.json");
    std::fs::write(&path, "{\"outcomes\": 3}").expect("write");
    let e = Input::read(&path).expect_err("not a report");
    assert!(
        e.contains("garbage.json") && e.contains("not a procroute conform JSON report"),
        "{e}"
    );
    assert!(!procroute(&["report", &path.display().to_string()], &[]));
}

/// Reports of several versions of one implementation draw its history: a
/// per-rule SVG trend (a cell per rule and version, its share passed) and
/// the findings fixed or introduced from one version to the next, in the
/// order the reports were given.
#[test]
fn versions_of_one_implementation_draw_its_history() {
    let s = Scratch::new("report-history");
    let mut old = template_report(s.path(), "old", Some("lifo"));
    let mut new = template_report(s.path(), "new", None);
    let other = template_report(s.path(), "other", None);
    let set_version = |i: &mut Input, v: &str| {
        if let Some(m) = i.report.implementation.as_mut() {
            m.version = v.into();
        }
    };
    set_version(&mut old, "1.0");
    set_version(&mut new, "2.0");
    // The old version's failures are known as finding T-LIFO; the new
    // version has a known failure of its own, T-NEW.
    for o in old.report.outcomes.iter_mut().filter(|o| !o.passed) {
        o.expected_failure = true;
        o.finding = Some("T-LIFO".into());
    }
    let mut fresh = Outcome::check("gen/9/9", &["TEXT-3"], Some("TEXT-3: …".into()));
    fresh.expected_failure = true;
    fresh.finding = Some("T-NEW".into());
    new.report.outcomes.push(fresh);
    let inputs = [old, new];
    let series = html::history_series(&inputs);
    assert_eq!(series.len(), 1, "one implementation, two versions");
    let (fixed, introduced) = series[0].changes(0);
    assert_eq!(fixed, ["T-LIFO"]);
    assert_eq!(introduced, ["T-NEW"]);
    let deliver5 = &series[0]
        .rows
        .iter()
        .find(|(r, _)| r == "DELIVER-5")
        .expect("DELIVER-5 has cases")
        .1;
    assert!(
        deliver5[0].1 + deliver5[0].2 > 0,
        "1.0 fails DELIVER-5: {deliver5:?}"
    );
    assert_eq!(
        (deliver5[1].1, deliver5[1].2),
        (0, 0),
        "2.0 passes DELIVER-5: {deliver5:?}"
    );
    let page = html::render(&inputs);
    assert!(
        page.contains("<h2 id=\"history-example-python\">History: example-python (1.0 → 2.0)</h2>"),
        "no history heading"
    );
    assert!(page.contains("<svg class=\"history\""), "no history chart");
    let cells = page.matches("<rect class=\"cell\"").count();
    assert_eq!(
        cells,
        2 * page.matches("data-version=\"1.0\"").count(),
        "a cell per rule and version"
    );
    assert!(page.contains("data-rule=\"DELIVER-5\" data-version=\"1.0\""));
    assert!(
        page.contains("<li>1.0 → 2.0: fixed T-LIFO; introduced T-NEW</li>"),
        "findings fixed and introduced"
    );
    // One report per implementation: no history.
    let single = html::render(&[other]);
    assert!(!single.contains("class=\"history\""));
}
