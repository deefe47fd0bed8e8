//! The one trace language (P-8): threads defined inside the trace, ops
//! that name threads by index and processes by id, and what a harness
//! reports. Generated cases, the property tests, the fuzzer, the crash-point
//! tests, stored counterexamples (`spec/vectors/traces/`) and `procroute
//! replay` all speak it; the one judge (`procroute_model::judge`) holds a
//! report to the oracle's prediction.
//!
//! - [`exec`] — the built-in implementation's executor (memory or crashing
//!   disk), step by step;
//! - [`gen`] — the generator of related thread families and rule-reaching
//!   scenarios;
//! - [`collide`] — which shape makes two threads collide under some key;
//! - [`shrink`](mod@shrink) — the cross-process shrinker;
//! - [`steer`] — generation profiles (P-13): the input shapes a harness
//!   asks the generator to keep to a share of the traces;
//! - [`twins`] — lane twins: sibling threads whose ids collide under some
//!   gateway's key, with processes beside their partner's;
//! - [`file`](mod@file) — the file form of a trace (stored vectors and saved
//!   counterexamples), with its id, rules and expected verdict.

pub mod collide;
pub mod exec;
pub mod file;
pub mod gen;
pub mod shrink;
pub mod steer;
pub mod twins;

pub use exec::{
    execute, execute_crashing, execute_crashing_on, execute_with, CrashPoint, CrashRun, Execution,
};
pub use file::TraceFile;
pub use gen::{
    generate, generate_steered, generate_threads, generate_threads_steered,
    generate_threads_within, generate_within,
};
pub use shrink::shrink;

pub use procroute_model::trace::*;

use procroute::delivery::{DeadCause, NoticeKind};
use procroute::router::Destination;

/// The protocol's dead-letter cause from the router's.
pub fn cause(c: DeadCause) -> Cause {
    match c {
        DeadCause::AdapterFailed => Cause::AdapterFailed,
        DeadCause::Backpressure => Cause::Backpressure,
        DeadCause::NoRoute => Cause::NoRoute,
        DeadCause::OriginConflict => Cause::OriginConflict,
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

/// The router's wire origin from a trace's thread (the same JSON shape;
/// two types because the model shares no code with the router).
pub fn router_origin(t: &RawOrigin) -> procroute::origin::RawOrigin {
    procroute::origin::RawOrigin {
        platform: t.platform.clone(),
        chat_type: t.chat_type.clone(),
        chat_id: t.chat_id.clone(),
        thread_id: t.thread_id.clone(),
        user_id: t.user_id.clone(),
        user_name: t.user_name.clone(),
    }
}

/// A trace's thread from the router's wire origin.
pub fn thread_of(o: procroute::origin::RawOrigin) -> RawOrigin {
    RawOrigin {
        platform: o.platform,
        chat_type: o.chat_type,
        chat_id: o.chat_id,
        thread_id: o.thread_id,
        user_id: o.user_id,
        user_name: o.user_name,
    }
}

/// A trace's thread from a validated origin.
pub fn from_origin(o: procroute::origin::Origin) -> RawOrigin {
    thread_of(procroute::origin::RawOrigin::from(o))
}

/// A trace's thread validated as the router validates origins (ORIGIN-1..6).
pub fn to_origin(
    t: &RawOrigin,
) -> Result<procroute::origin::Origin, procroute::origin::OriginError> {
    procroute::origin::Origin::try_from(router_origin(t))
}
