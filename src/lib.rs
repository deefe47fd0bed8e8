//! procroute: a notification from a background process lands in the chat
//! thread that started it — never in whatever thread happens to be active,
//! never twice, never lost.
//!
//! This crate is a specification (`spec/SPEC.md`), an implementation, and a
//! conformance suite for other implementations. Start at `ARCHITECTURE.md`.
//!
//! - [`origin`]: where a conversation lives, as validated data.
//! - [`key`]: session keys in the hermes-agent and the canonical dialect.
//! - [`gen`]: deterministic generators of nasty ids and origins, shared by
//!   the conformance runner, the differential corpus and the tests.
//! - [`conform`]: spec vectors, laws and the per-rule report.

#![forbid(unsafe_code)]

pub mod conform;
pub mod delivery;
pub mod driver;
pub mod fault;
pub mod fuzzing;
pub mod gateway;
pub mod gen;
pub mod key;
pub mod model;
pub mod origin;
pub mod persist;
pub mod registry;
pub mod router;
pub mod simfs;
pub mod soak;
pub mod store;
pub mod text;
pub mod timing;

pub use key::{KeyError, KeyFields, Policy, Profile};
pub use origin::{ChatType, Id, Origin, OriginError, Platform};

/// Version of the specification and its vectors (SPEC conventions, S-3).
pub const SUITE_VERSION: &str = "0.1.0";
