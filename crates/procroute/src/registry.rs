//! The process registry: background processes, their watch patterns and the
//! events they emit (spec PROC-1..PROC-9).
//!
//! `spawn` takes the origin explicitly — the origin of the turn that started
//! the process. Every event carries that origin, the lane, the process id, a
//! run id and a per-run sequence number. There is no other way to make an
//! event, so there is no way to make one without its origin.

use std::collections::{HashMap, VecDeque};

use serde::{Deserialize, Serialize};

use crate::origin::Origin;
use crate::persist::{self, FileProblem};
use crate::store::Lane;

const FORMAT: &str = "procroute.checkpoint";
const VERSION: u64 = 1;

/// Every limit of the registry in one place, hermes-compatible defaults
/// (PROC-4..PROC-6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// At most one watch event per process per this many ms.
    pub watch_min_interval_ms: u64,
    /// Consecutive strike windows that disable watching.
    pub watch_strike_limit: u32,
    /// Global breaker: at most this many watch events per window...
    pub global_max_per_window: u32,
    /// …per this many ms.
    pub global_window_ms: u64,
    /// ...then no watch events for this long.
    pub global_cooldown_ms: u64,
    /// Output excerpt bounds.
    pub excerpt_max_lines: usize,
    /// At most this many characters of an excerpt.
    pub excerpt_max_chars: usize,
    /// Bytes of output tail kept for the completion notification.
    pub tail_max_chars: usize,
    /// At most this many processes run at once.
    pub max_processes: usize,
    /// At most this many watch patterns per process.
    pub max_patterns: usize,
    /// At most this many bytes per watch pattern.
    pub max_pattern_bytes: usize,
    /// At most this many bytes of command line.
    pub max_command_bytes: usize,
    /// At most this many bytes of process id.
    pub max_process_id_bytes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            watch_min_interval_ms: 15_000,
            watch_strike_limit: 3,
            global_max_per_window: 15,
            global_window_ms: 10_000,
            global_cooldown_ms: 30_000,
            excerpt_max_lines: 20,
            excerpt_max_chars: 2_000,
            tail_max_chars: 2_000,
            max_processes: 100_000,
            max_patterns: 32,
            max_pattern_bytes: 256,
            max_command_bytes: 4_096,
            max_process_id_bytes: 128,
        }
    }
}

