//! The sans-IO facade: inputs in, outputs out, an explicit clock.
//!
//! [`Gateway::handle`] is the whole API. It owns the store, the registry and
//! the delivery engine; routing happens inside, from each event's own
//! captured origin. No input names a "current" thread for routing: the
//! thread in `TurnStarted`/`TurnEnded` only marks that thread busy or idle.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::delivery::{
    DeadCause, DeliveryEngine, DeliveryLimits, NoticeKind, Notification, NotificationId,
};
use crate::delta::{Durability, Record};
use crate::key::Policy;
use crate::origin::Origin;
use crate::persist::FileProblem;
use crate::registry::{Completion, Limits, ProcessEvent, Registry, RunId, SpawnRequest};
use crate::router::{self, Destination, DropReason};
use crate::store::{Lane, SessionStore, DEFAULT_MAX_LANES};
use crate::text;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
/// What a gateway is configured with; every field has hermes-compatible
/// defaults.
pub struct Config {
    /// How origins become session keys (KEY-3).
    pub policy: Policy,
    /// The background processes' limits.
    pub limits: Limits,
    /// The delivery engine's limits.
    pub delivery: DeliveryLimits,
    /// Whole-file snapshots or journal records (STORE-4, STORE-7).
    pub durability: Durability,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "input", rename_all = "snake_case")]
/// What the world tells the gateway: one input at a time, with the clock's
/// time beside it ([`Gateway::handle`]).
pub enum Input {
    /// A user message arrived in a thread (opens or touches its lane).
    Message {
        /// The thread the message came from.
        origin: Origin,
    },
    /// The agent started a turn in a thread (its notifications wait, DELIVER-1).
    TurnStarted {
        /// The turn's thread.
        origin: Origin,
    },
    /// The agent's turn in a thread ended (what waited is sent).
    TurnEnded {
        /// The turn's thread.
        origin: Origin,
    },
    /// `/new` in a thread.
    Reset {
        /// The thread.
        origin: Origin,
    },
    /// A turn started a background process; `origin` is that turn's origin.
    Spawn {
        /// The starting turn's origin: where the notifications go (ROUTE-1).
        origin: Origin,
        /// The caller's name for the process.
        process_id: String,
        /// The command line.
        command: String,
        #[serde(default)]
        /// Output patterns that notify when they match.
        watch_patterns: Vec<String>,
        #[serde(default)]
        /// Notify when the process ends.
        notify_on_exit: bool,
    },
    /// A process wrote output.
    Output {
        /// The run (from [`Output::Spawned`]).
        run: RunId,
        /// The output, as text.
        chunk: String,
    },
    /// A process ended.
    Finished {
        /// The run.
        run: RunId,
        /// How it ended.
        completion: Completion,
    },
    /// Time passed; send what is due.
    Tick,
    /// The adapter's answer for a `Send`.
    Sent {
        /// The notification offered.
        id: NotificationId,
        #[serde(default)]
        /// `None`: delivered; `Some(error)`: the send failed (retried later).
        error: Option<String>,
    },
    /// The gateway is going down: one notice per thread with a lane.
    Shutdown,
}

/// What carrying out one output did (see [`Gateway::carry_out`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Performed (or nothing to do for this output).
    Done,
    /// A `Send` was offered to the adapter: `None` accepted, `Some(error)`
    /// refused.
    Sent(Option<String>),
    /// The gateway died while performing it; nothing more happens.
    Halt,
}

