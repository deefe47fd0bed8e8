//! The oracle: what a correct gateway does with a protocol trace, predicted
//! from the trace alone — its clock included — by re-reading SPEC chapters
//! 4, 6 and 7 and PROTOCOL P-8 as the simplest possible program.
//!
//! For every notification a correct gateway must produce it says which run
//! produced it (the step of its spawn), its kind and sequence number, the
//! step it was emitted at, the thread it must reach, the output tokens its
//! text must and may show, and its fate: delivered at exactly which step,
//! or dead-lettered after the specified attempts. For every output
//! operation it says why no notification came of it (cooldown, breaker,
//! no match, …), so a judge can name the rule an extra notification breaks.
//!
//! The rules, as this file reads them (each line cites its rule):
//! - every operation is one input to the gateway; delivery is attempted
//!   after every input (DELIVER-1), `advance` moves the clock first;
//! - a thread's notifications wait while a turn runs there (DELIVER-2), one
//!   at a time in FIFO order (DELIVER-5); a failed send is retried after
//!   1 s, 2 s, 4 s … (capped at 60 s) and dead-lettered after the 6th failed
//!   attempt (DELIVER-4);
//! - watch matching, cooldown, strikes and the breaker as PROC-3..PROC-6
//!   spell them out; a restart resets that volatile state (PROC-8) and ends
//!   every turn (DELIVER-2), and loses the runs whose processes died
//!   (PROC-8); queued notifications survive it (DELIVER-6);
//! - a shutdown queues one notice per thread with a lane (DELIVER-8).
//!
//! Numbers are written here again, on purpose: the model must not read the
//! router's configuration (that would make a wrong limit agree with itself).
//! It imports nothing from the router, registry, delivery, store, key,
//! gateway or text modules (a test enforces it).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde::{Deserialize, Serialize};

pub use crate::trace::{Kind, Place};
use crate::trace::{Trace, TraceOp};

/// The spec's numbers (PROC-4..PROC-7, DELIVER-4), typed in from SPEC.md.
pub mod spec {
    /// PROC-4: a watch match at most once per process per this many ms.
    pub const COOLDOWN_MS: u64 = 15_000;
    /// PROC-5: consecutive strike windows that disable watching.
    pub const STRIKES: u32 = 3;
    /// PROC-6: watch events across all processes per breaker window.
    pub const BREAKER_MAX: u32 = 15;
    /// PROC-6: the breaker's window.
    pub const BREAKER_WINDOW_MS: u64 = 10_000;
    /// PROC-6: how long a tripped breaker stays open.
    pub const BREAKER_PAUSE_MS: u64 = 30_000;
    /// PROC-4: lines of an excerpt.
    pub const EXCERPT_LINES: usize = 20;
    /// PROC-4: characters of an excerpt.
    pub const EXCERPT_CHARS: usize = 2_000;
    /// PROC-3: characters of a completion's output tail.
    pub const TAIL_CHARS: usize = 2_000;
    /// DELIVER-4: sends per notification before it is dead-lettered.
    pub const ATTEMPTS: u32 = 6;
    /// DELIVER-4: the first retry's delay.
    pub const BACKOFF_FIRST_MS: u64 = 1_000;
    /// DELIVER-4: the longest retry delay.
    pub const BACKOFF_CAP_MS: u64 = 60_000;
    /// PROC-1: bytes of a process id.
    pub const PROCESS_ID_BYTES: usize = 128;
    /// PROC-1: watch patterns per process.
    pub const PATTERNS: usize = 32;
    /// PROC-1: bytes of a watch pattern.
    pub const PATTERN_BYTES: usize = 256;
    /// DELIVER-7 (unreachable by generated traces; stated for completeness).
    pub const QUEUE_MAX: usize = 1_000_000;
}

/// Why a completion is owed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Promise {
    /// `notify: true` at spawn (PROC-7).
    Asked,
    /// Watching was disabled by strikes (PROC-5).
    Promoted,
}

/// Why a pending notification was not sent at a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    /// A turn runs in its thread (DELIVER-2).
    Busy,
    /// An earlier notification of its thread is not resolved (DELIVER-5).
    BehindHead,
    /// Its retry is not due yet (DELIVER-4).
    Backoff,
    /// It was attempted and the adapter failed (DELIVER-4).
    Failed,
}

#[derive(Debug, Clone, PartialEq, Eq)]
/// What becomes of a predicted notification.
pub enum Fate {
    /// Delivered at this step.
    Delivered {
        /// The step.
        step: usize,
    },
    /// Dead-lettered at this step (retries exhausted, DELIVER-4).
    DeadLettered {
        /// The step.
        step: usize,
    },
    /// Still queued when the trace ended (a trace without quiescence).
    Pending,
    /// Acknowledged at this step by a read of its run's home thread, under
    /// the declared policy `read_acknowledges: own_thread_after_delivery`
    /// (PROC-11, D-1): it must never be delivered nor dead-lettered.
    Acknowledged {
        /// The step of the acknowledging read.
        step: usize,
    },
}

