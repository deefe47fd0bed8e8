//! One storage-backend trait (STORE-4, STORE-7, PROC-8, DELIVER-6): whole-
//! file snapshots, the journal and SQLite (feature `sqlite`) pass the same
//! crash-point and recovery tests, each through `procroute::driver::Backend`
//! alone — the trait the runtime is generic over.
//!
//! - A crash before any write: generated traces run on each backend, the
//!   machine dying before the backend's k-th write or compaction, for
//!   every k (a crash between two writes; within one write, the simulated
//!   disk's crash points are `tests/crash_points.rs`, for the two file
//!   backends). The one judge checks each whole run.
//! - Recovery: a `Runtime` on each backend, fed a run of inputs, then
//!   recovered from the backend alone (`Runtime::recover`) holds the
//!   gateway's exact state.
//!
//! `BACKEND_TRACES=N` runs N traces per backend (default 10).

use procroute::delta::Durability;
use procroute::driver::files::FilePersist;
use procroute::driver::journal::JournalFiles;
use procroute::driver::{Adapter, Backend, Files, Runtime};
use procroute::gateway::{Config, Input};
use procroute::origin::{ChatType, Origin};
use procroute::registry::Completion;
use procroute_suite::conform::trace::exec::CRASH_TEST_COMPACTION;
use procroute_suite::conform::trace::{self, CrashPoint};
use procroute_suite::model::judge::{judge_crashed, Crash};
use procroute_suite::simfs::SimFs;

#[path = "support/scratch.rs"]
mod scratch;

/// A backend that can be opened again on the same medium.
type Opener = Box<dyn Fn() -> Box<dyn Backend>>;

