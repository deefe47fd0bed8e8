//! The interleaving suite as a proptest-state-machine test, in the
//! protocol's trace language: the reference state tracks what
//! preconditions need (which process ids run, the next output token), the
//! transitions are `TraceOp`s generated from it (outputs, exits and kills
//! only for running processes, spawns only of ids not running), the system
//! under test is the built-in executor stepped op by op with INV-8 checked
//! between steps, and teardown appends quiescence and judges the whole
//! trace with the one judge. A failure prints the swimlane timeline.

#[path = "support/traces.rs"]
mod traces;

use std::collections::BTreeSet;

use proptest::prelude::*;
use proptest::test_runner::Config as PtConfig;
use proptest_state_machine::{prop_state_machine, ReferenceStateMachine, StateMachineTest};

use procroute::gateway::Config;
use procroute_suite::conform::render;
use procroute_suite::conform::trace::{quiescence, Execution, Trace, TraceOp};
use procroute_suite::model::judge::judge;

/// What preconditions need to know, nothing more.
#[derive(Debug, Clone, Default)]
struct Ref {
    running: BTreeSet<String>,
    tokens: u64,
}

struct Machine;

fn threads() -> usize {
    traces::fixed_threads().len()
}

impl ReferenceStateMachine for Machine {
    type State = Ref;
    type Transition = TraceOp;

    fn init_state() -> BoxedStrategy<Ref> {
        Just(Ref::default()).boxed()
    }

    fn transitions(state: &Ref) -> BoxedStrategy<TraceOp> {
        let idle: Vec<String> = traces::PROCESSES
            .iter()
            .map(|p| p.to_string())
            .filter(|p| !state.running.contains(p))
            .collect();
        let running: Vec<String> = state.running.iter().cloned().collect();
        let token = state.tokens;
        let t = 0..threads();
        let mut choices: Vec<(u32, BoxedStrategy<TraceOp>)> = vec![
            (
                2,
                t.clone()
                    .prop_map(|thread| TraceOp::Message { thread })
                    .boxed(),
            ),
            (
                2,
                t.clone()
                    .prop_map(|thread| TraceOp::TurnStart { thread })
                    .boxed(),
            ),
            (
                2,
                t.clone()
                    .prop_map(|thread| TraceOp::TurnEnd { thread })
                    .boxed(),
            ),
            (
                1,
                t.clone()
                    .prop_map(|thread| TraceOp::Reset { thread })
                    .boxed(),
            ),
            (
                2,
                proptest::sample::select(&[1_000u64, 15_000, 16_000, 61_000][..])
                    .prop_map(|ms| TraceOp::Advance { ms })
                    .boxed(),
            ),
            (
                1,
                any::<bool>().prop_map(|up| TraceOp::Adapter { up }).boxed(),
            ),
            (
                1,
                any::<bool>()
                    .prop_map(|survive| TraceOp::Restart { survive })
                    .boxed(),
            ),
            (1, Just(TraceOp::Shutdown).boxed()),
        ];
        if !idle.is_empty() {
            choices.push((
                3,
                (
                    t,
                    proptest::sample::select(idle),
                    any::<bool>(),
                    any::<bool>(),
                )
                    .prop_map(|(thread, process, watch, notify)| TraceOp::Spawn {
                        thread,
                        process,
                        watch: if watch { vec!["MATCH".into()] } else { vec![] },
                        notify,
                    })
                    .boxed(),
            ));
        }
        if !running.is_empty() {
            let r = proptest::sample::select(running);
            choices.push((
                4,
                (r.clone(), any::<bool>())
                    .prop_map(move |(process, hit)| TraceOp::Output {
                        text: format!("tok{token}of{process}{}\n", if hit { " MATCH" } else { "" }),
                        process,
                    })
                    .boxed(),
            ));
            choices.push((
                2,
                (r.clone(), 0..3i32)
                    .prop_map(|(process, code)| TraceOp::Exit { process, code })
                    .boxed(),
            ));
            choices.push((1, r.prop_map(|process| TraceOp::Kill { process }).boxed()));
        }
        proptest::strategy::Union::new_weighted(choices).boxed()
    }

    fn apply(mut state: Ref, t: &TraceOp) -> Ref {
        match t {
            TraceOp::Spawn { process, .. } => {
                state.running.insert(process.clone());
            }
            TraceOp::Output { .. } => state.tokens += 1,
            TraceOp::Exit { process, .. } | TraceOp::Kill { process } => {
                state.running.remove(process);
            }
            TraceOp::Restart { survive: false } => state.running.clear(),
            _ => {}
        }
        state
    }

    /// Shrinking removes transitions; what is left must still be a trace
    /// P-8 allows and one whose process ops name running processes.
    fn preconditions(state: &Ref, t: &TraceOp) -> bool {
        match t {
            TraceOp::Spawn { process, .. } => !state.running.contains(process),
            TraceOp::Output { process, .. }
            | TraceOp::Exit { process, .. }
            | TraceOp::Kill { process } => state.running.contains(process),
            _ => true,
        }
    }
}

/// The executor and the ops it has run.
struct Sut {
    x: Execution,
    trace: Trace,
}

struct Gateway;

impl StateMachineTest for Gateway {
    type SystemUnderTest = Sut;
    type Reference = Machine;

    fn init_test(_: &Ref) -> Sut {
        let trace = Trace {
            threads: traces::fixed_threads(),
            ops: Vec::new(),
        };
        Sut {
            x: Execution::new(&trace, Config::default()).expect("valid threads"),
            trace,
        }
    }

    fn apply(mut s: Sut, _: &Ref, t: TraceOp) -> Sut {
        s.x.step(&t).expect("executes");
        s.trace.ops.push(t);
        s
    }

    /// INV-8 between steps: after a tick with the adapter up, nothing due
    /// for an idle thread is still queued.
    fn check_invariants(s: &Sut, _: &Ref) {
        if matches!(s.trace.ops.last(), Some(TraceOp::Advance { .. })) && s.x.adapter_up() {
            let due = s.x.gateway().delivery().due_for_idle(s.x.now());
            assert_eq!(
                due,
                0,
                "INV-8: due notifications still queued\n{}",
                render::timeline_text(&s.trace, s.x.result())
            );
        }
    }

    fn teardown(mut s: Sut, _: Ref) {
        for op in quiescence(s.trace.threads.len()) {
            s.x.step(&op).expect("executes");
            s.trace.ops.push(op);
        }
        let result = s.x.finish();
        let v = judge(&s.trace, &result);
        assert!(
            v.is_empty(),
            "{}\n{}",
            traces::show(&v),
            render::timeline_text(&s.trace, &result)
        );
    }
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000)
}

prop_state_machine! {
    #![proptest_config(PtConfig { cases: cases(), failure_persistence: None, ..PtConfig::default() })]

    /// Every judged rule, and INV-8 between steps, over state-machine
    /// generated traces.
    #[test]
    fn gateway_matches_oracle(sequential 1..64 => Gateway);
}