/// What an agent's read of a process does to its notifications: the
/// declared policy of SPEC D-1 (PROTOCOL P-15).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReadAck {
    /// A read changes nothing (PROC-10, the default).
    #[default]
    Never,
    /// A read by the home thread's agent, after the run ended, while its
    /// completion is still queued and the adapter is up, acknowledges that
    /// completion (PROC-11).
    OwnThreadAfterDelivery,
}

impl ReadAck {
    /// The protocol's name for it.
    pub fn as_str(self) -> &'static str {
        match self {
            ReadAck::Never => "never",
            ReadAck::OwnThreadAfterDelivery => "own_thread_after_delivery",
        }
    }
}

/// One notification a correct gateway produces.
#[derive(Debug, Clone)]
pub struct Expected {
    /// Index in [`Prediction::items`].
    pub index: usize,
    /// What it is.
    pub kind: Kind,
    /// The process it is about (`None` for a shutdown notice).
    pub process: Option<String>,
    /// The step of the spawn that started the run.
    pub run: Option<usize>,
    /// Its number among the run's notifications, from 0.
    pub seq: u32,
    /// The thread it must reach: its process's home (ROUTE-1).
    pub place: Place,
    /// The step it was emitted at.
    pub emitted: usize,
    /// The output operation a watch match came from.
    pub source_op: Option<usize>,
    /// The watch pattern a match came from.
    pub pattern: Option<String>,
    /// Matches dropped before it that it must count (TEXT-4).
    pub suppressed: u64,
    /// Tokens the text must show (excerpt lines, the tail since the last
    /// restart) and may show (the excerpt; all of the run's output).
    pub must_show: BTreeSet<String>,
    /// Tokens the text may show (see `must_show`).
    pub may_show: BTreeSet<String>,
    /// Why a completion is owed, if it is one.
    pub promise: Option<Promise>,
    /// The rule whose boundary this notification sits exactly on (admitted
    /// at the instant a cooldown or breaker window ended): losing it is a
    /// wrong limit, not a lost message.
    pub edge: Option<&'static str>,
    /// When it is delivered, dead-lettered, or still pending.
    pub fate: Fate,
    /// Steps it was pending at, and why it was not sent then.
    pub held: Vec<(usize, Hold)>,
    /// Order of delivery within its thread (0, 1, …), for DELIVER-5.
    pub order: Option<usize>,
    /// How many sends a correct gateway makes.
    pub attempts: u32,
    /// A crash-point run may lack it: emitted during the step the gateway
    /// crashed in, or a shutdown notice for a thread whose only lane was
    /// made during such a step (the store write may not have happened).
    pub optional: bool,
    /// A crash-point run may deliver it at another step or with another
    /// fate: it was queued across a crash, and the crash may have taken
    /// the record of an attempt with it (DELIVER-6 resends it).
    pub loose: bool,
}

/// What became of one output operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Its process is not running (or never was): nothing happens.
    NotRunning,
    /// Its run does not watch, or watching was disabled before (PROC-5).
    NotWatching,
    /// No line matched (PROC-3).
    NoMatch,
    /// Matched, dropped by the per-process cooldown (PROC-4).
    Cooldown,
    /// Matched, dropped by the global breaker (PROC-6).
    Breaker,
    /// Matched, and the 3rd strike disabled watching (PROC-5).
    StrikeOut,
    /// A watch match was emitted: item index.
    Emitted(usize),
}

impl Verdict {
    /// The rule a notification from this operation would break.
    pub fn rule(self) -> &'static str {
        match self {
            Verdict::NotRunning => "PROC-7",
            Verdict::NotWatching | Verdict::StrikeOut => "PROC-5",
            Verdict::NoMatch => "PROC-3",
            Verdict::Cooldown => "PROC-4",
            Verdict::Breaker => "PROC-6",
            Verdict::Emitted(_) => "INV-3",
        }
    }
}

/// A run of a process, as the model tracks it.
#[derive(Debug, Clone)]
pub struct RunInfo {
    /// The step of its spawn.
    pub spawn_step: usize,
    /// The process id.
    pub process: String,
    /// The thread its notifications must reach.
    pub home: Place,
    /// That thread's index in the trace.
    pub thread: usize,
    /// Its watch patterns.
    pub watch: Vec<String>,
    /// Why its completion is owed, if it is.
    pub promise: Option<Promise>,
    /// Still running at the end of the trace.
    pub running: bool,
    /// The step it ended at, if it did.
    pub ended_at: Option<usize>,
    /// Every token this run printed.
    pub tokens: BTreeSet<String>,
    /// It printed a character TEXT-2 says must be shown escaped.
    pub controls: bool,
    disabled: bool,
    next_seq: u32,
    cooldown_until: Option<u64>,
    strike_window: bool,
    strikes: u32,
    suppressed: u64,
    /// Output kept for the completion (the last TAIL_CHARS characters).
    tail: String,
    /// Restarted since its last output: the durable tail is only as fresh
    /// as the last checkpoint (PROC-8), so the next chunk's first word may
    /// run on from a line the model does not know.
    restarted: bool,
    /// Tokens printed since the run's last restart (before a restart the
    /// tail is only as fresh as the last checkpoint: PROC-8).
    fresh: BTreeSet<String>,
    /// It lived through a restart: its tail is then bounded below (the
    /// output since the restart) but not above (a checkpointed tail may
    /// be older than the last 2,000 characters), PROC-7.
    lived_restart: bool,
}

