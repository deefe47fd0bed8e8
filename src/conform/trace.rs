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

use crate::delivery::NotificationId;
use crate::gateway::{Config, FileKind, Gateway, Input, Output};
use crate::gen::{self, Rng};
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

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Observed {
    pub step: usize,
    pub destination: Destination,
    /// The process the notification is about (`None` for shutdown notices).
    pub process: Option<String>,
    /// `watch_match`, `watch_disabled`, `completion` or `shutdown`.
    pub kind: String,
    pub text: String,
    /// For a dead letter: why it could not be delivered (adapter failures,
    /// back-pressure, or a routing drop such as `origin_conflict`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
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

fn kind_of(id: &NotificationId, text: &str) -> &'static str {
    match id {
        NotificationId::Shutdown { .. } => "shutdown",
        _ if text.contains("matched watch pattern") => "watch_match",
        _ if text.contains("watch patterns disabled") => "watch_disabled",
        _ => "completion",
    }
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
                    let all: Vec<RunId> = x.runs.values().copied().collect();
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
            destination: n.destination.clone(),
            process: x.process_of(&n.id),
            kind: kind_of(&n.id, &n.text).to_owned(),
            text: n.text.clone(),
            reason: Some(d.reason.clone()),
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
                                    destination: n.destination.clone(),
                                    process: self.process_of(&n.id),
                                    kind: kind_of(&n.id, &n.text).to_owned(),
                                    text: n.text.clone(),
                                    reason: None,
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

/// A violated invariant, with the rule id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Violation {
    pub rule: String,
    pub detail: String,
}

/// Judges a harness's result for `trace` against the reference model.
pub fn judge(trace: &Trace, result: &TraceResult) -> Vec<Violation> {
    let mut v = Vec::new();
    let mut bad = |rule: &str, detail: String| {
        v.push(Violation {
            rule: rule.to_owned(),
            detail,
        })
    };
    let mut model = crate::model::Model::new();
    let mut run_of: BTreeMap<String, u64> = BTreeMap::new();
    // Every run of a process id, with the step that spawned it: a second
    // run may come from another thread, and the first run's notifications
    // may arrive after it.
    let mut runs_of: BTreeMap<String, Vec<(usize, u64)>> = BTreeMap::new();
    let mut running: BTreeSet<String> = BTreeSet::new();
    let thread = |i: usize| {
        trace.threads.get(i).map(|o| crate::model::Thread {
            platform: o.platform.clone(),
            chat_type: o.chat_type.clone(),
            chat: o.chat_id.clone(),
            thread: o.thread_id.clone(),
        })
    };
    for (step, op) in trace.ops.iter().enumerate() {
        match op {
            TraceOp::Spawn {
                thread: t,
                process,
                watch,
                notify,
            } => {
                if let Some(home) = thread(*t) {
                    let run = model.spawn(home, process, *notify, !watch.is_empty());
                    run_of.insert(process.clone(), run);
                    runs_of
                        .entry(process.clone())
                        .or_default()
                        .push((step, run));
                    running.insert(process.clone());
                }
            }
            TraceOp::Output { process, text } if running.contains(process) => {
                if let Some(run) = run_of.get(process) {
                    model.output(*run, text);
                }
            }
            TraceOp::Exit { process, .. } | TraceOp::Kill { process }
                if running.remove(process) =>
            {
                model.finish(run_of[process]);
            }
            TraceOp::Restart { survive: false } => {
                for p in std::mem::take(&mut running) {
                    model.finish(run_of[&p]);
                }
            }
            _ => {}
        }
    }
    let same = |d: &Destination, t: &crate::model::Thread| {
        d.platform.as_str() == t.platform
            && d.chat_type.as_str() == t.chat_type
            && d.chat_id.as_str() == t.chat
            && d.thread_id.as_ref().map(|x| x.as_str()) == t.thread.as_deref()
    };
    let mut seen: BTreeMap<(&str, &str, &str), usize> = BTreeMap::new();
    let mut last_step: BTreeMap<&str, usize> = BTreeMap::new();
    for d in &result.deliveries {
        let Some(p) = d.process.as_deref() else {
            continue;
        };
        let homes: Vec<&crate::model::Thread> = runs_of
            .get(p)
            .into_iter()
            .flatten()
            .filter(|(spawned, _)| *spawned <= d.step)
            .filter_map(|(_, run)| model.home(*run))
            .collect();
        if homes.is_empty() {
            bad(
                "INV-1",
                format!("delivery about {p:?}, not spawned by step {}", d.step),
            );
            continue;
        }
        if !homes.iter().any(|home| same(&d.destination, home)) {
            bad(
                "INV-1",
                format!(
                    "{p} {} went to {:?}, home {:?}",
                    d.kind,
                    d.destination,
                    homes.last().expect("not empty")
                ),
            );
        }
        // NO-BLEED: every output token in the text belongs to this process.
        for word in d.text.split(|c: char| !c.is_ascii_alphanumeric()) {
            if let Some((_, owner)) = word.strip_prefix("tok").and_then(|w| w.split_once("of")) {
                if owner != p {
                    bad(
                        "INV-2",
                        format!("output of {owner} in a notification about {p}"),
                    );
                }
            }
        }
        // Two runs of one process id may legitimately send the same text;
        // more copies than runs is a duplicate.
        let copies = seen
            .entry((p, d.kind.as_str(), d.text.as_str()))
            .or_insert(0usize);
        *copies += 1;
        let runs = model.runs.values().filter(|r| r.process_id == p).count();
        if *copies > runs {
            bad(
                "INV-3",
                format!("{p} {} delivered {} times", d.kind, *copies),
            );
        }
        if let Some(prev) = last_step.insert(p, d.step) {
            if d.step < prev {
                bad(
                    "INV-5",
                    format!(
                        "{p}: a notification of step {} after one of step {prev}",
                        d.step
                    ),
                );
            }
        }
    }
    for d in &result.dead_letters {
        if d.reason.as_deref().unwrap_or("").is_empty() {
            bad(
                "INV-4",
                format!("dead letter about {:?} without a reason", d.process),
            );
        }
    }
    let completions = |p: &str| {
        result
            .deliveries
            .iter()
            .chain(&result.dead_letters)
            .filter(|d| d.process.as_deref() == Some(p) && d.kind == "completion")
            .count()
    };
    let mut promised: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for r in model.runs.values() {
        let e = promised.entry(r.process_id.as_str()).or_default();
        if r.finished && r.notify_on_exit {
            e.0 += 1; // must complete
        }
        if r.finished && (r.notify_on_exit || r.watches) {
            e.1 += 1; // may complete
        }
    }
    for (p, (must, may)) in promised {
        let got = completions(p);
        if got < must {
            bad(
                "INV-4",
                format!("{must} completion(s) of {p} promised, {got} delivered or dead-lettered"),
            );
        }
        if got > may {
            bad(
                "INV-7",
                format!("{got} completion(s) of {p}, at most {may} promised"),
            );
        }
    }
    v
}

