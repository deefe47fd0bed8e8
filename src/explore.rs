//! Exhaustive small-scope exploration (`procroute explore`): every trace of
//! a declared scope up to a depth, breadth first, each reached state judged
//! by the one judge — the trace so far, followed by the quiescence suffix
//! (every turn ends, the adapter comes up, time passes), so invariants are
//! checked at every step and liveness at quiescence. In-process on the
//! built-in router ([`explore`]), or through any harness speaking the
//! protocol ([`explore_over`]: the reference's distinct states, level by
//! level, on parallel harness processes, reported like `conform`).
//!
//! States are deduplicated by a hash of the router's state
//! ([`Execution::fingerprint`]) and the model's (every notification the
//! oracle predicts for the prefix, with its fate), plus what neither
//! holds but an implementation may: the reads so far and how each run
//! ended (a kill and an exit whose completions were delivered leave both
//! in the same state). Two prefixes that agree on all of it are taken to
//! have the same futures, so only the first is expanded. That is an
//! assumption, not a theorem: what the *implementation* reported so far
//! is not in the hash (over the protocol its state is not visible at
//! all), so a bug that depends on reported history alone is found only
//! along the first prefix that reached the state. Each prefix is executed
//! twice (for its fingerprint, then with the quiescence suffix for the
//! verdict); at 30,000 states/s that was not worth sharing an execution.
//! Symmetry is reduced by construction: process ids are taken in order
//! (`p1` before `p2`), and of a group of interchangeable threads only
//! those already used and the first unused one are offered. Breadth first
//! means the first counterexample is a shortest one.
//!
//! Why not the `stateright` crate: its checkers keep states and compare
//! them by `Hash`/`Eq` of the state type, and properties are predicates of
//! one state; ours are judgements of a whole trace by the oracle (which is
//! deliberately batch: it reads a trace, it does not step). Carrying the
//! prefix in the state with a hand-written `Hash` on the fingerprint would
//! fit its API, but then every property evaluation re-runs the trace, as
//! here, and the crate adds an Explorer web server and its dependencies to
//! the checking kit for none of that (ARCHITECTURE.md).

use std::collections::{BTreeSet, HashSet};
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use crate::conform::constraint::Constraints;
use crate::conform::protocol::Started;
use crate::conform::report::{Declared, Report};
use crate::conform::runner::{cited_rules, failure_detail, run_many, Harness, NoResult};
use crate::conform::schema::Schema;
use crate::conform::select::Selection;
use crate::conform::trace::RawOrigin;
use crate::conform::trace::{quiescence, Execution, Trace, TraceOp, TraceResult};
use crate::conform::Outcome;
use crate::model::judge::{exercised, judge, Violation, JUDGED};
use crate::model::oracle::predict;
use procroute::gateway::Config;

/// An output chunk the scope offers to a running process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chunk {
    /// One line that matches `MATCH`.
    Line,
    /// A chunk at the limits of PROC-3 and PROC-7: a line without the
    /// pattern, then 24 matching lines (more than the excerpt's 20) with a
    /// control and a bidi character (TEXT-2), over 2,000 characters in all
    /// (more than the excerpt and the completion's tail keep).
    Burst,
}

impl Chunk {
    fn text(self, n: usize, p: &str) -> String {
        match self {
            Chunk::Line => format!("tok{n}of{p} MATCH\n"),
            // Each line its own token (`tok<n>00of…`, `tok<n>01of…`), so
            // the judge can tell which lines an excerpt or a tail shows.
            Chunk::Burst => {
                let mut t = format!("tok{n}00of{p} starting\n");
                for k in 1..=24 {
                    t.push_str(&format!(
                        "tok{n}{k:02}of{p} MATCH \u{7}\u{202e}{}\n",
                        "x".repeat(72)
                    ));
                }
                t
            }
        }
    }
}

