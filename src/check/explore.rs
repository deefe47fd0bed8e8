//! Exhaustive small-scope exploration (`procroute explore`): every trace of
//! a declared scope up to a depth, breadth first, each reached state judged
//! by the one judge — the trace so far, followed by the quiescence suffix
//! (every turn ends, the adapter comes up, time passes), so invariants are
//! checked at every step and liveness at quiescence.
//!
//! States are deduplicated by a fingerprint of the built-in gateway's state
//! ([`Execution::fingerprint`]) together with what the model still owes
//! (the oracle's pending notifications of the prefix and the processes it
//! has running): two prefixes that agree on both are taken to have the same
//! futures, so only the first is expanded. That is an assumption, not a
//! theorem: what was already reported is not in the fingerprint, so a bug
//! that depends on the reported history alone (a resend of an old
//! notification) is found only along the first prefix that reached the
//! state. Each prefix is executed twice (for its fingerprint, then with
//! the quiescence suffix for the verdict); at 30,000 states/s that was not
//! worth sharing an execution. Symmetry is reduced by construction: process
//! ids are taken in order (`p1` before `p2`), and of a group of
//! interchangeable threads only those already used and the first unused
//! one are offered. Breadth first means the first counterexample is a
//! shortest one.
//!
//! Why not the `stateright` crate: its checkers keep states and compare
//! them by `Hash`/`Eq` of the state type, and properties are predicates of
//! one state; ours are judgements of a whole trace by the oracle (which is
//! deliberately batch: it reads a trace, it does not step). Carrying the
//! prefix in the state with a hand-written `Hash` on the fingerprint would
//! fit its API, but then every property evaluation re-runs the trace, as
//! here, and the crate adds an Explorer web server and its dependencies to
//! the checking kit for none of that (ARCHITECTURE.md).

use std::collections::{BTreeSet, HashSet, VecDeque};
use std::time::{Duration, Instant};

use crate::check::conform::trace::{quiescence, Execution, Trace, TraceOp};
use crate::check::model::judge::{judge, Violation};
use crate::check::model::oracle::{predict, Fate};
use crate::gateway::Config;
use crate::origin::RawOrigin;

/// What is explored: the threads, how many process ids, the trace features
/// and how often the rare ones may occur, and the depth.
#[derive(Debug, Clone)]
pub struct Scope {
    pub threads: Vec<RawOrigin>,
    /// Groups of interchangeable threads (indices into `threads`).
    pub symmetric: Vec<Vec<usize>>,
    /// Process ids `p1..=pN`; an id that ended may be spawned again.
    pub processes: usize,
    /// Spawn variants: notify on exit, and watch for `MATCH` without notify.
    pub watch: bool,
    /// Agents' reads (PROC-10).
    pub reads: bool,
    /// Clock steps offered at every state.
    pub advances: Vec<u64>,
    pub restarts: usize,
    pub shutdowns: usize,
    /// Operations per trace (before the quiescence suffix).
    pub depth: usize,
}

impl Default for Scope {
    /// Three threads of which two are topics of one chat, two process ids,
    /// watch and notify-on-exit, adapter down/up, one restart, one
    /// shutdown, three clock steps (a second, a cooldown, a retry cap).
    fn default() -> Scope {
        let thread = |chat_type: &str, chat: &str, topic: Option<&str>| RawOrigin {
            platform: "telegram".into(),
            chat_type: chat_type.into(),
            chat_id: chat.into(),
            thread_id: topic.map(str::to_owned),
            user_id: Some("42".into()),
            user_name: None,
        };
        Scope {
            threads: vec![
                thread("group", "-1001", Some("1")),
                thread("group", "-1001", Some("2")),
                thread("dm", "42", None),
            ],
            symmetric: vec![vec![0, 1]],
            processes: 2,
            watch: true,
            reads: false,
            advances: vec![1_000, 16_000, 61_000],
            restarts: 1,
            shutdowns: 1,
            depth: 5,
        }
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
    pub failed: u64,
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
            }
            TraceOp::Output { .. } => s.outputs += 1,
            TraceOp::Exit { process, .. } | TraceOp::Kill { process } => {
                s.running.remove(process);
            }
            TraceOp::Adapter { up } => s.down = !up,
            TraceOp::Restart { survive } => {
                s.restarts += 1;
                s.busy.clear();
                if !survive {
                    s.running.clear();
                }
            }
            TraceOp::Shutdown => s.shutdowns += 1,
            _ => {}
        }
    }
    s
}