pub use crate::persist::FileKind;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "output", rename_all = "snake_case")]
/// What the gateway asks the world to do, in order ([`Gateway::handle`]).
pub enum Output {
    /// Persist these bytes before acting on anything later in this batch
    /// ([`Durability::Snapshots`]).
    Persist {
        /// Which file.
        file: FileKind,
        /// Its whole new contents.
        bytes: Vec<u8>,
    },
    /// Append these records durably, as one group commit, before acting on
    /// anything later in this batch ([`Durability::Journal`]); empty when
    /// nothing changed.
    Append {
        /// What changed, in order.
        records: Vec<Record>,
    },
    /// A spawn was accepted: the driver starts the process as this run.
    Spawned {
        /// The run id to report its output and end with.
        run: RunId,
        /// The session key it belongs to.
        lane: Lane,
    },
    /// Offer this notification to the adapter; answer with [`Input::Sent`].
    Send(Notification),
    /// An event that was not routed; its notification is dead-lettered.
    Dropped {
        /// The run.
        run: RunId,
        /// The event's number in the run.
        seq: u32,
        /// Why it was not routed.
        reason: DropReason,
    },
    /// An input that could not be applied, with the reason.
    Rejected {
        /// Why.
        reason: String,
    },
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
/// Counters for monitoring.
pub struct Stats {
    /// Notifications routed from the persisted session store.
    pub routed_from_store: u64,
    /// Notifications routed from the event's captured origin.
    pub routed_from_capture: u64,
    /// Events that were not routed (ROUTE-4).
    pub dropped: u64,
    /// Shutdown notices sent.
    pub shutdown_notices_sent: u64,
}

#[derive(Debug, Clone)]
/// The sans-IO gateway: the session store, the process registry, the router
/// and the delivery engine behind one [`Gateway::handle`]. It never reads a
/// clock or touches a file; a driver (`driver::Runtime`) does.
pub struct Gateway {
    config: Config,
    store: SessionStore,
    registry: Registry,
    delivery: DeliveryEngine,
    stats: Stats,
    shutdown_epoch: u64,
    shutdown_ids: BTreeSet<NotificationId>,
    /// While [`Gateway::handle_batch`] runs: the files that changed (bit per
    /// [`FileKind`]); their snapshots are taken once, at the end.
    deferred: std::cell::Cell<Option<u8>>,
}

impl Gateway {
    /// A gateway with nothing persisted yet.
    pub fn new(config: Config) -> Gateway {
        let mut g = Gateway::untracked(config);
        if g.config.durability == Durability::Journal {
            g.store.track_changes(false);
            g.registry.track_changes(false);
            g.delivery.track_changes(false);
        }
        g
    }

    fn untracked(config: Config) -> Gateway {
        Gateway {
            store: SessionStore::new(DEFAULT_MAX_LANES),
            registry: Registry::new(config.limits.clone()),
            delivery: DeliveryEngine::new(config.delivery.clone()),
            config,
            stats: Stats::default(),
            shutdown_epoch: 0,
            deferred: std::cell::Cell::new(None),
            shutdown_ids: BTreeSet::new(),
        }
    }

    /// Rebuilds a gateway after a restart from its three files (any may be
    /// missing). `alive` tells which checkpointed runs still run; the others
    /// produce `Lost` completions, routed and queued like any event.
    pub fn recover(
        config: Config,
        store: Option<&[u8]>,
        checkpoint: Option<&[u8]>,
        delivery: Option<&[u8]>,
        now_ms: u64,
        alive: impl FnMut(RunId, &SpawnRequest) -> bool,
    ) -> Result<(Gateway, Vec<Output>), (FileKind, FileProblem)> {
        let mut g = Gateway::untracked(config.clone());
        let journal = config.durability == Durability::Journal;
        if let Some(b) = store {
            g.store =
                SessionStore::decode(b, DEFAULT_MAX_LANES).map_err(|e| (FileKind::Store, e))?;
        }
        if let Some(b) = delivery {
            g.delivery = DeliveryEngine::decode(b, config.delivery.clone())
                .map_err(|e| (FileKind::Delivery, e))?;
        }
        if journal {
            // The store and the delivery log are exactly their images;
            // the registry is reconciled on restore, so its next record
            // is its whole image.
            g.store.track_changes(false);
            g.delivery.track_changes(false);
            g.registry.track_changes(true);
        }
        let mut out = Vec::new();
        g.check_held().map_err(|e| (FileKind::Delivery, e))?;
        g.shutdown_epoch = g.delivery.max_shutdown_epoch();
        // A missing checkpoint is an empty one: restoring it still moves the
        // run ids past every run the delivery log names (PROC-8), so a new
        // run's notifications are never taken for an old run's duplicates.
        let empty;
        let checkpoint = match checkpoint {
            Some(b) => Some(b),
            None if g.delivery.max_run().is_some() => {
                empty = Registry::new(config.limits.clone()).encode();
                Some(empty.as_slice())
            }
            None => None,
        };
        if let Some(b) = checkpoint {
            let delivery = &g.delivery;
            let disabled = delivery.watch_disabled_runs();
            let log = crate::registry::RecordedLog {
                completed: &|run| delivery.has_completion(run),
                seq: &|run| delivery.recorded_seq(run),
                disabled: &|run| disabled.contains(&run),
                max_run: delivery.max_run(),
            };
            let (reg, lost) = Registry::restore(b, config.limits.clone(), now_ms, &log, alive)
                .map_err(|e| (FileKind::Checkpoint, e))?;
            g.registry = reg;
            if journal {
                g.registry.track_changes(true);
            }
            // route_all makes the lost completions durable in the delivery
            // log, then checkpoints the registry without their runs.
            g.route_all(lost, now_ms, &mut out);
        }
        g.flush(now_ms, &mut out);
        Ok((g, out))
    }

