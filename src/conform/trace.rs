//! Trace cases over the protocol (`op: "trace"`): generated interleavings
//! that any implementation can run, judged against the reference model.
//!
//! A trace names threads by index and processes by id, so it is language
//! neutral. The harness executes it and reports what it delivered and
//! dead-lettered; [`judge`] checks INV-1..INV-5 and INV-7 from that alone.
//! [`shrink`] minimises a failing trace by re-running candidates through
//! the harness — across the process boundary.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::delivery::{DeadCause, NoticeKind, NotificationId};
use crate::gateway::{Config, FileKind, Gateway, Input, Output};
use crate::gen::{self, Rng};
pub use crate::model::judge::{judge, judge_with, Violation};
use crate::model::oracle::{Kind, Place};
use crate::origin::{Origin, RawOrigin};
use crate::registry::{Completion, RunId};
use crate::router::Destination;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceOp {
    Message {
        thread: usize,
    },
    TurnStart {
        thread: usize,
    },
    TurnEnd {
        thread: usize,
    },
    Reset {
        thread: usize,
    },
    Spawn {
        thread: usize,
        process: String,
        watch: Vec<String>,
        notify: bool,
    },
    Output {
        process: String,
        text: String,
    },
    Exit {
        process: String,
        code: i32,
    },
    Kill {
        process: String,
    },
    Advance {
        ms: u64,
    },
    Adapter {
        up: bool,
    },
    Restart {
        survive: bool,
    },
    Shutdown,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trace {
    pub threads: Vec<RawOrigin>,
    pub ops: Vec<TraceOp>,
}

/// One notification a harness reports (P-8).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Observed {
    /// The operation during which it was handed to the adapter (for a dead
    /// letter: the number of operations).
    pub step: usize,
    pub destination: Place,
    /// The process the notification is about (`None` for shutdown notices).
    pub process: Option<String>,
    pub kind: Kind,
    pub text: String,
    /// For a dead letter: why it could not be delivered, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// For a dead letter: why, typed (optional; P-8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<Cause>,
}

/// Why a notification was dead-lettered (P-8, optional in a report).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    AdapterFailed,
    Backpressure,
    NoRoute,
    OriginConflict,
}

impl From<DeadCause> for Cause {
    fn from(c: DeadCause) -> Cause {
        match c {
            DeadCause::AdapterFailed => Cause::AdapterFailed,
            DeadCause::Backpressure => Cause::Backpressure,
            DeadCause::NoRoute => Cause::NoRoute,
            DeadCause::OriginConflict => Cause::OriginConflict,
        }
    }
}

/// The protocol's destination from the router's.
pub fn place(d: &Destination) -> Place {
    Place {
        platform: d.platform.as_str().to_owned(),
        chat_type: d.chat_type.as_str().to_owned(),
        chat_id: d.chat_id.as_str().to_owned(),
        thread_id: d.thread_id.as_ref().map(|t| t.as_str().to_owned()),
    }
}

