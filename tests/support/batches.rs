//! The group-commit driver shared by `tests/delta.rs` (records applied to
//! an in-memory image) and `tests/sqlite.rs` (records in a SQLite
//! database): the same inputs, in batches, to a snapshotting and a
//! journaling gateway; after every batch the backend's images must equal
//! the snapshot files, and both gateways' other outputs must be equal.

use procroute::delta::Record;
use procroute::gateway::Config;
use proptest::prelude::*;

use super::traces;

/// Where the journaling side's records go.
pub trait Backend {
    /// One group commit.
    fn append(&mut self, records: Vec<Record>) -> Result<(), String>;
    /// Compaction with the gateway's images.
    fn compact(&mut self, files: [Vec<u8>; 3]) -> Result<(), String>;
    /// The three files as recovery would read them now.
    fn files(&mut self) -> Result<[Vec<u8>; 3], String>;
}

fn config(durability: procroute::delta::Durability) -> Config {
    Config {
        durability,
        ..Config::default()
    }
}

/// What recovery reads, with a file never written read as the empty
/// state's image (recovery treats both alike).
pub fn normalized(files: [Option<Vec<u8>>; 3]) -> [Vec<u8>; 3] {
    let empty = procroute::gateway::Gateway::new(Config::default()).compact();
    let mut i = 0;
    files.map(|f| {
        let out = f.unwrap_or_else(|| empty[i].clone());
        i += 1;
        out
    })
}

/// One step of the group-commit driver below.
#[derive(Debug, Clone)]
pub enum Step {
    Message(usize),
    TurnStarted(usize),
    TurnEnded(usize),
    Reset(usize),
    Spawn {
        thread: usize,
        watch: bool,
        notify: bool,
    },
    Output {
        run: usize,
        hit: bool,
    },
    Finish {
        run: usize,
        code: i32,
    },
    Advance(u64),
    Shutdown,
    /// The batch so far is committed; the adapter's answers to its sends
    /// (failing when the flag is set) start the next batch.
    Commit {
        fail: bool,
    },
    Restart,
    /// Between batches: the journal is compacted into a new base
    /// ([`Gateway::compact`]); the snapshotting side writes all three files.
    Compact,
}

pub fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        2 => (0..3usize).prop_map(Step::Message),
        2 => (0..3usize).prop_map(Step::TurnStarted),
        2 => (0..3usize).prop_map(Step::TurnEnded),
        1 => (0..3usize).prop_map(Step::Reset),
        3 => (0..3usize, any::<bool>(), any::<bool>())
            .prop_map(|(thread, watch, notify)| Step::Spawn { thread, watch, notify }),
        6 => (0..6usize, any::<bool>()).prop_map(|(run, hit)| Step::Output { run, hit }),
        2 => (0..6usize, 0..3i32).prop_map(|(run, code)| Step::Finish { run, code }),
        2 => prop_oneof![Just(0u64), Just(1_000), Just(15_000), Just(61_000)].prop_map(Step::Advance),
        1 => Just(Step::Shutdown),
        4 => any::<bool>().prop_map(|fail| Step::Commit { fail }),
        1 => Just(Step::Restart),
        1 => Just(Step::Compact),
    ]
}