    /// SEC-2: a notification in a recovered delivery log must be one this
    /// gateway could have produced — addressed to the thread of a lane in the
    /// store (every origin that spawns or talks gets a lane first). Anything
    /// else (a tampered or foreign file) is refused as corrupt, never sent.
    fn check_held(&self) -> Result<(), FileProblem> {
        let threads: BTreeSet<Destination> = self
            .store
            .lanes()
            .map(|(_, e)| Destination::of(&e.origin))
            .collect();
        for n in self.delivery.held() {
            if !threads.contains(&n.destination) {
                return Err(FileProblem::Corrupt {
                    detail: format!(
                        "notification {:?} is addressed to a thread with no lane",
                        n.id
                    ),
                });
            }
        }
        Ok(())
    }

    /// The session store.
    pub fn store(&self) -> &SessionStore {
        &self.store
    }
    /// The process registry.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }
    /// The delivery engine.
    pub fn delivery(&self) -> &DeliveryEngine {
        &self.delivery
    }
    /// The monitoring counters.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    fn persist(&mut self, file: FileKind) -> Output {
        let journal = self.config.durability == Durability::Journal;
        if let Some(mask) = self.deferred.get() {
            self.deferred.set(Some(mask | Self::bit(file)));
            return if journal {
                Output::Append {
                    records: Vec::new(),
                }
            } else {
                Output::Persist {
                    file,
                    bytes: Vec::new(),
                }
            };
        }
        if journal {
            let mut records = Vec::new();
            self.take_changes(file, &mut records);
            return Output::Append { records };
        }
        self.snapshot(file)
    }

    /// Appends what changed in one file's image since it was last taken
    /// (a journaling gateway): its records, or its whole image.
    fn take_changes(&mut self, file: FileKind, out: &mut Vec<Record>) {
        let taken = match file {
            FileKind::Store => self.store.take_changes().map(|v| {
                out.extend(v.into_iter().map(|change| Record::Store { change }));
            }),
            FileKind::Checkpoint => self.registry.take_changes().map(|v| {
                out.extend(v.into_iter().map(|change| Record::Checkpoint { change }));
            }),
            FileKind::Delivery => self.delivery.take_changes().map(|v| {
                out.extend(v.into_iter().map(|change| Record::Delivery { change }));
            }),
        };
        if taken.is_none() {
            let Output::Persist { bytes, .. } = self.snapshot(file) else {
                unreachable!("snapshot is a Persist")
            };
            out.push(Record::image(file, bytes));
        }
    }

    /// Compaction (a journaling gateway): the three files' whole images
    /// (store, checkpoint, delivery log), the state as it is now; what
    /// changed before is in them, so the changes not yet taken are
    /// dropped. A backend writes them as its new base and starts an empty
    /// journal after it (`driver::journal`).
    pub fn compact(&mut self) -> [Vec<u8>; 3] {
        if self.config.durability == Durability::Journal {
            self.store.track_changes(false);
            self.registry.track_changes(false);
            self.delivery.track_changes(false);
        }
        [
            self.store.encode(),
            self.registry.encode(),
            self.delivery.encode(),
        ]
    }

    fn bit(file: FileKind) -> u8 {
        match file {
            FileKind::Store => 1,
            FileKind::Delivery => 2,
            FileKind::Checkpoint => 4,
        }
    }

