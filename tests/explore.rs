//! Exhaustive exploration (`procroute explore`): on the built-in router
//! every reached state of every declared scope is judged clean, states are
//! deduplicated (fewer distinct than explored), symmetric choices are not
//! offered twice and reads are not folded away; over the protocol
//! (`--impl`) the traces sent are the reference's distinct states, in
//! breadth-first order, the same with one worker or two, split exactly by
//! shards, and a bug of the Python template is found at its shortest
//! depth. The faults it finds are in `tests/bug-bank/faults.rs` and
//! `.ci/explore-bank.py`.

use procroute::gateway::Config;
use procroute_suite::explore::{explore, Scope};

#[test]
fn the_default_scope_to_depth_3_passes_and_deduplicates() {
    let scope = Scope {
        depth: 3,
        ..Scope::default()
    };
    let s = explore(&scope, &Config::default(), None);
    assert_eq!(s.failed, 0, "{:?}", s.counterexample);
    assert_eq!(s.complete_depth, 3);
    assert!(s.distinct > 1_000, "{} distinct states", s.distinct);
    assert!(s.distinct < s.explored, "no state was reached twice");
    assert_eq!(
        s.judged + 1,
        s.distinct,
        "every distinct state but the empty one is judged"
    );
}

#[test]
fn interchangeable_threads_are_explored_once() {
    // With the two topics declared interchangeable, fewer states than
    // without: the second topic is only offered once the first is used.
    let depth = 2;
    let reduced = explore(
        &Scope {
            depth,
            ..Scope::default()
        },
        &Config::default(),
        None,
    );
    let full = explore(
        &Scope {
            depth,
            symmetric: Vec::new(),
            ..Scope::default()
        },
        &Config::default(),
        None,
    );
    assert_eq!(reduced.failed + full.failed, 0);
    assert!(
        reduced.explored < full.explored,
        "{} vs {}",
        reduced.explored,
        full.explored
    );
}

/// Reads change nothing in the reference (PROC-10), so states alone would
/// fold every prefix with a read into the one without it: the state
/// records the reads, so a scope with reads has more distinct states.
#[test]
fn reads_are_explored_not_deduplicated_away() {
    let depth = 3;
    let plain = explore(
        &Scope {
            depth,
            ..Scope::default()
        },
        &Config::default(),
        None,
    );
    let reads = explore(
        &Scope {
            depth,
            reads: true,
            ..Scope::default()
        },
        &Config::default(),
        None,
    );
    assert_eq!(plain.failed + reads.failed, 0);
    assert!(
        reads.distinct > plain.distinct,
        "{} distinct with reads, {} without",
        reads.distinct,
        plain.distinct
    );
}

/// Every declared scope passes on the built-in router at a small depth.
#[test]
fn every_declared_scope_passes_at_depth_3() {
    for name in Scope::NAMES {
        let scope = Scope {
            depth: 3,
            ..Scope::named(name).expect("declared")
        };
        let s = explore(&scope, &Config::default(), None);
        assert_eq!(s.failed, 0, "{name}: {:?}", s.counterexample);
        assert_eq!(s.complete_depth, 3, "{name}");
    }
    assert!(Scope::named("nonsense").is_none());
}

/// The counting scopes offer only what they declare: every trace the
/// storm sends has at most two clock steps, each watch spawn followed at
/// once by its process's one line of output, and nothing else of a turn,
/// an outage or an ending; the strikes scope has no turns, outages or
/// kills. (Their bugs are in `tests/bug-bank/faults.rs`.)
#[test]
fn the_counting_scopes_offer_only_what_they_declare() {
    use procroute_suite::conform::constraint::Constraints;
    use procroute_suite::conform::trace::TraceOp;
    use procroute_suite::explore::enumerate;
    use std::collections::BTreeMap;
    let bodies = |name: &str, depth: usize| {
        let scope = Scope {
            depth,
            ..Scope::named(name).expect("declared")
        };
        let suffix = procroute_suite::conform::trace::quiescence(scope.threads.len()).len();
        let mut all = Vec::new();
        enumerate(&scope, &Constraints::default(), None, |level| {
            for c in level {
                let ops = &c.trace.ops;
                all.push(ops[..ops.len() - suffix].to_vec());
            }
            true
        });
        all
    };
    let storm = bodies("storm", 9);
    assert!(storm.len() > 100, "{} traces", storm.len());
    for ops in &storm {
        let steps = ops
            .iter()
            .filter(|o| matches!(o, TraceOp::Advance { .. }))
            .count();
        assert!(steps <= 2, "{ops:?}");
        let mut outputs: BTreeMap<&str, usize> = BTreeMap::new();
        for (i, op) in ops.iter().enumerate() {
            match op {
                TraceOp::Spawn { process, watch, .. } => {
                    assert!(!watch.is_empty(), "{ops:?}");
                    if let Some(next) = ops.get(i + 1) {
                        assert!(
                            matches!(next, TraceOp::Output { process: p, .. } if p == process),
                            "{ops:?}"
                        );
                    }
                }
                TraceOp::Output { process, .. } => *outputs.entry(process).or_default() += 1,
                TraceOp::Advance { .. } => {}
                other => panic!("the storm offered {other:?}"),
            }
        }
        assert!(outputs.values().all(|&n| n == 1), "{ops:?}");
    }
    // Nine ops reach four processes, each with its line.
    assert!(storm.iter().any(|ops| ops.len() == 9
        && ops
            .iter()
            .filter(|o| matches!(o, TraceOp::Output { .. }))
            .count()
            == 4));
    for ops in bodies("strikes", 5) {
        for op in &ops {
            assert!(
                matches!(
                    op,
                    TraceOp::Spawn { .. }
                        | TraceOp::Output { .. }
                        | TraceOp::Exit { .. }
                        | TraceOp::Advance { .. }
                ),
                "the strikes scope offered {op:?}"
            );
        }
    }
}