/// What is explored: the threads, how many process ids, the trace features
/// and how often the rare ones may occur, and the depth.
#[derive(Debug, Clone)]
pub struct Scope {
    /// The scope's name (`procroute explore --scope NAME`).
    pub name: &'static str,
    /// The threads the traces name.
    pub threads: Vec<RawOrigin>,
    /// Groups of interchangeable threads (indices into `threads`).
    pub symmetric: Vec<Vec<usize>>,
    /// Process ids `p1..=pN`; an id that ended may be spawned again.
    pub processes: usize,
    /// Spawn variant: notify on exit.
    pub notify: bool,
    /// Spawn variant: watch for `MATCH` without notify.
    pub watch: bool,
    /// Spawn variant: neither watch nor notify (a dev server nobody asked
    /// to hear from: INV-7 says it never notifies).
    pub plain: bool,
    /// Output chunks offered to every running process.
    pub chunks: Vec<Chunk>,
    /// A spawn with a watch prints its first chunk at once: the op after
    /// it is that chunk's output and nothing else. A storm (PROC-6) needs
    /// 16 processes that each print once; the breaker counts chunks by
    /// their time, not their process's start, so this halves the storm's
    /// branching and loses no breaker state (it does lose a process that
    /// starts and stays silent across a clock step).
    pub output_at_spawn: bool,
    /// Outputs per trace, at most, from a process that already printed in
    /// its run (cooldown drops and strikes, PROC-4/5).
    pub later_outputs: usize,
    /// Agents' reads (PROC-10).
    pub reads: bool,
    /// Users' messages (a foreground thread, INV-6).
    pub messages: bool,
    /// Agents' turns (DELIVER-1/2).
    pub turns: bool,
    /// Adapter down/up (DELIVER-4/5).
    pub adapter: bool,
    /// Exits of running processes.
    pub exits: bool,
    /// Kills of running processes.
    pub kills: bool,
    /// Clock steps offered at every state.
    pub advances: Vec<u64>,
    /// Clock steps per trace, at most.
    pub clock_steps: usize,
    /// Restarts per trace, at most.
    pub restarts: usize,
    /// Shutdowns per trace, at most.
    pub shutdowns: usize,
    /// Operations per trace (before the quiescence suffix).
    pub depth: usize,
}

fn telegram(chat_type: &str, chat: &str, topic: Option<&str>, user: &str) -> RawOrigin {
    RawOrigin {
        platform: "telegram".into(),
        chat_type: chat_type.into(),
        chat_id: chat.into(),
        thread_id: topic.map(str::to_owned),
        user_id: Some(user.into()),
        user_name: None,
    }
}

impl Default for Scope {
    /// Structure: three threads of which two are topics of one chat, two
    /// process ids, spawns that watch, notify on exit or neither, adapter
    /// down/up, one restart, one shutdown, three clock steps (a second, a
    /// cooldown, a retry cap).
    fn default() -> Scope {
        Scope {
            name: "default",
            threads: vec![
                telegram("group", "-1001", Some("1"), "42"),
                telegram("group", "-1001", Some("2"), "42"),
                telegram("dm", "42", None, "42"),
            ],
            symmetric: vec![vec![0, 1]],
            processes: 2,
            notify: true,
            watch: true,
            plain: true,
            chunks: vec![Chunk::Line],
            output_at_spawn: false,
            later_outputs: usize::MAX,
            reads: false,
            messages: true,
            turns: true,
            adapter: true,
            exits: true,
            kills: true,
            advances: vec![1_000, 16_000, 61_000],
            clock_steps: usize::MAX,
            restarts: 1,
            shutdowns: 1,
            depth: 5,
        }
    }
}