    /// Group commit: handles `inputs` in order as [`Gateway::handle`] would,
    /// but each changed file is snapshotted once, and every `Persist` comes
    /// first — store, delivery log, checkpoint, the order the per-input path
    /// uses — followed by the other outputs in order. A driver that performs
    /// the persists before acting on the rest keeps every durability rule
    /// (nothing is acknowledged or sent before the state that promises it is
    /// on disk) at one write per file per batch.
    pub fn handle_batch(
        &mut self,
        now_ms: u64,
        inputs: impl IntoIterator<Item = Input>,
    ) -> Vec<Output> {
        self.deferred.set(Some(0));
        let mut rest = Vec::new();
        for input in inputs {
            for o in self.handle(now_ms, input) {
                if !matches!(o, Output::Persist { .. } | Output::Append { .. }) {
                    rest.push(o);
                }
            }
        }
        let mask = self.deferred.take().unwrap_or(0);
        let mut out = Vec::with_capacity(rest.len() + 3);
        let mut records = Vec::new();
        for file in [FileKind::Store, FileKind::Delivery, FileKind::Checkpoint] {
            if mask & Self::bit(file) != 0 {
                match self.config.durability {
                    Durability::Snapshots => out.push(self.snapshot(file)),
                    Durability::Journal => self.take_changes(file, &mut records),
                }
            }
        }
        if mask != 0 && self.config.durability == Durability::Journal {
            // One group commit: one append, one fsync.
            out.push(Output::Append { records });
        }
        out.extend(rest);
        out
    }

    /// The current bytes of one file.
    pub fn snapshot(&self, file: FileKind) -> Output {
        let bytes = match file {
            FileKind::Store => self.store.encode(),
            FileKind::Checkpoint => self.registry.encode(),
            FileKind::Delivery => self.delivery.encode(),
        };
        Output::Persist { file, bytes }
    }

    fn observe(&mut self, origin: &Origin, now_ms: u64, out: &mut Vec<Output>) -> Option<Lane> {
        match self.store.observe(origin, &self.config.policy, now_ms) {
            Ok((lane, created)) => {
                if created {
                    out.push(self.persist(FileKind::Store));
                }
                Some(lane)
            }
            Err(e) => {
                out.push(Output::Rejected {
                    reason: e.to_string(),
                });
                None
            }
        }
    }

    /// Carries out `outputs` the way every driver must, in order: each is
    /// offered to `act`, which performs it (writes the bytes, sends the
    /// notification…) and says what happened; a send's answer is fed back
    /// as [`Input::Sent`] at once and its follow-ups carried out before the
    /// next output, so a persisted write always precedes what it makes safe.
    /// [`Effect::Halt`] (the process died, e.g. the disk failed) stops
    /// everything: nothing after it happens. Returns the outputs carried
    /// out. `driver::Runtime` and the trace executor both run through here.
    pub fn carry_out(
        &mut self,
        now_ms: u64,
        outputs: Vec<Output>,
        mut act: impl FnMut(&Output) -> Effect,
    ) -> Vec<Output> {
        let mut done = Vec::new();
        let mut work: std::collections::VecDeque<Output> = outputs.into();
        while let Some(o) = work.pop_front() {
            match act(&o) {
                Effect::Halt => return done,
                Effect::Done => {}
                Effect::Sent(error) => {
                    if let Output::Send(n) = &o {
                        let follow = self.handle(now_ms, Input::Sent { id: n.id, error });
                        for f in follow.into_iter().rev() {
                            work.push_front(f);
                        }
                    }
                }
            }
            done.push(o);
        }
        done
    }

