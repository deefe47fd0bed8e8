//! The one trace language (P-7, P-8): threads defined inside the trace,
//! ops that name threads by index and processes by id, and what an
//! implementation reports. Generated cases, the property tests, the
//! fuzzer, the crash-point tests, stored counterexamples
//! (`spec/vectors/traces/`) and `procroute replay` all speak it; the
//! [oracle](crate::oracle) reads it alone, and the one [judge](crate::judge)
//! holds a report to the oracle's prediction.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

/// A thread as a trace names it: the wire shape of an origin (ORIGIN-1..6),
/// unvalidated, as JSON carries it. The model's own type: it shares nothing
/// with the router's origin, whose validation an implementation under test
/// applies (or not) on its side.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawOrigin {
    /// The platform token.
    pub platform: String,
    /// The chat type, one of ORIGIN-4's four.
    pub chat_type: String,
    /// The chat's id.
    pub chat_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The thread's id, if the conversation is in one.
    pub thread_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The sender's id, if known.
    pub user_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The sender's display name, if known.
    pub user_name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
/// One operation of a trace, the protocol's trace language (P-7).
pub enum TraceOp {
    /// A user message in the thread.
    Message {
        /// Index into [`Trace::threads`].
        thread: usize,
    },
    /// The agent's turn starts in the thread.
    TurnStart {
        /// Index into [`Trace::threads`].
        thread: usize,
    },
    /// The agent's turn in the thread ends.
    TurnEnd {
        /// Index into [`Trace::threads`].
        thread: usize,
    },
    /// `/new` in the thread.
    Reset {
        /// Index into [`Trace::threads`].
        thread: usize,
    },
    /// The thread's turn starts a background process.
    Spawn {
        /// Index into [`Trace::threads`]: the origin of the spawning turn.
        thread: usize,
        /// The process id (a later spawn of the same id is a new run).
        process: String,
        /// Watch patterns.
        watch: Vec<String>,
        /// Notify on exit.
        notify: bool,
    },
    /// The process prints (lines separated by `
    /// `).
    Output {
        /// Its process id.
        process: String,
        /// What it prints.
        text: String,
    },
    /// The process exits.
    Exit {
        /// Its process id.
        process: String,
        /// Its exit code.
        code: i32,
    },
    /// The agent kills the process.
    Kill {
        /// Its process id.
        process: String,
    },
    /// The agent of `thread`'s turn reads a process's output: a poll, a
    /// log read or a wait, by process id (process ids are global in the
    /// gateways we know, so any thread's agent can read any process).
    /// PROC-10: a read changes nothing about the process's notifications.
    Read {
        /// Index into [`Trace::threads`]: the reading agent's thread.
        thread: usize,
        /// The process read.
        process: String,
    },
    /// The clock advances.
    Advance {
        /// By this many ms.
        ms: u64,
    },
    /// The chat platform's adapter goes down or comes back.
    Adapter {
        /// Up (sends succeed) or down (sends fail).
        up: bool,
    },
    /// The gateway crashes and restarts from what it persisted (P-7).
    Restart {
        /// Whether the OS processes survive (else each owes its `lost` completion).
        survive: bool,
    },
    /// The gateway shuts down (one notice per thread with a lane).
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
/// A case of the trace language: the threads it names and its operations.
pub struct Trace {
    /// The threads, as origins; operations name them by index.
    pub threads: Vec<RawOrigin>,
    /// The operations, in order.
    pub ops: Vec<TraceOp>,
}

/// One notification a harness reports (P-8).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Observed {
    /// The operation during which it was handed to the adapter (for a dead
    /// letter: the number of operations).
    pub step: usize,
    /// Where it was handed to the adapter.
    pub destination: Place,
    /// The process the notification is about (`None` for shutdown notices).
    pub process: Option<String>,
    /// What it is.
    pub kind: Kind,
    /// Its rendered text (TEXT-1..TEXT-4).
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
    /// The adapter failed every attempt.
    AdapterFailed,
    /// The delivery queue was full.
    Backpressure,
    /// No route could be determined.
    NoRoute,
    /// The stored and captured origins disagree.
    OriginConflict,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
/// What an implementation reports for a trace (P-8): every notification it
/// handed to the adapter, and every dead letter.
pub struct TraceResult {
    /// Handed to the adapter, in order.
    pub deliveries: Vec<Observed>,
    /// Dead-lettered, in order.
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

/// A thread as the protocol names a destination: four plain strings.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Place {
    /// The platform token.
    pub platform: String,
    /// The chat type.
    pub chat_type: String,
    /// The chat's id.
    pub chat_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The thread, if the place is one.
    pub thread_id: Option<String>,
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The protocol's own shape (P-8), so a report reads like the JSON
        // the harness sent.
        f.write_str(&serde_json::to_string(self).unwrap_or_default())
    }
}

/// What a notification is (TEXT-1), typed: nobody reads it from the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Output matched a watch pattern.
    WatchMatch,
    /// Watching was switched off by strikes.
    WatchDisabled,
    /// The process ended.
    Completion,
    /// The gateway is going down.
    Shutdown,
}

impl Kind {
    /// The protocol's name for it (`watch_match`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::WatchMatch => "watch_match",
            Kind::WatchDisabled => "watch_disabled",
            Kind::Completion => "completion",
            Kind::Shutdown => "shutdown",
        }
    }
}