/// Every op the scope offers after `ops` (symmetry-reduced).
fn actions(scope: &Scope, ops: &[TraceOp]) -> Vec<TraceOp> {
    let s = shape(ops);
    let threads: Vec<usize> = (0..scope.threads.len())
        .filter(|t| match scope.symmetric.iter().find(|g| g.contains(t)) {
            None => true,
            Some(g) => s.used.contains(t) || g.iter().find(|u| !s.used.contains(u)) == Some(t),
        })
        .collect();
    let mut out = Vec::new();
    for &t in &threads {
        out.push(TraceOp::Message { thread: t });
        out.push(if s.busy.contains(&t) {
            TraceOp::TurnEnd { thread: t }
        } else {
            TraceOp::TurnStart { thread: t }
        });
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
            out.push(TraceOp::Spawn {
                thread: t,
                process: process.clone(),
                watch: Vec::new(),
                notify: true,
            });
            if scope.watch {
                out.push(TraceOp::Spawn {
                    thread: t,
                    process: process.clone(),
                    watch: vec!["MATCH".into()],
                    notify: false,
                });
            }
        }
    }
    for p in &s.running {
        out.push(TraceOp::Output {
            process: p.clone(),
            text: format!("tok{}of{p} MATCH\n", s.outputs + 1),
        });
        out.push(TraceOp::Exit {
            process: p.clone(),
            code: 0,
        });
        out.push(TraceOp::Kill { process: p.clone() });
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
    out.push(TraceOp::Adapter { up: s.down });
    if s.restarts < scope.restarts {
        out.push(TraceOp::Restart { survive: true });
        out.push(TraceOp::Restart { survive: false });
    }
    if s.shutdowns < scope.shutdowns {
        out.push(TraceOp::Shutdown);
    }
    for &ms in &scope.advances {
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
    let owed: BTreeSet<String> = predict(&trace, &BTreeSet::new())
        .items
        .iter()
        .filter(|e| e.fate == Fate::Pending)
        .map(|e| format!("{:?} {:?} {:?}", e.kind, e.process, e.place))
        .collect();
    owed.hash(&mut h);
    shape(ops).running.hash(&mut h);
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
    let result = crate::check::conform::trace::execute_with(&trace, config.clone())?;
    Ok(judge(&trace, &result))
}

/// Explores `scope` on the built-in implementation configured by `config`
/// (a fault switched on, in test builds), breadth first, until the depth
/// is done, the deadline passes, or a counterexample is found.
pub fn explore(scope: &Scope, config: &Config, deadline: Option<Instant>) -> Summary {
    let start = Instant::now();
    let mut summary = Summary::default();
    let mut seen: HashSet<u64> = HashSet::new();
    let mut level: VecDeque<Vec<TraceOp>> = VecDeque::from([Vec::new()]);
    if let Some(s) = state(scope, config, &[]) {
        seen.insert(s);
        summary.distinct = 1;
    }
    for depth in 1..=scope.depth {
        let mut next = VecDeque::new();
        while let Some(prefix) = level.pop_front() {
            if deadline.is_some_and(|d| Instant::now() >= d) {
                summary.elapsed = start.elapsed();
                return summary;
            }
            for op in actions(scope, &prefix) {
                let mut ops = prefix.clone();
                ops.push(op);
                summary.explored += 1;
                let Some(s) = state(scope, config, &ops) else {
                    continue;
                };
                if !seen.insert(s) {
                    continue;
                }
                summary.distinct += 1;
                summary.judged += 1;
                // A trace the built-in implementation refuses (none in the
                // default scope) is not judged.
                let Ok(violations) = verdict(scope, config, &ops) else {
                    continue;
                };
                if !violations.is_empty() {
                    summary.failed += 1;
                    let mut all = ops.clone();
                    all.extend(quiescence(scope.threads.len()));
                    summary.counterexample = Some((
                        Trace {
                            threads: scope.threads.clone(),
                            ops: all,
                        },
                        violations,
                    ));
                    summary.elapsed = start.elapsed();
                    return summary;
                }
                next.push_back(ops);
            }
        }
        summary.complete_depth = depth;
        level = next;
    }
    summary.elapsed = start.elapsed();
    summary
}