impl Scope {
    /// The declared scopes, by name, structural first, then counting.
    pub const NAMES: [&'static str; 6] =
        ["default", "data", "limits", "strikes", "retries", "storm"];

    /// A declared scope by name.
    ///
    /// Structural scopes (many kinds of ops, shallow):
    /// - `default`: the structure of routing (threads of one chat,
    ///   restarts, outages, shutdown), [`Scope::default`].
    /// - `data`: what ids and output hold — two users of one topic (one
    ///   shared lane), two users of a Matrix room (a lane each, one
    ///   destination), a second room whose id differs only in case (ids
    ///   with `:`), and bursts of output at the excerpt and tail limits;
    ///   one shutdown, no restart; depth 4.
    /// - `limits`: SPEC's numbers — one topic, one process id, clock steps
    ///   at both sides of the 15 s cooldown (14,999 and 15,000 ms) and one
    ///   past every retry's backoff (61 s), adapter down/up; depth 8 (two
    ///   strikes, six failed attempts).
    ///
    /// Counting scopes: the small-scope hypothesis does not hold for a
    /// rule with a threshold (a bug at the 3rd strike needs three strikes),
    /// so each offers only the few kinds of ops its rules count, and
    /// breadth first reaches one past the threshold:
    /// - `strikes` (PROC-4, PROC-5): one topic, one process id watching,
    ///   output, exit, clock steps at both sides of the cooldown; depth 11
    ///   (three strike windows and the exit the promotion owes).
    /// - `retries` (DELIVER-4, DELIVER-5): one topic, two process ids
    ///   with notify-on-exit, exit, turns, adapter down/up, a clock step
    ///   past every backoff; depth 11 (a head's six failed attempts with a
    ///   second notification behind it).
    /// - `storm` (PROC-6): one topic, 17 process ids watching, each
    ///   printing one matching line as it starts, at most two clock steps
    ///   of 9,999, 10,000 or 20,000 ms (both sides of the breaker's window;
    ///   10 + 20 s ends its pause); depth 35 (16 events in one window and
    ///   one more after it).
    pub fn named(name: &str) -> Option<Scope> {
        let matrix = |room: &str, user: &str| RawOrigin {
            platform: "matrix".into(),
            chat_type: "group".into(),
            chat_id: room.into(),
            thread_id: None,
            user_id: Some(user.into()),
            user_name: None,
        };
        let topic = telegram("group", "-1001", Some("1"), "42");
        // The base of the scopes that count toward a threshold: one forum
        // topic, no symmetric threads, no plain spawns, no restarts or
        // shutdowns; each says what it offers on top.
        let one_topic = Scope {
            threads: vec![topic],
            symmetric: Vec::new(),
            plain: false,
            restarts: 0,
            shutdowns: 0,
            ..Scope::default()
        };
        match name {
            "default" => Some(Scope::default()),
            "data" => Some(Scope {
                name: "data",
                threads: vec![
                    telegram("group", "-1001", Some("1"), "42"),
                    telegram("group", "-1001", Some("1"), "43"),
                    matrix("!Room:example.org", "@ann:example.org"),
                    matrix("!Room:example.org", "@bob:example.org"),
                    matrix("!room:example.org", "@ann:example.org"),
                ],
                symmetric: Vec::new(),
                chunks: vec![Chunk::Line, Chunk::Burst],
                advances: vec![16_000, 61_000],
                restarts: 0,
                depth: 4,
                ..Scope::default()
            }),
            "limits" => Some(Scope {
                name: "limits",
                advances: vec![14_999, 15_000, 61_000],
                processes: 1,
                depth: 8,
                ..one_topic
            }),
            "strikes" => Some(Scope {
                name: "strikes",
                processes: 1,
                notify: false,
                messages: false,
                turns: false,
                adapter: false,
                kills: false,
                advances: vec![14_999, 15_000],
                depth: 11,
                ..one_topic
            }),
            "retries" => Some(Scope {
                name: "retries",
                processes: 2,
                messages: false,
                watch: false,
                chunks: Vec::new(),
                kills: false,
                advances: vec![61_000],
                depth: 11,
                ..one_topic
            }),
            "storm" => Some(Scope {
                name: "storm",
                processes: 17,
                notify: false,
                output_at_spawn: true,
                later_outputs: 0,
                messages: false,
                turns: false,
                adapter: false,
                exits: false,
                kills: false,
                advances: vec![9_999, 10_000, 20_000],
                clock_steps: 2,
                depth: 35,
                ..one_topic
            }),
            _ => None,
        }
    }

    /// One line for a report: what the scope holds.
    pub fn describe(&self) -> String {
        let mut spawns = Vec::new();
        if self.notify {
            spawns.push("notify-on-exit");
        }
        if self.watch {
            spawns.push(if self.output_at_spawn {
                "a watch (printing at once)"
            } else {
                "a watch"
            });
        }
        if self.plain {
            spawns.push("neither");
        }
        let mut parts = vec![format!(
            "{} threads{}",
            self.threads.len(),
            match self.symmetric.iter().map(Vec::len).sum::<usize>() {
                0 => String::new(),
                n => format!(" ({n} interchangeable)"),
            }
        )];
        parts.push(format!("{} process ids", self.processes));
        parts.push(format!("spawns with {}", spawns.join(" or ")));
        parts.push(match self.later_outputs {
            usize::MAX => format!("{:?} output", self.chunks),
            n => format!(
                "{:?} output ({n} more per trace after a run's first)",
                self.chunks
            ),
        });
        let mut flags = Vec::new();
        for (on, what) in [
            (self.exits, "exit"),
            (self.kills, "kill"),
            (self.messages, "messages"),
            (self.turns, "turns"),
            (self.adapter, "adapter down/up"),
            (self.reads, "reads"),
        ] {
            if on {
                flags.push(what);
            }
        }
        if !flags.is_empty() {
            parts.push(flags.join(", "));
        }
        parts.push(format!("{} restart", self.restarts));
        parts.push(format!("{} shutdown", self.shutdowns));
        parts.push(match self.clock_steps {
            usize::MAX => format!("advances {:?} ms", self.advances),
            n => format!("advances {:?} ms ({n} per trace)", self.advances),
        });
        format!(
            "scope {}: {}, to depth {}",
            self.name,
            parts.join(", "),
            self.depth
        )
    }
}

/// What an exploration found.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// States generated (every trace prefix reached, duplicates included).
    pub explored: u64,
    /// Distinct states (after deduplication).
    pub distinct: u64,
    /// The deepest level every state of which was expanded.
    pub complete_depth: usize,
    /// Traces judged (one per distinct state) and how many failed.
    pub judged: u64,
    /// Judged traces that failed.
    pub failed: u64,
    /// Wall time.
    pub elapsed: Duration,
    /// The first (so a shortest) failing trace, with its violations.
    pub counterexample: Option<(Trace, Vec<Violation>)>,
}