/// Everything the oracle predicts for a trace.
#[derive(Debug, Clone, Default)]
pub struct Prediction {
    /// Every notification, in the order emitted.
    pub items: Vec<Expected>,
    /// Every run, in spawn order.
    pub runs: Vec<RunInfo>,
    /// Output operation step → what came of it.
    pub verdicts: BTreeMap<usize, Verdict>,
    /// Token → (run index in `runs`, output step).
    pub tokens: BTreeMap<String, (usize, usize)>,
    /// Per step: places with a turn running after the step.
    pub busy: Vec<BTreeSet<Place>>,
    /// Per step: the adapter is up after the step.
    pub up: Vec<bool>,
    /// Per step: the thread of the latest foreground operation so far.
    pub foreground: Vec<Option<Place>>,
    /// Places that have a lane (after the whole trace).
    pub laned: BTreeSet<Place>,
    /// Rules the trace exercises, counted from the model's view.
    pub exercised: BTreeSet<&'static str>,
    /// Places of the trace's threads, by index.
    pub places: Vec<Place>,
}

impl Prediction {
    /// The runs of `process` spawned at or before `step`.
    pub fn runs_of<'a>(
        &'a self,
        process: &'a str,
        step: usize,
    ) -> impl Iterator<Item = &'a RunInfo> {
        self.runs
            .iter()
            .filter(move |r| r.process == process && r.spawn_step <= step)
    }
}

#[derive(Debug, Default)]
struct Breaker {
    /// The open window's start; a window opens at the first watch event
    /// that passes the cooldown while none is open (PROC-6).
    window_start: Option<u64>,
    hits: u32,
    paused_until: Option<u64>,
}

struct Pend {
    item: usize,
    not_before: u64,
}

struct World {
    p: Prediction,
    now: u64,
    up: bool,
    busy: BTreeSet<Place>,
    current: BTreeMap<String, usize>,
    breaker: Breaker,
    queues: BTreeMap<Place, VecDeque<Pend>>,
    delivered_per_place: BTreeMap<Place, usize>,
    /// Crash-point runs: places whose lane may not exist (made only during
    /// steps the gateway crashed in).
    unsure: BTreeSet<Place>,
    /// Crash-point runs: places where something was queued across a crash.
    /// Its send may come at any later step, and whatever follows it in that
    /// thread waits behind it: their timing is as loose as its.
    loose_places: BTreeSet<Place>,
}

/// Words of a text that look like output tokens (`tok<digits>of<rest>`).
pub fn token_words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| {
            w.strip_prefix("tok").is_some_and(|rest| {
                let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
                digits > 0 && rest[digits..].starts_with("of") && rest.len() > digits + 2
            })
        })
}

/// Lines as PROC-3 defines them: split at `\n`, a `\r` before it dropped.
fn lines(text: &str) -> Vec<&str> {
    let mut v: Vec<&str> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    if text.ends_with('\n') || text.is_empty() {
        v.pop();
    }
    v
}

/// PROC-3: at most EXCERPT_LINES lines and EXCERPT_CHARS characters
/// (joined by `\n`), cut at a line boundary; a first line longer than the
/// limit is cut at a character boundary.
fn excerpt(matched: &[&str]) -> String {
    let mut out = String::new();
    let mut chars = 0;
    for (i, line) in matched.iter().take(spec::EXCERPT_LINES).enumerate() {
        let n = line.chars().count() + usize::from(i > 0);
        if chars + n > spec::EXCERPT_CHARS {
            if i == 0 {
                out = line.chars().take(spec::EXCERPT_CHARS).collect();
            }
            break;
        }
        if i > 0 {
            out.push('\n');
        }
        out.push_str(line);
        chars += n;
    }
    out
}

fn backoff(attempts: u32) -> u64 {
    let mut b = spec::BACKOFF_FIRST_MS;
    for _ in 1..attempts {
        b = (b * 2).min(spec::BACKOFF_CAP_MS);
    }
    b.min(spec::BACKOFF_CAP_MS)
}

fn place_of(o: &crate::trace::RawOrigin) -> Place {
    Place {
        platform: o.platform.clone(),
        chat_type: o.chat_type.clone(),
        chat_id: o.chat_id.clone(),
        thread_id: o.thread_id.clone(),
    }
}

