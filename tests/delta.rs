//! Delta outputs (STORE-7): a journaling gateway's records rebuild, at
//! every step, byte for byte the files a snapshotting gateway has written,
//! and both report the same thing. Generated traces (random ops and
//! rule-reaching scenarios, restarts included: each side recovers from its
//! own durable state), so recovery from the journal is recovery from the
//! snapshots.

#[path = "support/batches.rs"]
mod batches;
#[path = "support/traces.rs"]
mod traces;

use procroute::delta::Durability;
use procroute::gateway::Config;
use procroute_suite::conform::trace::{Execution, Trace};
use proptest::prelude::*;

fn config(durability: Durability) -> Config {
    Config {
        durability,
        ..Config::default()
    }
}

use batches::normalized;

fn same_files(trace: &Trace) -> Result<(), TestCaseError> {
    let mut snap =
        Execution::new(trace, config(Durability::Snapshots)).map_err(TestCaseError::fail)?;
    let mut jrnl =
        Execution::new(trace, config(Durability::Journal)).map_err(TestCaseError::fail)?;
    for (step, op) in trace.ops.iter().enumerate() {
        snap.step(op).map_err(TestCaseError::fail)?;
        jrnl.step(op).map_err(TestCaseError::fail)?;
        let a = normalized(snap.durable_files().expect("in memory"));
        let b = normalized(jrnl.durable_files().expect("in memory"));
        for (k, name) in ["store", "checkpoint", "delivery log"].iter().enumerate() {
            prop_assert!(
                a[k] == b[k],
                "after step {step} ({op:?}) the {name} differs:\nsnapshot: {}\njournal:  {}",
                String::from_utf8_lossy(&a[k]),
                String::from_utf8_lossy(&b[k])
            );
        }
    }
    prop_assert_eq!(snap.finish(), jrnl.finish());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256),
        ..ProptestConfig::default()
    })]

    #[test]
    fn store_7_journal_records_rebuild_the_snapshot_files_at_every_step(
        ops in traces::ops(1..60),
        seed in any::<u64>(),
    ) {
        let threads = if seed % 2 == 0 { traces::fixed_threads() } else { traces::generated_threads(seed) };
        same_files(&traces::trace(threads, ops))?;
    }
}

#[test]
fn the_generated_scenarios_from_the_trace_generator_agree_too() {
    // The conformance generator's families (threads of one chat, restarts,
    // outages, floods) at its usual length.
    for seed in 0..200u64 {
        let t = procroute_suite::conform::trace::generate(0xDE17A ^ seed, 40);
        if let Err(e) = same_files(&t) {
            panic!("seed {seed}: {e}");
        }
    }
}

/// The in-memory backend: records applied to an image as appended.
struct InMemory(procroute::delta::Image);

impl batches::Backend for InMemory {
    fn append(&mut self, records: Vec<procroute::delta::Record>) -> Result<(), String> {
        for r in records {
            self.0.apply(r).map_err(|e| format!("{e:?}"))?;
        }
        Ok(())
    }
    fn compact(&mut self, files: [Vec<u8>; 3]) -> Result<(), String> {
        let c = config(Durability::Journal);
        self.0 = procroute::delta::Image::empty(&c.limits, &c.delivery);
        for (of, bytes) in [
            procroute::gateway::FileKind::Store,
            procroute::gateway::FileKind::Checkpoint,
            procroute::gateway::FileKind::Delivery,
        ]
        .into_iter()
        .zip(files)
        {
            self.0.set_file(of, &bytes).map_err(|e| e.to_string())?;
        }
        Ok(())
    }
    fn files(&mut self) -> Result<[Vec<u8>; 3], String> {
        Ok(self.0.files())
    }
}

fn same_files_in_batches(steps: &[batches::Step]) -> Result<(), TestCaseError> {
    let c = config(Durability::Journal);
    let mut backend = InMemory(procroute::delta::Image::empty(&c.limits, &c.delivery));
    batches::same_files_in_batches(steps, &mut backend)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256),
        ..ProptestConfig::default()
    })]

    #[test]
    fn group_commits_rebuild_the_snapshot_files_after_every_batch(
        steps in proptest::collection::vec(batches::step(), 1..120),
    ) {
        same_files_in_batches(&steps)?;
    }
}

/// A run's tail record holds what the tail gained since the last take,
/// read back from the tail when taken: across a take, within one, with
/// multi-byte characters, and when the bound cut into what was gained.
/// Each batch ends with a watch match (20 s apart, past the cooldown), so
/// each one appends the checkpoint's changes; the image they rebuild must
/// be the gateway's own checkpoint, byte for byte.
#[test]
fn store_7_a_tail_cut_to_its_bound_between_takes_rebuilds_the_same_checkpoint() {
    use procroute::delta::Image;
    use procroute::gateway::{FileKind, Gateway, Input, Output};
    use procroute::origin::{ChatType, Origin};
    let mut c = config(Durability::Journal);
    c.limits.tail_max_chars = 8;
    let mut g = Gateway::new(c.clone());
    let mut image = Image::empty(&c.limits, &c.delivery);
    let apply = |out: Vec<Output>, image: &mut Image| {
        let mut appended = false;
        for o in out {
            if let Output::Append { records } = o {
                appended |= !records.is_empty();
                for r in records {
                    image.apply(r).expect("a record fits the image");
                }
            }
        }
        appended
    };
    let spawn = Input::Spawn {
        origin: Origin::new("telegram", ChatType::Dm, "42").expect("origin"),
        process_id: "p".into(),
        command: "c".into(),
        watch_patterns: vec!["x".into()],
        notify_on_exit: true,
    };
    let out = g.handle_batch(0, vec![spawn]);
    let run = out
        .iter()
        .find_map(|o| match o {
            Output::Spawned { run, .. } => Some(*run),
            _ => None,
        })
        .expect("spawned");
    assert!(apply(out, &mut image));
    // Below the bound, past it within a batch, multi-byte at the cut.
    let batches: [&[&str]; 6] = [
        &["ab", "x"],
        &["é", "x"],
        &["héllo wörld\n", "ü", "x"],
        &["é", "x"],
        &["1234567", "x"],
        &["", "zz", "x"],
    ];
    for (i, chunks) in batches.into_iter().enumerate() {
        let now = (i as u64 + 1) * 20_000;
        let inputs: Vec<Input> = chunks
            .iter()
            .map(|s| Input::Output {
                run,
                chunk: s.to_string(),
            })
            .collect();
        let out = g.handle_batch(now, inputs);
        assert!(apply(out, &mut image), "batch {i} appended nothing");
        let Output::Persist { bytes, .. } = g.snapshot(FileKind::Checkpoint) else {
            unreachable!("a snapshot is a Persist")
        };
        assert_eq!(
            String::from_utf8_lossy(&image.file(FileKind::Checkpoint)),
            String::from_utf8_lossy(&bytes),
            "after batch {i}"
        );
    }
}
