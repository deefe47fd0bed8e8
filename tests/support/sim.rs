#![allow(dead_code)]
//! The interleaving simulator shared by `interleavings.rs` and `faults.rs`.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use procroute::delivery::{NoticeKind, NotificationId};
use procroute::gateway::{Config, FileKind, Gateway, Input, Output};
use procroute::model::{Model, Thread};
use procroute::registry::{Completion, RunId};
use procroute::router::Destination;
use procroute::{ChatType, Origin};

/// Threads on four platforms, nasty ids included; two users share topic 42.
fn origins() -> Vec<Origin> {
    let mk = |p: &str, t: ChatType, chat: &str, thread: Option<&str>, user: &str| {
        let mut o = Origin::new(p, t, chat).expect("valid");
        if let Some(th) = thread {
            o = o.with_thread(th).expect("valid");
        }
        o.with_user(user).expect("valid")
    };
    vec![
        mk(
            "telegram",
            ChatType::Group,
            "-1001234567890",
            Some("42"),
            "alice",
        ),
        mk(
            "telegram",
            ChatType::Group,
            "-1001234567890",
            Some("42"),
            "bob",
        ),
        mk(
            "telegram",
            ChatType::Group,
            "-1001234567890",
            Some("43"),
            "alice",
        ),
        mk("telegram", ChatType::Group, "-1001234567890", None, "42"),
        mk(
            "matrix",
            ChatType::Group,
            "!abc:matrix.org",
            Some("$ev:matrix.org"),
            "@alice:matrix.org",
        ),
        mk(
            "slack",
            ChatType::Group,
            "C0123ABC",
            Some("1700000000.123456"),
            "U77",
        ),
        mk("discord", ChatType::Thread, "222", Some("222"), "333"),
        mk(
            "signal",
            ChatType::Dm,
            "group:QUJD+/x=",
            None,
            "+15551234567",
        ),
    ]
}

fn model_thread(o: &Origin) -> Thread {
    Thread {
        platform: o.platform().as_str().to_owned(),
        chat_type: o.chat_type().as_str().to_owned(),
        chat: o.chat_id().as_str().to_owned(),
        thread: o.thread_id().map(|t| t.as_str().to_owned()),
    }
}

fn same_place(d: &Destination, t: &Thread) -> bool {
    d.platform.as_str() == t.platform
        && d.chat_type.as_str() == t.chat_type
        && d.chat_id.as_str() == t.chat
        && d.thread_id.as_ref().map(|x| x.as_str()) == t.thread.as_deref()
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    Message(usize),
    TurnStart(usize),
    TurnEnd(usize),
    Reset(usize),
    Spawn {
        thread: usize,
        notify: bool,
        watch: bool,
    },
    Output {
        proc: usize,
        hit: bool,
    },
    Exit {
        proc: usize,
        code: i32,
    },
    Kill {
        proc: usize,
    },
    Advance(u64),
    AdapterDown,
    AdapterUp,
    Restart {
        survive: bool,
    },
    Shutdown,
}

impl Op {
    pub fn is_foreground(&self) -> bool {
        matches!(self, Op::Message(_) | Op::TurnStart(_) | Op::TurnEnd(_))
    }
}

pub fn op() -> impl Strategy<Value = Op> {
    let t = 0..8usize;
    prop_oneof![
        2 => t.clone().prop_map(Op::Message),
        2 => t.clone().prop_map(Op::TurnStart),
        2 => t.clone().prop_map(Op::TurnEnd),
        1 => t.clone().prop_map(Op::Reset),
        3 => (t, any::<bool>(), any::<bool>()).prop_map(|(thread, notify, watch)| Op::Spawn { thread, notify, watch }),
        4 => (0..8usize, any::<bool>()).prop_map(|(proc, hit)| Op::Output { proc, hit }),
        2 => (0..8usize, -1..3i32).prop_map(|(proc, code)| Op::Exit { proc, code }),
        1 => (0..8usize).prop_map(|proc| Op::Kill { proc }),
        2 => prop_oneof![Just(1_000u64), Just(16_000), Just(120_000)].prop_map(Op::Advance),
        1 => Just(Op::AdapterDown),
        1 => Just(Op::AdapterUp),
        1 => any::<bool>().prop_map(|survive| Op::Restart { survive }),
        1 => Just(Op::Shutdown),
    ]
}

