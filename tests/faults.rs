//! The historical bugs, caught (feature `faults`; `cargo test --features
//! faults --test faults -- --nocapture` prints the figures).
//!
//! Each fault is switched on alone and the interleaving property suite is
//! run with a fixed seed; it must fail within a bounded number of cases,
//! and the shrunk counterexample is reported with its length.

#[path = "support/sim.rs"]
mod sim;

use proptest::test_runner::{Config as PtConfig, RngAlgorithm, TestError, TestRng, TestRunner};
use std::cell::Cell;

use procroute::fault::Fault;
use procroute::gateway::Config;

/// Cases the suite gets to find each fault.
const BUDGET: u32 = 2_000;

fn hunt(fault: Fault) -> (u32, usize, String) {
    let config = PtConfig {
        cases: BUDGET,
        max_shrink_iters: 8_192,
        failure_persistence: None,
        ..PtConfig::default()
    };
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]);
    let mut runner = TestRunner::new_with_rng(config, rng);
    let calls = Cell::new(0u32);
    let first_failure = Cell::new(None::<u32>);
    let strategy = proptest::collection::vec(sim::op(), 1..64);
    let result = runner.run(&strategy, |ops| {
        calls.set(calls.get() + 1);
        let gw = Config {
            fault: Some(fault),
            ..Config::default()
        };
        let r = sim::run_trace(gw, &ops).map(|_| ());
        if r.is_err() && first_failure.get().is_none() {
            first_failure.set(Some(calls.get()));
        }
        r
    });
    match result {
        Err(TestError::Fail(reason, ops)) => (
            first_failure.get().unwrap_or(0),
            ops.len(),
            format!("{reason}\n  shrunk trace: {ops:?}"),
        ),
        Err(e) => panic!("{fault:?}: runner error {e}"),
        Ok(()) => panic!("{fault:?} was NOT caught in {BUDGET} cases"),
    }
}

#[test]
fn every_historical_fault_is_caught() {
    let mut report = String::new();
    for fault in Fault::ALL {
        let (cases, len, why) = hunt(fault);
        report.push_str(&format!(
            "{fault:?}: caught after {cases} case(s), shrunk to {len} step(s)\n  {why}\n"
        ));
        assert!(cases <= BUDGET);
    }
    println!("{report}");
}

#[test]
fn without_a_fault_the_suite_passes() {
    let config = PtConfig {
        cases: 300,
        failure_persistence: None,
        ..PtConfig::default()
    };
    let mut runner = TestRunner::new(config);
    runner
        .run(&proptest::collection::vec(sim::op(), 1..64), |ops| {
            sim::run_trace(Config::default(), &ops).map(|_| ())
        })
        .expect("clean router passes");
}
