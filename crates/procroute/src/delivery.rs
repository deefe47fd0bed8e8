//! The delivery engine: per-thread FIFO queues, busy threads, exactly-once
//! bookkeeping, retries with bounded backoff, dead letters (DELIVER-1..8).
//!
//! Sans-IO: [`DeliveryEngine::poll`] says what to send now; the driver sends
//! and reports back with [`DeliveryEngine::ack`]. Only the head of a
//! thread's queue is ever in flight, which is what keeps one process's
//! notifications in order (DELIVER-5).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde::{Deserialize, Serialize};

use crate::persist::{self, FileProblem};
use crate::registry::RunId;
use crate::router::Destination;

const FORMAT: &str = "procroute.delivery";
const VERSION: u64 = 1;

/// What makes a notification unique (DELIVER-3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum NotificationId {
    /// A process event's notification.
    Process {
        /// The run.
        run: RunId,
        /// The event's number in the run.
        seq: u32,
    },
    /// A shutdown notice.
    Shutdown {
        /// Which shutdown (they are counted across restarts).
        epoch: u64,
        /// The thread's number among that shutdown's notices.
        index: u32,
    },
}

/// What a notification is (TEXT-1). Typed, so no reader ever learns it
/// from the rendered text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoticeKind {
    /// Output matched a watch pattern.
    WatchMatch,
    /// Watching was switched off (strikes).
    WatchDisabled,
    /// The process ended.
    Completion,
    /// The gateway is going down.
    Shutdown,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
/// A rendered notification with its identity and destination.
pub struct Notification {
    /// What makes it unique (delivered at most once).
    pub id: NotificationId,
    /// What it is.
    pub kind: NoticeKind,
    /// The thread it goes to.
    pub destination: Destination,
    /// The text the adapter posts.
    pub text: String,
}

/// Why a notification was dead-lettered, typed (ROUTE-4, DELIVER-4,
/// DELIVER-7); the reason text says it in words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeadCause {
    /// The adapter failed every attempt (DELIVER-4).
    AdapterFailed,
    /// The queue was full (DELIVER-7).
    Backpressure,
    /// No route (ROUTE-3, ROUTE-4).
    NoRoute,
    /// Stored and captured origins disagree (ROUTE-5).
    OriginConflict,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
/// The delivery engine's limits, hermes-compatible defaults.
pub struct DeliveryLimits {
    /// Sends per notification before it is dead-lettered.
    pub max_attempts: u32,
    /// First retry after this many ms, doubling per attempt.
    pub backoff_base_ms: u64,
    /// Retries wait at most this many ms.
    pub backoff_max_ms: u64,
    /// Remembered delivered ids (exactly-once window).
    pub delivered_log_max: usize,
    /// Queued notifications across all threads; beyond this, enqueue is
    /// refused with back-pressure (never a silent drop).
    pub queue_max: usize,
    /// Dead letters kept (the oldest are forgotten; the count stays).
    pub dead_letter_max: usize,
    /// The gateway ticks at least this often; a notification for an idle
    /// thread is sent within one tick (DELIVER-1).
    pub tick_interval_ms: u64,
}