/// Predicts a trace. `crashes` are steps after which the gateway crashed
/// and recovered with every process alive (crash-point runs): the model
/// applies a restart there, and notifications emitted at those steps may be
/// missing (the crash may have come before they were durable).
pub fn predict(trace: &Trace, crashes: &BTreeSet<usize>) -> Prediction {
    predict_with(trace, crashes, ReadAck::Never)
}

/// [`predict`] for an implementation that declared `ack`, the read policy
/// of SPEC D-1 (PROTOCOL P-15).
pub fn predict_with(trace: &Trace, crashes: &BTreeSet<usize>, ack: ReadAck) -> Prediction {
    let places: Vec<Place> = trace.threads.iter().map(place_of).collect();
    let mut w = World::new(places.clone());
    let mut walk = Walk {
        places: &places,
        ack,
        foreground: None,
        token_count: BTreeMap::new(),
    };
    for (step, op) in trace.ops.iter().enumerate() {
        let laned_before = w.p.laned.clone();
        let items_before = w.p.items.len();
        w.apply(step, op, &mut walk);
        if crashes.contains(&step) {
            w.crashed_at(step, &laned_before, items_before);
        } else if let Some(pl) = op_thread(op).and_then(|t| places.get(t)) {
            // A lane made again outside a crash is certain.
            w.unsure.remove(pl);
        }
        w.flush(step);
        w.p.busy.push(w.busy.clone());
        w.p.up.push(w.up);
        w.p.foreground.push(walk.foreground.clone());
    }
    // One record per step: a later step's judging reads its own state.
    debug_assert_eq!(w.p.busy.len(), trace.ops.len(), "per-step records");
    debug_assert_eq!(w.p.foreground.len(), trace.ops.len(), "per-step records");
    // Tokens printed by more than one output operation identify nothing.
    for (t, n) in walk.token_count {
        if n > 1 {
            w.p.tokens.remove(&t);
        }
    }
    w.note_coverage(trace);
    w.p
}

/// What a prediction carries from one operation to the next, besides the
/// world.
struct Walk<'a> {
    places: &'a [Place],
    ack: ReadAck,
    /// The thread of the latest foreground operation (INV-6's suspect).
    foreground: Option<Place>,
    /// Output operations that printed each token.
    token_count: BTreeMap<String, usize>,
}

impl World {
    fn new(places: Vec<Place>) -> World {
        World {
            p: Prediction {
                places,
                ..Prediction::default()
            },
            now: 0,
            up: true,
            busy: BTreeSet::new(),
            current: BTreeMap::new(),
            breaker: Breaker::default(),
            queues: BTreeMap::new(),
            delivered_per_place: BTreeMap::new(),
            unsure: BTreeSet::new(),
            loose_places: BTreeSet::new(),
        }
    }

    /// Applies one operation. A spawn the model refuses (no such thread,
    /// or beyond SPEC's limits) starts nothing; the step goes on like any
    /// other (what is due is flushed, its per-step records kept).
    fn apply(&mut self, step: usize, op: &TraceOp, walk: &mut Walk<'_>) {
        let place = |t: &usize| walk.places.get(*t).cloned();
        match op {
            TraceOp::Message { thread } | TraceOp::Reset { thread } => {
                if let Some(pl) = place(thread) {
                    self.p.laned.insert(pl.clone());
                    walk.foreground = Some(pl);
                }
            }
            TraceOp::TurnStart { thread } => {
                if let Some(pl) = place(thread) {
                    self.p.laned.insert(pl.clone());
                    self.busy.insert(pl.clone());
                    walk.foreground = Some(pl);
                }
            }
            TraceOp::TurnEnd { thread } => {
                if let Some(pl) = place(thread) {
                    if self.busy.remove(&pl) {
                        self.p.exercised.insert("DELIVER-2");
                    }
                }
            }
            TraceOp::Spawn {
                thread,
                process,
                watch,
                notify,
            } => {
                if let Some(home) = place(thread) {
                    self.spawn(step, *thread, home, process, watch, *notify);
                }
            }
            TraceOp::Output { process, text } => {
                let verdict = self.output(step, process, text, &mut walk.token_count);
                self.p.verdicts.insert(step, verdict);
            }
            TraceOp::Exit { process, .. } | TraceOp::Kill { process } => {
                if let Some(&r) = self.current.get(process) {
                    if self.p.runs[r].running {
                        self.finish(step, r);
                    }
                }
            }
            // PROC-10: an agent reading a process's output, from any
            // thread, changes nothing about its notifications — unless the
            // implementation declared D-1's policy (PROC-11).
            TraceOp::Read { thread, process } => {
                if let Some(&r) = self.current.get(process) {
                    self.p.exercised.insert("PROC-10");
                    let acked = walk.ack == ReadAck::OwnThreadAfterDelivery
                        && place(thread).is_some_and(|pl| self.acknowledge(step, r, &pl));
                    if acked {
                        self.p.exercised.insert("PROC-11");
                    }
                }
            }
            TraceOp::Advance { ms } => self.now = self.now.saturating_add(*ms),
            TraceOp::Adapter { up } => self.up = *up,
            TraceOp::Restart { survive } => self.restart(step, *survive),
            TraceOp::Shutdown => self.shutdown(step),
        }
    }

