//! The one trace language (P-8): threads defined inside the trace, ops
//! that name threads by index and processes by id, and what a harness
//! reports. Generated cases, the property tests, the fuzzer, the crash-point
//! tests, stored counterexamples (`spec/vectors/traces/`) and `procroute
//! replay` all speak it; the one judge (`crate::check::model::judge`) holds a
//! report to the oracle's prediction.
//!
//! - [`exec`] — the built-in implementation's executor (memory or crashing
//!   disk), step by step;
//! - [`gen`] — the generator of related thread families and rule-reaching
//!   scenarios;
//! - [`shrink`] — the cross-process shrinker;
//! - [`file`] — the file form of a trace (stored vectors and saved
//!   counterexamples), with its id, rules and expected verdict.

pub mod exec;
pub mod file;
pub mod gen;
pub mod shrink;

pub use exec::{execute, execute_crashing, execute_with, CrashRun, Execution};
pub use file::TraceFile;
pub use gen::{generate, generate_threads, generate_threads_within, generate_within};
pub use shrink::shrink;

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::check::model::oracle::{Kind, Place};
use crate::delivery::{DeadCause, NoticeKind};
use crate::origin::RawOrigin;
use crate::router::Destination;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceOp {
    Message {
        thread: usize,
    },
    TurnStart {
        thread: usize,
    },
    TurnEnd {
        thread: usize,
    },
    Reset {
        thread: usize,
    },
    Spawn {
        thread: usize,
        process: String,
        watch: Vec<String>,
        notify: bool,
    },
    Output {
        process: String,
        text: String,
    },
    Exit {
        process: String,
        code: i32,
    },
    Kill {
        process: String,
    },
    /// The agent of `thread`'s turn reads a process's output: a poll, a
    /// log read or a wait, by process id (process ids are global in the
    /// gateways we know, so any thread's agent can read any process).
    /// PROC-10: a read changes nothing about the process's notifications.
    Read {
        thread: usize,
        process: String,
    },
    Advance {
        ms: u64,
    },
    Adapter {
        up: bool,
    },
    Restart {
        survive: bool,
    },
    Shutdown,
}

impl TraceOp {
    /// The thread an op names, if it names one.
    pub fn thread(&self) -> Option<usize> {
        match self {
            TraceOp::Message { thread }
            | TraceOp::TurnStart { thread }
            | TraceOp::TurnEnd { thread }
            | TraceOp::Reset { thread }
            | TraceOp::Read { thread, .. }
            | TraceOp::Spawn { thread, .. } => Some(*thread),
            _ => None,
        }
    }

    /// The thread index an op names, to renumber it (shrinking drops
    /// threads; generators take indices modulo a pool).
    pub fn thread_mut(&mut self) -> Option<&mut usize> {
        match self {
            TraceOp::Message { thread }
            | TraceOp::TurnStart { thread }
            | TraceOp::TurnEnd { thread }
            | TraceOp::Reset { thread }
            | TraceOp::Read { thread, .. }
            | TraceOp::Spawn { thread, .. } => Some(thread),
            _ => None,
        }
    }

    /// The process an op names, if it names one.
    pub fn process(&self) -> Option<&str> {
        match self {
            TraceOp::Spawn { process, .. }
            | TraceOp::Output { process, .. }
            | TraceOp::Exit { process, .. }
            | TraceOp::Kill { process }
            | TraceOp::Read { process, .. } => Some(process),
            _ => None,
        }
    }

    /// Foreground traffic: what the users of a thread, and its agent, do
    /// (INV-6 says none of it may change where or what a notification is).
    pub fn is_foreground(&self) -> bool {
        matches!(
            self,
            TraceOp::Message { .. }
                | TraceOp::TurnStart { .. }
                | TraceOp::TurnEnd { .. }
                | TraceOp::Read { .. }
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trace {
    pub threads: Vec<RawOrigin>,
    pub ops: Vec<TraceOp>,
}

/// One notification a harness reports (P-8).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Observed {
    /// The operation during which it was handed to the adapter (for a dead
    /// letter: the number of operations).
    pub step: usize,
    pub destination: Place,
    /// The process the notification is about (`None` for shutdown notices).
    pub process: Option<String>,
    pub kind: Kind,
    pub text: String,
    /// For a dead letter: why it could not be delivered, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// For a dead letter: why, typed (optional; P-8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<Cause>,
}

/// Why a notification was dead-lettered (P-8, optional in a report).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    AdapterFailed,
    Backpressure,
    NoRoute,
    OriginConflict,
}

impl From<DeadCause> for Cause {
    fn from(c: DeadCause) -> Cause {
        match c {
            DeadCause::AdapterFailed => Cause::AdapterFailed,
            DeadCause::Backpressure => Cause::Backpressure,
            DeadCause::NoRoute => Cause::NoRoute,
            DeadCause::OriginConflict => Cause::OriginConflict,
        }
    }
}

/// The protocol's destination from the router's.
pub fn place(d: &Destination) -> Place {
    Place {
        platform: d.platform.as_str().to_owned(),
        chat_type: d.chat_type.as_str().to_owned(),
        chat_id: d.chat_id.as_str().to_owned(),
        thread_id: d.thread_id.as_ref().map(|t| t.as_str().to_owned()),
    }
}

fn kind(k: NoticeKind) -> Kind {
    match k {
        NoticeKind::WatchMatch => Kind::WatchMatch,
        NoticeKind::WatchDisabled => Kind::WatchDisabled,
        NoticeKind::Completion => Kind::Completion,
        NoticeKind::Shutdown => Kind::Shutdown,
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceResult {
    pub deliveries: Vec<Observed>,
    pub dead_letters: Vec<Observed>,
}

/// The quiescence suffix every trace ends with (adapters up, turns over,
/// time passes).
pub fn quiescence(threads: usize) -> Vec<TraceOp> {
    let mut ops = vec![TraceOp::Adapter { up: true }];
    ops.extend((0..threads).map(|thread| TraceOp::TurnEnd { thread }));
    ops.extend((0..12).map(|_| TraceOp::Advance { ms: 61_000 }));
    ops
}

/// P-8: a trace never spawns a process id whose latest run is running.
pub fn well_formed(trace: &Trace) -> bool {
    let mut running = BTreeSet::new();
    for op in &trace.ops {
        match op {
            TraceOp::Spawn { process, .. } if !running.insert(process.as_str()) => return false,
            TraceOp::Exit { process, .. } | TraceOp::Kill { process } => {
                running.remove(process.as_str());
            }
            TraceOp::Restart { survive: false } => running.clear(),
            _ => {}
        }
    }
    true
}

/// `ops` made well-formed: a spawn of a process id that is still running
/// is left out (generators that pick ids from a small pool use this).
pub fn well_formed_ops(ops: Vec<TraceOp>) -> Vec<TraceOp> {
    let mut running = BTreeSet::new();
    let mut out = Vec::with_capacity(ops.len());
    for op in ops {
        match &op {
            TraceOp::Spawn { process, .. } if !running.insert(process.clone()) => continue,
            TraceOp::Exit { process, .. } | TraceOp::Kill { process } => {
                running.remove(process);
            }
            TraceOp::Restart { survive: false } => running.clear(),
            _ => {}
        }
        out.push(op);
    }
    out
}