/// One delivered (or dead-lettered) notification.
pub type Seen = BTreeMap<NotificationId, (Destination, String)>;

pub struct Sim {
    threads: Vec<Origin>,
    config: Config,
    g: Gateway,
    files: BTreeMap<&'static str, Vec<u8>>,
    now: u64,
    adapter_up: bool,
    model: Model,
    spawned: Vec<(u64, String)>,
    pub delivered: Vec<(NotificationId, Destination, String)>,
    /// The typed kind of every notification sent.
    kinds: BTreeMap<NotificationId, NoticeKind>,
    /// `delivered.len()` after each step: which step sent what.
    pub marks: Vec<usize>,
    tokens: u64,
}

impl Sim {
    pub fn new(config: Config) -> Sim {
        Sim::with_threads(config, origins())
    }

    /// A simulator over a given thread pool (e.g. generated nasty ids).
    pub fn with_threads(config: Config, threads: Vec<Origin>) -> Sim {
        assert!(!threads.is_empty());
        Sim {
            threads,
            config: config.clone(),
            g: Gateway::new(config),
            files: BTreeMap::new(),
            now: 0,
            adapter_up: true,
            model: Model::new(),
            spawned: Vec::new(),
            delivered: Vec::new(),
            kinds: BTreeMap::new(),
            marks: Vec::new(),
            tokens: 0,
        }
    }

    fn feed(&mut self, input: Input) -> Vec<Output> {
        let out = self.g.handle(self.now, input);
        self.absorb(out.clone());
        out
    }

    fn running(&self, proc: usize) -> Option<(u64, String)> {
        let live: Vec<&(u64, String)> = self
            .spawned
            .iter()
            .filter(|(r, _)| self.g.registry().is_running(RunId(*r)))
            .collect();
        (!live.is_empty()).then(|| live[proc % live.len()].clone())
    }

    pub fn apply(&mut self, op: &Op) -> Result<(), TestCaseError> {
        let origin = |i: usize| self.threads[i % self.threads.len()].clone();
        match op {
            Op::Message(i) => drop(self.feed(Input::Message { origin: origin(*i) })),
            Op::TurnStart(i) => drop(self.feed(Input::TurnStarted { origin: origin(*i) })),
            Op::TurnEnd(i) => drop(self.feed(Input::TurnEnded { origin: origin(*i) })),
            Op::Reset(i) => drop(self.feed(Input::Reset { origin: origin(*i) })),
            Op::Spawn {
                thread,
                notify,
                watch,
            } => {
                let o = origin(*thread);
                // Process ids repeat: two runs of one id must stay apart.
                let pid = format!("proc_{}", self.spawned.len() % 2);
                let out = self.feed(Input::Spawn {
                    origin: o.clone(),
                    process_id: pid.clone(),
                    command: format!("job {pid}"),
                    watch_patterns: if *watch { vec!["MATCH".into()] } else { vec![] },
                    notify_on_exit: *notify,
                });
                let run = out.iter().find_map(|x| match x {
                    Output::Spawned { run, .. } => Some(run.0),
                    _ => None,
                });
                let expected = self.model.spawn(model_thread(&o), &pid, *notify, *watch);
                prop_assert_eq!(run, Some(expected), "run ids");
                self.spawned.push((expected, pid));
            }
            Op::Output { proc, hit } => {
                if let Some((run, _)) = self.running(*proc) {
                    self.tokens += 1;
                    let token = format!("tok{}r{}", self.tokens, run);
                    self.model.output(run, &token);
                    let chunk = if *hit {
                        format!("{token} MATCH\n")
                    } else {
                        format!("{token}\n")
                    };
                    self.feed(Input::Output {
                        run: RunId(run),
                        chunk,
                    });
                }
            }
            Op::Exit { proc, code } => {
                if let Some((run, _)) = self.running(*proc) {
                    self.model.finish(run);
                    let completion = if *code < 0 {
                        Completion::Signaled { signal: 15 }
                    } else {
                        Completion::Exited { code: *code }
                    };
                    self.feed(Input::Finished {
                        run: RunId(run),
                        completion,
                    });
                }
            }
            Op::Kill { proc } => {
                if let Some((run, _)) = self.running(*proc) {
                    self.model.finish(run);
                    self.feed(Input::Finished {
                        run: RunId(run),
                        completion: Completion::Killed,
                    });
                }
            }
            Op::Advance(ms) => {
                self.now += ms;
                self.feed(Input::Tick);
                if self.adapter_up {
                    let due = self.g.delivery().due_for_idle(self.now);
                    prop_assert_eq!(
                        due,
                        0,
                        "INV-8 LATENCY: {} notifications due for idle threads after a tick",
                        due
                    );
                }
            }
            Op::AdapterDown => self.adapter_up = false,
            Op::AdapterUp => {
                self.adapter_up = true;
                self.feed(Input::Tick);
            }
            Op::Restart { survive } => {
                // Only persisted bytes survive a crash.
                let running: Vec<u64> = self
                    .spawned
                    .iter()
                    .map(|(r, _)| *r)
                    .filter(|r| self.g.registry().is_running(RunId(*r)))
                    .collect();
                if !survive {
                    for r in &running {
                        self.model.finish(*r);
                    }
                }
                let f = |k: &str| self.files.get(k).cloned();
                let (store, ckpt, del) = (f("store"), f("checkpoint"), f("delivery"));
                let (g, out) = Gateway::recover(
                    Config::default(),
                    store.as_deref(),
                    ckpt.as_deref(),
                    del.as_deref(),
                    self.now,
                    |_, _| *survive,
                )
                .map_err(|e| TestCaseError::fail(format!("recovery failed: {e:?}")))?;
                self.g = g;
                self.absorb(out);
            }
            Op::Shutdown => drop(self.feed(Input::Shutdown)),
        }
        Ok(())
    }

