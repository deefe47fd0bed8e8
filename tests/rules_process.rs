//! Chapter 4 of spec/SPEC.md, background-process events: one named test
//! (or more) per PROC rule; test names start with the rule id.

#[path = "support/rules.rs"]
mod rules;

use rules::*;

/// PROC-1, PROC-9.
#[test]
fn proc_1_and_9_spawn_validates_limits() {
    let mut r = Registry::new(Limits {
        max_processes: 1,
        ..Limits::default()
    });
    let a = topic("1", "a");
    let mut long = req(&a, "p", &[], true);
    long.command = "x".repeat(5000);
    assert!(r.spawn(long, 0).is_err());
    assert!(r.spawn(req(&a, "", &[], true), 0).is_err());
    assert!(r.spawn(req(&a, "p", &[""], true), 0).is_err());
    r.spawn(req(&a, "p", &[], true), 0).expect("first");
    assert!(
        r.spawn(req(&a, "q", &[], true), 0).is_err(),
        "over max_processes"
    );
}

#[test]
fn proc_2_events_carry_origin_lane_run_and_sequence() {
    let mut r = Registry::new(Limits::default());
    let a = topic("42", "alice");
    let run1 = r.spawn(req(&a, "p", &["x"], true), 0).expect("spawn");
    let e1 = r.output(run1, "x\n", 0).expect("running");
    let e2 = r
        .finish(run1, Completion::Exited { code: 0 }, 1)
        .expect("running");
    let run2 = r
        .spawn(req(&a, "p", &[], true), 2)
        .expect("same process id again");
    assert_ne!(run1, run2, "two runs of one process id differ");
    let e = [&e1[0], &e2[0]];
    assert_eq!((e[0].seq, e[1].seq), (0, 1));
    for ev in e {
        assert_eq!(ev.origin, a);
        assert_eq!(ev.lane, Lane::of(&a, &Policy::default()));
        assert_eq!((ev.run, ev.process_id.as_str()), (run1, "p"));
    }
}

#[test]
fn proc_3_excerpt_is_bounded_and_cut_at_line_boundaries() {
    let mut r = Registry::new(Limits::default());
    let run = r
        .spawn(req(&topic("1", "a"), "p", &["ERR"], false), 0)
        .expect("spawn");
    let chunk: String = (0..50)
        .map(|i| format!("ERR line {i:02} {}\n", "y".repeat(150)))
        .collect();
    let ev = r.output(run, &chunk, 0).expect("running");
    let EventKind::WatchMatch {
        excerpt, pattern, ..
    } = &ev[0].kind
    else {
        panic!("{ev:?}")
    };
    assert_eq!(pattern, "ERR");
    assert!(excerpt.chars().count() <= 2000);
    assert!(excerpt.lines().count() <= 20);
    assert!(
        excerpt
            .lines()
            .all(|l| l.starts_with("ERR line") && l.ends_with('y')),
        "cut inside a line"
    );
    assert_eq!(excerpt.lines().count(), 12, "as many whole lines as fit");
}

#[test]
fn proc_4_one_event_per_cooldown_and_suppressed_counts_reported() {
    let mut r = Registry::new(Limits::default());
    let run = r
        .spawn(req(&topic("1", "a"), "p", &["hit"], false), 0)
        .expect("spawn");
    assert_eq!(r.output(run, "hit\n", 0).expect("ok").len(), 1);
    assert!(r.output(run, "hit\nhit\n", 5_000).expect("ok").is_empty());
    let ev = r.output(run, "hit\n", 15_000).expect("ok");
    assert!(
        matches!(ev[0].kind, EventKind::WatchMatch { suppressed: 2, .. }),
        "{ev:?}"
    );
}