impl Default for DeliveryLimits {
    fn default() -> DeliveryLimits {
        DeliveryLimits {
            max_attempts: 6,
            backoff_base_ms: 1_000,
            backoff_max_ms: 60_000,
            delivered_log_max: 65_536,
            queue_max: 1_000_000,
            dead_letter_max: 100_000,
            tick_interval_ms: 1_000,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Pending {
    n: Notification,
    attempts: u32,
    not_before_ms: u64,
    in_flight: bool,
    last_error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
/// A notification that will not be delivered, and why.
pub struct DeadLetter {
    /// The notification.
    pub notification: Notification,
    /// Why, as a category.
    pub cause: DeadCause,
    /// Why, in words.
    pub reason: String,
    /// When it was given up (the explicit clock's ms).
    pub at_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
/// Why a notification was not queued.
pub enum EnqueueError {
    #[error("{max} notifications are queued, the limit: the caller must hold this one and retry")]
    /// The queue holds [`DeliveryLimits::queue_max`] notifications already.
    Backpressure {
        /// The limit.
        max: usize,
    },
}

/// What `enqueue` did with a notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enqueued {
    /// Queued for delivery.
    Queued,
    /// Already delivered or already queued: ignored (DELIVER-3).
    Duplicate,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Body {
    queues: Vec<(Destination, Vec<Pending>)>,
    delivered: Vec<NotificationId>,
    dead: Vec<DeadLetter>,
    busy: Vec<Destination>,
    /// Runs whose completion this log holds (or held), newest last.
    #[serde(default)]
    completions: Vec<crate::registry::RunId>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
/// The delivery state machine: per-thread queues, busy threads, retries
/// with backoff, the delivered log that makes delivery exactly-once, dead
/// letters (DELIVER-1..DELIVER-9). No I/O.
pub struct DeliveryEngine {
    limits: DeliveryLimits,
    queues: BTreeMap<Destination, VecDeque<Pending>>,
    queued_ids: BTreeSet<NotificationId>,
    /// Idle threads whose queue's head is not in flight, with the time the
    /// head is due (derived from `queues` and `busy`, kept by
    /// [`DeliveryEngine::refresh`]).
    ready: BTreeMap<Destination, u64>,
    /// The same threads by due time: `poll` takes what is due without
    /// looking at the others (in a busy gateway most threads wait for an
    /// answer, a turn or a backoff, and `poll` runs after every input).
    due: BTreeSet<(u64, Destination)>,
    /// The thread of each notification in flight: what `ack` looks up.
    in_flight: BTreeMap<NotificationId, Destination>,
    busy: BTreeSet<Destination>,
    delivered: BTreeSet<NotificationId>,
    delivered_order: VecDeque<NotificationId>,
    dead: VecDeque<DeadLetter>,
    dead_total: u64,
    /// Runs whose completion was recorded here (bounded like the delivered
    /// log): recovery uses it to tell a finished run from a lost one
    /// (PROC-8).
    completions: BTreeSet<crate::registry::RunId>,
    completions_order: VecDeque<crate::registry::RunId>,
    /// What changed since the last [`DeliveryEngine::take_changes`], when
    /// the gateway keeps a journal (`None`: not tracked).
    changes: Option<crate::changes::Changes<Untaken>>,
}

/// Changes not yet taken: the threads whose queue changed, and the
/// appends to the delivered log, the dead letters and the completions, in
/// order (their bounds drop the oldest, so order matters).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Untaken {
    queues: BTreeSet<Destination>,
    log: Vec<DelOp>,
}

/// Appended log entries kept before a take; beyond it the next take is the
/// whole image (a bound on memory when nothing is persisted for long).
const MAX_UNTAKEN_OPS: usize = 1 << 16;

/// One change to the delivery log's file image, for the journal (issue
/// 22): a thread's whole queue as it now is (queues are short: one
/// notification per process event, the head in flight), or one append to
/// the delivered log, the dead letters or the completions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DeliveryRecord(DelOp);

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
enum DelOp {
    /// The thread's queue, as the file image holds it (nothing in flight).
    Queue {
        destination: Destination,
        items: Vec<Pending>,
    },
    /// Delivered (remembered in the exactly-once window).
    Delivered { id: NotificationId },
    /// Dead-lettered.
    Dead { letter: Box<DeadLetter> },
    /// A run's completion is held.
    Completion { run: crate::registry::RunId },
}

impl DeliveryEngine {
    /// An empty engine with these limits.
    pub fn new(limits: DeliveryLimits) -> DeliveryEngine {
        DeliveryEngine {
            limits,
            queues: BTreeMap::new(),
            queued_ids: BTreeSet::new(),
            ready: BTreeMap::new(),
            due: BTreeSet::new(),
            in_flight: BTreeMap::new(),
            busy: BTreeSet::new(),
            delivered: BTreeSet::new(),
            delivered_order: VecDeque::new(),
            dead: VecDeque::new(),
            dead_total: 0,
            completions: BTreeSet::new(),
            completions_order: VecDeque::new(),
            changes: None,
        }
    }

    /// From now on, remember what changes for
    /// [`DeliveryEngine::take_changes`] (a journaling gateway). `full`: the
    /// next take is the whole image.
    pub fn track_changes(&mut self, full: bool) {
        self.changes = Some(crate::changes::Changes::new(full));
    }

    fn queue_changed(&mut self, d: &Destination) {
        if let Some(c) = &mut self.changes {
            if !c.full && !c.set.queues.contains(d) {
                c.set.queues.insert(d.clone());
            }
        }
    }

    fn logged(&mut self, op: impl FnOnce() -> DelOp) {
        if let Some(c) = &mut self.changes {
            if c.full {
                return;
            }
            if c.set.log.len() >= MAX_UNTAKEN_OPS {
                c.full = true;
                c.set = Untaken::default();
                return;
            }
            c.set.log.push(op());
        }
    }

    /// What changed since the last take: `Some(records)` to append, or
    /// `None` when only the whole image will do; then tracking starts
    /// afresh.
    pub fn take_changes(&mut self) -> Option<Vec<DeliveryRecord>> {
        let c = self.changes.as_mut()?;
        if std::mem::take(&mut c.full) {
            c.set = Untaken::default();
            return None;
        }
        let Untaken { queues, log } = std::mem::take(&mut c.set);
        let mut out = Vec::with_capacity(queues.len() + log.len());
        for destination in queues {
            let items = self
                .queues
                .get(&destination)
                .map(|q| {
                    q.iter()
                        .map(|p| Pending {
                            in_flight: false,
                            ..p.clone()
                        })
                        .collect()
                })
                .unwrap_or_default();
            out.push(DeliveryRecord(DelOp::Queue { destination, items }));
        }
        out.extend(log.into_iter().map(DeliveryRecord));
        Some(out)
    }

    /// Applies a journal record to an engine read from its file image
    /// (recovery). The result is checked as a whole when its image is
    /// decoded again ([`DeliveryEngine::decode`]).
    pub fn apply(&mut self, r: DeliveryRecord) {
        match r.0 {
            DelOp::Queue { destination, items } => {
                if let Some(old) = self.queues.remove(&destination) {
                    for p in old {
                        self.queued_ids.remove(&p.n.id);
                    }
                }
                if !items.is_empty() {
                    for p in &items {
                        self.queued_ids.insert(p.n.id);
                    }
                    self.queues.insert(destination.clone(), items.into());
                }
                self.refresh(&destination);
            }
            DelOp::Delivered { id } => self.remember(id),
            DelOp::Dead { letter } => {
                let l = *letter;
                self.dead_letter(l.notification, l.cause, l.reason, l.at_ms);
            }
            DelOp::Completion { run } => self.record_completion(run),
        }
    }

    /// The run's completion is now held by this log (queued, dead-lettered
    /// or about to be sent). Bounded by `delivered_log_max`, oldest first out.
    pub fn record_completion(&mut self, run: crate::registry::RunId) {
        if self.completions.insert(run) {
            self.logged(|| DelOp::Completion { run });
            self.completions_order.push_back(run);
            while self.completions_order.len() > self.limits.delivered_log_max {
                if let Some(old) = self.completions_order.pop_front() {
                    self.completions.remove(&old);
                }
            }
        }
    }

    /// Whether the delivered log holds (or held) the run's completion.
    pub fn has_completion(&self, run: crate::registry::RunId) -> bool {
        self.completions.contains(&run)
    }

    /// Every notification id this log mentions: queued, delivered (within
    /// the window) or dead-lettered.
    fn ids(&self) -> impl Iterator<Item = &NotificationId> {
        self.queued_ids
            .iter()
            .chain(&self.delivered)
            .chain(self.dead.iter().map(|d| &d.notification.id))
    }

    /// The highest run id this log mentions.
    pub fn max_run(&self) -> Option<u64> {
        self.ids()
            .filter_map(|id| match id {
                NotificationId::Process { run, .. } => Some(run.0),
                NotificationId::Shutdown { .. } => None,
            })
            .chain(self.completions.iter().map(|r| r.0))
            .max()
    }

    /// The highest shutdown epoch this log mentions: a gateway restarted
    /// from it numbers its next shutdown above, or the new notices would be
    /// taken for delivered duplicates (DELIVER-3, DELIVER-8).
    pub fn max_shutdown_epoch(&self) -> u64 {
        self.ids()
            .filter_map(|id| match id {
                NotificationId::Shutdown { epoch, .. } => Some(*epoch),
                NotificationId::Process { .. } => None,
            })
            .max()
            .unwrap_or(0)
    }

    /// The limits it enforces.
    pub fn limits(&self) -> &DeliveryLimits {
        &self.limits
    }

    /// Queues a notification (DELIVER-3: a duplicate id is ignored).
    pub fn enqueue(&mut self, n: Notification, now_ms: u64) -> Result<Enqueued, EnqueueError> {
        self.enqueue_or_return(n, now_ms).map_err(|(e, _)| e)
    }

    /// [`DeliveryEngine::enqueue`], handing a refused notification back
    /// (the gateway dead-letters it) instead of making the caller keep a
    /// copy of every notification it queues.
    pub(crate) fn enqueue_or_return(
        &mut self,
        n: Notification,
        now_ms: u64,
    ) -> Result<Enqueued, (EnqueueError, Box<Notification>)> {
        if self.delivered.contains(&n.id) || self.queued_ids.contains(&n.id) {
            return Ok(Enqueued::Duplicate);
        }
        if self.queued_ids.len() >= self.limits.queue_max {
            return Err((
                EnqueueError::Backpressure {
                    max: self.limits.queue_max,
                },
                Box::new(n),
            ));
        }
        self.queued_ids.insert(n.id);
        self.queue_changed(&n.destination);
        let q = self.queues.entry(n.destination.clone()).or_default();
        let p = Pending {
            n,
            attempts: 0,
            not_before_ms: now_ms,
            in_flight: false,
            last_error: None,
        };
        let dest = p.n.destination.clone();
        q.push_back(p);
        self.refresh(&dest);
        Ok(Enqueued::Queued)
    }

    /// A turn started in this thread: hold its notifications (DELIVER-2).
    pub fn turn_started(&mut self, d: &Destination) {
        self.busy.insert(d.clone());
        self.refresh(d);
    }

    /// A turn ended in the thread: what waited becomes sendable.
    pub fn turn_ended(&mut self, d: &Destination) {
        self.busy.remove(d);
        self.refresh(d);
    }

    /// Whether a turn is running in the thread.
    pub fn is_busy(&self, d: &Destination) -> bool {
        self.busy.contains(d)
    }

    /// What to send now: the head of every idle thread's queue that is due
    /// and not already in flight.
    pub fn poll(&mut self, now_ms: u64) -> Vec<Notification> {
        let mut out = Vec::new();
        while let Some((at, _)) = self.due.first() {
            if *at > now_ms {
                break;
            }
            let (_, dest) = self.due.pop_first().expect("just seen");
            self.ready.remove(&dest);
            let q = self
                .queues
                .get_mut(&dest)
                .expect("a ready thread has a queue");
            let head = q.front_mut().expect("a ready thread's queue has a head");
            debug_assert!(!head.in_flight && head.not_before_ms <= now_ms);
            head.in_flight = true;
            head.attempts += 1;
            out.push(head.n.clone());
            self.in_flight.insert(head.n.id, dest.clone());
            self.queue_changed(&dest);
        }
        // Thread order, as the queues are kept (what a reader of the
        // outputs expects, whatever the due times were).
        out.sort_by(|a, b| a.destination.cmp(&b.destination));
        out
    }

    /// The adapter's answer for an in-flight notification.
    pub fn ack(&mut self, id: NotificationId, result: Result<(), String>, now_ms: u64) {
        let Some(dest) = self.in_flight.remove(&id) else {
            return; // unknown or stale ack: nothing to do
        };
        debug_assert!(self
            .queues
            .get(&dest)
            .and_then(VecDeque::front)
            .is_some_and(|h| h.n.id == id && h.in_flight));
        self.queue_changed(&dest);
        let q = self.queues.get_mut(&dest).expect("found above");
        match result {
            Ok(()) => {
                q.pop_front();
                self.queued_ids.remove(&id);
                self.remember(id);
            }
            Err(reason) => {
                let head = q.front_mut().expect("found above");
                head.in_flight = false;
                head.last_error = Some(reason.clone());
                if head.attempts >= self.limits.max_attempts {
                    let p = q.pop_front().expect("found above");
                    self.queued_ids.remove(&id);
                    self.dead_letter(
                        p.n,
                        DeadCause::AdapterFailed,
                        format!("adapter failed {} times, last: {reason}", p.attempts),
                        now_ms,
                    );
                } else {
                    let shift = (head.attempts - 1).min(20);
                    let backoff = self
                        .limits
                        .backoff_base_ms
                        .saturating_mul(1 << shift)
                        .min(self.limits.backoff_max_ms);
                    head.not_before_ms = now_ms.saturating_add(backoff);
                }
            }
        }
        if self.queues.get(&dest).is_some_and(VecDeque::is_empty) {
            self.queues.remove(&dest);
        }
        self.refresh(&dest);
    }

    /// Whether `dest`'s head can be sent, recomputed from its queue after
    /// any change to it.
    /// The paired structures agree (debug builds: tests, fuzzing): the
    /// queued-id index is the queues' ids; a notification is in flight
    /// exactly when the in-flight map names it, and only at the head of its
    /// thread's queue (DELIVER-5); the ready and due indexes are what
    /// `refresh` derives from the queues; the delivered log and the
    /// completions each match their order list; nothing queued was
    /// delivered (DELIVER-3). Linear in what is queued, so it looks only
    /// while that is small (a 100,000-notification test would turn
    /// quadratic).
    #[cfg(debug_assertions)]
    pub(crate) fn debug_check(&self) {
        const LOOK_BELOW: usize = 4_096;
        debug_assert_eq!(self.delivered.len(), self.delivered_order.len());
        debug_assert_eq!(self.completions.len(), self.completions_order.len());
        debug_assert_eq!(self.ready.len(), self.due.len());
        if self.queued_ids.len() > LOOK_BELOW || self.delivered.len() > LOOK_BELOW {
            return;
        }
        let mut ids = 0;
        for (dest, q) in &self.queues {
            for (i, p) in q.iter().enumerate() {
                ids += 1;
                debug_assert!(
                    self.queued_ids.contains(&p.n.id),
                    "{:?} not indexed",
                    p.n.id
                );
                debug_assert!(
                    !self.delivered.contains(&p.n.id),
                    "{:?} queued and delivered",
                    p.n.id
                );
                debug_assert_eq!(
                    p.in_flight,
                    self.in_flight.get(&p.n.id) == Some(dest),
                    "{:?}: in-flight flag and map disagree",
                    p.n.id
                );
                debug_assert!(
                    i == 0 || !p.in_flight,
                    "{:?} in flight behind the head",
                    p.n.id
                );
            }
            let idle = !self.busy.contains(dest);
            let expected = q
                .front()
                .filter(|h| idle && !h.in_flight)
                .map(|h| h.not_before_ms);
            debug_assert_eq!(
                self.ready.get(dest).copied(),
                expected,
                "ready index of {dest:?}"
            );
        }
        debug_assert_eq!(ids, self.queued_ids.len(), "queued-id index size");
        for (dest, at) in &self.ready {
            debug_assert!(
                self.queues.contains_key(dest),
                "{dest:?} ready without a queue"
            );
            debug_assert!(
                self.due.contains(&(*at, dest.clone())),
                "{dest:?} ready but not due"
            );
        }
    }

    fn refresh(&mut self, dest: &Destination) {
        let idle = !self.busy.contains(dest);
        let now = self
            .queues
            .get(dest)
            .and_then(VecDeque::front)
            .filter(|h| idle && !h.in_flight)
            .map(|h| h.not_before_ms);
        let before = self.ready.get(dest).copied();
        if now == before {
            return;
        }
        if let Some(at) = before {
            self.due.remove(&(at, dest.clone()));
        }
        match now {
            Some(at) => {
                self.ready.insert(dest.clone(), at);
                self.due.insert((at, dest.clone()));
            }
            None => {
                self.ready.remove(dest);
            }
        }
    }

    /// Records a notification that can never be sent, with its reason
    /// (DELIVER-4). The dead-letter list is bounded; the count is not.
    pub fn dead_letter(&mut self, n: Notification, cause: DeadCause, reason: String, now_ms: u64) {
        self.dead_total += 1;
        self.logged(|| DelOp::Dead {
            letter: Box::new(DeadLetter {
                notification: n.clone(),
                cause,
                reason: reason.clone(),
                at_ms: now_ms,
            }),
        });
        if self.dead.len() >= self.limits.dead_letter_max {
            self.dead.pop_front();
        }
        self.dead.push_back(DeadLetter {
            notification: n,
            cause,
            reason,
            at_ms: now_ms,
        });
    }

    fn remember(&mut self, id: NotificationId) {
        if self.delivered.insert(id) {
            self.logged(|| DelOp::Delivered { id });
            self.delivered_order.push_back(id);
            while self.delivered_order.len() > self.limits.delivered_log_max {
                if let Some(old) = self.delivered_order.pop_front() {
                    self.delivered.remove(&old);
                }
            }
        }
    }

    /// Every notification the engine holds (queued or dead-lettered), for
    /// recovery's consistency check (SEC-2).
    pub fn held(&self) -> impl Iterator<Item = &Notification> {
        self.queues
            .values()
            .flat_map(|q| q.iter().map(|p| &p.n))
            .chain(self.dead.iter().map(|d| &d.notification))
    }

    /// The highest sequence number of `run` that is queued, delivered or
    /// dead-lettered (used by recovery, PROC-8).
    pub fn recorded_seq(&self, run: crate::registry::RunId) -> Option<u32> {
        self.ids()
            .filter_map(|id| match id {
                NotificationId::Process { run: r, seq } if *r == run => Some(*seq),
                _ => None,
            })
            .max()
    }

    /// The runs whose `watch_disabled` notification is queued or
    /// dead-lettered (used by recovery, PROC-5 and PROC-8). One already
    /// delivered was sent after the checkpoint recorded its effect.
    pub fn watch_disabled_runs(&self) -> BTreeSet<crate::registry::RunId> {
        self.queues
            .values()
            .flatten()
            .map(|p| &p.n)
            .chain(self.dead.iter().map(|d| &d.notification))
            .filter(|n| n.kind == NoticeKind::WatchDisabled)
            .filter_map(|n| match n.id {
                NotificationId::Process { run, .. } => Some(run),
                NotificationId::Shutdown { .. } => None,
            })
            .collect()
    }

    /// Whether the notification was delivered (within the remembered window).
    pub fn was_delivered(&self, id: &NotificationId) -> bool {
        self.delivered.contains(id)
    }

    /// The dead letters kept.
    pub fn dead_letters(&self) -> impl Iterator<Item = &DeadLetter> {
        self.dead.iter()
    }

    /// Notifications this engine dead-lettered, those forgotten beyond
    /// `dead_letter_max` included (after a restart, counting from the dead
    /// letters the log kept).
    pub fn dead_total(&self) -> u64 {
        self.dead_total
    }

    /// How many notifications are queued.
    pub fn queued(&self) -> usize {
        self.queued_ids.len()
    }

    /// Notifications that are due for an idle thread and not in flight:
    /// zero after every handled input (DELIVER-1).
    ///
    /// Deliberately a scan of every queue, not a read of the due index
    /// that `poll` takes from: the property tests call it after every
    /// input, so it checks that index against the queues.
    pub fn due_for_idle(&self, now_ms: u64) -> usize {
        self.queues
            .iter()
            .filter(|(d, _)| !self.busy.contains(*d))
            .filter_map(|(_, q)| q.front())
            .filter(|h| !h.in_flight && h.not_before_ms <= now_ms)
            .count()
    }

    /// The earliest time something may become sendable, for the driver's
    /// sleep: the first entry of the due index `poll` takes from.
    pub fn next_due(&self) -> Option<u64> {
        self.due.first().map(|(t, _)| *t)
    }

    /// The file image (DELIVER-6). In-flight sends are recorded as pending:
    /// after a crash they are sent again with the same id, which is what an
    /// idempotent adapter dedupes on.
    pub fn encode(&self) -> Vec<u8> {
        let body = Body {
            queues: self
                .queues
                .iter()
                .map(|(d, q)| {
                    let items = q
                        .iter()
                        .map(|p| Pending {
                            in_flight: false,
                            ..p.clone()
                        })
                        .collect();
                    (d.clone(), items)
                })
                .collect(),
            delivered: self.delivered_order.iter().copied().collect(),
            dead: self.dead.iter().cloned().collect(),
            busy: Vec::new(),
            completions: self.completions_order.iter().copied().collect(),
        };
        persist::encode(FORMAT, VERSION, &body)
    }

    /// Reads a delivery log written by [`DeliveryEngine::encode`].
    pub fn decode(bytes: &[u8], limits: DeliveryLimits) -> Result<DeliveryEngine, FileProblem> {
        let body: Body = persist::decode(FORMAT, VERSION, bytes)?;
        let mut e = DeliveryEngine::new(limits);
        for id in body.delivered {
            e.remember(id);
        }
        for (dest, items) in body.queues {
            for p in items {
                if p.n.destination != dest {
                    return Err(FileProblem::Corrupt {
                        detail: format!("notification {:?} is queued for another thread", p.n.id),
                    });
                }
                if !e.queued_ids.insert(p.n.id) {
                    return Err(FileProblem::Corrupt {
                        detail: format!("notification {:?} is queued twice", p.n.id),
                    });
                }
                // Nothing is in flight in a process that just started,
                // whatever the file says.
                let p = Pending {
                    in_flight: false,
                    ..p
                };
                e.queues.entry(dest.clone()).or_default().push_back(p);
            }
            e.refresh(&dest);
        }
        e.dead_total = body.dead.len() as u64;
        e.dead = body.dead.into();
        for run in body.completions {
            e.record_completion(run);
        }
        Ok(e)
    }
}