/// A generated trace: threads from the shared nasty-id generators, unique
/// process ids, the quiescence suffix appended.
pub fn generate(seed: u64, max_steps: usize) -> Trace {
    let mut rng = Rng::new(seed);
    let threads: Vec<Origin> = (0..4).map(|_| gen::origin(&mut rng)).collect();
    let n = threads.len();
    let mut ops = Vec::new();
    let mut procs: Vec<String> = Vec::new();
    // (process id, thread) of processes that have exited: their ids may be
    // spawned again from the same thread (a second run of one process id).
    let mut exited: Vec<(String, usize)> = Vec::new();
    let mut home: BTreeMap<String, usize> = BTreeMap::new();
    let mut tokens = 0;
    for _ in 0..1 + rng.below(max_steps.max(1)) {
        let t = rng.below(n);
        let op = match rng.below(14) {
            0 | 1 => TraceOp::Message { thread: t },
            2 => TraceOp::TurnStart { thread: t },
            3 => TraceOp::TurnEnd { thread: t },
            4 => TraceOp::Reset { thread: t },
            5 | 6 => {
                let (process, thread) = if !exited.is_empty() && rng.chance(30) {
                    exited.remove(rng.below(exited.len()))
                } else {
                    let p = format!("p{}", procs.len() + 1);
                    procs.push(p.clone());
                    (p, t)
                };
                home.insert(process.clone(), thread);
                TraceOp::Spawn {
                    thread,
                    process,
                    watch: if rng.chance(50) {
                        vec!["MATCH".into()]
                    } else {
                        vec![]
                    },
                    notify: rng.chance(70),
                }
            }
            7 | 8 if !procs.is_empty() => {
                tokens += 1;
                let process = rng.pick(&procs).clone();
                let hit = if rng.chance(50) { " MATCH" } else { "" };
                TraceOp::Output {
                    text: format!("tok{tokens}of{process}{hit}\n"),
                    process,
                }
            }
            9 | 10 if !procs.is_empty() => {
                let process = rng.pick(&procs).clone();
                if let Some(th) = home.get(&process) {
                    if !exited.iter().any(|(p, _)| p == &process) {
                        exited.push((process.clone(), *th));
                    }
                }
                if rng.chance(50) {
                    TraceOp::Exit {
                        process,
                        code: rng.below(3) as i32,
                    }
                } else {
                    TraceOp::Kill { process }
                }
            }
            11 => TraceOp::Advance {
                ms: *rng.pick(&[1_000, 16_000, 120_000]),
            },
            12 => TraceOp::Adapter { up: rng.chance(50) },
            13 => TraceOp::Restart {
                survive: rng.chance(50),
            },
            _ => TraceOp::Advance { ms: 1_000 },
        };
        ops.push(op);
    }
    ops.extend(quiescence(n));
    Trace {
        threads: threads.into_iter().map(RawOrigin::from).collect(),
        ops,
    }
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