#[test]
fn proc_5_three_strike_windows_disable_watching_exactly_once() {
    let mut r = Registry::new(Limits::default());
    let run = r
        .spawn(req(&topic("1", "a"), "p", &["hit"], false), 0)
        .expect("spawn");
    let mut kinds = Vec::new();
    let mut t = 0;
    for _ in 0..6 {
        for e in r.output(run, "hit\n", t).expect("ok") {
            kinds.push(e.kind);
        }
        for e in r.output(run, "hit\n", t + 1_000).expect("ok") {
            kinds.push(e.kind);
        }
        t += 15_000;
    }
    let disabled = kinds
        .iter()
        .filter(|k| matches!(k, EventKind::WatchDisabled { .. }))
        .count();
    let matches = kinds
        .iter()
        .filter(|k| matches!(k, EventKind::WatchMatch { .. }))
        .count();
    assert_eq!((matches, disabled), (3, 1), "{kinds:?}");
    // Promoted to notify-on-exit.
    let done = r
        .finish(run, Completion::Exited { code: 1 }, t)
        .expect("ok");
    assert_eq!(done.len(), 1);
}

#[test]
fn proc_5_a_clean_window_resets_strikes() {
    let mut r = Registry::new(Limits::default());
    let run = r
        .spawn(req(&topic("1", "a"), "p", &["hit"], false), 0)
        .expect("spawn");
    let mut t = 0;
    for round in 0..10 {
        r.output(run, "hit\n", t).expect("ok");
        if round % 2 == 0 {
            r.output(run, "hit\n", t + 1_000).expect("ok"); // a strike
        }
        t += 15_000;
    }
    let ev = r.output(run, "hit\n", t).expect("ok");
    assert!(
        matches!(ev[0].kind, EventKind::WatchMatch { .. }),
        "still watching: {ev:?}"
    );
}

#[test]
fn proc_6_global_breaker_trips_and_counts_per_process() {
    let mut r = Registry::new(Limits::default());
    let a = topic("1", "a");
    let runs: Vec<RunId> = (0..20)
        .map(|i| {
            r.spawn(req(&a, &format!("p{i}"), &["hit"], false), 0)
                .expect("spawn")
        })
        .collect();
    let emitted: usize = runs
        .iter()
        .map(|run| r.output(*run, "hit\n", 100).expect("ok").len())
        .sum();
    assert_eq!(emitted, 15, "15 per 10 s window");
    // Still tripped at 20 s, released after 30 s; the dropped match is
    // reported on its own process's next event.
    assert!(r.output(runs[19], "hit\n", 20_000).expect("ok").is_empty());
    let ev = r.output(runs[16], "hit\n", 31_000).expect("ok");
    assert!(
        matches!(ev[0].kind, EventKind::WatchMatch { suppressed: 1, .. }),
        "{ev:?}"
    );
}

#[test]
fn proc_7_completion_only_when_promised() {
    let mut r = Registry::new(Limits::default());
    let a = topic("1", "a");
    let quiet = r.spawn(req(&a, "q", &["x"], false), 0).expect("spawn");
    assert!(r
        .finish(quiet, Completion::Exited { code: 0 }, 1)
        .expect("ok")
        .is_empty());
    let loud = r.spawn(req(&a, "l", &[], true), 0).expect("spawn");
    r.output(loud, "tail text\n", 0).expect("ok");
    let ev = r
        .finish(loud, Completion::Signaled { signal: 9 }, 1)
        .expect("ok");
    assert!(
        matches!(&ev[0].kind, EventKind::Completion { completion: Completion::Signaled { signal: 9 }, tail, .. } if tail == "tail text\n")
    );
    assert!(
        r.finish(loud, Completion::Killed, 2).is_err(),
        "finished twice"
    );
}

