//! procroute-suite: the checking kit and the `procroute` command. It checks
//! an implementation of `spec/SPEC.md` — the router of the `procroute`
//! crate (`crates/procroute`) or any gateway speaking the JSON-lines
//! protocol (`spec/PROTOCOL.md`) — against the oracle and the one judge of
//! `procroute-model` (`crates/procroute-model`). Nothing here is embedded
//! by a gateway.
//!
//! - [`model`] — `procroute-model` re-exported: the trace language, the
//!   oracle and the one judge (it does not depend on the router crate);
//! - [`conform`] — the conformance suite: the built-in executor of the trace
//!   language, its generator and shrinker, the harness protocol and runner,
//!   reports;
//! - [`explore`] — exhaustive small-scope exploration, breadth first;
//! - [`gen`] — deterministic generators of real and nasty ids;
//! - [`simfs`] — the simulated disk that crashes at any write;
//! - [`fuzzing`] — the fuzz target bodies, as plain functions;
//! - [`soak`] — the load workload; [`timing`] — side-by-side timings;
//! - [`bank`] — the router's bug bank by name (empty outside its copy).

#![forbid(unsafe_code)]
// Every public item is documented; CI builds the docs with warnings denied.
#![deny(missing_docs)]

pub use procroute_model as model;
pub use procroute_model::SUITE_VERSION;

pub mod bank;
pub mod conform;
pub mod explore;
pub mod fuzzing;
pub mod gen;
pub mod simfs;
pub mod soak;
pub mod timing;