/// What a prefix's ops imply for the next ops (derived from the ops alone).
#[derive(Default)]
struct Shape {
    /// Distinct process ids spawned so far (`p1..=p{spawned}`).
    spawned: usize,
    ids: BTreeSet<String>,
    running: BTreeSet<String>,
    busy: BTreeSet<usize>,
    used: BTreeSet<usize>,
    down: bool,
    restarts: usize,
    shutdowns: usize,
    outputs: usize,
    /// Running processes that printed in their current run.
    printed: BTreeSet<String>,
    /// Outputs from a process that had already printed in its run.
    later: usize,
    /// Clock steps so far.
    steps: usize,
    /// Reads so far: the process and whether it had ended. A read changes
    /// nothing in the reference (PROC-10), so without this a prefix with a
    /// read would always be a duplicate and reads would never be explored.
    reads: BTreeSet<(String, bool)>,
    /// How each run ended, in order (`true`: killed). An exit and a kill
    /// whose completions were both delivered at once leave the reference
    /// in the same state; an implementation that loses one kind of ending
    /// differs only there (the template's `kill-silent`).
    endings: Vec<(String, bool)>,
}

fn shape(ops: &[TraceOp]) -> Shape {
    let mut s = Shape::default();
    for op in ops {
        if let Some(t) = op.thread() {
            s.used.insert(t);
        }
        match op {
            TraceOp::TurnStart { thread } => {
                s.busy.insert(*thread);
            }
            TraceOp::TurnEnd { thread } => {
                s.busy.remove(thread);
            }
            TraceOp::Spawn { process, .. } => {
                if !s.ids.contains(process) {
                    s.ids.insert(process.clone());
                    s.spawned += 1;
                }
                s.running.insert(process.clone());
                s.printed.remove(process);
            }
            TraceOp::Output { process, .. } => {
                s.outputs += 1;
                if !s.printed.insert(process.clone()) {
                    s.later += 1;
                }
            }
            TraceOp::Advance { .. } => s.steps += 1,
            TraceOp::Exit { process, .. } | TraceOp::Kill { process }
                if s.running.remove(process) =>
            {
                s.printed.remove(process);
                s.endings
                    .push((process.clone(), matches!(op, TraceOp::Kill { .. })));
            }
            TraceOp::Adapter { up } => s.down = !up,
            TraceOp::Restart { survive } => {
                s.restarts += 1;
                s.busy.clear();
                if !survive {
                    s.running.clear();
                    s.printed.clear();
                }
            }
            TraceOp::Shutdown => s.shutdowns += 1,
            TraceOp::Read { process, .. } => {
                let ended = !s.running.contains(process);
                s.reads.insert((process.clone(), ended));
            }
            _ => {}
        }
    }
    s
}