#[test]
fn proc_8_checkpoint_at_spawn_restores_routing_and_reports_lost() {
    let mut g = Gateway::new(snapshots());
    let a = topic("42", "alice");
    let b = topic("43", "bob");
    let out_a = g.handle(0, spawn(a.clone(), "pa".into(), vec![]));
    // The checkpoint is persisted before the run id is handed out.
    let pos_ckpt = out_a
        .iter()
        .position(|o| {
            matches!(
                o,
                Output::Persist {
                    file: FileKind::Checkpoint,
                    ..
                }
            )
        })
        .expect("checkpoint");
    let pos_spawned = out_a
        .iter()
        .position(|o| matches!(o, Output::Spawned { .. }))
        .expect("spawned");
    assert!(pos_ckpt < pos_spawned);
    let ra = run_of(&out_a);
    let rb = run_of(&g.handle(1, spawn(b.clone(), "pb".into(), vec![])));
    // Crash: only persisted bytes survive. pa survived, pb vanished.
    let (g2, out) = Gateway::recover(
        snapshots(),
        Some(&g.store().encode()),
        Some(&g.registry().encode()),
        Some(&g.delivery().encode()),
        10,
        |run, _| run == ra,
    )
    .expect("recovers");
    let s = sends(&out);
    assert_eq!(s.len(), 1, "{out:?}");
    assert_eq!(s[0].destination, Destination::of(&b));
    assert!(s[0].text.contains("pb was lost"));
    assert!(g2.registry().is_running(ra) && !g2.registry().is_running(rb));
}

/// PROC-2 / PROC-8 regression, found by the interleaving model: a watch
/// event advanced the run's sequence number but the checkpoint still held
/// the old one, so after a restart the `lost` completion reused the
/// delivered (run, seq) and was discarded as a duplicate.
#[test]
fn proc_2_sequence_numbers_survive_a_restart() {
    let mut g = Gateway::new(snapshots());
    let a = topic("42", "alice");
    let mut files: std::collections::BTreeMap<String, Vec<u8>> = Default::default();
    let keep = |out: &[Output], files: &mut std::collections::BTreeMap<String, Vec<u8>>| {
        for o in out {
            if let Output::Persist { file, bytes } = o {
                files.insert(format!("{file:?}"), bytes.clone());
            }
        }
    };
    let out = g.handle(0, spawn(a.clone(), "p".into(), vec!["MATCH".into()]));
    keep(&out, &mut files);
    let run = run_of(&out);
    let out = g.handle(
        1,
        Input::Output {
            run,
            chunk: "MATCH\n".into(),
        },
    );
    keep(&out, &mut files);
    let watch = sends(&out)[0].id;
    let out = g.handle(
        2,
        Input::Sent {
            id: watch,
            error: None,
        },
    );
    keep(&out, &mut files);
    let f = |k: &str| files.get(k).cloned();
    let (_, out) = Gateway::recover(
        snapshots(),
        f("Store").as_deref(),
        f("Checkpoint").as_deref(),
        f("Delivery").as_deref(),
        3,
        |_, _| false,
    )
    .expect("recovers");
    let s = sends(&out);
    assert_eq!(s.len(), 1, "the lost completion is sent: {out:?}");
    assert_ne!(s[0].id, watch);
    assert!(s[0].text.contains("p was lost"));
}

/// PROC-8, DELIVER-3: a run id the delivery log names is never handed out
/// again, even when the checkpoint is older than the log or missing. A
/// reissued id would make the new run's notifications look like
/// duplicates of the old run's, and they would be dropped.
#[test]
fn proc_8_run_ids_named_by_the_delivery_log_are_never_reissued() {
    let a = topic("42", "alice");
    let mut g = Gateway::new(snapshots());
    let empty_checkpoint = g.registry().encode();
    let mut last = None;
    for (t, p) in ["p0", "p1", "p2"].into_iter().enumerate() {
        let t = t as u64 * 10;
        let run = run_of(&g.handle(t, spawn(a.clone(), p.into(), vec![])));
        let out = g.handle(
            t + 1,
            Input::Finished {
                run,
                completion: Completion::Exited { code: 0 },
            },
        );
        let sent = sends(&out);
        assert_eq!(sent.len(), 1, "{out:?}");
        g.handle(
            t + 2,
            Input::Sent {
                id: sent[0].id,
                error: None,
            },
        );
        last = Some(run);
    }
    let last = last.expect("three runs").0;
    for checkpoint in [Some(empty_checkpoint.as_slice()), None] {
        let (mut g2, _) = Gateway::recover(
            snapshots(),
            Some(&g.store().encode()),
            checkpoint,
            Some(&g.delivery().encode()),
            100,
            |_, _| false,
        )
        .expect("recovers");
        let run = run_of(&g2.handle(101, spawn(a.clone(), "p3".into(), vec![])));
        assert!(
            run.0 > last,
            "run {} reissued (log names up to {last}; checkpoint {})",
            run.0,
            if checkpoint.is_some() {
                "stale"
            } else {
                "missing"
            }
        );
        let out = g2.handle(
            102,
            Input::Finished {
                run,
                completion: Completion::Exited { code: 0 },
            },
        );
        let sent = sends(&out);
        assert_eq!(sent.len(), 1, "the new run's completion is sent: {out:?}");
        assert!(sent[0].text.contains("p3"), "{}", sent[0].text);
    }
}

