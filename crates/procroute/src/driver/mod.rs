//! Thin drivers around the sans-IO core: real OS processes, durable files
//! and chat adapters (spec DRIVER-1).
//!
//! The core ([`crate::gateway::Gateway`]) never blocks, never spawns and
//! never touches a file. [`Runtime`] does those three things and nothing
//! else: it turns process output and exits into inputs, executes the core's
//! outputs (persist, send), and feeds the adapter's answers back.

pub mod backend;
pub mod files;
pub mod journal;
pub mod process;
#[cfg(feature = "sqlite")]
pub mod sqlite;

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

pub use backend::{Backend, Files};

use crate::delivery::Notification;
use crate::delta::Durability;
use crate::gateway::{Config, Effect, Gateway, Input, Output};
use crate::origin::Origin;
use crate::persist::PersistError;
use crate::registry::{Completion, RunId, SpawnRequest};

/// A chat platform connection. `send` must be idempotent on
/// `notification.id`: after a crash between a successful send and its
/// acknowledgement the same id is offered again (DELIVER-6).
pub trait Adapter {
    /// Posts a notification; `Err` with the platform's reason when it failed
    /// (the engine retries).
    fn send(&mut self, notification: &Notification) -> Result<(), String>;
}

/// Messages from process threads to the runtime.
#[derive(Debug)]
pub enum ProcMsg {
    /// A process wrote output.
    Output(RunId, String),
    /// A process ended.
    Finished(RunId, Completion),
}

/// The gateway with real I/O around it: processes on threads, the durable
/// state on a [`Backend`] (snapshot files, a journal, SQLite), an
/// [`Adapter`]. Everything it decides, the [`Gateway`] decides.
pub struct Runtime<A: Adapter, B: Backend = Files> {
    gateway: Gateway,
    adapter: A,
    backend: B,
    tx: Sender<ProcMsg>,
    rx: Receiver<ProcMsg>,
    procs: process::Processes,
    epoch: Instant,
    /// Every output the core produced, for inspection and logs.
    pub log: Vec<Output>,
    /// Persistence failures: the gateway keeps running, the error is kept.
    pub persist_errors: Vec<PersistError>,
}

impl<A: Adapter, B: Backend> Runtime<A, B> {
    /// A runtime with a fresh gateway (nothing loaded), offering
    /// notifications to `adapter` and keeping the durable state on
    /// `backend`: the gateway is given the backend's durability.
    pub fn new(config: Config, adapter: A, backend: B) -> Runtime<A, B> {
        let config = Config {
            durability: backend.durability(),
            ..config
        };
        Runtime::with(Gateway::new(config), adapter, backend)
    }

    /// A runtime whose gateway is recovered from what `backend` holds
    /// ([`Backend::load`], then [`Gateway::recover`], given the backend's
    /// durability); what recovery owes (lost runs' completions, their
    /// persistence) is carried out at once. `alive` tells which
    /// checkpointed runs still run (a new machine: none).
    pub fn recover(
        config: Config,
        adapter: A,
        mut backend: B,
        alive: impl FnMut(RunId, &SpawnRequest) -> bool,
    ) -> Result<Runtime<A, B>, PersistError> {
        let config = Config {
            durability: backend.durability(),
            ..config
        };
        let [store, checkpoint, delivery] = backend.load()?;
        let (gateway, owed) = Gateway::recover(
            config,
            store.as_deref(),
            checkpoint.as_deref(),
            delivery.as_deref(),
            0,
            alive,
        )
        .map_err(|(file, problem)| PersistError::Bad {
            file: format!("{file:?}"),
            problem,
        })?;
        let mut rt = Runtime::with(gateway, adapter, backend);
        rt.carry_out(0, owed);
        Ok(rt)
    }

    fn with(gateway: Gateway, adapter: A, backend: B) -> Runtime<A, B> {
        let (tx, rx) = mpsc::channel();
        Runtime {
            gateway,
            adapter,
            backend,
            tx,
            rx,
            procs: process::Processes::default(),
            epoch: Instant::now(),
            log: Vec::new(),
            persist_errors: Vec::new(),
        }
    }