    /// Executes outputs the way a driver would: persist bytes, send through
    /// the (possibly failing) adapter and feed the answer back, until the
    /// gateway has nothing more to say.
    fn absorb(&mut self, outputs: Vec<Output>) {
        let mut work: std::collections::VecDeque<Output> = outputs.into();
        while let Some(o) = work.pop_front() {
            match o {
                Output::Persist { file, bytes } => {
                    let k = match file {
                        FileKind::Store => "store",
                        FileKind::Checkpoint => "checkpoint",
                        FileKind::Delivery => "delivery",
                    };
                    self.files.insert(k, bytes);
                }
                Output::Send(n) => {
                    let error = if self.adapter_up {
                        self.delivered
                            .push((n.id, n.destination.clone(), n.text.clone()));
                        self.kinds.insert(n.id, n.kind);
                        None
                    } else {
                        Some("adapter down".to_owned())
                    };
                    work.extend(self.g.handle(self.now, Input::Sent { id: n.id, error }));
                }
                _ => {}
            }
        }
    }

    /// HOME, NO-BLEED, EXACTLY-ONCE, ORDER after every step.
    pub fn check_step(&self) -> Result<(), TestCaseError> {
        let mut ids = BTreeSet::new();
        let mut last_seq: BTreeMap<u64, u32> = BTreeMap::new();
        for (id, dest, text) in &self.delivered {
            prop_assert!(
                ids.insert(*id),
                "INV-3 EXACTLY-ONCE: {:?} delivered twice",
                id
            );
            let NotificationId::Process { run, seq } = id else {
                continue;
            };
            let r = self
                .model
                .runs
                .get(&run.0)
                .ok_or_else(|| TestCaseError::fail(format!("unknown run {run:?}")))?;
            prop_assert!(
                same_place(dest, &r.home),
                "INV-1 HOME: run {} went to {:?}, home {:?}",
                run.0,
                dest,
                r.home
            );
            let header = format!("[Background process {}", r.process_id);
            let named = text
                .strip_prefix(&header)
                .is_some_and(|rest| rest.starts_with([' ', ':']));
            prop_assert!(named, "INV-1 HOME: text of another process: {}", text);
            for word in text.split(|c: char| !c.is_ascii_alphanumeric()) {
                if let Some(rest) = word.strip_prefix("tok") {
                    let owner = rest
                        .split_once('r')
                        .and_then(|(_, o)| o.parse::<u64>().ok());
                    prop_assert_eq!(owner, Some(run.0), "INV-2 NO-BLEED: {} in {}", word, text);
                }
            }
            if let Some(prev) = last_seq.insert(run.0, *seq) {
                prop_assert!(
                    *seq > prev,
                    "INV-5 ORDER: run {} seq {} after {}",
                    run.0,
                    seq,
                    prev
                );
            }
        }
        Ok(())
    }