/// PROC-8: the delivery log remembers the last `delivered_log_max`
/// completions, exactly that many, oldest forgotten first.
#[test]
fn proc_8_recorded_completions_are_bounded_at_exactly_the_limit() {
    let limits = DeliveryLimits {
        delivered_log_max: 3,
        ..DeliveryLimits::default()
    };
    let mut d = DeliveryEngine::new(limits.clone());
    for run in 0..4 {
        d.record_completion(RunId(run));
        d.record_completion(RunId(run)); // recording twice changes nothing
    }
    let held: Vec<u64> = (0..4).filter(|r| d.has_completion(RunId(*r))).collect();
    assert_eq!(held, vec![1, 2, 3]);
    assert_eq!(d.limits(), &limits);
    assert_eq!(d.max_run(), Some(3));
    let back = DeliveryEngine::decode(&d.encode(), limits).expect("decodes");
    assert_eq!(back.max_run(), Some(3));
    assert!(back.has_completion(RunId(1)) && !back.has_completion(RunId(0)));
}

/// PROC-8: recovery continues each run after its own highest recorded
/// sequence number, not another run's.
#[test]
fn proc_8_recorded_sequences_are_per_run() {
    let mut d = DeliveryEngine::new(DeliveryLimits::default());
    let a = topic("42", "alice");
    d.enqueue(note(1, 5, &a), 0).expect("room");
    d.enqueue(note(2, 1, &a), 0).expect("room");
    d.enqueue(note(2, 0, &a), 0).expect("room");
    assert_eq!(d.recorded_seq(RunId(1)), Some(5));
    assert_eq!(d.recorded_seq(RunId(2)), Some(1));
    assert_eq!(d.recorded_seq(RunId(3)), None);
}

/// PROC-9 at each limit's exact boundary: a value at the limit is accepted,
/// one past it is a typed error naming what was too long; nothing is
/// truncated. The registry reports the limits it was given and enforces.
#[test]
fn proc_9_every_limit_holds_at_its_exact_boundary() {
    let custom = Limits {
        max_processes: 7,
        ..Limits::default()
    };
    assert_eq!(Registry::new(custom.clone()).limits(), &custom);
    let limits = Limits::default();
    let mut r = Registry::new(limits.clone());
    let a = topic("1", "a");
    let at = |r: &mut Registry, f: &dyn Fn(&mut SpawnRequest)| {
        let mut q = req(&a, "p", &[], true);
        f(&mut q);
        r.spawn(q, 0)
    };
    let max_id = limits.max_process_id_bytes;
    let max_cmd = limits.max_command_bytes;
    let max_pat = limits.max_pattern_bytes;
    let max_pats = limits.max_patterns;
    assert_eq!(
        (max_id, max_cmd, max_pat, max_pats),
        (128, 4096, 256, 32),
        "PROC-9"
    );
    type Edit = Box<dyn Fn(&mut SpawnRequest, usize)>;
    let cases: Vec<(&str, usize, Edit)> = vec![
        (
            "process id",
            max_id,
            Box::new(|q, n| q.process_id = "p".repeat(n)),
        ),
        (
            "command",
            max_cmd,
            Box::new(|q, n| q.command = "c".repeat(n)),
        ),
        (
            "watch pattern",
            max_pat,
            Box::new(|q, n| q.watch_patterns = vec!["w".repeat(n)]),
        ),
        (
            "patterns",
            max_pats,
            Box::new(|q, n| q.watch_patterns = vec!["w".into(); n]),
        ),
    ];
    for (what, max, edit) in &cases {
        let ok = at(&mut r, &|q| edit(q, *max));
        assert!(ok.is_ok(), "{what} at its limit {max}: {ok:?}");
        let err = at(&mut r, &|q| edit(q, max + 1)).expect_err("one past the limit");
        let text = err.to_string();
        assert!(text.contains(&(max + 1).to_string()), "{what}: {text}");
    }
}