    /// Applies one input at time `now_ms`.
    pub fn handle(&mut self, now_ms: u64, input: Input) -> Vec<Output> {
        let mut out = Vec::new();
        let after = match input {
            Input::Message { origin } => {
                self.observe(&origin, now_ms, &mut out);
                After::Flush
            }
            Input::TurnStarted { origin } => self.turn_started(&origin, now_ms, &mut out),
            Input::TurnEnded { origin } => self.turn_ended(&origin),
            Input::Reset { origin } => self.reset(&origin, now_ms, &mut out),
            Input::Spawn {
                origin,
                process_id,
                command,
                watch_patterns,
                notify_on_exit,
            } => match self.observe(&origin, now_ms, &mut out) {
                Some(lane) => {
                    let req = SpawnRequest {
                        process_id,
                        origin,
                        lane,
                        command,
                        watch_patterns,
                        notify_on_exit,
                    };
                    self.spawn(req, now_ms, &mut out)
                }
                None => After::Return,
            },
            Input::Output { run, chunk } => self.output(run, &chunk, now_ms, &mut out),
            Input::Finished { run, completion } => self.finished(run, completion, now_ms, &mut out),
            Input::Tick => After::Flush,
            Input::Sent { id, error } => self.sent(id, error, now_ms, &mut out),
            Input::Shutdown => self.shutdown(now_ms, &mut out),
        };
        if after == After::Flush {
            self.flush(now_ms, &mut out);
        }
        #[cfg(debug_assertions)]
        {
            self.delivery.debug_check();
            self.registry.debug_check();
        }
        out
    }

    /// A turn starts in `origin`'s thread: its notifications wait (DELIVER-2).
    fn turn_started(&mut self, origin: &Origin, now_ms: u64, out: &mut Vec<Output>) -> After {
        self.observe(origin, now_ms, out);
        self.delivery.turn_started(&Destination::of(origin));
        After::Flush
    }

    /// A turn ends in `origin`'s thread: what waited for it may go.
    fn turn_ended(&mut self, origin: &Origin) -> After {
        self.delivery.turn_ended(&Destination::of(origin));
        After::Flush
    }

    /// `/new` in `origin`'s thread: a new conversation on its lane (STORE-2).
    fn reset(&mut self, origin: &Origin, now_ms: u64, out: &mut Vec<Output>) -> After {
        if let Some(lane) = self.observe(origin, now_ms, out) {
            if self.store.reset(&lane, now_ms).is_ok() {
                out.push(self.persist(FileKind::Store));
            }
        }
        After::Flush
    }

    /// A background process starts with the origin it captured (PROC-1).
    fn spawn(&mut self, req: SpawnRequest, now_ms: u64, out: &mut Vec<Output>) -> After {
        let lane = req.lane.clone();
        match self.registry.spawn(req, now_ms) {
            Ok(run) => {
                // Checkpoint with routing before anyone learns the run id
                // (PROC-8).
                out.push(self.persist(FileKind::Checkpoint));
                out.push(Output::Spawned { run, lane });
            }
            Err(e) => out.push(Output::Rejected {
                reason: e.to_string(),
            }),
        }
        After::Flush
    }

    /// A run printed `chunk`: watch events, routed (PROC-3..6).
    fn output(&mut self, run: RunId, chunk: &str, now_ms: u64, out: &mut Vec<Output>) -> After {
        match self.registry.output(run, chunk, now_ms) {
            Ok(events) => self.route_all(events, now_ms, out),
            Err(e) => out.push(Output::Rejected {
                reason: e.to_string(),
            }),
        }
        After::Flush
    }

    /// A run ended: its completion, if one is owed, routed (PROC-7).
    fn finished(
        &mut self,
        run: RunId,
        completion: Completion,
        now_ms: u64,
        out: &mut Vec<Output>,
    ) -> After {
        match self.registry.finish(run, completion, now_ms) {
            Ok(events) if events.is_empty() => {
                // Nothing to tell anyone: the run just leaves.
                out.push(self.persist(FileKind::Checkpoint));
            }
            Ok(events) => self.route_all(events, now_ms, out),
            Err(e) => out.push(Output::Rejected {
                reason: e.to_string(),
            }),
        }
        After::Flush
    }

    /// The adapter's answer to a send (DELIVER-3, DELIVER-4).
    fn sent(
        &mut self,
        id: NotificationId,
        error: Option<String>,
        now_ms: u64,
        out: &mut Vec<Output>,
    ) -> After {
        let ok = error.is_none();
        self.delivery.ack(id, error.map_or(Ok(()), Err), now_ms);
        if ok && self.shutdown_ids.remove(&id) && self.delivery.was_delivered(&id) {
            self.stats.shutdown_notices_sent += 1;
        }
        out.push(self.persist(FileKind::Delivery));
        After::Flush
    }

