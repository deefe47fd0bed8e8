//! Interleavings of foreground traffic and process events (spec INV-1..8),
//! sled-style: generated protocol traces, `restart` included, run on the
//! real gateway and judged by the one judge against the oracle; INV-8 is
//! also checked between steps (`support/traces.rs`).
//!
//! `PROPTEST_CASES` scales the run (default 1000 traces of up to 64 steps).

#[path = "support/traces.rs"]
mod traces;

use procroute::gateway::Config;
use procroute_suite::conform::trace::TraceOp;
use proptest::prelude::*;
use traces::{check, contents, finish, fixed_threads, generated_threads, label, ops, trace};

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), max_shrink_iters: 4096, ..ProptestConfig::default() })]

    /// Every judged rule on every trace over the fixed thread pool.
    #[test]
    fn every_notification_lands_home(ops in ops(1..64)) {
        check(&trace(fixed_threads(), ops), Config::default())?;
    }

    /// The same over families of related threads from the shared nasty-id
    /// generators (ids with `:`, `%`, controls, case, white space, NFC/NFD…).
    #[test]
    fn every_notification_lands_home_with_generated_ids(seed in any::<u64>(), ops in ops(1..64)) {
        check(&trace(generated_threads(seed), ops), Config::default())?;
    }

    /// INV-6 FOREGROUND-INDEPENDENCE, metamorphically: removing the
    /// foreground traffic, or moving all of it to the end, changes no
    /// notification's destination or content.
    #[test]
    fn foreground_traffic_changes_nothing(ops in ops(1..48)) {
        let ops = label(ops);
        let with = contents(&check(&finish(fixed_threads(), ops.clone()), Config::default())?);
        let quiet: Vec<TraceOp> = ops.iter().filter(|o| !o.is_foreground()).cloned().collect();
        let without = contents(&check(&finish(fixed_threads(), quiet.clone()), Config::default())?);
        prop_assert_eq!(&with, &without, "removing foreground traffic");
        let mut moved = quiet;
        moved.extend(ops.iter().filter(|o| o.is_foreground()).cloned());
        let reordered = contents(&check(&finish(fixed_threads(), moved), Config::default())?);
        prop_assert_eq!(&with, &reordered, "reordering foreground traffic");
    }
}