/// Every op the scope offers after `ops` (symmetry-reduced).
fn actions(scope: &Scope, ops: &[TraceOp]) -> Vec<TraceOp> {
    let s = shape(ops);
    if scope.output_at_spawn {
        if let Some(TraceOp::Spawn { process, watch, .. }) = ops.last() {
            if !watch.is_empty() {
                let chunk = scope.chunks.first().copied().unwrap_or(Chunk::Line);
                return vec![TraceOp::Output {
                    process: process.clone(),
                    text: chunk.text(s.outputs + 1, process),
                }];
            }
        }
    }
    let threads: Vec<usize> = (0..scope.threads.len())
        .filter(|t| match scope.symmetric.iter().find(|g| g.contains(t)) {
            None => true,
            Some(g) => s.used.contains(t) || g.iter().find(|u| !s.used.contains(u)) == Some(t),
        })
        .collect();
    let mut out = Vec::new();
    for &t in &threads {
        if scope.messages {
            out.push(TraceOp::Message { thread: t });
        }
        if scope.turns {
            out.push(if s.busy.contains(&t) {
                TraceOp::TurnEnd { thread: t }
            } else {
                TraceOp::TurnStart { thread: t }
            });
        }
    }
    // The next fresh id, and every ended one again (a second run of an id:
    // the dedup-by-process-id bug needs one).
    let mut ids: Vec<String> = (1..=s.spawned)
        .map(|i| format!("p{i}"))
        .filter(|p| !s.running.contains(p))
        .collect();
    if s.spawned < scope.processes {
        ids.push(format!("p{}", s.spawned + 1));
    }
    for process in ids {
        for &t in &threads {
            if scope.notify {
                out.push(TraceOp::Spawn {
                    thread: t,
                    process: process.clone(),
                    watch: Vec::new(),
                    notify: true,
                });
            }
            if scope.watch {
                out.push(TraceOp::Spawn {
                    thread: t,
                    process: process.clone(),
                    watch: vec!["MATCH".into()],
                    notify: false,
                });
            }
            if scope.plain {
                out.push(TraceOp::Spawn {
                    thread: t,
                    process: process.clone(),
                    watch: Vec::new(),
                    notify: false,
                });
            }
        }
    }
    for p in &s.running {
        if !s.printed.contains(p) || s.later < scope.later_outputs {
            for chunk in &scope.chunks {
                out.push(TraceOp::Output {
                    process: p.clone(),
                    text: chunk.text(s.outputs + 1, p),
                });
            }
        }
        if scope.exits {
            out.push(TraceOp::Exit {
                process: p.clone(),
                code: 0,
            });
        }
        if scope.kills {
            out.push(TraceOp::Kill { process: p.clone() });
        }
    }
    if scope.reads {
        for i in 1..=s.spawned {
            for &t in &threads {
                out.push(TraceOp::Read {
                    thread: t,
                    process: format!("p{i}"),
                });
            }
        }
    }
    if scope.adapter {
        out.push(TraceOp::Adapter { up: s.down });
    }
    if s.restarts < scope.restarts {
        out.push(TraceOp::Restart { survive: true });
        out.push(TraceOp::Restart { survive: false });
    }
    if s.shutdowns < scope.shutdowns {
        out.push(TraceOp::Shutdown);
    }
    for &ms in scope
        .advances
        .iter()
        .filter(|_| s.steps < scope.clock_steps)
    {
        out.push(TraceOp::Advance { ms });
    }
    out
}