/// PROC-2: run ids are issued in order and `next_run` is exactly the next
/// one — what the checkpoint records so that a restart never reissues one.
#[test]
fn proc_2_next_run_is_the_id_the_next_spawn_gets() {
    let mut r = Registry::new(Limits::default());
    let a = topic("1", "a");
    for i in 0..5 {
        let expected = r.next_run();
        let run = r
            .spawn(req(&a, &format!("p{i}"), &[], true), 0)
            .expect("spawn");
        assert_eq!(run, RunId(expected));
        assert_eq!(r.next_run(), expected + 1);
    }
    assert_eq!(r.next_run(), 6, "ids start at 1");
}

/// PROC-6 exactly: every match the breaker drops — the one that trips it
/// and the ones while it is tripped — is reported on its own process; the
/// breaker admits again at exactly 30 s after it tripped, not before.
#[test]
fn proc_6_breaker_boundaries_and_every_drop_reported_on_its_process() {
    let limits = Limits::default();
    let mut r = Registry::new(limits.clone());
    let a = topic("1", "a");
    let runs: Vec<RunId> = (0..18)
        .map(|i| {
            r.spawn(req(&a, &format!("p{i}"), &["hit"], false), 0)
                .expect("spawn")
        })
        .collect();
    let t0 = 100;
    for (i, run) in runs.iter().enumerate() {
        let n = r.output(*run, "hit\n", t0).expect("ok").len();
        assert_eq!(n, usize::from(i < 15), "process {i}");
    }
    // runs[15] tripped the breaker; 16 and 17 met it tripped.
    let until = t0 + limits.global_cooldown_ms;
    assert!(
        r.output(runs[15], "hit\n", until - 1)
            .expect("ok")
            .is_empty(),
        "still tripped"
    );
    for run in &runs[15..] {
        let ev = r.output(*run, "hit\n", until + 20_000).expect("ok");
        assert!(
            matches!(ev[0].kind, EventKind::WatchMatch { suppressed, .. } if suppressed >= 1),
            "{run:?}: {ev:?}"
        );
    }
    let mut r = Registry::new(limits.clone());
    let runs: Vec<RunId> = (0..16)
        .map(|i| {
            r.spawn(req(&a, &format!("q{i}"), &["hit"], false), 0)
                .expect("spawn")
        })
        .collect();
    for run in &runs {
        r.output(*run, "hit\n", t0).expect("ok");
    }
    let ev = r.output(runs[15], "hit\n", until).expect("ok");
    assert!(
        matches!(ev[0].kind, EventKind::WatchMatch { suppressed: 1, .. }),
        "admitted at exactly the end of the cooldown, with the trip's drop: {ev:?}"
    );
}