    /// Quiescence: adapters up, turns over, time passes, everything ticks.
    pub fn quiesce(&mut self) {
        self.adapter_up = true;
        for o in self.threads.clone() {
            self.feed(Input::TurnEnded { origin: o });
        }
        for _ in 0..12 {
            self.now += 61_000;
            self.feed(Input::Tick);
        }
    }

    /// INV-4 NO-LOSS and INV-7 MODEL-EQUIVALENCE at quiescence.
    pub fn check_quiescent(&self) -> Result<(), TestCaseError> {
        // What a notification is comes from its typed kind, never its text.
        let completions: BTreeSet<NotificationId> = self
            .kinds
            .iter()
            .filter(|(_, k)| **k == NoticeKind::Completion)
            .map(|(id, _)| *id)
            .chain(
                self.g
                    .delivery()
                    .dead_letters()
                    .filter(|d| d.notification.kind == NoticeKind::Completion)
                    .map(|d| d.notification.id),
            )
            .collect();
        let completed = |run: u64, _pid: &str| {
            completions
                .iter()
                .any(|id| matches!(id, NotificationId::Process { run: r, .. } if r.0 == run))
        };
        for (run, r) in self.model.promised_completions() {
            prop_assert!(
                completed(run, &r.process_id),
                "INV-4 NO-LOSS: completion of run {} ({}) never delivered nor dead-lettered",
                run,
                r.process_id
            );
        }
        for (run, r) in &self.model.runs {
            let promised = r.finished && (r.notify_on_exit || r.watches);
            if !promised {
                prop_assert!(
                    !completed(*run, &r.process_id),
                    "INV-7 MODEL-EQUIVALENCE: unpromised completion for run {}",
                    run
                );
            }
        }
        prop_assert_eq!(
            self.g.delivery().queued(),
            0,
            "INV-4: something still queued at quiescence"
        );
        Ok(())
    }

    pub fn seen(&self) -> Seen {
        let mut m: Seen = self
            .delivered
            .iter()
            .filter(|(id, _, _)| matches!(id, NotificationId::Process { .. }))
            .map(|(id, d, t)| (*id, (d.clone(), t.clone())))
            .collect();
        for d in self
            .g
            .delivery()
            .dead_letters()
            .filter(|d| matches!(d.notification.id, NotificationId::Process { .. }))
        {
            m.insert(
                d.notification.id,
                (
                    d.notification.destination.clone(),
                    d.notification.text.clone(),
                ),
            );
        }
        m
    }
}

pub fn run_trace(config: Config, ops: &[Op]) -> Result<Sim, TestCaseError> {
    run_trace_on(Sim::new(config), ops)
}

/// A pool of 8 threads drawn from `procroute::gen` — the same nasty id
/// shapes the key laws use — with the first two sharing one thread (two
/// users in one topic) so shared lanes are always exercised.
pub fn generated_threads(seed: u64) -> Vec<Origin> {
    let mut rng = procroute::gen::Rng::new(seed);
    let mut pool: Vec<Origin> = (0..7).map(|_| procroute::gen::origin(&mut rng)).collect();
    let first = pool[0].clone();
    let mut twin = Origin::new(
        first.platform().as_str(),
        first.chat_type(),
        first.chat_id().as_str(),
    )
    .expect("valid");
    if let Some(t) = first.thread_id() {
        twin = twin.with_thread(t.as_str()).expect("valid");
    }
    pool.insert(1, twin.with_user("second-user").expect("valid"));
    pool
}