/// The state a prefix reaches: the gateway's fingerprint and what the
/// model still owes. `None` if the built-in implementation refuses it.
fn state(scope: &Scope, config: &Config, ops: &[TraceOp]) -> Option<u64> {
    use std::hash::{Hash, Hasher};
    let trace = Trace {
        threads: scope.threads.clone(),
        ops: ops.to_vec(),
    };
    let mut x = Execution::new(&trace, config.clone()).ok()?;
    for op in ops {
        x.step(op).ok()?;
    }
    let mut h = std::collections::hash_map::DefaultHasher::new();
    x.fingerprint().hash(&mut h);
    // The model's state: every notification it predicts so far, in order,
    // with its fate (delivered, dead-lettered, still owed), not its steps.
    // Pending ones alone are not enough: a gateway that dropped a match
    // the model delivered reaches the same gateway state as one that
    // never saw the match, and the first prefix to reach it would hide
    // the other (a cooldown at its exact boundary was).
    let model: Vec<String> = predict(&trace, &BTreeSet::new())
        .items
        .iter()
        .map(|e| format!("{:?} {:?} {:?} {:?}", e.kind, e.process, e.place, e.fate))
        .collect();
    model.hash(&mut h);
    let s = shape(ops);
    s.running.hash(&mut h);
    s.reads.hash(&mut h);
    s.endings.hash(&mut h);
    // What is left of the scope's budgets decides the futures too (only
    // where a budget is declared: elsewhere it would split equal states).
    if scope.later_outputs != usize::MAX {
        (s.later, &s.printed).hash(&mut h);
    }
    if scope.clock_steps != usize::MAX {
        s.steps.hash(&mut h);
    }
    Some(h.finish())
}

/// The judge's verdict on a prefix followed by quiescence.
fn verdict(scope: &Scope, config: &Config, ops: &[TraceOp]) -> Result<Vec<Violation>, String> {
    let mut all = ops.to_vec();
    all.extend(quiescence(scope.threads.len()));
    let trace = Trace {
        threads: scope.threads.clone(),
        ops: all,
    };
    let result = crate::conform::trace::execute_with(&trace, config.clone())?;
    Ok(judge(&trace, &result))
}

/// Breadth-first search of `scope` with `config`, offering only the ops
/// `offered` admits. Each level's distinct states (their prefixes, in
/// breadth-first order) go to `level` once the level is complete; it
/// returns whether to go on. Returns the counters (`judged`, `failed` and
/// `counterexample` are the caller's).
fn search(
    scope: &Scope,
    config: &Config,
    offered: impl Fn(&TraceOp) -> bool,
    deadline: Option<Instant>,
    mut level: impl FnMut(usize, &[Vec<TraceOp>]) -> bool,
) -> Summary {
    let start = Instant::now();
    let mut summary = Summary::default();
    let mut seen: HashSet<u64> = HashSet::new();
    let mut current: Vec<Vec<TraceOp>> = vec![Vec::new()];
    if let Some(s) = state(scope, config, &[]) {
        seen.insert(s);
        summary.distinct = 1;
    }
    let late = || deadline.is_some_and(|d| Instant::now() >= d);
    for depth in 1..=scope.depth {
        let mut next = Vec::new();
        for prefix in &current {
            if late() {
                summary.elapsed = start.elapsed();
                return summary;
            }
            for op in actions(scope, prefix) {
                if !offered(&op) {
                    continue;
                }
                let mut ops = prefix.clone();
                ops.push(op);
                summary.explored += 1;
                let Some(s) = state(scope, config, &ops) else {
                    continue;
                };
                if seen.insert(s) {
                    summary.distinct += 1;
                    next.push(ops);
                }
            }
        }
        let go_on = level(depth, &next);
        summary.elapsed = start.elapsed();
        if !go_on || late() {
            return summary;
        }
        summary.complete_depth = depth;
        current = next;
    }
    summary
}

