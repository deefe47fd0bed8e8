//! The checking kit's core: the oracle and the one judge (spec INV-1..8 and
//! the rules of chapters 4, 6 and 7).
//!
//! Deliberately naive and independent of the router: it reads a protocol
//! trace alone (threads are plain strings, a process remembers the thread
//! it was spawned from, the clock is the trace's) and imports nothing from
//! `router`, `delivery`, `store`, `registry`, `gateway` or `key` — sharing
//! their logic would make the properties vacuous (`tests/judge.rs` checks
//! the import boundary).

pub mod judge;
pub mod oracle;
