//! `--only` / `--skip` globs, `--shard I/N` partitions, known failures.

use procroute::check::conform::select::{
    apply_known_failures, glob, parse_known_failures, Selection,
};
use procroute::check::conform::Outcome;

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