/// A run of a process: unique for the registry's lifetime, across restarts
/// (the counter is checkpointed). Two runs of one process id differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RunId(
    /// The number: issued from 1 up, never reused.
    pub u64,
);

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
/// What the agent asks for when it starts a background process.
pub struct SpawnRequest {
    /// The caller's name for the process (`proc_1a2b`), opaque.
    pub process_id: String,
    /// The origin of the turn that started the process.
    pub origin: Origin,
    /// The session key of that origin, under the gateway's policy.
    pub lane: Lane,
    /// The command line, for the notification's text.
    pub command: String,
    #[serde(default)]
    /// Output patterns that notify when they match (PROC-4).
    pub watch_patterns: Vec<String>,
    #[serde(default)]
    /// Notify when the process ends (PROC-3).
    pub notify_on_exit: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
/// Why the registry refused a spawn or a finish.
pub enum RegistryError {
    #[error("{what} is {len} bytes, the limit is {max}")]
    /// A string is longer than its limit.
    TooLong {
        /// Which string (`command`, `process id`, `watch pattern`).
        what: &'static str,
        /// Its length, in bytes.
        len: usize,
        /// The limit, in bytes.
        max: usize,
    },
    #[error("{count} watch patterns, the limit is {max}")]
    /// More watch patterns than [`Limits::max_patterns`].
    TooManyPatterns {
        /// How many were given.
        count: usize,
        /// The limit.
        max: usize,
    },
    #[error("a watch pattern is empty")]
    /// A watch pattern is the empty string (it would match everything).
    EmptyPattern,
    #[error("{max} processes are running, the limit")]
    /// [`Limits::max_processes`] processes are running already.
    Full {
        /// The limit.
        max: usize,
    },
    #[error("run {0:?} is not running")]
    /// The run is not (or no longer) running.
    NotRunning(RunId),
    #[error("process id is empty")]
    /// The process id is the empty string.
    EmptyProcessId,
}

/// How a process ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Completion {
    /// It exited by itself.
    Exited {
        /// Its exit code.
        code: i32,
    },
    /// A signal ended it.
    Signaled {
        /// The signal's number.
        signal: i32,
    },
    /// The agent (or the gateway) killed it.
    Killed,
    /// It vanished across a gateway restart (PROC-8).
    Lost,
    /// It never started.
    FailedToStart {
        /// Why, as the driver reported it.
        reason: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
/// What happened to a process that may need a notification.
pub enum EventKind {
    /// Output matched a watch pattern (PROC-4).
    WatchMatch {
        /// The pattern that matched.
        pattern: String,
        /// The lines around the match, bounded ([`Limits::excerpt_max_lines`],
        /// [`Limits::excerpt_max_chars`]).
        excerpt: String,
        /// Matches dropped (rate limit or breaker) since the last event.
        suppressed: u64,
    },
    /// Watching was switched off after too many strike windows; the process
    /// now notifies on exit (PROC-5).
    WatchDisabled {
        /// Matches dropped since the last event, the strikes' included.
        suppressed: u64,
    },
    /// The process ended (PROC-3).
    Completion {
        /// How it ended.
        completion: Completion,
        /// The end of its output, bounded ([`Limits::tail_max_chars`]).
        tail: String,
        /// Watch matches dropped since the last event.
        suppressed: u64,
    },
}

/// One event, carrying everything routing needs (PROC-2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessEvent {
    /// The run it is about.
    pub run: RunId,
    /// Its number among the run's events, from 0: what makes a delivery
    /// idempotent (DELIVER-3).
    pub seq: u32,
    /// The caller's process id.
    pub process_id: String,
    /// The origin captured at spawn: where the notification goes (ROUTE-1).
    pub origin: Origin,
    /// The session key captured at spawn.
    pub lane: Lane,
    /// The command line.
    pub command: String,
    /// When it happened (the explicit clock's ms).
    pub at_ms: u64,
    /// What happened.
    pub kind: EventKind,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
struct Proc {
    req: SpawnRequest,
    started_ms: u64,
    next_seq: u32,
    notify_on_exit: bool,
    watch_disabled: bool,
    cooldown_until: Option<u64>,
    strike_candidate: bool,
    strikes: u32,
    suppressed: u64,
    tail: String,
    /// `req.watch_patterns`, shared with other runs that watch for the
    /// same (not part of the state: never written, rebuilt from the
    /// patterns when empty).
    #[serde(skip)]
    watch: SharedPatterns,
    /// `req` as JSON, encoded once at spawn ([`ReqJson`]).
    #[serde(skip)]
    req_json: ReqJson,
}

/// A run written as its derived form would write it, with `req` from its
/// [`ReqJson`] when it has one: a compaction writes every run, and at
/// 100,000 runs reading each request's eight allocations (origin ids,
/// lane, command, patterns…) is most of its time; the cached JSON is one.
impl Serialize for Proc {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Proc", 10)?;
        match &self.req_json.0 {
            Some(json) => st.serialize_field("req", json)?,
            None => st.serialize_field("req", &self.req)?,
        }
        st.serialize_field("started_ms", &self.started_ms)?;
        st.serialize_field("next_seq", &self.next_seq)?;
        st.serialize_field("notify_on_exit", &self.notify_on_exit)?;
        st.serialize_field("watch_disabled", &self.watch_disabled)?;
        st.serialize_field("cooldown_until", &self.cooldown_until)?;
        st.serialize_field("strike_candidate", &self.strike_candidate)?;
        st.serialize_field("strikes", &self.strikes)?;
        st.serialize_field("suppressed", &self.suppressed)?;
        st.serialize_field("tail", &self.tail)?;
        st.end()
    }
}

/// A run's spawn request as compact JSON, exactly the bytes serde_json
/// writes for it (the request never changes once spawned). Runs read
/// from a file have none and write `req` itself, the same bytes. A cache
/// of `req`, so it is not compared or shown.
#[derive(Clone, Default)]
struct ReqJson(Option<Box<serde_json::value::RawValue>>);

impl ReqJson {
    fn of(req: &SpawnRequest) -> ReqJson {
        ReqJson(serde_json::value::to_raw_value(req).ok())
    }
}

impl PartialEq for ReqJson {
    fn eq(&self, _: &ReqJson) -> bool {
        true
    }
}

impl Eq for ReqJson {}

impl std::fmt::Debug for ReqJson {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("_")
    }
}

