//! The interleaving suite as a proptest-state-machine test: a reference
//! state that only tracks what preconditions need (how many processes run),
//! transitions generated from it, the real gateway plus the naive model as
//! the system under test, invariants after every step and at teardown
//! (quiescence). A failure prints the swimlane timeline.

#[path = "support/sim.rs"]
mod sim;

use proptest::prelude::*;
use proptest::test_runner::Config as PtConfig;
use proptest_state_machine::{prop_state_machine, ReferenceStateMachine, StateMachineTest};

use procroute::gateway::Config;
use sim::{Op, Sim};

/// What preconditions need to know, nothing more.
#[derive(Debug, Clone, Default)]
struct Ref {
    running: u32,
}

struct Machine;

impl ReferenceStateMachine for Machine {
    type State = Ref;
    type Transition = Op;

    fn init_state() -> BoxedStrategy<Ref> {
        Just(Ref::default()).boxed()
    }

    fn transitions(state: &Ref) -> BoxedStrategy<Op> {
        if state.running == 0 {
            // Process operations are pointless with nothing running.
            sim::op()
                .prop_filter("needs a running process", |o| {
                    !matches!(o, Op::Output { .. } | Op::Exit { .. } | Op::Kill { .. })
                })
                .boxed()
        } else {
            sim::op().boxed()
        }
    }

    fn apply(mut state: Ref, t: &Op) -> Ref {
        match t {
            Op::Spawn { .. } => state.running += 1,
            Op::Exit { .. } | Op::Kill { .. } => state.running = state.running.saturating_sub(1),
            Op::Restart { survive: false } => state.running = 0,
            _ => {}
        }
        state
    }

    fn preconditions(state: &Ref, t: &Op) -> bool {
        !matches!(t, Op::Output { .. } | Op::Exit { .. } | Op::Kill { .. }) || state.running > 0
    }
}

struct Gateway;

impl StateMachineTest for Gateway {
    type SystemUnderTest = (Sim, Vec<Op>);
    type Reference = Machine;

    fn init_test(_: &Ref) -> (Sim, Vec<Op>) {
        (Sim::new(Config::default()), Vec::new())
    }

    fn apply((mut s, mut ops): (Sim, Vec<Op>), _: &Ref, t: Op) -> (Sim, Vec<Op>) {
        ops.push(t.clone());
        let r = s.apply(&t).and_then(|()| s.check_step());
        s.marks.push(s.delivered.len());
        if let Err(e) = r {
            panic!("{e}\n{}", sim::timeline(&s, &ops));
        }
        (s, ops)
    }

    fn check_invariants((s, ops): &(Sim, Vec<Op>), _: &Ref) {
        if let Err(e) = s.check_step() {
            panic!("{e}\n{}", sim::timeline(s, ops));
        }
    }

    fn teardown((mut s, ops): (Sim, Vec<Op>), _: Ref) {
        s.quiesce();
        s.marks.push(s.delivered.len());
        if let Err(e) = s.check_step().and_then(|()| s.check_quiescent()) {
            panic!("{e}\n{}", sim::timeline(&s, &ops));
        }
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

    /// INV-1..INV-5, INV-7, INV-8 over state-machine-generated traces.
    #[test]
    fn gateway_matches_model(sequential 1..64 => Gateway);
}