pub fn run_trace_on(mut sim: Sim, ops: &[Op]) -> Result<Sim, TestCaseError> {
    for op in ops {
        sim.apply(op)?;
        sim.marks.push(sim.delivered.len());
        sim.check_step()?;
    }
    sim.quiesce();
    sim.check_step()?;
    sim.check_quiescent()?;
    Ok(sim)
}

impl Sim {
    /// The home thread index of a run, per the model.
    pub fn home_index(&self, run: u64) -> Option<usize> {
        let home = self.model.home(run)?;
        self.threads.iter().position(|o| &model_thread(o) == home)
    }

    pub fn thread_index(&self, d: &Destination) -> Option<usize> {
        self.threads.iter().position(|o| &Destination::of(o) == d)
    }
}

/// Runs `ops` without stopping at the first violation, for rendering.
pub fn run_for_timeline(config: Config, ops: &[Op]) -> Sim {
    let mut sim = Sim::new(config);
    for op in ops {
        let _ = sim.apply(op);
        sim.marks.push(sim.delivered.len());
    }
    sim.quiesce();
    sim.marks.push(sim.delivered.len());
    sim
}

/// A per-thread swimlane timeline in text: one column per thread, one row
/// per step; deliveries appear in the column they landed in, marked `!!`
/// when that is not the process's home (with the home column named).
pub fn timeline(sim: &Sim, ops: &[Op]) -> String {
    const W: usize = 14;
    let n = sim.threads.len();
    let mut out = String::new();
    out.push_str("threads:\n");
    for (i, o) in sim.threads.iter().enumerate() {
        out.push_str(&format!(
            "  T{i} = {} {} {} {}\n",
            o.platform(),
            o.chat_type(),
            o.chat_id(),
            o.thread_id().map_or("-", |t| t.as_str())
        ));
    }
    out.push_str(&format!("{:<5}", "step"));
    for i in 0..n {
        out.push_str(&format!("{:<W$}", format!("T{i}")));
    }
    out.push_str("op\n");
    let mut from = 0;
    for (step, end) in sim.marks.iter().enumerate() {
        let label = ops
            .get(step)
            .map_or("(quiescence)".to_owned(), |o| format!("{o:?}"));
        out.push_str(&format!("{:<5}{}{}\n", step, " ".repeat(W * n), label));
        for (id, dest, _) in &sim.delivered[from..*end] {
            let col = sim.thread_index(dest);
            let (cell, note) = match id {
                NotificationId::Process { run, seq } => {
                    let home = sim.home_index(run.0);
                    let ok = home.is_some() && home == col;
                    let cell = format!("{}r{}.{}", if ok { "" } else { "!!" }, run.0, seq);
                    let note = if ok {
                        String::new()
                    } else {
                        format!(
                            "  <- MISROUTED, home is T{}",
                            home.map_or("?".into(), |h| h.to_string())
                        )
                    };
                    (cell, note)
                }
                NotificationId::Shutdown { .. } => ("shutdown".to_owned(), String::new()),
            };
            let mut row = format!("{:<5}", "");
            for i in 0..n {
                row.push_str(&format!(
                    "{:<W$}",
                    if Some(i) == col { cell.as_str() } else { "" }
                ));
            }
            out.push_str(row.trim_end());
            out.push_str(&note);
            out.push('\n');
        }
        from = *end;
    }
    out
}

/// A stored counterexample: a trace as data, not a seed (spec S-3).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceFile {
    pub suite_version: String,
    pub id: String,
    pub rules: Vec<String>,
    #[serde(default)]
    pub note: String,
    pub ops: Vec<Op>,
    /// What a correct router delivers, in order: (run, seq, thread index).
    pub expect: Vec<ExpectedDelivery>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ExpectedDelivery {
    pub run: u64,
    pub seq: u32,
    pub thread: usize,
}

/// The process deliveries of a run, as expectations.
pub fn deliveries(sim: &Sim) -> Vec<ExpectedDelivery> {
    sim.delivered
        .iter()
        .filter_map(|(id, d, _)| match id {
            NotificationId::Process { run, seq } => Some(ExpectedDelivery {
                run: run.0,
                seq: *seq,
                thread: sim.thread_index(d).unwrap_or(usize::MAX),
            }),
            _ => None,
        })
        .collect()
}

pub fn traces_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("spec/vectors/traces")
}
