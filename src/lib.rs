//! procroute: a notification from a background process lands in the chat
//! thread that started it — never in whatever thread happens to be active,
//! never twice, never lost.
//!
//! This crate is a specification (`spec/SPEC.md`), an implementation, and a
//! conformance suite for other implementations. Start at `ARCHITECTURE.md`.
//!
//! The product, what a gateway embeds:
//! - [`origin`]: where a conversation lives, as validated data.
//! - [`key`]: session keys in the hermes-agent and the canonical dialect.
//! - [`store`], [`registry`], [`router`], [`delivery`], [`text`]: the
//!   sans-IO state machines; [`gateway`]: their facade;
//!   [`persist`]: the file envelope; [`journal`]: the journal's framing;
//!   [`driver`]: the only I/O.
//!
//! The checking kit, [`check`]: the oracle and judge, the conformance
//! suite and its trace language, generators, the simulated disk, fuzz
//! bodies. [`fault`] is the test-only bug bank (feature `faults`).

#![forbid(unsafe_code)]
// Every public item is documented; CI builds the docs with warnings denied.
#![deny(missing_docs)]

pub mod check;
pub mod delivery;
pub mod delta;
pub mod driver;
pub mod fault;
pub mod gateway;
pub mod journal;
pub mod key;
pub mod origin;
pub mod persist;
pub mod registry;
pub mod router;
pub mod store;
pub mod text;

pub use key::{KeyError, KeyFields, Policy, Profile};
pub use origin::{ChatType, Id, Origin, OriginError, Platform};

/// Version of the specification and its vectors (SPEC conventions, S-3).
pub const SUITE_VERSION: &str = "0.3.0";
