//! Thin drivers around the sans-IO core: real OS processes, durable files
//! and chat adapters (spec DRIVER-1).
//!
//! The core ([`crate::gateway::Gateway`]) never blocks, never spawns and
//! never touches a file. [`Runtime`] does those three things and nothing
//! else: it turns process output and exits into inputs, executes the core's
//! outputs (persist, send), and feeds the adapter's answers back.

pub mod files;
pub mod journal;
pub mod process;
#[cfg(feature = "sqlite")]
pub mod sqlite;

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use crate::delivery::Notification;
use crate::gateway::{Config, Effect, FileKind, Gateway, Input, Output};
use crate::origin::Origin;
use crate::persist::{Persist, PersistError};
use crate::registry::{Completion, RunId};

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

/// The three durable files.
pub struct Files {
    /// The session store's file.
    pub store: Box<dyn Persist + Send>,
    /// The process registry's checkpoint.
    pub checkpoint: Box<dyn Persist + Send>,
    /// The delivery log.
    pub delivery: Box<dyn Persist + Send>,
}

/// Where a [`Runtime`] keeps the durable state.
enum Durable {
    /// Three snapshot files.
    Files(Files),
    /// The journal backend.
    Journal(Box<journal::JournalFiles>),
}

/// The gateway with real I/O around it: processes on threads, files on a
/// [`Persist`] backend or a journal, an [`Adapter`]. Everything it
/// decides, the [`Gateway`] decides.
pub struct Runtime<A: Adapter> {
    gateway: Gateway,
    adapter: A,
    files: Durable,
    tx: Sender<ProcMsg>,
    rx: Receiver<ProcMsg>,
    procs: process::Processes,
    epoch: Instant,
    /// Every output the core produced, for inspection and logs.
    pub log: Vec<Output>,
    /// Persistence failures: the gateway keeps running, the error is kept.
    pub persist_errors: Vec<PersistError>,
}

impl<A: Adapter> Runtime<A> {
    /// A runtime with a fresh gateway (nothing loaded), offering
    /// notifications to `adapter` and writing the three `files` (whole
    /// snapshots: the gateway is made a snapshotting one).
    pub fn new(config: Config, adapter: A, files: Files) -> Runtime<A> {
        let config = Config {
            durability: crate::delta::Durability::Snapshots,
            ..config
        };
        Runtime::with(Gateway::new(config), adapter, Durable::Files(files))
    }

    /// A runtime around `gateway` (recovered from `journal` by the caller:
    /// [`journal::JournalFiles::open`], then [`Gateway::recover`]),
    /// appending its records to `journal` and compacting it when it has
    /// grown. Its configuration must be [`crate::delta::Durability::Journal`].
    pub fn with_journal(
        gateway: Gateway,
        adapter: A,
        journal: journal::JournalFiles,
    ) -> Runtime<A> {
        Runtime::with(gateway, adapter, Durable::Journal(Box::new(journal)))
    }

    fn with(gateway: Gateway, adapter: A, files: Durable) -> Runtime<A> {
        let (tx, rx) = mpsc::channel();
        Runtime {
            gateway,
            adapter,
            files,
            tx,
            rx,
            procs: process::Processes::default(),
            epoch: Instant::now(),
            log: Vec::new(),
            persist_errors: Vec::new(),
        }
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
        let (files, adapter, log, errors) = (
            &mut self.files,
            &mut self.adapter,
            &mut self.log,
            &mut self.persist_errors,
        );
        let done = self.gateway.carry_out(now, outputs, |o| {
            log.push(o.clone());
            match (o, &mut *files) {
                (Output::Persist { file, bytes }, Durable::Files(files)) => {
                    let target = match file {
                        FileKind::Store => &mut files.store,
                        FileKind::Checkpoint => &mut files.checkpoint,
                        FileKind::Delivery => &mut files.delivery,
                    };
                    // The gateway keeps running; the error is kept.
                    if let Err(e) = target.store(bytes) {
                        errors.push(e);
                    }
                    Effect::Done
                }
                (Output::Append { records }, Durable::Journal(j)) => {
                    if let Err(e) = j.append(records) {
                        errors.push(e);
                    }
                    Effect::Done
                }
                (Output::Persist { .. }, Durable::Journal(_))
                | (Output::Append { .. }, Durable::Files(_)) => {
                    // A gateway configured for the other backend: nothing
                    // it promises would be durable, so nothing goes on.
                    errors.push(PersistError::Io {
                        file: "(runtime)".into(),
                        source: std::io::Error::other(
                            "the gateway's durability does not match the runtime's backend",
                        ),
                    });
                    Effect::Halt
                }
                (Output::Send(n), _) => Effect::Sent(adapter.send(n).err()),
                _ => Effect::Done,
            }
        });
        if let Durable::Journal(j) = &mut self.files {
            if j.wants_compaction() {
                if let Err(e) = j.compact(self.gateway.compact()) {
                    self.persist_errors.push(e);
                }
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