    /// A spawn in `home` (PROC-1): its lane exists; within SPEC's limits
    /// the run starts, its promise asked or not.
    fn spawn(
        &mut self,
        step: usize,
        thread: usize,
        home: Place,
        process: &str,
        watch: &[String],
        notify: bool,
    ) {
        self.p.laned.insert(home.clone());
        let valid = !process.is_empty()
            && process.len() <= spec::PROCESS_ID_BYTES
            && watch.len() <= spec::PATTERNS
            && watch
                .iter()
                .all(|p| !p.is_empty() && p.len() <= spec::PATTERN_BYTES);
        if !valid {
            return;
        }
        if let Some(prev) = self.current.get(process) {
            if self.p.runs[*prev].home != home {
                self.p.exercised.insert("INV-1");
            }
        }
        self.current.insert(process.to_owned(), self.p.runs.len());
        self.p.runs.push(RunInfo {
            spawn_step: step,
            process: process.to_owned(),
            home,
            thread,
            watch: watch.to_vec(),
            promise: notify.then_some(Promise::Asked),
            running: true,
            ended_at: None,
            tokens: BTreeSet::new(),
            controls: false,
            disabled: false,
            next_seq: 0,
            cooldown_until: None,
            strike_window: false,
            strikes: 0,
            suppressed: 0,
            tail: String::new(),
            restarted: false,
            fresh: BTreeSet::new(),
            lived_restart: false,
        });
    }

    /// DELIVER-8, TEXT-3: one notice per thread with a lane (optional where
    /// the lane itself is unsure).
    fn shutdown(&mut self, step: usize) {
        self.p.exercised.insert("DELIVER-8");
        self.p.exercised.insert("TEXT-3");
        for pl in self.p.laned.clone() {
            let optional = self.unsure.contains(&pl);
            self.push(
                step,
                Kind::Shutdown,
                None,
                None,
                0,
                pl,
                Expected {
                    optional,
                    ..Expected::blank()
                },
            );
        }
    }

    /// The gateway crashed during `step` and recovered, every process
    /// alive: what the step made may be missing (its lanes unsure, its
    /// notifications optional, completions' tails bounded below only), what
    /// was queued across it is loose in time; then the restart itself.
    fn crashed_at(&mut self, step: usize, laned_before: &BTreeSet<Place>, items_before: usize) {
        for pl in self.p.laned.difference(laned_before) {
            self.unsure.insert(pl.clone());
        }
        for e in &mut self.p.items[items_before..] {
            e.optional = true;
            // Its tail may come from a checkpoint older than the
            // crash: bounded below, not above (PROC-7, PROC-8).
            if let Some(run) = self.p.runs.iter().find(|r| Some(r.spawn_step) == e.run) {
                if e.kind == Kind::Completion {
                    e.may_show = run.tokens.clone();
                }
            }
        }
        for (pl, q) in &self.queues {
            for pend in q {
                self.p.items[pend.item].loose = true;
            }
            if !q.is_empty() {
                self.loose_places.insert(pl.clone());
            }
        }
        self.restart(step, true);
    }
}

impl Expected {
    fn blank() -> Expected {
        Expected {
            index: 0,
            kind: Kind::Shutdown,
            process: None,
            run: None,
            seq: 0,
            place: Place {
                platform: String::new(),
                chat_type: String::new(),
                chat_id: String::new(),
                thread_id: None,
            },
            emitted: 0,
            source_op: None,
            pattern: None,
            suppressed: 0,
            must_show: BTreeSet::new(),
            may_show: BTreeSet::new(),
            promise: None,
            edge: None,
            fate: Fate::Pending,
            held: Vec::new(),
            order: None,
            attempts: 0,
            optional: false,
            loose: false,
        }
    }
}