/// A run's watch patterns as the hot path reads them: one allocation
/// shared by runs spawned with the same patterns, so matching output
/// against them reads memory the cache already holds instead of two
/// allocations of the run's own (at 100,000 runs, two cache misses per
/// output). A cache of `req.watch_patterns`, so it is not compared,
/// hashed or shown.
#[derive(Clone, Default)]
struct SharedPatterns(Option<std::sync::Arc<[String]>>);

impl PartialEq for SharedPatterns {
    fn eq(&self, _: &SharedPatterns) -> bool {
        true
    }
}

impl Eq for SharedPatterns {}

impl std::fmt::Debug for SharedPatterns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("_")
    }
}

impl SharedPatterns {
    /// `patterns`, sharing `last`'s allocation when they are the same
    /// (and remembering them in `last` otherwise). None: no patterns.
    fn of(patterns: &[String], last: &mut SharedPatterns) -> SharedPatterns {
        if patterns.is_empty() {
            return SharedPatterns(None);
        }
        match &last.0 {
            Some(shared) if **shared == *patterns => last.clone(),
            _ => {
                *last = SharedPatterns(Some(patterns.into()));
                last.clone()
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
struct Breaker {
    /// The open window's start: a window opens at the first watch event
    /// that passes its cooldown while none is open (PROC-6).
    window_start: Option<u64>,
    window_hits: u32,
    tripped_until: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Body {
    next_run: u64,
    running: Vec<(RunId, Proc)>,
}

/// [`Body`] borrowed, for encoding without cloning every run.
#[derive(Serialize)]
struct BodyRef<'a> {
    next_run: u64,
    running: Vec<(RunId, &'a Proc)>,
}

#[derive(Clone, PartialEq, Eq)]
/// The background processes' state machine: runs, watch rate limits, the
/// global breaker; events out, no I/O (PROC-1..PROC-9).
pub struct Registry {
    limits: Limits,
    next_run: u64,
    /// Hashed, not a tree: one lookup per output, and at 100,000 runs a
    /// tree's path is several cache misses where the table's is one.
    /// Held in the table, not boxed: a box is one more cache miss on
    /// every output. Whatever leaves the registry in order (the image,
    /// [`Registry::running`], lost runs) is sorted by run id first.
    running: HashMap<RunId, Proc, RunHasher>,
    breaker: Breaker,
    /// Runs changed since the last [`Registry::take_changes`], when the
    /// gateway keeps a journal (`None`: not tracked). Hashed with a fixed
    /// seed (run ids are ours, not an attacker's), taken in run order.
    changes: Option<crate::changes::Changes<HashMap<RunId, Change, RunHasher>>>,
    /// `next_run` when changes were last taken.
    taken_next_run: u64,
    /// The watch patterns last shared ([`SharedPatterns`]): a cache, not
    /// state.
    last_patterns: SharedPatterns,
}

type RunHasher = foldhash::fast::FixedState;

/// Runs (and untaken changes) in run order: a debug view, and
/// exploration's state fingerprint, which hashes it, must not depend on
/// the tables' insertion history.
impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let changes = self.changes.as_ref().map(|c| {
            let set: std::collections::BTreeMap<&RunId, &Change> = c.set.iter().collect();
            (c.full, set)
        });
        f.debug_struct("Registry")
            .field("limits", &self.limits)
            .field("next_run", &self.next_run)
            .field("running", &self.sorted())
            .field("breaker", &self.breaker)
            .field("changes", &changes)
            .field("taken_next_run", &self.taken_next_run)
            .finish()
    }
}

/// How a run changed since the last take.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Change {
    /// Spawned: the whole run is recorded.
    New,
    /// Changed: how many bytes its tail gained, and whether its counters
    /// may have changed too. Output only appends to a tail (and trims it
    /// at the front), so what the tail gained is its last `gained` bytes,
    /// or all of it when the trim reached into them; it is read from the
    /// tail when the change is taken, not copied on every output.
    Touched { gained: usize, counters: bool },
    /// Ended.
    Gone,
}

/// One change to the checkpoint's file image, for the journal (STORE-7).
/// Output only appends to a run's tail, so a changed run records its new
/// counters and the characters its tail gained (bounded by
/// [`Limits::tail_max_chars`]), not the whole tail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RegistryRecord(RegOp);

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
enum RegOp {
    /// The next run id to issue.
    Next { next_run: u64 },
    /// A run as it now is.
    Run { run: RunId, p: Box<Proc> },
    /// What a run's tail gained (its counters unchanged): the record of
    /// nearly every output.
    Tail { run: RunId, tail: String },
    /// A run's counters, and what its tail gained.
    Update {
        run: RunId,
        next_seq: u32,
        notify_on_exit: bool,
        watch_disabled: bool,
        cooldown_until: Option<u64>,
        strike_candidate: bool,
        strikes: u32,
        suppressed: u64,
        tail: String,
    },
    /// The run ended.
    End { run: RunId },
}

impl Registry {
    /// The registry's own bookkeeping agrees (debug builds: tests,
    /// fuzzing): every run id was issued (below `next_run`), and the ids
    /// taken for the journal never run ahead of the issued ones.
    #[cfg(debug_assertions)]
    pub(crate) fn debug_check(&self) {
        debug_assert!(self.taken_next_run <= self.next_run);
        if self.running.len() > 4_096 {
            return;
        }
        for run in self.running.keys() {
            debug_assert!(run.0 < self.next_run, "{run:?} was never issued");
        }
    }

    /// An empty registry with these limits.
    pub fn new(limits: Limits) -> Registry {
        Registry {
            limits,
            next_run: 1,
            running: HashMap::default(),
            breaker: Breaker::default(),
            changes: None,
            taken_next_run: 1,
            last_patterns: SharedPatterns::default(),
        }
    }

    /// From now on, remember what changes for [`Registry::take_changes`]
    /// (a journaling gateway). `full`: the next take is the whole image.
    pub fn track_changes(&mut self, full: bool) {
        self.changes = Some(crate::changes::Changes::new(full));
        self.taken_next_run = self.next_run;
    }

    fn mark(&mut self, run: RunId, change: Change) {
        let Some(c) = &mut self.changes else { return };
        if c.full {
            return;
        }
        match (c.set.get_mut(&run), change) {
            (Some(Change::New), Change::Gone) => {
                c.set.remove(&run);
            }
            (Some(Change::New), _) => {}
            (
                Some(Change::Touched { gained, counters }),
                Change::Touched {
                    gained: more,
                    counters: more_counters,
                },
            ) => {
                *gained = gained.saturating_add(more);
                *counters |= more_counters;
            }
            (_, change) => {
                c.set.insert(run, change);
            }
        }
    }

    /// Records that `run`'s tail gained `appended` (and, with `counters`,
    /// that its counters may have changed).
    fn touched(&mut self, run: RunId, appended: &str, counters: bool) {
        self.mark(
            run,
            Change::Touched {
                gained: appended.len(),
                counters,
            },
        );
    }

    /// What changed since the last take: `Some(records)` to append, or
    /// `None` when only the whole image will do; then tracking starts
    /// afresh.
    pub fn take_changes(&mut self) -> Option<Vec<RegistryRecord>> {
        let c = self.changes.as_mut()?;
        let next_run = std::mem::replace(&mut self.taken_next_run, self.next_run);
        if std::mem::take(&mut c.full) {
            c.set.clear();
            return None;
        }
        let mut set: Vec<(RunId, Change)> = c.set.drain().collect();
        set.sort_unstable_by_key(|(run, _)| *run);
        let mut out = Vec::with_capacity(set.len() + 1);
        if next_run != self.next_run {
            out.push(RegistryRecord(RegOp::Next {
                next_run: self.next_run,
            }));
        }
        for (run, change) in set {
            let op = match change {
                Change::Gone => RegOp::End { run },
                Change::New | Change::Touched { .. } => {
                    let p = self
                        .running
                        .get(&run)
                        .expect("a new or touched run that ended was marked gone");
                    match change {
                        Change::Touched {
                            gained,
                            counters: false,
                        } => RegOp::Tail {
                            run,
                            tail: gained_tail(&p.tail, gained).to_owned(),
                        },
                        Change::Touched { gained, .. } => RegOp::Update {
                            run,
                            next_seq: p.next_seq,
                            notify_on_exit: p.notify_on_exit,
                            watch_disabled: p.watch_disabled,
                            cooldown_until: p.cooldown_until,
                            strike_candidate: p.strike_candidate,
                            strikes: p.strikes,
                            suppressed: p.suppressed,
                            tail: gained_tail(&p.tail, gained).to_owned(),
                        },
                        _ => RegOp::Run {
                            run,
                            p: Box::new(p.clone()),
                        },
                    }
                }
            };
            out.push(RegistryRecord(op));
        }
        Some(out)
    }

    /// Reads a checkpoint's file image as it is, for applying journal
    /// records to it (recovery); [`Registry::restore`] checks and
    /// reconciles the result.
    pub fn decode_image(bytes: &[u8], limits: Limits) -> Result<Registry, FileProblem> {
        let body: Body = persist::decode(FORMAT, VERSION, bytes)?;
        let mut reg = Registry::new(limits);
        reg.next_run = body.next_run;
        for (run, p) in body.running {
            if reg.running.insert(run, p).is_some() {
                return Err(FileProblem::Corrupt {
                    detail: format!("run {} appears twice", run.0),
                });
            }
        }
        Ok(reg)
    }

    /// Applies a journal record to an image read by
    /// [`Registry::decode_image`]. A record about a run the image does not
    /// hold is refused: the journal does not belong to this image.
    pub fn apply(&mut self, r: RegistryRecord) -> Result<(), FileProblem> {
        let missing = |run: RunId| FileProblem::Corrupt {
            detail: format!(
                "journal record for run {} that the checkpoint does not hold",
                run.0
            ),
        };
        match r.0 {
            RegOp::Next { next_run } => self.next_run = next_run,
            RegOp::Tail { run, tail } => {
                let max = self.limits.tail_max_chars;
                let p = self.running.get_mut(&run).ok_or_else(|| missing(run))?;
                push_tail(&mut p.tail, &tail, max);
            }
            RegOp::Run { run, p } => {
                self.running.insert(run, *p);
            }
            RegOp::Update {
                run,
                next_seq,
                notify_on_exit,
                watch_disabled,
                cooldown_until,
                strike_candidate,
                strikes,
                suppressed,
                tail,
            } => {
                let max = self.limits.tail_max_chars;
                let p = self.running.get_mut(&run).ok_or_else(|| missing(run))?;
                p.next_seq = next_seq;
                p.notify_on_exit = notify_on_exit;
                p.watch_disabled = watch_disabled;
                p.cooldown_until = cooldown_until;
                p.strike_candidate = strike_candidate;
                p.strikes = strikes;
                p.suppressed = suppressed;
                push_tail(&mut p.tail, &tail, max);
            }
            RegOp::End { run } => {
                self.running.remove(&run).ok_or_else(|| missing(run))?;
            }
        }
        Ok(())
    }

    /// The limits it enforces.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The next run id to be issued; every run id below it was issued.
    pub fn next_run(&self) -> u64 {
        self.next_run
    }

    /// The running runs and what started each, in run-id order.
    ///
    /// Cost: the runs live in a hash table (the hot path looks one up per
    /// output), so this collects and sorts them, O(n log n) per call.
    /// Call it once per view, not in a loop; [`Registry::running_count`]
    /// is O(1).
    pub fn running(&self) -> impl Iterator<Item = (RunId, &SpawnRequest)> {
        self.sorted().into_iter().map(|(r, p)| (r, &p.req))
    }

    /// The runs in run-id order.
    fn sorted(&self) -> Vec<(RunId, &Proc)> {
        let mut v: Vec<(RunId, &Proc)> = self.running.iter().map(|(r, p)| (*r, p)).collect();
        v.sort_unstable_by_key(|(r, _)| *r);
        v
    }

    /// How many runs are running.
    pub fn running_count(&self) -> usize {
        self.running.len()
    }

    /// Whether `run` is still running.
    pub fn is_running(&self, run: RunId) -> bool {
        self.running.contains_key(&run)
    }

    /// Starts tracking a process (PROC-1). Validates every limit first.
    pub fn spawn(&mut self, req: SpawnRequest, now_ms: u64) -> Result<RunId, RegistryError> {
        let l = &self.limits;
        let too_long = |what, len, max| {
            if len > max {
                Err(RegistryError::TooLong { what, len, max })
            } else {
                Ok(())
            }
        };
        if req.process_id.is_empty() {
            return Err(RegistryError::EmptyProcessId);
        }
        too_long("process id", req.process_id.len(), l.max_process_id_bytes)?;
        too_long("command", req.command.len(), l.max_command_bytes)?;
        if req.watch_patterns.len() > l.max_patterns {
            return Err(RegistryError::TooManyPatterns {
                count: req.watch_patterns.len(),
                max: l.max_patterns,
            });
        }
        for p in &req.watch_patterns {
            if p.is_empty() {
                return Err(RegistryError::EmptyPattern);
            }
            too_long("watch pattern", p.len(), l.max_pattern_bytes)?;
        }
        if self.running.len() >= l.max_processes {
            return Err(RegistryError::Full {
                max: l.max_processes,
            });
        }
        let run = RunId(self.next_run);
        self.next_run += 1;
        let notify_on_exit = req.notify_on_exit;
        let watch = SharedPatterns::of(&req.watch_patterns, &mut self.last_patterns);
        let req_json = ReqJson::of(&req);
        self.running.insert(
            run,
            Proc {
                watch,
                req_json,
                req,
                started_ms: now_ms,
                next_seq: 0,
                notify_on_exit,
                watch_disabled: false,
                cooldown_until: None,
                strike_candidate: false,
                strikes: 0,
                suppressed: 0,
                tail: String::new(),
            },
        );
        self.mark(run, Change::New);
        Ok(run)
    }

    fn event(p: &mut Proc, run: RunId, now_ms: u64, kind: EventKind) -> ProcessEvent {
        let seq = p.next_seq;
        p.next_seq += 1;
        ProcessEvent {
            run,
            seq,
            process_id: p.req.process_id.clone(),
            origin: p.req.origin.clone(),
            lane: p.req.lane.clone(),
            command: p.req.command.clone(),
            at_ms: now_ms,
            kind,
        }
    }

    /// A chunk of output (PROC-3..PROC-6). Lines are matched within the
    /// chunk, as hermes-agent does; the first matching pattern is reported.
    pub fn output(
        &mut self,
        run: RunId,
        chunk: &str,
        now_ms: u64,
    ) -> Result<Vec<ProcessEvent>, RegistryError> {
        let limits = self.limits.clone();
        let p = self
            .running
            .get_mut(&run)
            .ok_or(RegistryError::NotRunning(run))?;
        if p.watch.0.is_none() && !p.req.watch_patterns.is_empty() {
            // Restored from a file: share its patterns from now on.
            p.watch = SharedPatterns::of(&p.req.watch_patterns, &mut self.last_patterns);
        }
        // One scan of the chunk (PROC-3): the matching lines, and the
        // first pattern (in the spawn's order) that the first of them holds.
        let patterns: &[String] = p.watch.0.as_deref().unwrap_or_default();
        let watching = !patterns.is_empty() && !p.watch_disabled;
        let mut matched: Vec<&str> = Vec::new();
        let mut pattern: Option<String> = None;
        if watching {
            for line in chunk.lines() {
                if let Some(pat) = patterns.iter().find(|pat| line.contains(pat.as_str())) {
                    matched.push(line.trim_end());
                    pattern.get_or_insert_with(|| pat.clone());
                }
            }
        }
        let matched_any = pattern.is_some();
        let p = self.running.get_mut(&run).expect("looked up above");
        push_tail(&mut p.tail, chunk, limits.tail_max_chars);
        self.touched(run, chunk, matched_any);
        let p = self.running.get_mut(&run).expect("looked up above");
        let Some(pattern) = pattern else {
            return Ok(Vec::new());
        };
        // Per-process cooldown and strikes (PROC-4, PROC-5).
        if p.cooldown_until.is_some_and(|until| now_ms < until) {
            p.suppressed += matched.len() as u64;
            if !p.strike_candidate {
                p.strike_candidate = true;
                p.strikes += 1;
                if p.strikes >= limits.watch_strike_limit {
                    p.watch_disabled = true;
                    p.notify_on_exit = true;
                    let suppressed = std::mem::take(&mut p.suppressed);
                    return Ok(vec![Registry::event(
                        p,
                        run,
                        now_ms,
                        EventKind::WatchDisabled { suppressed },
                    )]);
                }
            }
            return Ok(Vec::new());
        }
        if p.cooldown_until.is_some() && !p.strike_candidate {
            p.strikes = 0;
        }
        p.strike_candidate = false;
        p.cooldown_until = Some(now_ms.saturating_add(limits.watch_min_interval_ms));
        // Global breaker (PROC-6): a dropped match is counted on its own
        // process and reported on that process's next event — never as an
        // origin-less broadcast.
        let b = &mut self.breaker;
        if let Some(until) = b.tripped_until {
            if now_ms < until {
                p.suppressed += matched.len() as u64;
                return Ok(Vec::new());
            }
            b.tripped_until = None;
            b.window_start = None;
        }
        if !b
            .window_start
            .is_some_and(|start| now_ms.saturating_sub(start) < limits.global_window_ms)
        {
            b.window_start = Some(now_ms);
            b.window_hits = 0;
        }
        if b.window_hits >= limits.global_max_per_window {
            b.tripped_until = Some(now_ms.saturating_add(limits.global_cooldown_ms));
            p.suppressed += matched.len() as u64;
            return Ok(Vec::new());
        }
        b.window_hits += 1;
        let excerpt = excerpt(&matched, limits.excerpt_max_lines, limits.excerpt_max_chars);
        let suppressed = std::mem::take(&mut p.suppressed);
        Ok(vec![Registry::event(
            p,
            run,
            now_ms,
            EventKind::WatchMatch {
                pattern,
                excerpt,
                suppressed,
            },
        )])
    }

    /// The process ended (exit code or signal) or was killed (PROC-7).
    pub fn finish(
        &mut self,
        run: RunId,
        completion: Completion,
        now_ms: u64,
    ) -> Result<Vec<ProcessEvent>, RegistryError> {
        let mut p = self
            .running
            .remove(&run)
            .ok_or(RegistryError::NotRunning(run))?;
        self.mark(run, Change::Gone);
        if !p.notify_on_exit {
            return Ok(Vec::new());
        }
        let tail = std::mem::take(&mut p.tail);
        let suppressed = std::mem::take(&mut p.suppressed);
        Ok(vec![Registry::event(
            &mut p,
            run,
            now_ms,
            EventKind::Completion {
                completion,
                tail,
                suppressed,
            },
        )])
    }

    /// The checkpoint: running processes with their routing (PROC-8).
    pub fn encode(&self) -> Vec<u8> {
        persist::encode(
            FORMAT,
            VERSION,
            &BodyRef {
                next_run: self.next_run,
                running: self.sorted(),
            },
        )
    }

    /// Restores from a checkpoint after a restart. `alive` says whether a
    /// run's OS process survived; those that did not yield a `Lost`
    /// completion to their origin if one was promised (PROC-8).
    ///
    /// The delivery log is written before the checkpoint (PROC-8), so after
    /// a crash between the two it may be ahead: `log.completed(run)` says the
    /// run's completion is already held (the run finished: it is dropped, not
    /// reported `lost` a second time); `log.seq(run)` is the highest sequence
    /// number the log holds for it (the run's next event continues after
    /// it); `log.max_run` the highest run id it mentions (never reissued).
    pub fn restore(
        bytes: &[u8],
        limits: Limits,
        now_ms: u64,
        log: &RecordedLog<'_>,
        mut alive: impl FnMut(RunId, &SpawnRequest) -> bool,
    ) -> Result<(Registry, Vec<ProcessEvent>), FileProblem> {
        let body: Body = persist::decode(FORMAT, VERSION, bytes)?;
        let mut reg = Registry::new(limits);
        reg.next_run = body.next_run.max(log.max_run.map_or(0, |r| r + 1));
        for (run, p) in body.running {
            if run.0 >= body.next_run {
                return Err(FileProblem::Corrupt {
                    detail: format!("run {} is not below next_run {}", run.0, body.next_run),
                });
            }
            if (log.completed)(run) {
                continue; // finished, completion already durable
            }
            let mut p = p;
            if let Some(seq) = (log.seq)(run) {
                p.next_seq = p.next_seq.max(seq + 1);
            }
            // The log holds the run's watch_disabled but the checkpoint
            // may predate it (a crash between the two writes): the user is
            // told watching stopped and the completion is owed (PROC-5), so
            // the run is restored that way (PROC-8: the log is ahead).
            if (log.disabled)(run) {
                p.watch_disabled = true;
                p.notify_on_exit = true;
            }
            // The rate-limit state is volatile (PROC-8): the checkpoint is
            // not rewritten for every dropped match, so what it holds may be
            // stale; a restart starts it afresh, the same way every time.
            p.cooldown_until = None;
            p.strike_candidate = false;
            p.strikes = 0;
            p.suppressed = 0;
            reg.running.insert(run, p);
        }
        let lost: Vec<RunId> = reg
            .sorted()
            .into_iter()
            .filter(|(r, p)| !alive(*r, &p.req))
            .map(|(r, _)| r)
            .collect();
        let mut events = Vec::new();
        for run in lost {
            events.extend(
                reg.finish(run, Completion::Lost, now_ms)
                    .expect("run was just listed"),
            );
        }
        Ok((reg, events))
    }
}

/// What the delivery log knows about runs, for [`Registry::restore`].
pub struct RecordedLog<'a> {
    /// Whether the log holds a completion of the run.
    pub completed: &'a dyn Fn(RunId) -> bool,
    /// The highest event sequence number the log holds for the run.
    pub seq: &'a dyn Fn(RunId) -> Option<u32>,
    /// Whether the log holds the run's `watch_disabled` event (queued or
    /// dead-lettered): its watching is off and its completion owed
    /// (PROC-5), whatever an older checkpoint says.
    pub disabled: &'a dyn Fn(RunId) -> bool,
    /// The highest run id the log knows (so restored run ids never repeat).
    pub max_run: Option<u64>,
}

impl RecordedLog<'_> {
    /// An empty log: nothing recorded.
    pub fn empty() -> RecordedLog<'static> {
        RecordedLog {
            completed: &|_| false,
            seq: &|_| None,
            disabled: &|_| false,
            max_run: None,
        }
    }
}