/// A backend kind: its name, and a fresh medium to open it on.
type Kind = (&'static str, Box<dyn Fn() -> Opener>);

/// Each backend on a fresh medium: the name, and how to open it (again).
fn backends(scratch: &scratch::Scratch) -> Vec<Kind> {
    let config = Config::default();
    let mut v: Vec<Kind> = vec![
        (
            "snapshots",
            Box::new(|| {
                let fs = SimFs::new();
                Box::new(move || -> Box<dyn Backend> {
                    Box::new(Files {
                        store: FilePersist::with_fs("/gw/store.json", fs.clone()),
                        checkpoint: FilePersist::with_fs("/gw/checkpoint.json", fs.clone()),
                        delivery: FilePersist::with_fs("/gw/delivery.json", fs.clone()),
                    })
                })
            }),
        ),
        (
            "journal",
            Box::new(move || {
                let fs = SimFs::new();
                let c = config.clone();
                Box::new(move || -> Box<dyn Backend> {
                    let (j, _) = JournalFiles::open(
                        "/gw",
                        fs.clone(),
                        CRASH_TEST_COMPACTION,
                        &c.limits,
                        &c.delivery,
                    )
                    .expect("the journal opens");
                    Box::new(j)
                })
            }),
        ),
    ];
    v.extend(sqlite(scratch));
    v
}

/// SQLite (feature `sqlite`): a new database file per medium.
#[cfg(feature = "sqlite")]
fn sqlite(scratch: &scratch::Scratch) -> Option<Kind> {
    let dir = scratch.path().to_owned();
    let n = std::cell::Cell::new(0u64);
    Some((
        "sqlite",
        Box::new(move || {
            n.set(n.get() + 1);
            let path = dir.join(format!("db-{}.sqlite", n.get()));
            let c = Config::default();
            Box::new(move || -> Box<dyn Backend> {
                let (j, _) = procroute::driver::sqlite::SqliteJournal::open(
                    &path,
                    CRASH_TEST_COMPACTION,
                    &c.limits,
                    &c.delivery,
                )
                .expect("the database opens");
                Box::new(j)
            })
        }),
    ))
}

#[cfg(not(feature = "sqlite"))]
fn sqlite(_: &scratch::Scratch) -> Option<Kind> {
    None
}

fn traces() -> u64 {
    std::env::var("BACKEND_TRACES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10)
}

/// Every write point of `count`, or a spread of them for long runs.
fn points(count: usize) -> Vec<usize> {
    if count <= 64 {
        return (0..count).collect();
    }
    let mut v: Vec<usize> = (0..24).chain(count - 24..count).collect();
    v.extend((1..=16).map(|i| 24 + i * (count - 48) / 17));
    v.sort_unstable();
    v.dedup();
    v
}

#[test]
fn every_backend_survives_a_crash_before_any_write() {
    let scratch = scratch::Scratch::new("backends-crash");
    let mut report = Vec::new();
    for (name, fresh) in backends(&scratch) {
        let (mut runs, mut crashed, mut compactions) = (0, 0, 0);
        let mut bad = Vec::new();
        for seed in 0..traces() {
            let t = trace::generate(0xBAC0 ^ seed, 24);
            let open = fresh();
            let durability = open().durability();
            let config = Config {
                durability,
                ..Config::default()
            };
            let dry = trace::execute_crashing_on(
                &t,
                config.clone(),
                open(),
                CrashPoint::Write { after: usize::MAX },
            )
            .expect("dry run");
            assert!(dry.crashed_at.is_none(), "{name}: the dry run crashed");
            compactions += dry.compactions;
            for after in points(dry.writes) {
                let open = fresh();
                let run = trace::execute_crashing_on(
                    &t,
                    config.clone(),
                    open(),
                    CrashPoint::Write { after },
                )
                .unwrap_or_else(|e| panic!("{name}, trace {seed}, write {after}: {e}"));
                runs += 1;
                crashed += usize::from(run.crashed_at.is_some());
                let crash = run.crashed_at.map(|step| Crash {
                    step,
                    spawned: &run.spawned,
                });
                let v = judge_crashed(&t, &run.result, crash);
                if !v.is_empty() {
                    bad.push(format!(
                        "{name}, trace {seed}, crash before write {after} (step {:?}): {v:?}",
                        run.crashed_at
                    ));
                }
            }
        }
        report.push(format!(
            "{name}: {} traces, {runs} crash runs ({crashed} crashed), {compactions} compactions in the dry runs",
            traces()
        ));
        assert!(bad.is_empty(), "{}", bad.join("\n"));
        // The test reached what it is about: crashes, on every backend,
        // and compactions on the journaling ones.
        assert!(
            crashed > runs / 2,
            "{name}: {crashed} of {runs} runs crashed"
        );
        if durability_of(name) == Durability::Journal {
            assert!(compactions > 0, "{name}: no compaction in any dry run");
        }
    }
    eprintln!("{}", report.join("\n"));
}

fn durability_of(name: &str) -> Durability {
    if name == "snapshots" {
        Durability::Snapshots
    } else {
        Durability::Journal
    }
}

/// Records what the runtime offered the chat.
#[derive(Default)]
struct Chat(Vec<String>);

impl Adapter for Chat {
    fn send(&mut self, n: &procroute::delivery::Notification) -> Result<(), String> {
        self.0.push(n.text.clone());
        Ok(())
    }
}

#[test]
fn the_runtime_recovers_exactly_its_state_from_every_backend() {
    let scratch = scratch::Scratch::new("backends-recover");
    for (name, fresh) in backends(&scratch) {
        let open = fresh();
        let mut rt = Runtime::new(Config::default(), Chat::default(), open());
        let topic = |t: &str| {
            Origin::new("telegram", ChatType::Thread, "-1001")
                .and_then(|o| o.with_thread(t))
                .expect("valid origin")
        };
        let mut runs = Vec::new();
        for i in 0..40u32 {
            let origin = topic(&(i % 5).to_string());
            rt.input(Input::Message {
                origin: origin.clone(),
            });
            let out = rt.input(Input::Spawn {
                origin,
                process_id: format!("proc_{i}"),
                command: "make".into(),
                watch_patterns: vec!["ERROR".into()],
                notify_on_exit: i % 2 == 0,
            });
            runs.extend(out.iter().find_map(|o| match o {
                procroute::gateway::Output::Spawned { run, .. } => Some(*run),
                _ => None,
            }));
        }
        for (i, run) in runs.iter().enumerate() {
            rt.input(Input::Output {
                run: *run,
                chunk: format!("line {i}\nERROR {i}\n"),
            });
            if i % 3 == 0 {
                rt.input(Input::Finished {
                    run: *run,
                    completion: Completion::Exited { code: 0 },
                });
            }
        }
        assert!(
            rt.persist_errors.is_empty(),
            "{name}: {:?}",
            rt.persist_errors
        );
        assert!(!rt.adapter().0.is_empty(), "{name}: nothing was sent");
        let before = durable_view(rt.gateway());
        drop(rt);
        // Every unfinished run is still alive: nothing is lost, nothing
        // owed, nothing sent again; what the recovered gateway holds is what
        // the one that wrote held (times aside: the runtime's clock is the
        // machine's, and a lane's last-seen time is not written on every
        // message).
        let back = Runtime::recover(Config::default(), Chat::default(), open(), |_, _| true)
            .unwrap_or_else(|e| panic!("{name}: recovery failed: {e}"));
        assert!(
            back.adapter().0.is_empty(),
            "{name}: recovery re-sent {:?}",
            back.adapter().0
        );
        assert_eq!(
            back.gateway().registry().running_count(),
            runs.len() - runs.len().div_ceil(3),
            "{name}: the recovered registry lost or invented runs"
        );
        let after = durable_view(back.gateway());
        assert_eq!(
            before, after,
            "{name}: the recovered gateway differs from the one that wrote"
        );
    }
}

/// What a gateway holds that recovery must give back, without times:
/// lanes (key, origin, conversation), running runs with their requests and
/// the next run id, queued notifications, dead letters (each list
/// sorted: the tables' iteration orders are theirs).
fn durable_view(g: &procroute::gateway::Gateway) -> String {
    let lanes: Vec<String> = g
        .store()
        .lanes()
        .map(|(lane, e)| format!("{} {:?} {}", lane.as_str(), e.origin, e.conversation))
        .collect();
    let runs: Vec<String> = g
        .registry()
        .running()
        .map(|(run, req)| format!("{run:?} {req:?}"))
        .collect();
    let held: Vec<String> = g
        .delivery()
        .held()
        .map(|n| format!("{:?} {:?} {:?}", n.id, n.destination, n.kind))
        .collect();
    let dead: Vec<String> = g
        .delivery()
        .dead_letters()
        .map(|d| format!("{:?}", d.notification.id))
        .collect();
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    let (lanes, runs, held, dead) = (sorted(lanes), sorted(runs), sorted(held), sorted(dead));
    format!(
        "lanes {lanes:#?}\nruns {runs:#?}\nnext run {}\nheld {held:#?}\ndead {dead:#?}",
        g.registry().next_run()
    )
}