/// Explores `scope` on the built-in implementation configured by `config`
/// (a fault switched on, in test builds), breadth first, until the depth
/// is done, the deadline passes, or a counterexample is found.
pub fn explore(scope: &Scope, config: &Config, deadline: Option<Instant>) -> Summary {
    let mut judged = 0;
    let mut found = None;
    let mut summary = search(
        scope,
        config,
        |_| true,
        deadline,
        |_, states| {
            for ops in states {
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    return false;
                }
                judged += 1;
                // A trace the built-in implementation refuses (none in the
                // default scope) is not judged.
                let Ok(violations) = verdict(scope, config, ops) else {
                    continue;
                };
                if violations.is_empty() {
                    continue;
                }
                let mut all = ops.clone();
                all.extend(quiescence(scope.threads.len()));
                found = Some((
                    Trace {
                        threads: scope.threads.clone(),
                        ops: all,
                    },
                    violations,
                ));
                return false;
            }
            true
        },
    );
    summary.judged = judged;
    summary.failed = u64::from(found.is_some());
    summary.counterexample = found;
    summary
}

/// One trace of an exploration over the protocol: the prefix that first
/// reached a distinct state, followed by the quiescence suffix.
#[derive(Debug, Clone)]
pub struct Case {
    /// `explore/<depth>/<n>`: the n-th distinct state (from 0) reached at
    /// that depth, in breadth-first order. Stable for a given scope and
    /// suite version, whatever the selection or the shard.
    pub id: String,
    /// Operations before quiescence.
    pub depth: usize,
    /// The trace, quiescence suffix included.
    pub trace: Trace,
}

/// The scope's canonical distinct traces, level by level (`level` gets
/// each complete level and returns whether to go on): every distinct
/// state of the built-in reference (without faults) reached by ops the
/// harness does not refuse (its declared constraints, P-12), the scope's
/// threads repaired to what the harness accepts.
///
/// Why the reference's states: a foreign implementation's state is not
/// visible over the protocol. Two prefixes that take the reference to the
/// same state are sent once; an implementation that distinguishes them
/// is checked on the first only (the assumption of [`explore`]'s dedup).
pub fn enumerate(
    scope: &Scope,
    limits: &Constraints,
    deadline: Option<Instant>,
    mut level: impl FnMut(&[Case]) -> bool,
) -> Summary {
    let mut scope = scope.clone();
    for t in &mut scope.threads {
        *t = limits.repair(t);
    }
    let threads = scope.threads.clone();
    search(
        &scope,
        &Config::default(),
        |op| limits.refuses_op(op).is_none(),
        deadline,
        |depth, states| {
            let cases: Vec<Case> = states
                .iter()
                .enumerate()
                .map(|(n, ops)| {
                    let mut all = ops.clone();
                    all.extend(quiescence(threads.len()));
                    Case {
                        id: format!("explore/{depth}/{n}"),
                        depth,
                        trace: Trace {
                            threads: threads.clone(),
                            ops: all,
                        },
                    }
                })
                .collect();
            level(&cases)
        },
    )
}

/// How an exploration over the protocol runs (`procroute explore --impl`).
#[derive(Debug, Clone)]
pub struct Over {
    /// Harness processes run in parallel (each gets whole traces).
    pub jobs: usize,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Which case ids run here (`--only`, `--skip`, `--shard I/N`).
    pub selection: Selection,
    /// Validate every message against the protocol schema.
    pub validate: bool,
    /// Run the levels after the first one with a failure (by default the
    /// run stops there: that level's failures are the shortest ones).
    pub keep_going: bool,
    /// Stop enumerating (and sending) at this instant.
    pub deadline: Option<Instant>,
}

/// What an exploration over the protocol did, beside its report.
#[derive(Debug, Clone, Default)]
pub struct OverSummary {
    /// The enumeration on the reference (states explored, distinct).
    pub enumerated: Summary,
    /// Traces sent to the harness, and the deepest level sent in full.
    pub sent: u64,
    /// The deepest level whose traces were all sent.
    pub levels_run: usize,
    /// Wall time.
    pub elapsed: Duration,
    /// The first failing case (breadth first: a shortest one), with what
    /// the harness reported and the judge's violations.
    pub first: Option<(Case, TraceResult, Vec<Violation>)>,
}