// ------------------------------------------------- over the protocol

mod over {
    use std::time::Duration;

    use procroute::gateway::Config;
    use procroute_suite::conform::constraint::Constraints;
    use procroute_suite::conform::select::Selection;
    use procroute_suite::explore::{enumerate, explore, explore_over, Over, Scope};

    fn over(jobs: usize, shard: Option<(u64, u64)>) -> Over {
        Over {
            jobs,
            timeout: Duration::from_secs(20),
            selection: Selection {
                shard,
                ..Selection::default()
            },
            validate: false,
            keep_going: false,
            deadline: None,
        }
    }

    fn builtin() -> (String, Vec<String>) {
        (
            env!("CARGO_BIN_EXE_procroute").into(),
            vec!["harness".into()],
        )
    }

    fn depth(d: usize) -> Scope {
        Scope {
            depth: d,
            ..Scope::default()
        }
    }

    /// The traces sent are the reference's distinct states, level by
    /// level, with stable ids; the built-in harness passes all of them,
    /// the same with one worker or two.
    #[test]
    fn the_builtin_harness_passes_every_distinct_trace() {
        let scope = depth(3);
        let in_process = explore(&scope, &Config::default(), None);
        let mut ids = Vec::new();
        enumerate(&scope, &Constraints::default(), None, |level| {
            ids.extend(level.iter().map(|c| c.id.clone()));
            true
        });
        assert_eq!(ids.len() as u64, in_process.distinct - 1);
        assert_eq!(ids[0], "explore/1/0");
        let (program, args) = builtin();
        let (one, _, s1) = explore_over(&program, &args, &scope, &over(1, None)).expect("runs");
        let (two, _, s2) = explore_over(&program, &args, &scope, &over(2, None)).expect("runs");
        assert_eq!(
            one.failed(),
            0,
            "{:?}",
            one.outcomes.iter().find(|o| !o.passed)
        );
        assert_eq!(one.passed(), ids.len());
        assert_eq!(s1.sent, ids.len() as u64);
        assert_eq!(s1.levels_run, 3);
        assert_eq!(one.outcomes, two.outcomes, "results depend on the workers");
        assert_eq!(s2.sent, s1.sent);
        let sent: Vec<&str> = one.outcomes.iter().map(|o| o.id.as_str()).collect();
        assert_eq!(sent, ids, "breadth-first order, every case once");
    }

    /// `--shard I/N` splits every level: the shards are disjoint and
    /// together run every case.
    #[test]
    fn shards_partition_the_cases() {
        let scope = depth(2);
        let (program, args) = builtin();
        let (all, _, _) = explore_over(&program, &args, &scope, &over(1, None)).expect("runs");
        let mut union = Vec::new();
        for i in 1..=3 {
            let (part, _, _) =
                explore_over(&program, &args, &scope, &over(1, Some((i, 3)))).expect("runs");
            assert!(!part.outcomes.is_empty(), "shard {i}/3 is empty");
            union.extend(part.outcomes.into_iter().map(|o| o.id));
        }
        union.sort();
        let mut ids: Vec<String> = all.outcomes.into_iter().map(|o| o.id).collect();
        ids.sort();
        assert_eq!(union, ids);
    }

    /// A realistic bug in the Python template (a killed process never
    /// notifies) is found over the protocol at the shortest depth that
    /// shows it (spawn, kill: the state records how runs ended, or the
    /// kill would be folded into the exit the reference cannot tell from
    /// it once both completions were delivered), the run stops after that
    /// level, and every
    /// failure it reports names PROC-7 and says how it was found.
    #[test]
    fn a_bug_of_the_python_template_is_found_at_its_shortest_depth() {
        let template = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/spec/harnesses/example-python/harness.py"
        );
        let program = "sh".to_owned();
        let args = vec![
            "-c".to_owned(),
            format!("PROCROUTE_TEMPLATE_BUG=kill-silent exec python3 {template}"),
        ];
        let (report, started, s) =
            explore_over(&program, &args, &depth(4), &over(2, None)).expect("runs");
        assert_eq!(started.implementation.language, "python");
        assert!(report.failed() > 0, "the bug went unseen");
        let (case, _, violations) = s.first.expect("a counterexample");
        assert_eq!(case.depth, 2, "{}", case.id);
        assert_eq!(violations[0].rule, "PROC-7");
        assert_eq!(s.levels_run, 2, "stops after the first failing level");
        for o in report.outcomes.iter().filter(|o| !o.passed) {
            assert_eq!(o.rules, ["PROC-7"], "{}", o.id);
            assert!(o.id.starts_with("explore/2/"), "{}", o.id);
            assert!(
                o.detail.as_deref().unwrap_or("").contains(
                    "found at depth 2 of a breadth-first exploration (every trace of the scope with fewer ops passed)"
                ),
                "{:?}",
                o.detail
            );
        }
        // The same template without the bug passes the same levels.
        let clean = vec!["-c".to_owned(), format!("exec python3 {template}")];
        let (report, _, _) =
            explore_over(&program, &clean, &depth(2), &over(2, None)).expect("runs");
        assert_eq!(report.failed(), 0);
    }
}
