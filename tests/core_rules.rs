//! One named test (or more) per rule of the lanes, process-event, routing
//! and delivery chapters of spec/SPEC.md. Test names start with the rule id.

use procroute::delivery::{DeliveryEngine, DeliveryLimits, Enqueued, Notification, NotificationId};
use procroute::gateway::{Config, FileKind, Gateway, Input, Output};
use procroute::persist::{FilePersist, FileProblem, Persist, PersistError};
use procroute::registry::{Completion, EventKind, Limits, Registry, RunId, SpawnRequest};
use procroute::router::{self, Destination, DropReason, RouteSource};
use procroute::store::{Lane, SessionStore, StoreError};
use procroute::{ChatType, Origin, Policy};

fn topic(thread: &str, user: &str) -> Origin {
    Origin::new("telegram", ChatType::Group, "-100")
        .and_then(|o| o.with_thread(thread))
        .and_then(|o| o.with_user(user))
        .expect("valid")
}

fn req(origin: &Origin, id: &str, watch: &[&str], notify: bool) -> SpawnRequest {
    SpawnRequest {
        process_id: id.to_owned(),
        origin: origin.clone(),
        lane: Lane::of(origin, &Policy::default()),
        command: format!("run {id}"),
        watch_patterns: watch.iter().map(|s| (*s).to_owned()).collect(),
        notify_on_exit: notify,
    }
}

/// A notify-on-exit spawn from `origin` (the command is irrelevant here).
fn spawn(origin: Origin, process_id: String, watch_patterns: Vec<String>) -> Input {
    Input::Spawn {
        origin,
        process_id,
        command: "job".into(),
        watch_patterns,
        notify_on_exit: true,
    }
}

fn sends(out: &[Output]) -> Vec<&Notification> {
    out.iter()
        .filter_map(|o| match o {
            Output::Send(n) => Some(n),
            _ => None,
        })
        .collect()
}

fn run_of(out: &[Output]) -> RunId {
    out.iter()
        .find_map(|o| match o {
            Output::Spawned { run, .. } => Some(*run),
            _ => None,
        })
        .expect("spawned")
}

// ---------------------------------------------------------------- STORE

#[test]
fn store_1_first_message_records_origin_on_its_canonical_lane() {
    let mut s = SessionStore::new(10);
    let a = topic("42", "alice");
    let (lane, created) = s.observe(&a, &Policy::default(), 5).expect("room");
    assert!(created);
    assert_eq!(lane.as_str(), "agent:main:telegram:group:-100:42");
    // Bob in the same shared topic: same lane, origin stays Alice's.
    let (lane2, created2) = s
        .observe(&topic("42", "bob"), &Policy::default(), 9)
        .expect("room");
    assert_eq!((lane2.clone(), created2), (lane.clone(), false));
    let e = s.get(&lane).expect("entry");
    assert_eq!((&e.origin, e.created_ms, e.updated_ms), (&a, 5, 9));
}

#[test]
fn store_2_reset_gives_new_conversation_and_keeps_origin() {
    let mut s = SessionStore::new(10);
    let a = topic("42", "alice");
    let (lane, _) = s.observe(&a, &Policy::default(), 0).expect("room");
    let before = s.get(&lane).expect("entry").conversation;
    let after = s.reset(&lane, 1).expect("exists");
    assert_ne!(before, after);
    assert_eq!(s.get(&lane).expect("entry").origin, a);
    assert!(matches!(
        s.reset(&Lane::of(&topic("1", "x"), &Policy::default()), 2),
        Err(StoreError::NoSuchLane { .. })
    ));
}

#[test]
fn store_3_a_full_store_refuses_new_lanes_and_keeps_old_ones() {
    let mut s = SessionStore::new(1);
    s.observe(&topic("1", "a"), &Policy::default(), 0)
        .expect("room");
    let err = s
        .observe(&topic("2", "a"), &Policy::default(), 0)
        .expect_err("full");
    assert!(err.to_string().contains("limit"), "{err}");
    assert_eq!(s.len(), 1);
}

fn temp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("procroute-rules-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir.join("store.json")
}