/// What a tail gained since a take that was followed by `gained` bytes
/// of output: its last `gained` bytes, or the whole tail when the trim
/// reached into them (the tail is then nothing but what it gained, cut
/// to its bound). Appends are whole strings and the trim removes whole
/// characters from the front, so the cut is a character boundary; `get`
/// falls back to the whole tail rather than panic if it ever were not.
fn gained_tail(tail: &str, gained: usize) -> &str {
    tail.len()
        .checked_sub(gained)
        .and_then(|start| tail.get(start..))
        .unwrap_or(tail)
}

/// Bytes a tail reserves at its first output: room for a few lines, so a
/// short-lived run's tail is not reallocated (and copied) on every
/// doubling; a longer one grows as any string does, up to its bound.
const TAIL_START_BYTES: usize = 512;

fn push_tail(tail: &mut String, chunk: &str, max_chars: usize) {
    if tail.capacity() == 0 {
        tail.reserve(
            chunk
                .len()
                .max(TAIL_START_BYTES.min(max_chars.saturating_mul(4))),
        );
    }
    tail.push_str(chunk);
    if tail.len() <= max_chars {
        return; // no more characters than bytes
    }
    let count = tail.chars().count();
    if count > max_chars {
        let cut = tail
            .char_indices()
            .nth(count - max_chars)
            .map_or(0, |(i, _)| i);
        tail.drain(..cut);
    }
}

/// At most `max_lines` lines and `max_chars` characters, cut at a line
/// boundary (PROC-3). A single line longer than the limit is cut at a char
/// boundary and marked.
pub fn excerpt(lines: &[&str], max_lines: usize, max_chars: usize) -> String {
    let mut out = String::new();
    let mut chars = 0;
    let mut taken = VecDeque::new();
    for line in lines.iter().take(max_lines) {
        let n = line.chars().count() + usize::from(!taken.is_empty());
        if chars + n > max_chars {
            if taken.is_empty() {
                let cut: String = line.chars().take(max_chars).collect();
                taken.push_back(cut);
            }
            break;
        }
        chars += n;
        taken.push_back((*line).to_owned());
    }
    for (i, l) in taken.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(l);
    }
    out
}