    /// The backend.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// The gateway inside.
    pub fn gateway(&self) -> &Gateway {
        &self.gateway
    }

    /// The adapter.
    pub fn adapter(&self) -> &A {
        &self.adapter
    }

    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// Feeds one input and carries out everything it leads to (through
    /// [`Gateway::carry_out`], the order every driver keeps); returns the
    /// outputs carried out, follow-ups of sends included.
    pub fn input(&mut self, input: Input) -> Vec<Output> {
        let now = self.now_ms();
        let outputs = self.gateway.handle(now, input);
        self.carry_out(now, outputs)
    }

    fn carry_out(&mut self, now: u64, outputs: Vec<Output>) -> Vec<Output> {
        let (backend, adapter, log, errors) = (
            &mut self.backend,
            &mut self.adapter,
            &mut self.log,
            &mut self.persist_errors,
        );
        let done = self.gateway.carry_out(now, outputs, |o| {
            log.push(o.clone());
            match o {
                Output::Send(n) => Effect::Sent(adapter.send(n).err()),
                Output::Persist { .. } | Output::Append { .. } => {
                    let ours = matches!(
                        (o, backend.durability()),
                        (Output::Persist { .. }, Durability::Snapshots)
                            | (Output::Append { .. }, Durability::Journal)
                    );
                    let written = backend.write(o);
                    if let Err(e) = written {
                        errors.push(e);
                    }
                    if ours {
                        // The gateway keeps running; the error is kept.
                        Effect::Done
                    } else {
                        // A gateway configured for the other backend:
                        // nothing it promises would be durable, so
                        // nothing goes on.
                        Effect::Halt
                    }
                }
                _ => Effect::Done,
            }
        });
        if self.backend.wants_compaction() {
            if let Err(e) = self.backend.compact(self.gateway.compact()) {
                self.persist_errors.push(e);
            }
        }
        done
    }

    /// Starts `sh -c command` for a turn in `origin`'s thread.
    pub fn spawn_shell(
        &mut self,
        origin: Origin,
        process_id: &str,
        command: &str,
        watch_patterns: Vec<String>,
        notify_on_exit: bool,
    ) -> Result<RunId, String> {
        let outs = self.input(Input::Spawn {
            origin,
            process_id: process_id.to_owned(),
            command: command.to_owned(),
            watch_patterns,
            notify_on_exit,
        });
        let run = outs
            .iter()
            .find_map(|o| match o {
                Output::Spawned { run, .. } => Some(*run),
                _ => None,
            })
            .ok_or_else(|| format!("spawn rejected: {outs:?}"))?;
        if let Err(reason) = self.procs.start(run, command, self.tx.clone()) {
            self.input(Input::Finished {
                run,
                completion: Completion::FailedToStart { reason },
            });
        }
        Ok(run)
    }

    /// Kills a running process (its end is reported as `Killed`).
    pub fn kill(&mut self, run: RunId) {
        self.procs.kill(run);
    }

    /// Pumps process messages into the core for up to `budget`, ticking at
    /// least every `tick`.
    pub fn pump(&mut self, budget: Duration, tick: Duration) {
        let deadline = Instant::now() + budget;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            match self.rx.recv_timeout(left.min(tick)) {
                Ok(ProcMsg::Output(run, chunk)) => {
                    self.input(Input::Output { run, chunk });
                }
                Ok(ProcMsg::Finished(run, completion)) => {
                    self.procs.forget(run);
                    self.input(Input::Finished { run, completion });
                }
                Err(RecvTimeoutError::Timeout) => {
                    self.input(Input::Tick);
                }
                Err(RecvTimeoutError::Disconnected) => break,
            }
        }
    }

    /// Pumps until no process runs and nothing is queued, or `limit` passes.
    /// Returns whether it became idle.
    pub fn run_until_idle(&mut self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if self.gateway.registry().running_count() == 0
                && self.gateway.delivery().queued() == 0
                && self.procs.is_empty()
            {
                return true;
            }
            self.pump(Duration::from_millis(50), Duration::from_millis(20));
        }
        false
    }
}