#[test]
fn store_4_file_backend_round_trips_atomically() {
    let path = temp("roundtrip");
    let mut s = SessionStore::new(10);
    s.observe(&topic("42", "alice"), &Policy::default(), 1)
        .expect("room");
    let mut f = FilePersist::new(&path);
    f.store(&s.encode()).expect("writes");
    assert!(
        !path.with_extension("json.tmp").exists(),
        "temp file left behind"
    );
    let bytes = f.load().expect("reads").expect("exists");
    assert_eq!(SessionStore::decode(&bytes, 10).expect("decodes"), s);
    assert!(String::from_utf8_lossy(&bytes).contains("\"version\":1"));
}

#[test]
fn store_5_bad_files_are_typed_errors_naming_the_file_and_left_intact() {
    let mut s = SessionStore::new(10);
    s.observe(&topic("42", "alice"), &Policy::default(), 1)
        .expect("room");
    let good = s.encode();
    let good_text = String::from_utf8(good.clone()).expect("utf8");
    type Case = (&'static str, Vec<u8>, fn(&FileProblem) -> bool);
    let cases: Vec<Case> = vec![
        ("truncated", good[..good.len() / 2].to_vec(), |p| {
            matches!(p, FileProblem::Truncated { .. })
        }),
        ("corrupt", b"{\"format\":nope}".to_vec(), |p| {
            matches!(p, FileProblem::Corrupt { .. })
        }),
        (
            "version",
            good_text
                .replace("\"version\":1", "\"version\":9")
                .into_bytes(),
            |p| {
                matches!(
                    p,
                    FileProblem::UnknownVersion {
                        found: 9,
                        supported: 1
                    }
                )
            },
        ),
        (
            "format",
            good_text
                .replace("procroute.store", "procroute.other")
                .into_bytes(),
            |p| matches!(p, FileProblem::WrongFormat { .. }),
        ),
        // A tampered file cannot re-point a lane to another thread.
        (
            "tampered",
            good_text
                .replace("\"thread_id\":\"42\"", "\"thread_id\":\"43\"")
                .into_bytes(),
            |p| matches!(p, FileProblem::Corrupt { detail } if detail.contains("does not match")),
        ),
    ];
    for (name, bytes, ok) in cases {
        let path = temp(name);
        std::fs::write(&path, &bytes).expect("write");
        let backend = FilePersist::new(&path);
        let err = procroute::persist::load_with(&backend, |b| SessionStore::decode(b, 10))
            .expect_err(name);
        match &err {
            PersistError::Bad { file, problem } => {
                assert!(file.contains(name), "{name}: {err}");
                assert!(ok(problem), "{name}: {problem:?}");
            }
            other => panic!("{name}: {other}"),
        }
        assert_eq!(
            std::fs::read(&path).expect("still there"),
            bytes,
            "{name}: file changed"
        );
    }
}

/// STORE-6: a huge file is refused before it is read (sparse file, cheap).
#[test]
fn store_6_oversized_files_are_refused_unread() {
    let path = temp("huge");
    let f = std::fs::File::create(&path).expect("create");
    f.set_len(procroute::persist::MAX_FILE_BYTES + 1)
        .expect("sparse");
    let err = FilePersist::new(&path).load().expect_err("too large");
    assert!(err.to_string().contains("limit"), "{err}");
    let _ = std::fs::remove_file(&path);
}

// ---------------------------------------------------------------- PROC

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
    let mut g = Gateway::new(Config::default());
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
        Config::default(),
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

// ---------------------------------------------------------------- ROUTE

/// ROUTE-1 (the signature takes no foreground), ROUTE-2.
#[test]
fn route_1_2_stored_origin_first_then_captured() {
    let mut store = SessionStore::new(10);
    let a = topic("42", "alice");
    let mut r = Registry::new(Limits::default());
    let run = r.spawn(req(&a, "p", &[], true), 0).expect("spawn");
    let ev = r
        .finish(run, Completion::Exited { code: 0 }, 1)
        .expect("ok")
        .remove(0);
    let routed = router::resolve(&store, &ev).expect("captured");
    assert_eq!(
        (routed.source, &routed.destination),
        (RouteSource::Captured, &Destination::of(&a))
    );
    store.observe(&a, &Policy::default(), 0).expect("room");
    let routed = router::resolve(&store, &ev).expect("stored");
    assert_eq!(
        (routed.source, routed.destination),
        (RouteSource::Store, Destination::of(&a))
    );
}

#[test]
fn route_3_key_only_routing_is_certain_or_refused() {
    let store = SessionStore::new(10);
    let lane = Lane::of(&topic("42", "alice"), &Policy::default());
    let routed = router::resolve_parts(&store, &lane, None).expect("canonical lanes are exact");
    assert_eq!(
        routed.destination.thread_id.as_ref().map(|t| t.as_str()),
        Some("42")
    );
    assert_eq!(routed.source, RouteSource::Key);
    // A hermes group key with a 6th part: thread or user? Refused.
    assert!(router::from_hermes_key("agent:main:telegram:group:-100:42").is_err());
    assert!(router::from_hermes_key("agent:main:telegram:group:-100").is_ok());
}

/// ROUTE-4, ROUTE-5: a stored origin and a captured origin that name
/// different threads are refused with a typed reason naming both, and a
/// forged store file that would create such a conflict is rejected on load.
/// (`Gateway` dead-letters a refused event with this reason; it cannot be
/// brought into a conflict without a forged file, which STORE-5 rejects.)
#[test]
fn route_4_5_conflicting_origins_are_refused_with_a_reason() {
    let mut g = Gateway::new(Config::default());
    let a = topic("42", "alice");
    g.handle(0, spawn(a.clone(), "p".into(), vec![]));
    let forged = String::from_utf8(g.store().encode())
        .expect("utf8")
        .replace("\"42\"", "\"43\"");
    assert!(
        SessionStore::decode(forged.as_bytes(), 10).is_err(),
        "STORE-5 catches the forgery"
    );
    // Built directly: a's process filed under b's lane.
    let b = topic("43", "bob");
    let mut store = SessionStore::new(10);
    store.observe(&b, &Policy::default(), 0).expect("room");
    let mut reg = Registry::new(Limits::default());
    let mut r = req(&a, "p", &[], true);
    r.lane = Lane::of(&b, &Policy::default());
    let run = reg.spawn(r, 0).expect("spawn");
    let ev = reg
        .finish(run, Completion::Killed, 1)
        .expect("ok")
        .remove(0);
    match router::resolve(&store, &ev) {
        Err(DropReason::OriginConflict {
            stored, captured, ..
        }) => {
            assert_eq!(*stored, Destination::of(&b));
            assert_eq!(*captured, Destination::of(&a));
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
}

// ---------------------------------------------------------------- DELIVER

fn note(run: u64, seq: u32, dest: &Origin) -> Notification {
    Notification {
        id: NotificationId::Process {
            run: RunId(run),
            seq,
        },
        kind: procroute::delivery::NoticeKind::WatchMatch,
        destination: Destination::of(dest),
        text: format!("n{run}.{seq}"),
    }
}

#[test]
fn deliver_1_idle_ticks_send_without_any_turn_ending() {
    let mut g = Gateway::new(Config::default());
    let a = topic("42", "alice");
    let run = run_of(&g.handle(0, spawn(a.clone(), "p".into(), vec![])));
    let out = g.handle(
        5,
        Input::Finished {
            run,
            completion: Completion::Exited { code: 0 },
        },
    );
    assert_eq!(
        sends(&out).len(),
        1,
        "sent in the same step, no turn end needed"
    );
}

#[test]
fn deliver_2_busy_thread_queues_fifo_behind_its_turn() {
    let mut d = DeliveryEngine::new(DeliveryLimits::default());
    let a = topic("42", "alice");
    let b = topic("43", "bob");
    d.turn_started(&Destination::of(&a));
    d.enqueue(note(1, 0, &a), 0).expect("room");
    d.enqueue(note(2, 0, &b), 0).expect("room");
    let first = d.poll(0);
    assert_eq!(first.len(), 1);
    assert_eq!(
        first[0].destination,
        Destination::of(&b),
        "never merged into another thread"
    );
    d.ack(first[0].id, Ok(()), 0);
    d.turn_ended(&Destination::of(&a));
    let next = d.poll(1);
    assert_eq!(next[0].text, "n1.0");
}

#[test]
fn deliver_3_exactly_once_per_id() {
    let mut d = DeliveryEngine::new(DeliveryLimits::default());
    let a = topic("42", "alice");
    assert_eq!(d.enqueue(note(1, 0, &a), 0), Ok(Enqueued::Queued));
    assert_eq!(d.enqueue(note(1, 0, &a), 0), Ok(Enqueued::Duplicate));
    let n = d.poll(0);
    d.ack(n[0].id, Ok(()), 0);
    assert_eq!(d.enqueue(note(1, 0, &a), 1), Ok(Enqueued::Duplicate));
    assert!(d.poll(2).is_empty());
    // Across a restart too.
    let mut d2 = DeliveryEngine::decode(&d.encode(), DeliveryLimits::default()).expect("decodes");
    assert_eq!(d2.enqueue(note(1, 0, &a), 3), Ok(Enqueued::Duplicate));
}

#[test]
fn deliver_4_failures_back_off_then_dead_letter_with_reason() {
    let mut d = DeliveryEngine::new(DeliveryLimits::default());
    let a = topic("42", "alice");
    d.enqueue(note(1, 0, &a), 0).expect("room");
    let mut t = 0;
    let mut gaps = Vec::new();
    for _ in 0..6 {
        let n = loop {
            let n = d.poll(t);
            if !n.is_empty() {
                break n;
            }
            t += 100;
            // The whole backoff schedule is 31 s: a retry not due by then
            // is lost, and the test says so instead of waiting forever.
            assert!(t < 600_000, "the retry never came due (t = {t} ms)");
        };
        gaps.push(t);
        d.ack(n[0].id, Err("503".into()), t);
    }
    assert_eq!(d.queued(), 0);
    let dead: Vec<_> = d.dead_letters().collect();
    assert_eq!(dead.len(), 1);
    assert!(dead[0].reason.contains("6 times") && dead[0].reason.contains("503"));
    let diffs: Vec<u64> = gaps.windows(2).map(|w| w[1] - w[0]).collect();
    assert_eq!(
        diffs,
        vec![1000, 2000, 4000, 8000, 16000],
        "exponential backoff"
    );
}

#[test]
fn deliver_5_one_process_in_order_even_across_failures() {
    let mut d = DeliveryEngine::new(DeliveryLimits::default());
    let a = topic("42", "alice");
    for seq in 0..3 {
        d.enqueue(note(1, seq, &a), 0).expect("room");
    }
    let n = d.poll(0);
    assert_eq!(n.len(), 1, "one in flight per thread");
    d.ack(n[0].id, Err("down".into()), 0);
    let mut seen = Vec::new();
    let mut t = 0;
    while seen.len() < 3 {
        t += 500;
        assert!(t < 600_000, "delivered only {seen:?} by t = {t} ms");
        for n in d.poll(t) {
            seen.push(n.text.clone());
            d.ack(n.id, Ok(()), t);
        }
    }
    assert_eq!(seen, vec!["n1.0", "n1.1", "n1.2"]);
}

#[test]
fn deliver_6_queue_survives_restart_and_in_flight_is_resent_with_same_id() {
    let mut d = DeliveryEngine::new(DeliveryLimits::default());
    let a = topic("42", "alice");
    d.enqueue(note(1, 0, &a), 0).expect("room");
    let sent = d.poll(0);
    let mut d2 = DeliveryEngine::decode(&d.encode(), DeliveryLimits::default()).expect("decodes");
    let again = d2.poll(1);
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].id, sent[0].id);
}

#[test]
fn deliver_7_back_pressure_is_never_silent() {
    let mut g = Gateway::new(Config {
        delivery: DeliveryLimits {
            queue_max: 1,
            ..DeliveryLimits::default()
        },
        ..Config::default()
    });
    let a = topic("42", "alice");
    g.handle(0, Input::TurnStarted { origin: a.clone() });
    for i in 0..2 {
        let run = run_of(&g.handle(0, spawn(a.clone(), format!("p{i}"), vec![])));
        g.handle(
            1,
            Input::Finished {
                run,
                completion: Completion::Exited { code: 0 },
            },
        );
    }
    assert_eq!(g.delivery().queued(), 1);
    assert_eq!(
        g.delivery().dead_total(),
        1,
        "the second one is dead-lettered with a reason"
    );
}

#[test]
fn deliver_8_shutdown_one_notice_per_thread_counted_after_success() {
    let mut g = Gateway::new(Config::default());
    let p = Policy::default();
    let _ = p;
    for user in ["alice", "bob"] {
        g.handle(
            0,
            Input::Message {
                origin: topic("42", user),
            },
        );
    }
    g.handle(
        0,
        Input::Message {
            origin: topic("43", "carol"),
        },
    );
    let out = g.handle(1, Input::Shutdown);
    let s: Vec<Notification> = sends(&out).into_iter().cloned().collect();
    assert_eq!(s.len(), 2, "two threads, one notice each: {s:?}");
    assert_eq!(g.stats().shutdown_notices_sent, 0);
    g.handle(
        2,
        Input::Sent {
            id: s[0].id,
            error: Some("down".into()),
        },
    );
    assert_eq!(g.stats().shutdown_notices_sent, 0);
    g.handle(
        3,
        Input::Sent {
            id: s[1].id,
            error: None,
        },
    );
    assert_eq!(g.stats().shutdown_notices_sent, 1);
}

/// STORE-5 for all three files: recovery refuses a bad checkpoint or
/// delivery log with the file kind and the problem, instead of starting
/// with routing or promises missing.
#[test]
fn store_5_recover_names_which_file_is_bad() {
    let mut g = Gateway::new(Config::default());
    let a = topic("42", "alice");
    g.handle(0, spawn(a, "p".into(), vec![]));
    let (s, c, d) = (
        g.store().encode(),
        g.registry().encode(),
        g.delivery().encode(),
    );
    let cut = |b: &[u8]| b[..b.len() - 5].to_vec();
    let cases = [
        (FileKind::Store, cut(&s), c.clone(), d.clone()),
        (FileKind::Checkpoint, s.clone(), cut(&c), d.clone()),
        (FileKind::Delivery, s.clone(), c.clone(), cut(&d)),
        (FileKind::Checkpoint, s.clone(), d.clone(), d.clone()),
    ];
    for (kind, s2, c2, d2) in cases {
        let err = Gateway::recover(
            Config::default(),
            Some(&s2),
            Some(&c2),
            Some(&d2),
            1,
            |_, _| true,
        )
        .expect_err("refused");
        assert_eq!(err.0, kind, "{err:?}");
    }
    assert!(Gateway::recover(
        Config::default(),
        Some(&s),
        Some(&c),
        Some(&d),
        1,
        |_, _| true
    )
    .is_ok());
}

/// PROC-2 / PROC-8 regression, found by the interleaving model: a watch
/// event advanced the run's sequence number but the checkpoint still held
/// the old one, so after a restart the `lost` completion reused the
/// delivered (run, seq) and was discarded as a duplicate.
#[test]
fn proc_2_sequence_numbers_survive_a_restart() {
    let mut g = Gateway::new(Config::default());
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
        Config::default(),
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

/// STORE-5: a file that cannot be read (wrong permissions, a directory in
/// its place) is an I/O error naming the file, and stays as it was.
#[test]
fn store_5_unreadable_files_are_io_errors_naming_the_file() {
    use procroute::persist::FileSystem;
    use std::io;
    use std::path::Path;
    // Permissions, through the FileSystem seam (root reads mode-000 files,
    // so the real disk cannot show this under CI's root user).
    struct Denied;
    impl FileSystem for Denied {
        fn len(&self, _: &Path) -> io::Result<Option<u64>> {
            Ok(Some(10))
        }
        fn read(&self, _: &Path) -> io::Result<Vec<u8>> {
            Err(io::ErrorKind::PermissionDenied.into())
        }
        fn write(&mut self, _: &Path, _: &[u8]) -> io::Result<()> {
            Err(io::ErrorKind::PermissionDenied.into())
        }
        fn sync_file(&mut self, _: &Path) -> io::Result<()> {
            Ok(())
        }
        fn rename(&mut self, _: &Path, _: &Path) -> io::Result<()> {
            Ok(())
        }
        fn sync_dir(&mut self, _: &Path) -> io::Result<()> {
            Ok(())
        }
    }
    let mut denied = FilePersist::with_fs("/var/lib/gw/checkpoint.json", Denied);
    let err = denied.load().expect_err("denied");
    assert!(
        matches!(&err, PersistError::Io { file, source }
            if file == "/var/lib/gw/checkpoint.json" && source.kind() == std::io::ErrorKind::PermissionDenied),
        "{err}"
    );
    assert!(denied.store(b"x").is_err());
    // A directory where the file should be, on the real disk.
    let path = temp("a-directory");
    std::fs::create_dir_all(&path).expect("dir");
    let err = FilePersist::new(&path).load().expect_err("a directory");
    assert!(err.to_string().contains("a-directory"), "{err}");
    assert!(path.is_dir(), "left as it was");
}

/// STORE-1, STORE-2: every new lane gets its own conversation id, and the
/// store counts its lanes.
#[test]
fn store_1_new_lanes_get_distinct_conversations_and_are_counted() {
    let mut s = SessionStore::new(10);
    assert!(s.is_empty());
    let mut conversations = std::collections::BTreeSet::new();
    for (i, t) in ["1", "2", "3"].iter().enumerate() {
        let (lane, created) = s
            .observe(&topic(t, "alice"), &Policy::default(), 0)
            .expect("room");
        assert!(created);
        assert!(conversations.insert(s.get(&lane).expect("entry").conversation));
        assert_eq!(s.len(), i + 1);
    }
    assert!(!s.is_empty());
}

/// STORE-5: a lane whose recorded origin differs in any one routing field
/// (platform, chat type, chat id, thread id) is refused, and the limit on
/// lanes is checked at its exact boundary. Errors name the lane (Display and
/// Debug show the key).
#[test]
fn store_5_every_routing_field_is_checked_against_its_lane() {
    let mut s = SessionStore::new(10);
    let (lane, _) = s
        .observe(&topic("42", "alice"), &Policy::default(), 1)
        .expect("room");
    let text = String::from_utf8(s.encode()).expect("utf8");
    let origin_field = |field: &str, from: &str, to: &str| {
        let needle = format!("\"{field}\":\"{from}\"");
        // Only inside the recorded origin: the lane key has no `"field":`.
        assert!(text.contains(&needle), "{needle} not in {text}");
        text.replace(&needle, &format!("\"{field}\":\"{to}\""))
    };
    let chat = topic("42", "alice").chat_id().as_str().to_owned();
    for (what, bytes) in [
        ("platform", origin_field("platform", "telegram", "discord")),
        ("chat type", origin_field("chat_type", "group", "channel")),
        ("chat id", origin_field("chat_id", &chat, "-100999")),
        ("thread id", origin_field("thread_id", "42", "43")),
    ] {
        match SessionStore::decode(bytes.as_bytes(), 10) {
            Err(FileProblem::Corrupt { detail }) => {
                assert!(detail.contains("does not match"), "{what}: {detail}");
                assert!(
                    detail.contains(lane.as_str()),
                    "{what}: the error names the lane: {detail}"
                );
            }
            other => panic!("{what}: {other:?}"),
        }
    }
    // Exactly at the limit is fine; one lane over is not.
    let mut two = SessionStore::new(2);
    two.observe(&topic("1", "a"), &Policy::default(), 0)
        .expect("room");
    two.observe(&topic("2", "a"), &Policy::default(), 0)
        .expect("room");
    let bytes = two.encode();
    assert_eq!(
        SessionStore::decode(&bytes, 2).expect("at the limit").len(),
        2
    );
    assert!(matches!(
        SessionStore::decode(&bytes, 1),
        Err(FileProblem::Corrupt { .. })
    ));
    assert_eq!(format!("{lane}"), lane.as_str());
    assert_eq!(format!("{lane:?}"), format!("{:?}", lane.as_str()));
}

/// PROC-8, DELIVER-3: a run id the delivery log names is never handed out
/// again, even when the checkpoint is older than the log or missing. A
/// reissued id would make the new run's notifications look like
/// duplicates of the old run's, and they would be dropped.
#[test]
fn proc_8_run_ids_named_by_the_delivery_log_are_never_reissued() {
    let a = topic("42", "alice");
    let mut g = Gateway::new(Config::default());
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
            Config::default(),
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

/// DELIVER-1, DELIVER-2: what the engine reports about a thread and its
/// queue — busy only between a turn's start and end; a due head for an
/// idle thread counts as "due for idle" until it is polled, and a busy
/// thread's or a backed-off one's does not.
#[test]
fn deliver_1_2_busy_threads_and_due_notifications_are_reported_exactly() {
    let limits = DeliveryLimits::default();
    let mut d = DeliveryEngine::new(limits.clone());
    let a = topic("42", "alice");
    let b = topic("43", "bob");
    let (da, db) = (Destination::of(&a), Destination::of(&b));
    assert!(!d.is_busy(&da));
    d.turn_started(&da);
    assert!(d.is_busy(&da) && !d.is_busy(&db));
    d.enqueue(note(1, 0, &a), 0).expect("room");
    d.enqueue(note(2, 0, &b), 0).expect("room");
    assert_eq!(d.due_for_idle(0), 1, "b's head is due; a is busy");
    d.turn_ended(&da);
    assert!(!d.is_busy(&da));
    assert_eq!(d.due_for_idle(0), 2);
    let sent = d.poll(0);
    assert_eq!(sent.len(), 2);
    assert_eq!(d.due_for_idle(0), 0, "in flight is not due");
    d.ack(sent[0].id, Err("503".into()), 0);
    assert_eq!(d.due_for_idle(0), 0, "backing off");
    assert_eq!(d.due_for_idle(limits.backoff_base_ms), 1, "due again");
}

/// DELIVER-3, DELIVER-4: an id counts as delivered only after a successful
/// send; the delivered-id window holds exactly `delivered_log_max` ids; the
/// dead-letter list is bounded but `dead_total` keeps counting.
#[test]
fn deliver_3_4_delivered_window_and_dead_letter_counts_are_exact() {
    let limits = DeliveryLimits {
        delivered_log_max: 3,
        dead_letter_max: 2,
        max_attempts: 1,
        ..DeliveryLimits::default()
    };
    let mut d = DeliveryEngine::new(limits);
    let a = topic("42", "alice");
    for run in 1..=4 {
        d.enqueue(note(run, 0, &a), 0).expect("room");
        let n = d.poll(0);
        assert!(!d.was_delivered(&n[0].id), "not before the send succeeds");
        d.ack(n[0].id, Ok(()), 0);
        assert!(d.was_delivered(&n[0].id));
    }
    // The window keeps runs 2..=4; run 1 fell out of it.
    assert!(!d.was_delivered(&note(1, 0, &a).id));
    assert_eq!(d.enqueue(note(2, 0, &a), 1), Ok(Enqueued::Duplicate));
    assert_eq!(d.enqueue(note(1, 0, &a), 1), Ok(Enqueued::Queued));
    let again = d.poll(1)[0].id;
    d.ack(again, Ok(()), 1);
    for run in 10..13 {
        d.enqueue(note(run, 0, &a), 2).expect("room");
        let n = d.poll(2);
        d.ack(n[0].id, Err("gone".into()), 2);
        assert!(!d.was_delivered(&n[0].id));
    }
    assert_eq!(
        d.dead_letters().count(),
        2,
        "the oldest dead letter evicted"
    );
    assert_eq!(d.dead_total(), 3, "but still counted");
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

// ------------------------------------------- limits and bounds, exactly

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

/// The excerpt a naive reading of PROC-3 gives: the longest run of whole
/// leading lines (at most `max_lines`) whose joined text fits
/// `max_chars`; if not even the first fits, its first `max_chars` chars.
fn naive_excerpt(lines: &[&str], max_lines: usize, max_chars: usize) -> String {
    let lines = &lines[..lines.len().min(max_lines)];
    for k in (1..=lines.len()).rev() {
        let joined = lines[..k].join("\n");
        if joined.chars().count() <= max_chars {
            return joined;
        }
    }
    lines
        .first()
        .map(|l| l.chars().take(max_chars).collect())
        .unwrap_or_default()
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

    /// DELIVER-1: `next_due` is exact — polling before it sends nothing,
    /// polling at it sends something, and `None` means nothing will be sent
    /// until some input changes the engine.
    #[test]
    fn deliver_1_next_due_is_exactly_when_poll_first_sends(
        ops in proptest::collection::vec((0u8..5, 0usize..3, 0u64..5_000), 0..40),
    ) {
        let origins = [topic("1", "a"), topic("2", "b"), topic("3", "c")];
        let mut d = DeliveryEngine::new(DeliveryLimits::default());
        let mut now = 0u64;
        let mut seq = 0u32;
        for (op, who, dt) in ops {
            now += dt;
            let dest = Destination::of(&origins[who]);
            match op {
                0 => {
                    seq += 1;
                    d.enqueue(note(who as u64, seq, &origins[who]), now).expect("room");
                }
                1 => d.turn_started(&dest),
                2 => d.turn_ended(&dest),
                3 => {
                    for (i, n) in d.poll(now).into_iter().enumerate() {
                        let result = if i % 2 == 0 { Err("503".to_owned()) } else { Ok(()) };
                        d.ack(n.id, result, now);
                    }
                }
                _ => { d.poll(now); }
            }
            match d.next_due() {
                Some(t) => {
                    if t > 0 {
                        proptest::prop_assert!(d.clone().poll(t - 1).is_empty(), "sent before {}", t);
                    }
                    proptest::prop_assert!(!d.clone().poll(t).is_empty(), "nothing sent at {}", t);
                }
                None => proptest::prop_assert!(d.clone().poll(u64::MAX).is_empty()),
            }
        }
    }
}

/// PROC-8 write order, as SPEC now states it (the code's order, proven by
/// the crash points): every event — a watch match as well as a completion —
/// reaches the delivery log before the checkpoint records its effect.
#[test]
fn proc_8_every_event_reaches_the_delivery_log_before_the_checkpoint() {
    let a = topic("42", "alice");
    let mut g = Gateway::new(Config::default());
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

/// SEC-2 as SPEC now states it: a recovered delivery log is held to the
/// store's lanes, not to the checkpoint's run ids — a queued notification
/// about a run that a stale (or missing) checkpoint never issued is kept
/// and sent to its lane's thread, and new runs are numbered above it
/// (PROC-8); one addressed to a thread without a lane is refused.
#[test]
fn sec_2_a_log_ahead_of_the_checkpoint_is_kept_and_held_to_lanes() {
    let a = topic("42", "alice");
    let mut g = Gateway::new(Config::default());
    let stale_checkpoint = g.registry().encode();
    let run = run_of(&g.handle(0, spawn(a.clone(), "p1".into(), vec![])));
    // The completion is queued (the adapter fails), not delivered.
    let out = g.handle(
        1,
        Input::Finished {
            run,
            completion: Completion::Exited { code: 3 },
        },
    );
    let id = sends(&out)[0].id;
    g.handle(
        1,
        Input::Sent {
            id,
            error: Some("down".into()),
        },
    );
    assert_eq!(g.delivery().queued(), 1);
    for checkpoint in [Some(stale_checkpoint.as_slice()), None] {
        let (mut g2, out) = Gateway::recover(
            Config::default(),
            Some(&g.store().encode()),
            checkpoint,
            Some(&g.delivery().encode()),
            5_000,
            |_, _| true,
        )
        .expect("a log ahead of the checkpoint is not corrupt");
        let resent = sends(&out);
        assert_eq!(resent.len(), 1, "{out:?}");
        assert_eq!(resent[0].id, id);
        assert_eq!(resent[0].destination, Destination::of(&a));
        let next = run_of(&g2.handle(5_001, spawn(a.clone(), "p2".into(), vec![])));
        assert!(next.0 > run.0, "run {} reissued", next.0);
    }
    // The same log with a store that has no lane for that thread: refused.
    let err = Gateway::recover(
        Config::default(),
        None,
        Some(&stale_checkpoint),
        Some(&g.delivery().encode()),
        5_000,
        |_, _| true,
    );
    assert!(
        matches!(err, Err((FileKind::Delivery, FileProblem::Corrupt { .. }))),
        "{err:?}"
    );
}