/// PROC-8 write order, as SPEC now states it (the code's order, proven by
/// the crash points): every event — a watch match as well as a completion —
/// reaches the delivery log before the checkpoint records its effect.
#[test]
fn proc_8_every_event_reaches_the_delivery_log_before_the_checkpoint() {
    let a = topic("42", "alice");
    let mut g = Gateway::new(snapshots());
    let run = run_of(&g.handle(0, spawn(a, "p1".into(), vec!["MATCH".into()])));
    let files = |out: &[Output]| -> Vec<FileKind> {
        out.iter()
            .filter_map(|o| match o {
                Output::Persist { file, .. } => Some(*file),
                _ => None,
            })
            .collect()
    };
    let watch = g.handle(
        1,
        Input::Output {
            run,
            chunk: "MATCH\n".into(),
        },
    );
    assert_eq!(
        files(&watch)[..2],
        [FileKind::Delivery, FileKind::Checkpoint],
        "{watch:?}"
    );
    let done = g.handle(
        2,
        Input::Finished {
            run,
            completion: Completion::Exited { code: 0 },
        },
    );
    assert_eq!(
        files(&done)[..2],
        [FileKind::Delivery, FileKind::Checkpoint],
        "{done:?}"
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

    /// PROC-3: the excerpt is exactly the naive reading, at every boundary.
    #[test]
    fn proc_3_excerpt_is_the_longest_prefix_of_whole_lines_that_fits(
        lines in proptest::collection::vec("[a-z\u{e9}]{0,6}", 0..8),
        max_lines in 0usize..6,
        max_chars in 0usize..24,
    ) {
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let got = procroute::registry::excerpt(&lines, max_lines, max_chars);
        proptest::prop_assert_eq!(got, naive_excerpt(&lines, max_lines, max_chars));
    }
}

/// PROC-5 / PROC-8 regression, found by the crash points at 1,500 traces:
/// the 3rd strike's `watch_disabled` reached the delivery log, the crash
/// came before the checkpoint recorded the promotion, and the restored run
/// watched on and ended without the completion it was told it owed.
#[test]
fn proc_8_a_log_holding_watch_disabled_restores_the_run_promoted() {
    let a = topic("42", "alice");
    let mut g = Gateway::new(snapshots());
    // Not asked to notify on exit: only the promotion owes a completion.
    let out = g.handle(
        0,
        Input::Spawn {
            origin: a.clone(),
            process_id: "p".into(),
            command: "job".into(),
            watch_patterns: vec!["MATCH".into()],
            notify_on_exit: false,
        },
    );
    let run = run_of(&out);
    let output = |g: &mut Gateway, t: u64| {
        g.handle(
            t,
            Input::Output {
                run,
                chunk: "MATCH\n".into(),
            },
        )
    };
    // Three windows, each with a drop: three strikes.
    for w in 0..2u64 {
        output(&mut g, w * 15_000);
        output(&mut g, w * 15_000 + 1);
    }
    output(&mut g, 30_000);
    let checkpoint_before = g.registry().encode();
    output(&mut g, 30_001);
    assert!(
        g.delivery().watch_disabled_runs().contains(&run),
        "the 3rd strike disables watching"
    );
    // The log holds the watch_disabled; the checkpoint predates it.
    let (mut g2, _) = Gateway::recover(
        snapshots(),
        Some(&g.store().encode()),
        Some(&checkpoint_before),
        Some(&g.delivery().encode()),
        40_000,
        |_, _| true,
    )
    .expect("recovers");
    let queued = g2.delivery().queued();
    output(&mut g2, 60_000);
    assert_eq!(
        g2.delivery().queued(),
        queued,
        "watching stays disabled after the restart"
    );
    assert!(!g2.delivery().has_completion(run));
    g2.handle(
        60_001,
        Input::Finished {
            run,
            completion: Completion::Exited { code: 0 },
        },
    );
    // Queued behind the watch_disabled notice, which is still unanswered.
    assert!(
        g2.delivery().has_completion(run),
        "the owed completion is emitted"
    );
}

/// A snapshotting gateway: these checks read its whole-file `Persist`
/// outputs (the journal's records are checked against them in
/// `tests/delta.rs`).
fn snapshots() -> Config {
    Config {
        durability: procroute::delta::Durability::Snapshots,
        ..Config::default()
    }
}
