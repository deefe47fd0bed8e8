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

fn hunt(fault: Fault) -> (u32, usize, String, Vec<sim::Op>) {
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
            reason.to_string(),
            ops,
        ),
        Err(e) => panic!("{fault:?}: runner error {e}"),
        Ok(()) => panic!("{fault:?} was NOT caught in {BUDGET} cases"),
    }
}

#[test]
fn every_historical_fault_is_caught() {
    let mut report = String::new();
    let write = std::env::var_os("PROCROUTE_WRITE_TRACES").is_some();
    for fault in Fault::HISTORICAL {
        let (cases, len, why, ops) = hunt(fault);
        let faulty = sim::run_for_timeline(
            Config {
                fault: Some(fault),
                ..Config::default()
            },
            &ops,
        );
        report.push_str(&format!(
            "{fault:?}: caught after {cases} case(s), shrunk to {len} step(s)\n  {why}\n{}\n",
            sim::timeline(&faulty, &ops)
        ));
        assert!(cases <= BUDGET);
        if write {
            // Store the counterexample as data, with what a correct router
            // delivers (checked against the model by the replay test).
            let clean = sim::run_trace(Config::default(), &ops).expect("clean router passes it");
            let rule = why
                .split_whitespace()
                .find(|w| w.starts_with("INV-"))
                .unwrap_or("INV-1")
                .to_owned();
            let name = format!("{fault:?}")
                .chars()
                .flat_map(|c| {
                    if c.is_uppercase() {
                        vec!['-', c.to_ascii_lowercase()]
                    } else {
                        vec![c]
                    }
                })
                .collect::<String>();
            let id = format!("fault{name}");
            let file = sim::TraceFile {
                suite_version: procroute::SUITE_VERSION.to_owned(),
                id: format!("trace/{id}"),
                rules: vec![rule],
                note: format!("shrunk counterexample for the historical bug {fault:?}"),
                ops: ops.clone(),
                expect: sim::deliveries(&clean),
            };
            let path = sim::traces_dir().join(format!("{id}.json"));
            std::fs::create_dir_all(sim::traces_dir()).expect("dir");
            std::fs::write(
                &path,
                serde_json::to_string_pretty(&file).expect("json") + "\n",
            )
            .expect("write trace");
        }
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

/// The same faults, found by the conformance runner across the process
/// boundary (`procroute harness --fault …`), shrunk through the harness.
#[test]
fn faults_are_found_and_shrunk_over_the_protocol() {
    use procroute::conform::runner;
    let exe = env!("CARGO_BIN_EXE_procroute");
    for fault in [
        "foreground_routing",
        "group_thread_from_key_on_miss",
        "completion_dedup_by_process_id",
        "checkpoint_before_routing",
        "delivery_only_at_turn_end",
        "adapter_failure_drops",
    ] {
        let dir =
            std::env::temp_dir().join(format!("procroute-faults-{}-{fault}", std::process::id()));
        let cfg = runner::TraceRun {
            seed: 5,
            cases: 1000,
            max_steps: 32,
            save_dir: Some(dir.clone()),
            max_shrink_runs: 300,
            max_shrunk: 1,
            svg: None,
            validate: true,
            known: Vec::new(),
            min_coverage: 0.0,
        };
        let args = vec!["harness".to_owned(), "--fault".to_owned(), fault.to_owned()];
        let out = runner::run_traces(exe, &args, &cfg, std::time::Duration::from_secs(10), |_| {
            true
        })
        .expect("runs");
        let failed: Vec<_> = out.iter().filter(|o| !o.passed).collect();
        assert!(!failed.is_empty(), "{fault} not found over the protocol");
        let d = failed[0].detail.as_deref().unwrap_or("");
        let steps: usize = d
            .split("shrunk from ")
            .nth(1)
            .and_then(|r| r.split(" to ").nth(1))
            .and_then(|r| r.split(' ').next())
            .and_then(|n| n.parse().ok())
            .expect("shrunk length reported");
        assert!(steps <= 6, "{fault}: shrunk only to {steps} steps: {d}");
        assert!(d.contains("saved"), "{d}");
        println!(
            "{fault}: {} of 1000 traces failed; first shrunk to {steps} steps",
            failed.len()
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