impl World {
    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        step: usize,
        kind: Kind,
        process: Option<String>,
        run: Option<usize>,
        seq: u32,
        place: Place,
        rest: Expected,
    ) -> usize {
        let index = self.p.items.len();
        // Behind one whose timing a crash made uncertain (in the model's
        // queue, or maybe still in the gateway's: `loose_places`), or whose
        // very existence it did (its lane may be gone, so its attempts and
        // backoff may never have held this one back): so is this one's.
        let loose = self.loose_places.contains(&place)
            || self.queues.get(&place).is_some_and(|q| {
                q.iter()
                    .any(|p| self.p.items[p.item].loose || self.p.items[p.item].optional)
            });
        self.p.items.push(Expected {
            index,
            kind,
            process,
            run: run.map(|r| self.p.runs[r].spawn_step),
            seq,
            place: place.clone(),
            emitted: step,
            loose: loose || rest.loose,
            ..rest
        });
        // DELIVER-7: a full queue dead-letters at once (back-pressure).
        let queued: usize = self.queues.values().map(VecDeque::len).sum();
        if queued >= spec::QUEUE_MAX {
            self.p.items[index].fate = Fate::DeadLettered { step };
            return index;
        }
        self.queues.entry(place).or_default().push_back(Pend {
            item: index,
            not_before: self.now,
        });
        index
    }

    fn event(&mut self, step: usize, r: usize, kind: Kind, rest: Expected) -> usize {
        let run = &mut self.p.runs[r];
        let seq = run.next_seq;
        run.next_seq += 1;
        let suppressed = std::mem::take(&mut run.suppressed);
        let (process, home) = (run.process.clone(), run.home.clone());
        self.push(
            step,
            kind,
            Some(process),
            Some(r),
            seq,
            home,
            Expected { suppressed, ..rest },
        )
    }

    fn output(
        &mut self,
        step: usize,
        process: &str,
        text: &str,
        token_count: &mut BTreeMap<String, usize>,
    ) -> Verdict {
        let Some(&r) = self.current.get(process) else {
            return Verdict::NotRunning;
        };
        if !self.p.runs[r].running {
            return Verdict::NotRunning;
        }
        for t in token_words(text) {
            *token_count.entry(t.to_owned()).or_default() += 1;
            self.p.tokens.insert(t.to_owned(), (r, step));
        }
        let now = self.now;
        let run = &mut self.p.runs[r];
        run.tokens.extend(token_words(text).map(str::to_owned));
        let skip = usize::from(std::mem::take(&mut run.restarted));
        run.fresh
            .extend(token_words(text).skip(skip).map(str::to_owned));
        run.controls |= text.chars().any(needs_escape);
        run.tail.push_str(text);
        let n = run.tail.chars().count();
        if n > spec::TAIL_CHARS {
            run.tail = run.tail.chars().skip(n - spec::TAIL_CHARS).collect();
        }
        if run.watch.is_empty() || run.disabled {
            return Verdict::NotWatching;
        }
        // PROC-3: the lines that contain a pattern; the pattern reported is
        // the first (in the spawn's order) that the first such line holds.
        let mut matched: Vec<&str> = Vec::new();
        let mut pattern = None;
        for line in lines(text) {
            if let Some(p) = run.watch.iter().find(|p| line.contains(p.as_str())) {
                matched.push(line.trim_end());
                pattern.get_or_insert_with(|| p.clone());
            }
        }
        let Some(pattern) = pattern else {
            return Verdict::NoMatch;
        };
        self.p.exercised.insert("PROC-3");
        let hits = matched.len() as u64;
        // PROC-4: inside the cooldown window the match is dropped and
        // counted; the window's first drop is a strike (PROC-5).
        if run.cooldown_until.is_some_and(|u| now < u) {
            self.p.exercised.insert("PROC-4");
            run.suppressed += hits;
            if !run.strike_window {
                run.strike_window = true;
                run.strikes += 1;
                if run.strikes >= spec::STRIKES {
                    self.p.exercised.insert("PROC-5");
                    run.disabled = true;
                    if run.promise.is_none() {
                        run.promise = Some(Promise::Promoted);
                    }
                    self.event(step, r, Kind::WatchDisabled, Expected::blank());
                    return Verdict::StrikeOut;
                }
            }
            return Verdict::Cooldown;
        }
        // A window that passed without a drop clears the strikes.
        let edge_cooldown = run.cooldown_until == Some(now);
        if run.cooldown_until.is_some() && !run.strike_window {
            run.strikes = 0;
        }
        run.strike_window = false;
        run.cooldown_until = Some(now + spec::COOLDOWN_MS);
        // PROC-6: the breaker; a match it drops is counted on its process.
        let b = &mut self.breaker;
        let mut edge_breaker = false;
        if let Some(until) = b.paused_until {
            if now < until {
                self.p.runs[r].suppressed += hits;
                return Verdict::Breaker;
            }
            edge_breaker |= now == until;
            b.paused_until = None;
            b.window_start = None;
        }
        match b.window_start {
            Some(start) if now - start < spec::BREAKER_WINDOW_MS => {}
            Some(start) => {
                edge_breaker |= now - start == spec::BREAKER_WINDOW_MS;
                b.window_start = Some(now);
                b.hits = 0;
            }
            None => {
                b.window_start = Some(now);
                b.hits = 0;
            }
        }
        if b.hits >= spec::BREAKER_MAX {
            self.p.exercised.insert("PROC-6");
            b.paused_until = Some(now + spec::BREAKER_PAUSE_MS);
            self.p.runs[r].suppressed += hits;
            return Verdict::Breaker;
        }
        b.hits += 1;
        edge_breaker |= b.hits == spec::BREAKER_MAX;
        let shown = excerpt(&matched);
        let toks: BTreeSet<String> = token_words(&shown).map(str::to_owned).collect();
        let edge = if edge_cooldown {
            Some("PROC-4")
        } else if edge_breaker {
            Some("PROC-6")
        } else {
            None
        };
        let i = self.event(
            step,
            r,
            Kind::WatchMatch,
            Expected {
                source_op: Some(step),
                pattern: Some(pattern),
                must_show: toks.clone(),
                may_show: toks,
                edge,
                ..Expected::blank()
            },
        );
        Verdict::Emitted(i)
    }

    /// The run ended (exit, kill, or lost in a restart): its completion if
    /// one was promised (PROC-7, PROC-5).
    fn finish(&mut self, step: usize, r: usize) {
        let run = &mut self.p.runs[r];
        run.running = false;
        run.ended_at = Some(step);
        let Some(promise) = run.promise else { return };
        self.p.exercised.insert("PROC-7");
        let tail_tokens: BTreeSet<String> = token_words(&run.tail).map(str::to_owned).collect();
        let must: BTreeSet<String> = tail_tokens.intersection(&run.fresh).cloned().collect();
        // PROC-7: the last 2,000 characters and nothing older — unless a
        // restart made the durable tail only as fresh as a checkpoint.
        let may = if run.lived_restart {
            run.tokens.clone()
        } else {
            tail_tokens
        };
        self.event(
            step,
            r,
            Kind::Completion,
            Expected {
                must_show: must,
                may_show: may,
                promise: Some(promise),
                ..Expected::blank()
            },
        );
    }

    /// A gateway restart (PROC-8, DELIVER-2, DELIVER-6): turns end, the
    /// breaker and every run's cooldown, strikes and suppressed count start
    /// afresh, and runs whose process died are lost.
    fn restart(&mut self, step: usize, survive: bool) {
        self.busy.clear();
        self.breaker = Breaker::default();
        if self.queues.values().any(|q| !q.is_empty()) {
            self.p.exercised.insert("DELIVER-6");
        }
        let running: Vec<usize> = (0..self.p.runs.len())
            .filter(|r| self.p.runs[*r].running)
            .collect();
        if !running.is_empty() {
            self.p.exercised.insert("PROC-8");
        }
        for r in running {
            let run = &mut self.p.runs[r];
            run.cooldown_until = None;
            run.strike_window = false;
            run.strikes = 0;
            run.suppressed = 0;
            run.fresh.clear();
            run.restarted = true;
            run.lived_restart = true;
            if !survive {
                self.finish(step, r);
            }
        }
    }

    /// PROC-11: a read by the agent of run `r`'s home thread `reader`,
    /// after the run ended, with the adapter up (the read's result can
    /// reach that thread), acknowledges the run's completions still
    /// queued: they leave the queue and are never sent. Returns whether it
    /// acknowledged any.
    fn acknowledge(&mut self, step: usize, r: usize, reader: &Place) -> bool {
        let run = &self.p.runs[r];
        // A running run has no completion queued yet: nothing to take.
        if run.home != *reader || !self.up {
            return false;
        }
        let spawn = run.spawn_step;
        let Some(q) = self.queues.get_mut(&run.home) else {
            return false;
        };
        let items = &mut self.p.items;
        let before = q.len();
        q.retain(|pend| {
            let e = &mut items[pend.item];
            let acked = e.kind == Kind::Completion && e.run == Some(spawn) && !e.loose;
            if acked {
                e.fate = Fate::Acknowledged { step };
            }
            !acked
        });
        q.len() < before
    }

    /// Delivery after an input (DELIVER-1..5): per idle thread, FIFO, the
    /// head alone in flight; success sends the next one at once.
    fn flush(&mut self, step: usize) {
        let now = self.now;
        for (place, q) in self.queues.iter_mut() {
            let busy = self.busy.contains(place);
            let mut head = true;
            let mut blocked = false;
            let mut i = 0;
            while i < q.len() {
                let item = q[i].item;
                if busy {
                    self.p.items[item].held.push((step, Hold::Busy));
                    i += 1;
                    continue;
                }
                if !head || blocked {
                    self.p.items[item].held.push((step, Hold::BehindHead));
                    i += 1;
                    continue;
                }
                if q[i].not_before > now {
                    self.p.items[item].held.push((step, Hold::Backoff));
                    blocked = true;
                    i += 1;
                    continue;
                }
                let e = &mut self.p.items[item];
                e.attempts += 1;
                if self.up {
                    let n = self.delivered_per_place.entry(place.clone()).or_default();
                    e.order = Some(*n);
                    *n += 1;
                    e.fate = Fate::Delivered { step };
                    q.remove(i);
                    continue;
                }
                self.p.exercised.insert("DELIVER-4");
                e.held.push((step, Hold::Failed));
                if e.attempts >= spec::ATTEMPTS {
                    e.fate = Fate::DeadLettered { step };
                    q.remove(i);
                    continue;
                }
                q[i].not_before = now + backoff(e.attempts);
                head = false;
                i += 1;
            }
        }
        self.queues.retain(|_, q| !q.is_empty());
    }

    fn note_coverage(&mut self, trace: &Trace) {
        let p = &mut self.p;
        let items = &p.items;
        let mut ex: Vec<&'static str> = Vec::new();
        let process_items = items.iter().filter(|e| e.process.is_some()).count();
        if process_items > 0 {
            ex.extend([
                "INV-1",
                "INV-4",
                "ROUTE-4",
                "ROUTE-5",
                "TEXT-1",
                "DELIVER-3",
                "INV-3",
            ]);
        }
        let homes: BTreeSet<&Place> = p.runs.iter().map(|r| &r.home).collect();
        let printed: BTreeSet<usize> = p.tokens.values().map(|(r, _)| *r).collect();
        if homes.len() > 1 && printed.len() > 1 {
            ex.extend(["INV-2", "SEC-1"]);
        }
        if p.laned.len() > 1
            && items.iter().any(|e| e.kind == Kind::Shutdown)
            && !p.tokens.is_empty()
        {
            ex.push("SEC-1");
        }
        let mut per_run: BTreeMap<usize, usize> = BTreeMap::new();
        // Two notifications delivered to one thread: their order is
        // DELIVER-5's (the judge holds a thread's queue to FIFO).
        let mut per_place: BTreeMap<&Place, usize> = BTreeMap::new();
        for e in items {
            if matches!(e.fate, Fate::Delivered { .. }) {
                *per_place.entry(&e.place).or_default() += 1;
            }
        }
        if per_place.values().any(|n| *n > 1) {
            ex.push("DELIVER-5");
        }
        for e in items {
            if let Some(r) = e.run {
                *per_run.entry(r).or_default() += 1;
            }
            if e.suppressed > 0 {
                ex.push("TEXT-4");
            }
            if e.held.iter().any(|(_, h)| *h == Hold::BehindHead) {
                ex.push("DELIVER-5");
            }
            if e.held.iter().any(|(_, h)| *h == Hold::Busy) {
                ex.push("DELIVER-2");
            }
            if let Fate::Delivered { step } = e.fate {
                if step > e.emitted {
                    ex.push("DELIVER-1");
                    if matches!(trace.ops.get(step), Some(TraceOp::Advance { .. })) {
                        ex.push("INV-8");
                    }
                }
            }
            if matches!(e.fate, Fate::DeadLettered { .. }) {
                ex.push("DELIVER-4");
            }
            let controls = trace.ops.get(e.source_op.unwrap_or(usize::MAX)).is_some_and(|op| {
                matches!(op, TraceOp::Output { text, .. } if text.chars().any(needs_escape))
            });
            if controls {
                ex.push("TEXT-2");
            }
        }
        if per_run.values().any(|n| *n > 1) {
            ex.push("INV-5");
        }
        if p.runs.iter().any(|r| !r.running && r.promise.is_none()) {
            ex.push("INV-7");
        }
        // Foreground traffic elsewhere while a notification was pending.
        let fg_elsewhere = items.iter().any(|e| {
            let end = match e.fate {
                Fate::Delivered { step }
                | Fate::DeadLettered { step }
                | Fate::Acknowledged { step } => step,
                Fate::Pending => trace.ops.len(),
            };
            (e.emitted..end).any(|s| {
                p.foreground
                    .get(s)
                    .and_then(|f| f.as_ref())
                    .is_some_and(|f| *f != e.place)
            })
        });
        if fg_elsewhere {
            ex.push("INV-6");
        }
        // Completions of runs whose output has control characters.
        let completes: BTreeSet<usize> = items
            .iter()
            .filter(|e| e.kind == Kind::Completion)
            .filter_map(|e| e.run)
            .collect();
        if p.runs
            .iter()
            .any(|r| r.controls && completes.contains(&r.spawn_step))
        {
            ex.push("TEXT-2");
        }
        p.exercised.extend(ex);
    }
}

/// The thread an operation makes a lane for, if any.
fn op_thread(op: &TraceOp) -> Option<usize> {
    match op {
        TraceOp::Message { thread }
        | TraceOp::TurnStart { thread }
        | TraceOp::Reset { thread }
        | TraceOp::Spawn { thread, .. } => Some(*thread),
        _ => None,
    }
}

/// Characters TEXT-2 says a notification never shows raw: control
/// characters (other than the line feed between lines), bidi controls,
/// line and paragraph separators, the byte-order mark.
pub fn needs_escape(c: char) -> bool {
    (c.is_control() && c != '\n')
        || matches!(c,
            '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
            | '\u{2028}' | '\u{2029}' | '\u{FEFF}' | '\u{061C}')
}