/// Explores `scope` through a harness speaking the protocol: the scope's
/// canonical distinct traces ([`enumerate`], within the constraints the
/// harness declares), level by level, each run by one of `over.jobs`
/// harness processes and judged by the one judge. By default the run
/// stops after the first level with a failure, so every failure reported
/// is a shortest one. One case per trace, reported like `conform`.
pub fn explore_over(
    program: &str,
    args: &[String],
    scope: &Scope,
    over: &Over,
) -> Result<(Report, Started, OverSummary), String> {
    let start = Instant::now();
    let spawn = || -> Result<(Harness, Started), String> {
        let mut h = Harness::spawn(program, args)?;
        if over.validate {
            h.schema = Some(std::sync::Arc::new(Schema::protocol()));
        }
        let started = h.start(over.timeout)?;
        Ok((h, started))
    };
    let (first, started) = spawn()?;
    let limits = started.validate()?;
    let mut summary = OverSummary::default();
    let mut outcomes = Vec::new();
    if let Some(why) = started.trace_refusal() {
        first.stop();
        outcomes.push(Outcome::skip("explore/*", JUDGED, why));
        let mut report = Report::new(crate::SUITE_VERSION.to_owned(), outcomes);
        report.declared = Declared::of(&started);
        return Ok((report, started, summary));
    }
    let mut harnesses = vec![first];
    let mut spawn_error = None;
    while harnesses.len() < over.jobs.max(1) {
        match spawn() {
            Ok((h, _)) => harnesses.push(h),
            Err(e) => {
                spawn_error = Some(e);
                break;
            }
        }
    }
    if let Some(e) = spawn_error {
        for h in harnesses {
            h.stop();
        }
        return Err(e);
    }
    let seq = AtomicU64::new(1);
    let mut shallower_passed = true;
    summary.enumerated = enumerate(scope, &limits, over.deadline, |level| {
        let chosen: Vec<&Case> = level
            .iter()
            .filter(|c| over.selection.wants(&c.id))
            .collect();
        let traces: Vec<&Trace> = chosen.iter().map(|c| &c.trace).collect();
        let results = run_many(&mut harnesses, &traces, over.timeout, &seq);
        summary.sent += chosen.len() as u64;
        summary.levels_run += 1;
        let mut failed_here = false;
        for (case, result) in chosen.iter().zip(results) {
            let cited = cited_rules(&exercised(&case.trace));
            let result = match result {
                Ok(r) => r,
                Err(NoResult::Skipped(why)) => {
                    outcomes.push(Outcome::skip(&case.id, &cited, why));
                    continue;
                }
                Err(NoResult::Errored(e)) => {
                    outcomes.push(Outcome::errored(&case.id, &cited, e));
                    continue;
                }
            };
            let violations =
                crate::model::judge::judge_declared(&case.trace, &result, &started.declared());
            let Some(head) = violations.first() else {
                outcomes.push(Outcome::pass(&case.id, &cited));
                continue;
            };
            failed_here = true;
            let note = format!(
                "found at depth {} of a breadth-first exploration{}",
                case.depth,
                if shallower_passed && over.selection.shard.is_none() {
                    " (every trace of the scope with fewer ops passed)"
                } else {
                    ""
                }
            );
            let detail = failure_detail(&violations, &case.trace, &result, &note);
            outcomes.push(Outcome::check(
                &case.id,
                &[head.rule.as_str()],
                Some(detail),
            ));
            if summary.first.is_none() {
                summary.first = Some(((*case).clone(), result, violations));
            }
        }
        if failed_here {
            shallower_passed = false;
        }
        !failed_here || over.keep_going
    });
    for h in harnesses {
        h.stop();
    }
    summary.elapsed = start.elapsed();
    let mut report = Report::new(crate::SUITE_VERSION.to_owned(), outcomes);
    report.declared = Declared::of(&started);
    Ok((report, started, summary))
}
