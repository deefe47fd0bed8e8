//! The load workload, short (CI): every bounded structure stays within its
//! documented limit and every promised completion is delivered or
//! dead-lettered with a reason, through group commits with a flaky adapter
//! (DELIVER-4, DELIVER-7, PROC-9). The full run — 100,000 processes,
//! 1,000,000 events, 10,000 threads — is `cargo run --release --example
//! load`; its figures are in BENCHMARKS.md.

use procroute::gateway::{Config, FileKind, Gateway, Input, Output};
use procroute_suite::soak::{run, Storage, Workload};

#[test]
fn deliver_7_a_short_soak_stays_bounded_and_loses_nothing() {
    let r = run(Workload {
        processes: 2_000,
        concurrent: 2_000,
        events: 20_000,
        threads: 500,
        batch: 200,
        fail_one_in: 50,
        seed: 3,
        storage: Storage::Journal,
    });
    assert_eq!(r.completions_promised, 2_000);
    assert_eq!(r.unaccounted, 0, "{r:?}");
    assert_eq!(r.undrained, 0, "the delivery queue never drained: {r:?}");
    assert_eq!(r.completions_delivered + r.completions_dead, 2_000);
    assert!(r.failed_sends > 0, "the adapter never failed: {r:?}");
    for (what, limit, peak) in &r.bounds {
        assert!(peak <= limit, "{what}: {peak} > {limit}");
    }
    assert!(
        r.peak_running >= 1_000,
        "processes were not concurrent: {r:?}"
    );
}

/// Group commit changes when files are written, not what they hold: the
/// same inputs one by one and in one batch end in the same three files, and
/// the batch puts every persist (store, delivery, checkpoint) first.
#[test]
fn proc_8_a_batch_persists_first_and_ends_in_the_same_state() {
    let inputs: Vec<Input> = (0..40)
        .flat_map(|i| {
            let o = procroute_suite::gen::origin(&mut procroute_suite::gen::Rng::new(i));
            [
                Input::Message { origin: o.clone() },
                Input::Spawn {
                    origin: o,
                    process_id: format!("p{i}"),
                    command: "make".into(),
                    watch_patterns: vec![],
                    notify_on_exit: i % 2 == 0,
                },
            ]
        })
        .collect();
    let mut one = Gateway::new(snapshots());
    for input in inputs.clone() {
        one.handle(5, input);
    }
    let mut batch = Gateway::new(snapshots());
    let out = batch.handle_batch(5, inputs);
    let kinds: Vec<FileKind> = out
        .iter()
        .take_while(|o| matches!(o, Output::Persist { .. }))
        .map(|o| match o {
            Output::Persist { file, .. } => *file,
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(kinds, vec![FileKind::Store, FileKind::Checkpoint]);
    assert!(
        out.iter()
            .skip(kinds.len())
            .all(|o| !matches!(o, Output::Persist { .. })),
        "a persist after an action"
    );
    assert_eq!(
        out.iter()
            .filter(|o| matches!(o, Output::Spawned { .. }))
            .count(),
        40
    );
    for file in [FileKind::Store, FileKind::Checkpoint, FileKind::Delivery] {
        let bytes = |g: &Gateway| match g.snapshot(file) {
            Output::Persist { bytes, .. } => bytes,
            _ => unreachable!(),
        };
        assert_eq!(bytes(&one), bytes(&batch), "{file:?} differs");
    }
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
