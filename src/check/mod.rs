//! The checking kit: everything that checks an implementation, none of
//! which a gateway embeds. The product (what a gateway embeds) is the rest
//! of the crate: `origin`, `key`, `store`, `registry`, `router`,
//! `delivery`, `text`, `gateway`, `persist` and the I/O `driver`.
//!
//! - [`model`] — the oracle and the one judge (shares no code with the
//!   router);
//! - [`conform`] — the conformance suite: the trace language, its executor,
//!   generator and shrinker, the harness protocol and runner, reports;
//! - [`explore`] — exhaustive small-scope exploration, breadth first;
//! - [`gen`] — deterministic generators of real and nasty ids;
//! - [`simfs`] — the simulated disk that crashes at any write;
//! - [`fuzzing`] — the fuzz target bodies, as plain functions;
//! - [`soak`] — the load workload; [`timing`] — side-by-side timings.

pub mod conform;
pub mod explore;
pub mod fuzzing;
pub mod gen;
pub mod model;
pub mod simfs;
pub mod soak;
pub mod timing;
