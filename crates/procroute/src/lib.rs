//! procroute: a notification from a background process lands in the chat
//! thread that started it — never in whatever thread happens to be active,
//! never twice, never lost.
//!
//! This crate is the router a gateway embeds: the implementation of the
//! specification (`spec/SPEC.md`). Its checking kit — the oracle and judge
//! (`procroute-model`) and the conformance suite with the `procroute`
//! command (`procroute-suite`) — lives in crates of its own. Start at
//! `ARCHITECTURE.md`.
//!
//! - [`origin`]: where a conversation lives, as validated data.
//! - [`key`]: session keys in the hermes-agent and the canonical dialect.
//! - [`store`], [`registry`], [`router`], [`delivery`], [`text`]: the
//!   sans-IO state machines; [`gateway`]: their facade;
//!   [`persist`]: the file envelope; [`journal`]: the journal's framing;
//!   [`driver`]: the only I/O.
//!
//! # Embedding it
//!
//! A gateway feeds [`gateway::Gateway`] its inputs with the time and
//! carries out the outputs in order ([`gateway::Gateway::carry_out`]):
//! persist, start the process, offer the notification to the chat. Here a
//! build started in topic 7 ends while topic 9 is the active thread; the
//! notice goes to topic 7, the thread that started it (INV-1):
//!
//! ```
//! use procroute::gateway::{Config, Effect, Gateway, Input, Output};
//! use procroute::registry::Completion;
//! use procroute::{ChatType, Origin};
//!
//! let topic = |t: &str| Origin::new("telegram", ChatType::Thread, "-1001234567890")?.with_thread(t);
//! let (topic7, topic9) = (topic("7")?, topic("9")?);
//! let mut gateway = Gateway::new(Config::default());
//! let mut chat = Vec::new(); // what the chat platform received
//! let mut step = |g: &mut Gateway, now_ms: u64, input: Input| {
//!     let outputs = g.handle(now_ms, input);
//!     g.carry_out(now_ms, outputs, |o| match o {
//!         Output::Send(n) => {
//!             chat.push((n.destination.clone(), n.text.clone()));
//!             Effect::Sent(None) // the platform accepted it
//!         }
//!         _ => Effect::Done, // Persist / Append: write it; Spawned: start it
//!     })
//! };
//! step(&mut gateway, 0, Input::Message { origin: topic7.clone() });
//! let spawn = Input::Spawn {
//!     origin: topic7.clone(),
//!     process_id: "build".into(),
//!     command: "make".into(),
//!     watch_patterns: vec![],
//!     notify_on_exit: true,
//! };
//! let out = step(&mut gateway, 1, spawn);
//! let run = out.iter().find_map(|o| match o {
//!     Output::Spawned { run, .. } => Some(*run),
//!     _ => None,
//! });
//! step(&mut gateway, 2, Input::Message { origin: topic9.clone() });
//! let done = Completion::Exited { code: 0 };
//! step(&mut gateway, 3, Input::Finished { run: run.expect("spawned"), completion: done });
//! assert_eq!(chat.len(), 1);
//! assert_eq!(chat[0].0.thread_id.as_ref().map(|t| t.as_str()), Some("7"));
//! # Ok::<(), procroute::OriginError>(())
//! ```
//!
//! `examples/embed.rs` (in the repository) is the whole loop: a journal on
//! disk, real processes, a chat whose first send fails.

#![forbid(unsafe_code)]
// Every public item is documented; CI builds the docs with warnings denied.
#![deny(missing_docs)]

mod changes;
pub mod delivery;
pub mod delta;
pub mod driver;
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
