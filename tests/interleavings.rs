//! Interleavings of foreground traffic and process events against the
//! reference model (spec INV-1..INV-7), sled-style: a generated list of
//! operations, including `Restart`, run against the real gateway and the
//! naive model, invariants checked after every step and at quiescence.
//!
//! `PROPTEST_CASES` scales the run (default 1000 traces of up to 64 steps).

#[path = "support/sim.rs"]
mod sim;

use procroute::gateway::Config;
use proptest::prelude::*;
use sim::{op, run_trace, Op};

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), max_shrink_iters: 4096, ..ProptestConfig::default() })]

    /// INV-1..INV-5, INV-7 on every trace.
    #[test]
    fn every_notification_lands_home(ops in proptest::collection::vec(op(), 1..64)) {
        run_trace(Config::default(), &ops)?;
    }

    /// The same invariants over thread pools drawn from the shared nasty-id
    /// generators (ids with `:`, `%`, `~`, controls, non-ASCII, …).
    #[test]
    fn every_notification_lands_home_with_generated_ids(
        seed in any::<u64>(),
        ops in proptest::collection::vec(op(), 1..64),
    ) {
        let sim = sim::Sim::with_threads(Config::default(), sim::generated_threads(seed));
        sim::run_trace_on(sim, &ops)?;
    }

    /// INV-6 FOREGROUND-INDEPENDENCE: removing the foreground traffic
    /// changes no notification's destination or content.
    #[test]
    fn foreground_traffic_changes_nothing(ops in proptest::collection::vec(op(), 1..48)) {
        let with = run_trace(Config::default(), &ops)?.seen();
        let quiet: Vec<Op> = ops.iter().filter(|o| !o.is_foreground()).cloned().collect();
        let without = run_trace(Config::default(), &quiet)?.seen();
        prop_assert_eq!(&with, &without, "removing foreground traffic");
        // Reordering: all foreground traffic moved to the end.
        let mut moved = quiet.clone();
        moved.extend(ops.iter().filter(|o| o.is_foreground()).cloned());
        let reordered = run_trace(Config::default(), &moved)?.seen();
        prop_assert_eq!(&with, &reordered, "reordering foreground traffic");
    }
}