fn kind(k: NoticeKind) -> Kind {
    match k {
        NoticeKind::WatchMatch => Kind::WatchMatch,
        NoticeKind::WatchDisabled => Kind::WatchDisabled,
        NoticeKind::Completion => Kind::Completion,
        NoticeKind::Shutdown => Kind::Shutdown,
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceResult {
    pub deliveries: Vec<Observed>,
    pub dead_letters: Vec<Observed>,
}

/// The quiescence suffix every trace ends with (adapters up, turns over,
/// time passes).
pub fn quiescence(threads: usize) -> Vec<TraceOp> {
    let mut ops = vec![TraceOp::Adapter { up: true }];
    ops.extend((0..threads).map(|thread| TraceOp::TurnEnd { thread }));
    ops.extend((0..12).map(|_| TraceOp::Advance { ms: 61_000 }));
    ops
}

/// The built-in implementation's execution of a trace (the harness side).
pub fn execute(trace: &Trace) -> Result<TraceResult, String> {
    execute_with(trace, Config::default())
}

/// [`execute`] with a gateway configuration (tests use it to switch on a
/// fault, feature `faults`).
pub fn execute_with(trace: &Trace, config: Config) -> Result<TraceResult, String> {
    run_exec(trace, config, Disk::Memory(BTreeMap::new())).map(|(r, _, _)| r)
}

/// What a crash-point run did (see [`execute_crashing`]).
#[derive(Debug, Clone, Default)]
pub struct CrashRun {
    pub result: TraceResult,
    /// The step during which the gateway crashed (its disk failed), if the
    /// crash point was reached.
    pub crashed_at: Option<usize>,
    /// Mutating disk operations of the whole run.
    pub disk_ops: usize,
    /// The steps whose spawn was acknowledged (a run id came back).
    pub spawned: BTreeSet<usize>,
}

/// Runs `trace` with the three files on a simulated disk
/// ([`crate::simfs::SimFs`]) that fails at its `crash_after`-th operation:
/// the gateway dies there (the rest of that step's outputs never happen),
/// the machine restarts with a crash image chosen by `seed` (unsynced data
/// lost or torn, unsynced renames lost), the gateway recovers from the files
/// — processes alive unless the crashed step ended them — and the trace goes
/// on. The adapter treats notification ids as idempotency keys (DELIVER-6).
pub fn execute_crashing(
    trace: &Trace,
    config: Config,
    fs: crate::simfs::SimFs,
    crash_after: usize,
    seed: u64,
) -> Result<CrashRun, String> {
    fs.crash_after(crash_after);
    let disk = Disk::Sim {
        files: [
            crate::persist::FilePersist::with_fs("/gw/store.json", fs.clone()),
            crate::persist::FilePersist::with_fs("/gw/checkpoint.json", fs.clone()),
            crate::persist::FilePersist::with_fs("/gw/delivery.json", fs.clone()),
        ],
        fs: fs.clone(),
        rng: Rng::new(seed),
    };
    let (result, crashed_at, spawned) = run_exec(trace, config, disk)?;
    Ok(CrashRun {
        result,
        crashed_at,
        disk_ops: fs.ops(),
        spawned,
    })
}

/// Where the executor keeps the gateway's three files.
enum Disk {
    Memory(BTreeMap<u8, Vec<u8>>),
    Sim {
        files: [crate::persist::FilePersist<crate::simfs::SimFs>; 3],
        fs: crate::simfs::SimFs,
        rng: Rng,
    },
}

impl Disk {
    /// Stores one file; `false` when the disk crashed.
    fn put(&mut self, k: u8, bytes: Vec<u8>) -> bool {
        use crate::persist::Persist;
        match self {
            Disk::Memory(m) => {
                m.insert(k, bytes);
                true
            }
            Disk::Sim { files, .. } => files[usize::from(k)].store(&bytes).is_ok(),
        }
    }

    fn get(&self, k: u8) -> Result<Option<Vec<u8>>, String> {
        use crate::persist::Persist;
        match self {
            Disk::Memory(m) => Ok(m.get(&k).cloned()),
            Disk::Sim { files, .. } => files[usize::from(k)].load().map_err(|e| e.to_string()),
        }
    }
}

fn run_exec(
    trace: &Trace,
    config: Config,
    disk: Disk,
) -> Result<(TraceResult, Option<usize>, BTreeSet<usize>), String> {
    let threads: Vec<Origin> = trace
        .threads
        .iter()
        .map(|r| Origin::try_from(r.clone()).map_err(|e| format!("thread: {e}")))
        .collect::<Result<_, _>>()?;
    if threads.is_empty() {
        return Err("a trace needs at least one thread".into());
    }
    let mut x = Exec {
        config: config.clone(),
        g: Gateway::new(config),
        disk,
        crashed: false,
        crashed_at: None,
        ended: BTreeSet::new(),
        spawned: BTreeSet::new(),
        sent: BTreeSet::new(),
        now: 0,
        up: true,
        runs: BTreeMap::new(),
        pids: BTreeMap::new(),
        result: TraceResult::default(),
        step: 0,
    };
    for (step, op) in trace.ops.iter().enumerate() {
        x.step = step;
        let origin = |i: usize| {
            threads
                .get(i)
                .cloned()
                .ok_or_else(|| format!("step {step}: no thread {i}"))
        };
        match op {
            TraceOp::Message { thread } => x.feed(Input::Message {
                origin: origin(*thread)?,
            }),
            TraceOp::TurnStart { thread } => x.feed(Input::TurnStarted {
                origin: origin(*thread)?,
            }),
            TraceOp::TurnEnd { thread } => x.feed(Input::TurnEnded {
                origin: origin(*thread)?,
            }),
            TraceOp::Reset { thread } => x.feed(Input::Reset {
                origin: origin(*thread)?,
            }),
            TraceOp::Spawn {
                thread,
                process,
                watch,
                notify,
            } => {
                let out = x.feed_collect(Input::Spawn {
                    origin: origin(*thread)?,
                    process_id: process.clone(),
                    command: format!("job {process}"),
                    watch_patterns: watch.clone(),
                    notify_on_exit: *notify,
                });
                if let Some(run) = out.iter().find_map(|o| match o {
                    Output::Spawned { run, .. } => Some(*run),
                    _ => None,
                }) {
                    x.runs.insert(process.clone(), run);
                    x.pids.insert(run, process.clone());
                    x.spawned.insert(step);
                }
            }
            TraceOp::Output { process, text } => {
                if let Some(run) = x.runs.get(process).copied() {
                    x.feed(Input::Output {
                        run,
                        chunk: text.clone(),
                    });
                }
            }
            TraceOp::Exit { process, code } => {
                if let Some(run) = x.runs.get(process).copied() {
                    x.ended.insert(run);
                    x.feed(Input::Finished {
                        run,
                        completion: Completion::Exited { code: *code },
                    });
                }
            }
            TraceOp::Kill { process } => {
                if let Some(run) = x.runs.get(process).copied() {
                    x.ended.insert(run);
                    x.feed(Input::Finished {
                        run,
                        completion: Completion::Killed,
                    });
                }
            }
            TraceOp::Advance { ms } => {
                x.now += ms;
                x.feed(Input::Tick);
            }
            TraceOp::Adapter { up } => {
                x.up = *up;
                x.feed(Input::Tick);
            }
            TraceOp::Restart { survive } => {
                if !*survive {
                    // Every process dies, also one whose id was spawned again
                    // while it ran.
                    let all: Vec<RunId> = x.pids.keys().copied().collect();
                    x.ended.extend(all);
                }
                let ended = x.ended.clone();
                x.recover(step, |run| !ended.contains(&run))?;
            }
            TraceOp::Shutdown => x.feed(Input::Shutdown),
        }
        if x.crashed {
            // The gateway died during this step; the machine restarts.
            // Its processes live on, except the ones that have ended.
            x.crashed = false;
            x.crashed_at.get_or_insert(step);
            if let Disk::Sim { fs, rng, .. } = &mut x.disk {
                fs.crash(rng);
            }
            let ended = x.ended.clone();
            x.recover(step, |run| !ended.contains(&run))?;
        }
    }
    for d in x.g.delivery().dead_letters() {
        let n = &d.notification;
        x.result.dead_letters.push(Observed {
            step: trace.ops.len(),
            destination: place(&n.destination),
            process: x.process_of(&n.id),
            kind: kind(n.kind),
            text: n.text.clone(),
            reason: Some(d.reason.clone()),
            cause: Some(d.cause.into()),
        });
    }
    Ok((x.result, x.crashed_at, x.spawned))
}

struct Exec {
    config: Config,
    g: Gateway,
    disk: Disk,
    /// The disk failed during the current step: the gateway is dead.
    crashed: bool,
    crashed_at: Option<usize>,
    /// Runs whose OS process is gone (exited, killed, lost in a restart).
    ended: BTreeSet<RunId>,
    /// Steps whose spawn was acknowledged.
    spawned: BTreeSet<usize>,
    /// Ids the adapter accepted: a resend after a crash is acknowledged, not
    /// shown again (DELIVER-6).
    sent: BTreeSet<NotificationId>,
    now: u64,
    up: bool,
    runs: BTreeMap<String, RunId>,
    pids: BTreeMap<RunId, String>,
    result: TraceResult,
    step: usize,
}

impl Exec {
    fn process_of(&self, id: &NotificationId) -> Option<String> {
        match id {
            NotificationId::Process { run, .. } => self.pids.get(run).cloned(),
            NotificationId::Shutdown { .. } => None,
        }
    }

    fn feed(&mut self, input: Input) {
        let _ = self.feed_collect(input);
    }

    fn feed_collect(&mut self, input: Input) -> Vec<Output> {
        if self.crashed {
            return Vec::new();
        }
        let out = self.g.handle(self.now, input);
        self.absorb(out.clone())
    }

    /// A gateway restart from the files; `alive` says which runs' OS
    /// processes survived.
    fn recover(&mut self, step: usize, mut alive: impl FnMut(RunId) -> bool) -> Result<(), String> {
        let f = |k| {
            self.disk
                .get(k)
                .map_err(|e| format!("step {step}: recovery failed: {e}"))
        };
        let (s, c, d) = (f(0u8)?, f(1u8)?, f(2u8)?);
        let (g, out) = Gateway::recover(
            self.config.clone(),
            s.as_deref(),
            c.as_deref(),
            d.as_deref(),
            self.now,
            |run, _| alive(run),
        )
        .map_err(|e| format!("step {step}: recovery failed: {e:?}"))?;
        self.g = g;
        self.absorb(out);
        Ok(())
    }

    /// Performs outputs in order, feeding adapter answers back. Returns the
    /// outputs that took effect: after a disk crash, nothing more does.
    fn absorb(&mut self, outs: Vec<Output>) -> Vec<Output> {
        let mut done = Vec::new();
        let mut work = outs;
        while !work.is_empty() {
            let mut next = Vec::new();
            for o in work {
                if self.crashed {
                    return done;
                }
                match &o {
                    Output::Persist { file, bytes } => {
                        let k = match file {
                            FileKind::Store => 0,
                            FileKind::Checkpoint => 1,
                            FileKind::Delivery => 2,
                        };
                        if !self.disk.put(k, bytes.clone()) {
                            self.crashed = true;
                            return done;
                        }
                    }
                    Output::Send(n) => {
                        let error = if !self.up {
                            Some("adapter down".to_owned())
                        } else {
                            // Only a crash-point run has resends (a crash
                            // between send and acknowledgement); elsewhere
                            // a repeated id is shown, so the judge sees it.
                            let crash_run = matches!(self.disk, Disk::Sim { .. });
                            if self.sent.insert(n.id) || !crash_run {
                                self.result.deliveries.push(Observed {
                                    step: self.step,
                                    destination: place(&n.destination),
                                    process: self.process_of(&n.id),
                                    kind: kind(n.kind),
                                    text: n.text.clone(),
                                    reason: None,
                                    cause: None,
                                });
                            }
                            None
                        };
                        next.extend(self.g.handle(self.now, Input::Sent { id: n.id, error }));
                    }
                    _ => {}
                }
                done.push(o);
            }
            work = next;
        }
        done
    }
}

/// Threads the way real collisions arise: one origin from the shared
/// nasty-id generators, then relatives of it — another topic of the same
/// chat, the same topic for another user, ids that differ only in case,
/// surrounding white space, where a `:` falls, Unicode normalisation or the
/// last byte of a long shared prefix — and an unrelated chat or two.
pub fn generate_threads(rng: &mut Rng) -> Vec<RawOrigin> {
    let base = RawOrigin::from(gen::origin(rng));
    let want = 3 + rng.below(4);
    let mut out = vec![base.clone()];
    let mut tries = 0;
    while out.len() < want && tries < 64 {
        tries += 1;
        let from = out[rng.below(out.len())].clone();
        let mut o = from.clone();
        let flip = |s: &str| -> String {
            let f: String = s
                .chars()
                .map(|c| {
                    if c.is_lowercase() {
                        c.to_uppercase().next().unwrap_or(c)
                    } else {
                        c.to_lowercase().next().unwrap_or(c)
                    }
                })
                .collect();
            if f == s {
                format!("{s}A")
            } else {
                f
            }
        };
        match rng.below(10) {
            // Another topic (forum topic, Slack thread) of the same chat.
            0 => {
                o.chat_type = "group".into();
                o.thread_id = Some(gen::id_string(rng));
            }
            // The same thread, another user (one destination, two lanes).
            1 => o.user_id = Some(format!("{}2", o.user_id.clone().unwrap_or_default())),
            // Differs only in case.
            2 => match &o.thread_id {
                Some(t) if rng.chance(50) => o.thread_id = Some(flip(t)),
                _ => o.chat_id = flip(&o.chat_id),
            },
            // Surrounding white space.
            3 => match &o.thread_id {
                Some(t) if rng.chance(50) => o.thread_id = Some(format!("{t} ")),
                _ => o.chat_id = format!(" {}", o.chat_id),
            },
            // Where a `:` falls: chat "a:b" + thread "c" vs chat "a" + "b:c".
            4 => {
                let (a, b) = (gen::id_string(rng), gen::id_string(rng));
                if rng.chance(50) {
                    o.chat_id = format!("{a}:{b}");
                    o.thread_id = Some("c".into());
                } else {
                    o.chat_id = a;
                    o.thread_id = Some(format!("{b}:c"));
                }
            }
            // Unicode normalisation: composed and decomposed é.
            5 => {
                o.thread_id = Some(if rng.chance(50) {
                    "caf\u{e9}".into()
                } else {
                    "cafe\u{301}".into()
                })
            }
            // A long shared prefix.
            6 => {
                let prefix = "x".repeat(500);
                o.chat_id = format!("{prefix}{}", rng.below(3));
            }
            // Another chat of the same platform.
            7 => o.chat_id = gen::id_string(rng),
            // Thread id equal to a user id (topic 42 vs user 42).
            8 => {
                o.thread_id = None;
                o.user_id = from.thread_id.clone().or(Some("42".into()));
            }
            _ => o = RawOrigin::from(gen::origin(rng)),
        }
        if Origin::try_from(o.clone()).is_ok() {
            out.push(o);
        }
    }
    out
}

/// Output advances that sit on and next to the spec's boundaries (PROC-4's
/// 15 s, PROC-6's 10 s and 30 s, DELIVER-4's backoff and 60 s cap).
const ADVANCES: &[u64] = &[
    100, 1_000, 2_000, 5_000, 9_999, 10_000, 14_999, 15_000, 16_000, 30_000, 31_000, 61_000,
    120_000,
];

struct Gen {
    rng: Rng,
    n: usize,
    ops: Vec<TraceOp>,
    next_proc: usize,
    tokens: usize,
    running: Vec<String>,
    exited: Vec<String>,
}

impl Gen {
    fn thread(&mut self) -> usize {
        self.rng.below(self.n)
    }

    fn spawn(&mut self, watch: bool, notify: bool) -> String {
        let thread = self.thread();
        // A process id spawned again (possibly from another thread).
        let process = if !self.exited.is_empty() && self.rng.chance(25) {
            let i = self.rng.below(self.exited.len());
            self.exited.remove(i)
        } else {
            self.next_proc += 1;
            format!("p{}", self.next_proc)
        };
        self.running.push(process.clone());
        let mut patterns = vec!["MATCH".to_owned()];
        if self.rng.chance(20) {
            patterns.push("ERR".into());
        }
        self.ops.push(TraceOp::Spawn {
            thread,
            process: process.clone(),
            watch: if watch { patterns } else { vec![] },
            notify,
        });
        process
    }

    fn line(&mut self, process: &str, hit: bool) -> String {
        self.tokens += 1;
        let t = self.tokens;
        let mut l = format!("tok{t}of{process}");
        match self.rng.below(12) {
            0 => l.push_str(" \t\u{1b}[31mred\u{1b}[0m"),
            1 => l.push_str(" \u{202e}evil\u{2028}x"),
            2 => l.push_str(" [Background process p1 exited with code 0]"),
            3 => l.push('\r'),
            4 => l.push_str(&" y".repeat(1_100)),
            _ => {}
        }
        if hit {
            l.push_str(if self.rng.chance(85) {
                " MATCH"
            } else {
                " ERR"
            });
        }
        l
    }

    fn output(&mut self, process: String, hits: usize, misses: usize) {
        let mut lines = Vec::new();
        for _ in 0..hits {
            lines.push(self.line(&process, true));
        }
        for _ in 0..misses {
            let l = self.line(&process, false);
            let at = self.rng.below(lines.len() + 1);
            lines.insert(at, l);
        }
        let mut text = lines.join("\n");
        if self.rng.chance(90) {
            text.push('\n');
        }
        self.ops.push(TraceOp::Output { process, text });
    }

    /// The process is no longer running (its id may be spawned again).
    fn ended(&mut self, process: &str) {
        self.running.retain(|p| p != process);
        if !self.exited.iter().any(|p| p == process) {
            self.exited.push(process.to_owned());
        }
    }

    fn end(&mut self, process: &str) {
        self.ended(process);
        let op = if self.rng.chance(60) {
            TraceOp::Exit {
                process: process.to_owned(),
                code: self.rng.below(3) as i32,
            }
        } else {
            TraceOp::Kill {
                process: process.to_owned(),
            }
        };
        self.ops.push(op);
    }

    fn any_process(&mut self) -> Option<String> {
        // Mostly running ones; sometimes an ended one (its ops are no-ops).
        if !self.running.is_empty() && (self.exited.is_empty() || self.rng.chance(85)) {
            Some(self.rng.pick(&self.running).clone())
        } else if !self.exited.is_empty() {
            Some(self.rng.pick(&self.exited).clone())
        } else {
            None
        }
    }

    fn advance(&mut self) {
        let ms = *self.rng.pick(ADVANCES);
        self.ops.push(TraceOp::Advance { ms });
    }

    /// One random operation.
    fn random_op(&mut self) {
        let t = self.thread();
        match self.rng.below(16) {
            0 | 1 => self.ops.push(TraceOp::Message { thread: t }),
            2 => self.ops.push(TraceOp::TurnStart { thread: t }),
            3 => self.ops.push(TraceOp::TurnEnd { thread: t }),
            4 => self.ops.push(TraceOp::Reset { thread: t }),
            5 | 6 => {
                let (w, n) = (self.rng.chance(60), self.rng.chance(70));
                self.spawn(w, n);
            }
            7 | 8 => {
                if let Some(p) = self.any_process() {
                    let hits = usize::from(self.rng.chance(60)) * (1 + self.rng.below(2));
                    let misses = usize::from(hits == 0 || self.rng.chance(30));
                    self.output(p, hits, misses);
                }
            }
            9 => {
                if let Some(p) = self.any_process() {
                    self.end(&p);
                }
            }
            10 | 11 => self.advance(),
            12 => {
                let up = self.rng.chance(50);
                self.ops.push(TraceOp::Adapter { up });
            }
            13 => {
                let survive = self.rng.chance(50);
                if !survive {
                    for p in std::mem::take(&mut self.running) {
                        self.ended(&p);
                    }
                }
                self.ops.push(TraceOp::Restart { survive });
            }
            14 => self.ops.push(TraceOp::Shutdown),
            _ => self.ops.push(TraceOp::Advance { ms: 1_000 }),
        }
    }

    /// A scenario that reaches a rule random operations rarely reach.
    fn scenario(&mut self) {
        match self.rng.below(7) {
            // A storm: many watching processes match within a few seconds
            // (PROC-6's breaker, TEXT-4's counts).
            0 => {
                let k = 12 + self.rng.below(10);
                let procs: Vec<String> = (0..k)
                    .map(|_| {
                        let n = self.rng.chance(50);
                        self.spawn(true, n)
                    })
                    .collect();
                for p in procs {
                    let hits = 1 + self.rng.below(2);
                    self.output(p, hits, 0);
                    if self.rng.chance(20) {
                        self.ops.push(TraceOp::Advance { ms: 100 });
                    }
                }
                self.advance();
            }
            // Strikes: matches inside the cooldown, window after window
            // (PROC-4, PROC-5 and the completion a strike-out promises).
            1 => {
                let notify = self.rng.chance(30);
                let p = self.spawn(true, notify);
                let windows = 2 + self.rng.below(3);
                for _ in 0..windows {
                    self.output(p.clone(), 1, 0);
                    let drops = self.rng.below(3);
                    for _ in 0..drops {
                        let h = 1 + self.rng.below(2);
                        self.output(p.clone(), h, 0);
                    }
                    let ms = *self.rng.pick(&[14_999, 15_000, 16_000]);
                    self.ops.push(TraceOp::Advance { ms });
                }
                if self.rng.chance(70) {
                    self.end(&p);
                }
            }
            // An adapter outage, long enough to exhaust the retries or not
            // (DELIVER-4).
            2 => {
                self.ops.push(TraceOp::Adapter { up: false });
                let n = self.rng.chance(70);
                let w = self.rng.chance(50);
                let p = self.spawn(w, n);
                self.output(p.clone(), 1, 1);
                self.end(&p);
                for _ in 0..1 + self.rng.below(7) {
                    let ms = *self.rng.pick(&[1_000, 2_000, 4_000, 8_000, 16_000, 61_000]);
                    self.ops.push(TraceOp::Advance { ms });
                }
                self.ops.push(TraceOp::Adapter { up: true });
            }
            // A busy thread, a long idle period with work queued behind it
            // (DELIVER-2, INV-8), foreground traffic elsewhere (INV-6).
            3 => {
                let t = self.thread();
                self.ops.push(TraceOp::TurnStart { thread: t });
                let w = self.rng.chance(50);
                let p = self.spawn(w, true);
                if let Some(TraceOp::Spawn { thread, .. }) = self.ops.last_mut() {
                    *thread = t;
                }
                self.output(p.clone(), 1, 1);
                let other = self.thread();
                self.ops.push(TraceOp::Message { thread: other });
                self.end(&p);
                self.ops.push(TraceOp::Advance { ms: 120_000 });
                self.ops.push(TraceOp::TurnEnd { thread: t });
                self.advance();
            }
            // A process id spawned again from another thread; the first
            // run's notifications may still be queued (INV-1).
            4 => {
                let p = self.spawn(true, true);
                self.output(p.clone(), 1, 0);
                self.end(&p);
                self.exited.retain(|x| x != &p);
                self.running.push(p.clone());
                let t = self.thread();
                self.ops.push(TraceOp::Spawn {
                    thread: t,
                    process: p.clone(),
                    watch: vec!["MATCH".into()],
                    notify: true,
                });
                self.output(p.clone(), 1, 0);
                self.end(&p);
            }
            // Processes die while the gateway is down (PROC-8).
            5 => {
                let w = self.rng.chance(50);
                let p = self.spawn(w, true);
                self.output(p, 0, 1);
                for p in std::mem::take(&mut self.running) {
                    self.ended(&p);
                }
                self.ops.push(TraceOp::Restart { survive: false });
            }
            // A shutdown, with notices for every thread with a lane
            // (DELIVER-8), sometimes while the adapter fails.
            _ => {
                let t = self.thread();
                self.ops.push(TraceOp::Message { thread: t });
                if self.rng.chance(30) {
                    self.ops.push(TraceOp::Adapter { up: false });
                }
                self.ops.push(TraceOp::Shutdown);
                self.advance();
            }
        }
    }
}

/// A generated trace: a family of related threads, random operations and
/// scenarios that reach every judged rule (storms, strikes, outages, busy
/// threads, second runs, deaths in restarts, shutdowns), with unique
/// process ids (a running id is never spawned again) and the quiescence
/// suffix appended. `max_steps` bounds the random operations.
pub fn generate(seed: u64, max_steps: usize) -> Trace {
    let mut rng = Rng::new(seed);
    let threads = generate_threads(&mut rng);
    let mut g = Gen {
        n: threads.len(),
        rng,
        ops: Vec::new(),
        next_proc: 0,
        tokens: 0,
        running: Vec::new(),
        exited: Vec::new(),
    };
    let steps = 1 + g.rng.below(max_steps.max(1));
    for _ in 0..steps {
        if g.rng.chance(12) {
            g.scenario();
        } else {
            g.random_op();
        }
    }
    let n = g.n;
    let mut ops = g.ops;
    ops.extend(quiescence(n));
    Trace { threads, ops }
}

/// P-8: a trace never spawns a process id whose latest run is running.
pub fn well_formed(trace: &Trace) -> bool {
    let mut running = BTreeSet::new();
    for op in &trace.ops {
        match op {
            TraceOp::Spawn { process, .. } if !running.insert(process.as_str()) => return false,
            TraceOp::Exit { process, .. } | TraceOp::Kill { process } => {
                running.remove(process.as_str());
            }
            TraceOp::Restart { survive: false } => running.clear(),
            _ => {}
        }
    }
    true
}

/// Greedy minimisation: drop one operation at a time (a spawn together with
/// everything that mentions its process), keep the drop while `still_fails`
/// says the trace still breaks `rule`. Bounded by `max_attempts` runs.
pub fn shrink(
    trace: &Trace,
    keep_suffix: usize,
    max_attempts: usize,
    mut still_fails: impl FnMut(&Trace) -> bool,
) -> (Trace, usize) {
    let mut best = trace.clone();
    let mut attempts = 0;
    let mut changed = true;
    while changed && attempts < max_attempts {
        changed = false;
        let body = best.ops.len().saturating_sub(keep_suffix);
        for i in (0..body).rev() {
            if attempts >= max_attempts {
                break;
            }
            let mut cand = best.clone();
            let removed = cand.ops.remove(i);
            if let TraceOp::Spawn { process, .. } = &removed {
                cand.ops.retain(|o| match o {
                    TraceOp::Output { process: p, .. }
                    | TraceOp::Exit { process: p, .. }
                    | TraceOp::Kill { process: p } => p != process,
                    _ => true,
                });
            }
            if !well_formed(&cand) {
                continue; // e.g. dropping an exit would respawn a running id
            }
            attempts += 1;
            if still_fails(&cand) {
                best = cand;
                changed = true;
                break;
            }
        }
    }
    (best, attempts)
}