    /// The gateway goes down: one notice per thread with a lane
    /// (DELIVER-8, TEXT-3).
    fn shutdown(&mut self, now_ms: u64, out: &mut Vec<Output>) -> After {
        self.shutdown_epoch += 1;
        let mut threads: Vec<Destination> = self
            .store
            .lanes()
            .map(|(_, e)| Destination::of(&e.origin))
            .collect();
        threads.sort();
        threads.dedup();
        for (index, destination) in threads.into_iter().enumerate() {
            let text = text::shutdown_notice();
            let id = NotificationId::Shutdown {
                epoch: self.shutdown_epoch,
                index: index as u32,
            };
            let n = Notification {
                id,
                kind: NoticeKind::Shutdown,
                destination,
                text,
            };
            if self.delivery.enqueue(n, now_ms).is_ok() {
                self.shutdown_ids.insert(id);
            }
        }
        out.push(self.persist(FileKind::Delivery));
        After::Flush
    }

    fn route_all(&mut self, events: Vec<ProcessEvent>, now_ms: u64, out: &mut Vec<Output>) {
        if events.is_empty() {
            return;
        }
        // The delivery log is written first, then the checkpoint (PROC-8):
        // after a crash in between, the log holds a completion whose run the
        // checkpoint still lists, or an event whose sequence number it has
        // not seen; recovery reconciles both (Registry::restore). The other
        // order would lose a completion whose run the checkpoint had dropped.
        for e in events {
            let n_id = NotificationId::Process {
                run: e.run,
                seq: e.seq,
            };
            if matches!(e.kind, crate::registry::EventKind::Completion { .. }) {
                self.delivery.record_completion(e.run);
            }
            match router::resolve(&self.store, &e) {
                Ok(routed) => {
                    match routed.source {
                        router::RouteSource::Store => self.stats.routed_from_store += 1,
                        _ => self.stats.routed_from_capture += 1,
                    }
                    let n = Notification {
                        id: n_id,
                        kind: notice_kind(&e.kind),
                        destination: routed.destination,
                        text: text::render(&e),
                    };
                    if let Err((err, n)) = self.delivery.enqueue_or_return(n, now_ms) {
                        // Back-pressure: never silent (DELIVER-7).
                        self.delivery.dead_letter(
                            *n,
                            DeadCause::Backpressure,
                            err.to_string(),
                            now_ms,
                        );
                    }
                }
                Err(reason) => {
                    self.stats.dropped += 1;
                    let n = Notification {
                        id: n_id,
                        kind: notice_kind(&e.kind),
                        destination: Destination::of(&e.origin),
                        text: text::render(&e),
                    };
                    let cause = match reason {
                        DropReason::OriginConflict { .. } => DeadCause::OriginConflict,
                        DropReason::NoRoute { .. } => DeadCause::NoRoute,
                    };
                    self.delivery
                        .dead_letter(n, cause, reason.to_string(), now_ms);
                    out.push(Output::Dropped {
                        run: e.run,
                        seq: e.seq,
                        reason,
                    });
                }
            }
        }
        out.push(self.persist(FileKind::Delivery));
        out.push(self.persist(FileKind::Checkpoint));
    }

    /// Sends whatever is due — on every input, idle ticks included
    /// (DELIVER-1).
    fn flush(&mut self, now_ms: u64, out: &mut Vec<Output>) {
        for n in self.delivery.poll(now_ms) {
            out.push(Output::Send(n));
        }
    }
}

fn notice_kind(k: &crate::registry::EventKind) -> NoticeKind {
    use crate::registry::EventKind;
    match k {
        EventKind::WatchMatch { .. } => NoticeKind::WatchMatch,
        EventKind::WatchDisabled { .. } => NoticeKind::WatchDisabled,
        EventKind::Completion { .. } => NoticeKind::Completion,
    }
}

/// What `Gateway::handle` does after an input's own work: send what may go
/// now, or nothing more (a spawn the store refused a lane did no work).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum After {
    /// Flush the queues (the normal case).
    Flush,
    /// Return at once.
    Return,
}