/// The same inputs, in batches, to a snapshotting and a journaling gateway
/// ([`Gateway::handle_batch`], the group commit): after every batch the
/// journal's images equal the snapshot files, and both gateways' other
/// outputs are equal.
pub fn same_files_in_batches(
    steps: &[Step],
    backend: &mut dyn Backend,
) -> Result<(), TestCaseError> {
    use procroute::delta::Durability;
    use procroute::gateway::{Gateway, Input, Output};
    use procroute::origin::Origin;
    use procroute::registry::{Completion, RunId};
    let threads: Vec<Origin> = traces::fixed_threads()
        .into_iter()
        .take(3)
        .map(|r| procroute_suite::conform::trace::to_origin(&r).expect("fixed threads are valid"))
        .collect();
    let (cs, cj) = (config(Durability::Snapshots), config(Durability::Journal));
    let mut snap = Gateway::new(cs.clone());
    let mut jrnl = Gateway::new(cj.clone());
    let mut files: [Option<Vec<u8>>; 3] = [None, None, None];
    let mut runs: Vec<RunId> = Vec::new();
    let mut batch: Vec<Input> = Vec::new();
    let mut now = 0u64;
    let kind_index = |f: procroute::gateway::FileKind| match f {
        procroute::gateway::FileKind::Store => 0,
        procroute::gateway::FileKind::Checkpoint => 1,
        procroute::gateway::FileKind::Delivery => 2,
    };
    // Carries out both gateways' outputs; returns the sends.
    let apply = |a: Vec<Output>,
                 b: Vec<Output>,
                 files: &mut [Option<Vec<u8>>; 3],
                 backend: &mut dyn Backend|
     -> Result<Vec<Output>, TestCaseError> {
        let rest_a: Vec<Output> = a
            .iter()
            .filter(|o| !matches!(o, Output::Persist { .. }))
            .cloned()
            .collect();
        let rest_b: Vec<Output> = b
            .iter()
            .filter(|o| !matches!(o, Output::Append { .. }))
            .cloned()
            .collect();
        prop_assert_eq!(&rest_a, &rest_b);
        for o in a {
            if let Output::Persist { file, bytes } = o {
                files[kind_index(file)] = Some(bytes);
            }
        }
        for o in b {
            if let Output::Append { records } = o {
                backend.append(records).map_err(TestCaseError::fail)?;
            }
        }
        let same = normalized(files.clone()) == backend.files().map_err(TestCaseError::fail)?;
        prop_assert!(same, "the backend's images differ from the snapshot files");
        Ok(rest_a)
    };
    let mut sends: Vec<Output> = Vec::new();
    for s in steps {
        match s {
            Step::Message(t) => batch.push(Input::Message {
                origin: threads[*t].clone(),
            }),
            Step::TurnStarted(t) => batch.push(Input::TurnStarted {
                origin: threads[*t].clone(),
            }),
            Step::TurnEnded(t) => batch.push(Input::TurnEnded {
                origin: threads[*t].clone(),
            }),
            Step::Reset(t) => batch.push(Input::Reset {
                origin: threads[*t].clone(),
            }),
            Step::Spawn {
                thread,
                watch,
                notify,
            } => batch.push(Input::Spawn {
                origin: threads[*thread].clone(),
                process_id: format!("p{}", runs.len()),
                command: "make".into(),
                watch_patterns: if *watch { vec!["ERR".into()] } else { vec![] },
                notify_on_exit: *notify,
            }),
            Step::Output { run, hit } => {
                if let Some(r) = runs.get(*run) {
                    batch.push(Input::Output {
                        run: *r,
                        chunk: format!("line {now}{}\n", if *hit { " ERR" } else { "" }),
                    });
                }
            }
            Step::Finish { run, code } => {
                if let Some(r) = runs.get(*run) {
                    batch.push(Input::Finished {
                        run: *r,
                        completion: Completion::Exited { code: *code },
                    });
                }
            }
            Step::Advance(ms) => {
                now += ms;
                batch.push(Input::Tick);
            }
            Step::Shutdown => batch.push(Input::Shutdown),
            Step::Commit { fail } => {
                let mut inputs: Vec<Input> = sends
                    .drain(..)
                    .filter_map(|o| match o {
                        Output::Send(n) => Some(Input::Sent {
                            id: n.id,
                            error: fail.then(|| "503".to_owned()),
                        }),
                        _ => None,
                    })
                    .collect();
                inputs.append(&mut batch);
                let a = snap.handle_batch(now, inputs.clone());
                let b = jrnl.handle_batch(now, inputs);
                for o in &a {
                    if let Output::Spawned { run, .. } = o {
                        runs.push(*run);
                    }
                }
                sends = apply(a, b, &mut files, backend)?;
            }
            Step::Compact => {
                let a = snap.compact();
                for (k, bytes) in a.into_iter().enumerate() {
                    files[k] = Some(bytes);
                }
                backend
                    .compact(jrnl.compact())
                    .map_err(TestCaseError::fail)?;
                let same =
                    normalized(files.clone()) == backend.files().map_err(TestCaseError::fail)?;
                prop_assert!(same, "the compacted images differ from the snapshot files");
            }
            Step::Restart => {
                // Both recover from their own durable state; processes
                // with an odd run id are gone.
                batch.clear();
                sends.clear();
                let [s, c, d] = files.clone();
                let (g, a) = Gateway::recover(
                    cs.clone(),
                    s.as_deref(),
                    c.as_deref(),
                    d.as_deref(),
                    now,
                    |r, _| r.0 % 2 == 0,
                )
                .map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
                snap = g;
                let [s, c, d] = backend.files().map_err(TestCaseError::fail)?;
                let (g, b) =
                    Gateway::recover(cj.clone(), Some(&s), Some(&c), Some(&d), now, |r, _| {
                        r.0 % 2 == 0
                    })
                    .map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
                jrnl = g;
                sends = apply(a, b, &mut files, backend)?;
            }
        }
    }
    Ok(())
}
