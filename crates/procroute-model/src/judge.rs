//! The one judge: a harness's report for a trace, held against the oracle
//! ([`super::oracle::predict`]), every violation tagged with the rule it
//! breaks. Every executor calls it: `procroute conform`, the property
//! tests, the trace fuzzer and the crash-point tests.
//!
//! How a report is read. Each reported notification (delivered or
//! dead-lettered) is first checked on its own — where it went (INV-1,
//! INV-6), whose output it quotes (INV-2, SEC-1), what it shows (TEXT-2,
//! TEXT-3, ROUTE-4) — then paired with the notification the oracle
//! predicts: by the output tokens it quotes where it quotes any (a watch
//! match names its output operation, a completion its run), otherwise in
//! order within its process, thread and kind. A pair is checked for fate
//! (delivered or dead-lettered, DELIVER-4), the exact step (DELIVER-1,
//! DELIVER-2, DELIVER-4, DELIVER-5, INV-8) and content (PROC-3, PROC-7,
//! TEXT-1, TEXT-4); what is left over is a lost notification (INV-4 and
//! the rule that promised it) or one that should not exist (the rule that
//! suppresses it); within a thread, pairs must arrive in the predicted
//! order (INV-5, DELIVER-5).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::oracle::{self, Expected, Fate, Hold, Kind, Place, Prediction, Promise, Verdict};
use crate::trace::{Cause, Observed, Trace, TraceOp, TraceResult};

/// A value as JSON, the protocol's vocabulary for what a report shows.
fn j<T: Serialize + ?Sized>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// A broken rule, with one sentence of why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Violation {
    /// The rule id (`PROC-7`, `INV-4`, …).
    pub rule: String,
    /// Why, in one sentence.
    pub detail: String,
}

impl Violation {
    /// What a known-failures list pins (`RULE`, `RULE:kind`, or
    /// `RULE:kind@tN`): the rule; the kind of notification it is about,
    /// where the sentence names one; and, for a misrouted notice (INV-1,
    /// INV-6), the index of the trace thread it landed in (`@t?` when it
    /// landed in none of them). Two violations with one signature are the
    /// same finding in the same place; a new signature in a known case is
    /// a new failure (`conform` reports it by name).
    pub fn signature(&self, trace: &Trace) -> String {
        let mut sig = self.rule.clone();
        // Sentences about one notification start with `what()`:
        // `<process> <kind> to <destination>…`.
        let mut words = self.detail.splitn(3, ' ');
        let (_, kind, rest) = match self.detail.strip_prefix("(no process) ") {
            Some(r) => {
                let mut w = r.splitn(2, ' ');
                ("", w.next(), w.next())
            }
            None => (words.next().unwrap_or(""), words.next(), words.next()),
        };
        let kind = kind
            .filter(|k| ["watch_match", "watch_disabled", "completion", "shutdown"].contains(k));
        let Some(kind) = kind.filter(|_| rest.is_some_and(|r| r.starts_with("to {"))) else {
            return sig;
        };
        sig.push(':');
        sig.push_str(kind);
        if self.rule == "INV-1" || self.rule == "INV-6" {
            let json = rest.and_then(|r| r.strip_prefix("to ")).unwrap_or("");
            let mut de = serde_json::Deserializer::from_str(json).into_iter::<Place>();
            let landed = de.next().and_then(Result::ok);
            let index = landed.and_then(|p| {
                trace.threads.iter().position(|t| {
                    p.platform == t.platform
                        && p.chat_type == t.chat_type
                        && p.chat_id == t.chat_id
                        && p.thread_id == t.thread_id
                })
            });
            match index {
                Some(i) => sig.push_str(&format!("@t{i}")),
                None => sig.push_str("@t?"),
            }
        }
        sig
    }
}

/// Every violation's signature ([`Violation::signature`]), sorted, each once.
pub fn signatures(trace: &Trace, violations: &[Violation]) -> Vec<String> {
    let set: BTreeSet<String> = violations.iter().map(|v| v.signature(trace)).collect();
    set.into_iter().collect()
}

/// Every rule the trace judge can tag (the coverage table's rows).
pub const JUDGED: &[&str] = &[
    "INV-1",
    "INV-2",
    "INV-3",
    "INV-4",
    "INV-5",
    "INV-6",
    "INV-7",
    "INV-8",
    "SEC-1",
    "DELIVER-1",
    "DELIVER-2",
    "DELIVER-3",
    "DELIVER-4",
    "DELIVER-5",
    "DELIVER-6",
    "DELIVER-8",
    "PROC-3",
    "PROC-4",
    "PROC-5",
    "PROC-6",
    "PROC-7",
    "PROC-8",
    "PROC-10",
    "PROC-11",
    "ROUTE-4",
    "ROUTE-5",
    "TEXT-1",
    "TEXT-2",
    "TEXT-3",
    "TEXT-4",
];

/// The sentence of `spec/SPEC.md` each judged rule's verdicts enforce,
/// quoted word for word from the rule's text (`tests/spec_coverage.rs`
/// checks every quote against SPEC.md, and that every rule the judge can
/// tag has one): a verdict is only as good as the text an implementer
/// reads, so every report shows the sentence next to the violation.
pub const CLAUSES: &[(&str, &str)] = &[
    ("INV-1", "every notification about a process goes to exactly the thread that process was spawned from"),
    ("INV-2", "no thread receives a notification, or a byte of output, from a process another thread started"),
    ("INV-3", "no notification id is delivered twice, across restarts included"),
    ("INV-4", "at quiescence every promised notification has been delivered or dead-lettered with a reason, and nothing is left queued"),
    ("INV-5", "the notifications of one run arrive in the order they were emitted"),
    ("INV-6", "removing the foreground traffic from a trace, or moving it after everything else, changes no notification's destination or content"),
    ("INV-7", "the completions delivered (or dead-lettered) are exactly the ones the model promised"),
    ("INV-8", "after a clock advance with the adapter up, no notification that is due for an idle thread is left unsent"),
    ("SEC-1", "No notification to one origin contains a byte of output of a process started by another origin"),
    ("DELIVER-1", "over the protocol (P-8) every trace operation is one input, so it is sent during the operation at which it becomes sendable"),
    ("DELIVER-2", "While a turn runs in a thread, notifications for that thread wait in FIFO order and are sent after the turn ends."),
    ("DELIVER-3", "delivered at most once per id: an id already queued or delivered is ignored"),
    ("DELIVER-4", "after the n-th failed attempt at time `t` the next attempt is made at the first input at or after `t + min(2^(n-1) s, 60 s)`. After 6 failed attempts the notification is dead-lettered with the reason"),
    ("DELIVER-5", "one process's notifications arrive in the order they were emitted"),
    ("DELIVER-6", "A notification in flight at a crash is sent again after restart with the same id"),
    ("DELIVER-8", "A shutdown queues exactly one notice per thread (platform, chat type, chat, thread) that has a lane"),
    ("PROC-3", "An event reports the first pattern (in the spawn's order) that the first matching line contains, and an excerpt of the matching lines"),
    ("PROC-4", "Per process, at most one watch event per 15 s."),
    ("PROC-5", "At the 3rd consecutive strike watching is disabled at once, the process is switched to notify-on-exit"),
    ("PROC-6", "A global breaker admits at most 15 watch events per 10 s window, then none for 30 s."),
    ("PROC-7", "A completion event (exited with code, terminated by signal, killed, lost, failed to start) is emitted when the process ends, if notify-on-exit was requested or promoted (PROC-5). It carries the last 2,000 characters of output"),
    ("PROC-8", "a process that did not survive yields a `lost` completion to its origin if one was promised"),
    ("PROC-10", "changes nothing about the process's notifications: a completion promised to its home thread is still delivered there, with its output tail"),
    ("PROC-11", "An acknowledged completion is never delivered nor dead-lettered afterwards."),
    ("ROUTE-4", "An event that cannot be routed is dropped with a typed reason that is recorded"),
    ("ROUTE-5", "If the stored origin and the captured origin name different threads, the event is dropped (`origin_conflict`), never delivered to either"),
    ("TEXT-1", "Variants: watch match (pattern, command, matched output), watch disabled, completion (normal exit, exit code, signal, killed, lost, failed to start, with the output tail), shutdown."),
    ("TEXT-2", "control characters (U+0000–U+001F other than the line feed between lines, U+007F–U+009F), bidi controls (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069), the line and paragraph separators (U+2028, U+2029) and U+FEFF in output and in header values (command, pattern, reason) are shown as `\\u{XX}` escapes"),
    ("TEXT-3", "The shutdown notice is one fixed sentence, with no process data."),
    ("TEXT-4", "A non-zero suppressed count is reported as a final line, the count written as a number of its own"),
];

/// The sentence of SPEC.md a verdict of `rule` enforces ([`CLAUSES`]).
pub fn clause(rule: &str) -> Option<&'static str> {
    CLAUSES.iter().find(|(r, _)| *r == rule).map(|(_, c)| *c)
}

/// One line per rule of `violations`, in their order, each once: the
/// sentence of SPEC.md its verdicts enforce, for a report to print under
/// the violations (`  (SPEC.md INV-1: "…")`).
pub fn quotes(violations: &[Violation]) -> String {
    let mut seen = BTreeSet::new();
    let mut out = String::new();
    for v in violations {
        if let Some(c) = clause(&v.rule).filter(|_| seen.insert(v.rule.as_str())) {
            out.push_str(&format!("  (SPEC.md {}: \"{c}\")\n", v.rule));
        }
    }
    out
}

/// Judges `result` for `trace`.
pub fn judge(trace: &Trace, result: &TraceResult) -> Vec<Violation> {
    judge_world(trace, result, &BTreeSet::new(), Declared::default())
}

/// Longest delivery tick an implementation may declare (PROTOCOL P-14).
pub const MAX_TICK_MS: u64 = 60_000;

/// What an implementation declared in its handshake that changes what the
/// judge requires (PROTOCOL P-14, P-15).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Declared {
    /// The delivery tick in ms (P-14), 0 when none.
    pub tick_ms: u64,
    /// The read policy of SPEC D-1 (P-15, PROC-11).
    pub read_acknowledges: oracle::ReadAck,
}

/// [`judge`] for an implementation that declared `declared` (a delivery
/// tick, [`judge_tick`]; a read policy, PROC-11).
pub fn judge_declared(trace: &Trace, result: &TraceResult, declared: &Declared) -> Vec<Violation> {
    let d = Declared {
        tick_ms: declared.tick_ms.min(MAX_TICK_MS),
        ..*declared
    };
    judge_world(trace, result, &BTreeSet::new(), d)
}

/// [`judge`] for an implementation that sends on a timer of `tick_ms`
/// (DELIVER-1's tick interval, declared in its handshake, P-14): a
/// notification the model sends at step `due` may come at a later step
/// that starts before the clock has moved `tick_ms` past the end of step
/// `due`, provided its thread has no turn running when that step starts
/// (DELIVER-2). `tick_ms` 0 is [`judge`]; more than [`MAX_TICK_MS`] counts
/// as [`MAX_TICK_MS`].
pub fn judge_tick(trace: &Trace, result: &TraceResult, tick_ms: u64) -> Vec<Violation> {
    let d = Declared {
        tick_ms,
        ..Declared::default()
    };
    judge_declared(trace, result, &d)
}

/// The rules `trace` exercises, from the model's view alone.
pub fn exercised(trace: &Trace) -> BTreeSet<&'static str> {
    oracle::predict(trace, &BTreeSet::new()).exercised
}

/// [`exercised`] for an implementation that declared the read policy
/// `ack` (PROC-11 is exercised only where a read acknowledges).
pub fn exercised_with(trace: &Trace, ack: oracle::ReadAck) -> BTreeSet<&'static str> {
    oracle::predict_with(trace, &BTreeSet::new(), ack).exercised
}

/// A gateway crash inside a trace, as the executor saw it
/// (`procroute_suite::conform::trace::CrashRun`).
#[derive(Debug, Clone, Copy)]
pub struct Crash<'a> {
    /// The step during which the gateway crashed and recovered.
    pub step: usize,
    /// The steps whose spawn was acknowledged (a run id came back).
    pub spawned: &'a BTreeSet<usize>,
}

/// [`judge`] for a run in which the gateway crashed (at most once) and
/// recovered. What the crash left uncertain, the judge settles here, in
/// one place, for every executor that crashes a gateway:
///
/// - A spawn never acknowledged (its checkpoint write crashed, so no run
///   id reached the caller and no process started) did not happen, nor
///   did what the trace says of its process until the next acknowledged
///   spawn of that id ([`as_happened`]).
/// - The crashed step either took effect or did not: its input was handed
///   over, and the crash may have come before anything it changed was
///   durable (STORE-4). For a process's output that is a real fork — a
///   chunk that never reached the checkpoint or the log leaves no strike,
///   no promotion and no tail behind — so a run that fits the world where
///   the crashed step's output was lost passes too. The first world's
///   violations are the ones reported.
/// - Notifications the crashed step emitted may be missing or come late
///   (the oracle, told the step).
///
/// Judge the result against [`as_happened`]'s trace when showing it.
pub fn judge_crashed(trace: &Trace, result: &TraceResult, crash: Option<Crash>) -> Vec<Violation> {
    let Some(crash) = crash else {
        return judge(trace, result);
    };
    let trace = as_happened(trace, crash.spawned);
    let crashes = BTreeSet::from([crash.step]);
    let v = judge_world(&trace, result, &crashes, Declared::default());
    if v.is_empty() {
        return v;
    }
    if !matches!(trace.ops.get(crash.step), Some(TraceOp::Output { .. })) {
        return v;
    }
    let mut without = trace.clone();
    without.ops[crash.step] = TraceOp::Advance { ms: 0 };
    if judge_world(&without, result, &crashes, Declared::default()).is_empty() {
        return Vec::new();
    }
    v
}

/// The trace as it happened, given which spawns were acknowledged: an
/// unacknowledged spawn becomes a message in its thread (the spawn may
/// have made its lane before the crash), and what mentions its process
/// until the next acknowledged spawn of that id an idle tick (`advance
/// 0`), so steps keep their numbers.
pub fn as_happened(t: &Trace, spawned: &BTreeSet<usize>) -> Trace {
    let mut ops = Vec::with_capacity(t.ops.len());
    let mut gone: BTreeSet<&str> = BTreeSet::new();
    for (i, op) in t.ops.iter().enumerate() {
        match op {
            TraceOp::Spawn {
                process, thread, ..
            } if !spawned.contains(&i) => {
                gone.insert(process);
                ops.push(TraceOp::Message { thread: *thread });
            }
            TraceOp::Spawn { process, .. } => {
                gone.remove(process.as_str());
                ops.push(op.clone());
            }
            TraceOp::Output { process, .. }
            | TraceOp::Exit { process, .. }
            | TraceOp::Kill { process }
                if gone.contains(process.as_str()) =>
            {
                ops.push(TraceOp::Advance { ms: 0 });
            }
            _ => ops.push(op.clone()),
        }
    }
    Trace {
        threads: t.threads.clone(),
        ops,
    }
}

fn judge_world(
    trace: &Trace,
    result: &TraceResult,
    crashes: &BTreeSet<usize>,
    declared: Declared,
) -> Vec<Violation> {
    let pred = oracle::predict_with(trace, crashes, declared.read_acknowledges);
    let mut j = Judge {
        trace,
        pred: &pred,
        out: Vec::new(),
        crashes,
        tick_ms: declared.tick_ms,
    };
    j.run(result);
    let mut v = j.out;
    v.sort_by_key(|x| rank(&x.rule));
    v
}

/// Headline order: leaks first, then duplicates and losses, then the rest.
fn rank(rule: &str) -> u8 {
    match rule {
        "INV-1" | "INV-6" => 0,
        "INV-2" | "SEC-1" => 1,
        "INV-3" => 2,
        "INV-4" | "INV-7" => 3,
        _ => 4,
    }
}

struct Judge<'a> {
    trace: &'a Trace,
    pred: &'a Prediction,
    out: Vec<Violation>,
    crashes: &'a BTreeSet<usize>,
    /// The declared delivery tick (P-14), 0 when none.
    tick_ms: u64,
}

/// One reported notification.
struct Obs<'a> {
    o: &'a Observed,
    dead: bool,
    /// Index of the run (in `pred.runs`) its tokens name, if any.
    run: Option<usize>,
    /// The output operation its tokens name, if any.
    op: Option<usize>,
    paired: Option<usize>,
}

fn words(text: &str) -> BTreeSet<&str> {
    oracle::token_words(text).collect()
}

/// Whether `text` holds `n` as a number of its own: a run of digits with
/// no letter or digit on either side. A digit inside an id (`proc_8f2d`,
/// `p12`) is not a count: hermes-agent's random process ids made a
/// missing count pass TEXT-4 in about one run of eight.
fn has_number(text: &str, n: u64) -> bool {
    let s = n.to_string();
    text.split(|c: char| !c.is_alphanumeric()).any(|w| w == s)
}

impl<'a> Judge<'a> {
    fn bad(&mut self, rule: &str, detail: String) {
        self.out.push(Violation {
            rule: rule.to_owned(),
            detail,
        });
    }

    fn what(o: &Observed) -> String {
        format!(
            "{} {} to {}",
            o.process.as_deref().unwrap_or("(no process)"),
            o.kind.as_str(),
            o.destination
        )
    }

    /// Judges a report: each observation on its own (where it went, what
    /// it quotes, its text), then paired with the oracle's notifications,
    /// each pair checked; what the oracle predicts and the report lacks is
    /// lost, what the report has and the oracle does not is unexpected;
    /// last, the order within each thread.
    fn run(&mut self, result: &'a TraceResult) {
        let mut obs: Vec<Obs<'a>> = result
            .deliveries
            .iter()
            .map(|o| (o, false))
            .chain(result.dead_letters.iter().map(|o| (o, true)))
            .map(|(o, dead)| Obs {
                o,
                dead,
                run: None,
                op: None,
                paired: None,
            })
            .collect();
        let misrouted = self.check_each(&mut obs);
        let taken = self.pair(&mut obs, &misrouted);
        for ob in &obs {
            if let Some(e) = ob.paired {
                self.check_pair(ob, &self.pred.items[e]);
            }
        }
        self.lost(&taken);
        self.unexpected(&obs, &misrouted);
        self.order(&obs);
    }

    /// The steps where the gateway restarted (trace ops and crash points).
    fn restarts(&self) -> Vec<usize> {
        self.trace
            .ops
            .iter()
            .enumerate()
            .filter(|(_, op)| matches!(op, TraceOp::Restart { .. }))
            .map(|(s, _)| s)
            .chain(self.crashes.iter().copied())
            .collect()
    }

    /// Each observation on its own: a reason for a dead letter (ROUTE-4),
    /// escaped text (TEXT-2), whose output it quotes (SEC-1, INV-2), one
    /// shutdown text (TEXT-3), and whether it reached its run's home
    /// (INV-1, INV-6). Returns which were misrouted (never paired).
    fn check_each(&mut self, obs: &mut [Obs<'a>]) -> Vec<bool> {
        let pred = self.pred;
        let mut shutdown_text: Option<&str> = None;
        let mut misrouted = vec![false; obs.len()];
        for (i, ob) in obs.iter_mut().enumerate() {
            let o = ob.o;
            if ob.dead && o.reason.as_deref().unwrap_or("").trim().is_empty() {
                self.out.push(Violation {
                    rule: "ROUTE-4".into(),
                    detail: format!("{}: dead-lettered without a reason", Self::what(o)),
                });
            }
            if let Some(c) = o.text.chars().find(|c| oracle::needs_escape(*c)) {
                self.out.push(Violation {
                    rule: "TEXT-2".into(),
                    detail: format!(
                        "{}: the text shows U+{:04X} raw; it must be escaped",
                        Self::what(o),
                        c as u32
                    ),
                });
            }
            self.check_quotes(ob);
            if o.kind == Kind::Shutdown {
                match shutdown_text {
                    None => shutdown_text = Some(&o.text),
                    Some(t) if t != o.text => self.out.push(Violation {
                        rule: "TEXT-3".into(),
                        detail: format!("shutdown notices differ: {} and {}", j(t), j(&o.text)),
                    }),
                    Some(_) => {}
                }
                if o.process.is_some() {
                    self.out.push(Violation {
                        rule: "TEXT-3".into(),
                        detail: format!("a shutdown notice names process {}", j(&o.process)),
                    });
                }
                continue;
            }
            // Where did it go?
            let Some(p) = o.process.as_deref() else {
                self.out.push(Violation {
                    rule: "INV-1".into(),
                    detail: format!("a {} names no process", o.kind.as_str()),
                });
                misrouted[i] = true;
                continue;
            };
            let at = if ob.dead { usize::MAX } else { o.step };
            let homes: Vec<&Place> = match ob.run {
                Some(r) => vec![&pred.runs[r].home],
                None => pred.runs_of(p, at).map(|r| &r.home).collect(),
            };
            if homes.is_empty() {
                self.out.push(Violation {
                    rule: "INV-1".into(),
                    detail: format!(
                        "{}: no run of {} was spawned by step {}",
                        Self::what(o),
                        j(p),
                        o.step
                    ),
                });
                misrouted[i] = true;
            } else if !homes.contains(&&o.destination) {
                let fg = pred.foreground.get(o.step).and_then(|f| f.as_ref());
                let rule = if !ob.dead && fg == Some(&o.destination) {
                    "INV-6"
                } else {
                    "INV-1"
                };
                self.out.push(Violation {
                    rule: rule.into(),
                    detail: format!(
                        "{}{}: its home is {}",
                        Self::what(o),
                        if rule == "INV-6" {
                            " (the thread of the latest foreground message)"
                        } else {
                            ""
                        },
                        homes.last().expect("not empty")
                    ),
                });
                misrouted[i] = true;
            }
        }
        misrouted
    }

    /// Whose output an observation quotes: a shutdown notice quotes none
    /// (SEC-1), a process's notification only its own (INV-2); what it
    /// quotes names its run and output operation, for pairing.
    fn check_quotes(&mut self, ob: &mut Obs<'a>) {
        let pred = self.pred;
        let o = ob.o;
        // Whose output does it quote?
        for w in words(&o.text) {
            let Some(&(r, op)) = pred.tokens.get(w) else {
                continue;
            };
            let owner = &pred.runs[r];
            match &o.process {
                None => self.out.push(Violation {
                    rule: "SEC-1".into(),
                    detail: format!(
                        "a shutdown notice to {} quotes {}, output of {} (started in {})",
                        o.destination,
                        j(w),
                        owner.process,
                        owner.home
                    ),
                }),
                Some(p) if *p != owner.process => self.out.push(Violation {
                    rule: "INV-2".into(),
                    detail: format!(
                        "{}: quotes {}, output of {} (started in {})",
                        Self::what(o),
                        j(w),
                        owner.process,
                        owner.home
                    ),
                }),
                Some(_) => {
                    ob.run.get_or_insert(r);
                    if ob.op.is_none() {
                        ob.op = Some(op);
                    }
                }
            }
        }
    }

    /// Pairs observations with the oracle's notifications; returns which
    /// of the oracle's were taken.
    fn pair(&mut self, obs: &mut [Obs<'a>], misrouted: &[bool]) -> Vec<bool> {
        let pred = self.pred;
        // Pair with the oracle's notifications.
        let mut taken = vec![false; pred.items.len()];
        // Pass 1: a watch match names its output operation.
        for (i, ob) in obs.iter_mut().enumerate() {
            if misrouted[i] || ob.o.kind != Kind::WatchMatch {
                continue;
            }
            if let Some(Verdict::Emitted(e)) = ob.op.and_then(|op| pred.verdicts.get(&op)) {
                let e = *e;
                if !taken[e] && pred.items[e].place == ob.o.destination {
                    taken[e] = true;
                    ob.paired = Some(e);
                }
            }
        }
        // Pass 2: in order within (process, thread, kind), and run where
        // the tokens name it. Those whose tokens name their run go first,
        // so one that names nothing (a tail cut short or never
        // checkpointed, a process id used again) cannot take another run's
        // item; within each, what must exist before what may be missing
        // (crash runs: an optional item must not take the observation a
        // required one needs), and first with the predicted fate (delivered
        // or dead-lettered), then with any.
        let passes = [true, false].into_iter().flat_map(|named| {
            [(true, false), (false, false), (true, true), (false, true)]
                .map(|(same_fate, optional)| (named, same_fate, optional))
        });
        for (named, same_fate, optional) in passes {
            for (i, ob) in obs.iter_mut().enumerate() {
                if misrouted[i] || ob.paired.is_some() || ob.run.is_some() != named {
                    continue;
                }
                if ob.o.kind == Kind::WatchMatch && ob.op.is_some() {
                    continue; // it names an operation that emitted nothing unpaired
                }
                let run_step = ob.run.map(|r| pred.runs[r].spawn_step);
                let fits = |e: &&Expected| {
                    !taken[e.index]
                        && e.kind == ob.o.kind
                        && e.process == ob.o.process
                        && e.place == ob.o.destination
                        && (run_step.is_none() || e.run == run_step)
                        && (ob.dead || e.emitted <= ob.o.step)
                        && (!same_fate || matches!(e.fate, Fate::DeadLettered { .. }) == ob.dead)
                };
                // An acknowledged completion (PROC-11) is owed to no one:
                // like an optional one, it takes an observation only when
                // nothing that must exist fits (else a later run's
                // completion that quotes nothing would pair with it).
                let owed =
                    |e: &&Expected| !e.optional && !matches!(e.fate, Fate::Acknowledged { .. });
                let e = pred.items.iter().filter(fits).find(|e| optional || owed(e));
                if let Some(e) = e {
                    taken[e.index] = true;
                    ob.paired = Some(e.index);
                }
            }
        }
        taken
    }

    /// What the oracle predicts and no observation paired with: lost,
    /// tagged with the rule the loss breaks. One table of cases, longer
    /// than the rest on purpose: each row is a rule's reading of a loss.
    fn lost(&mut self, taken: &[bool]) {
        let pred = self.pred;
        // Left over on the oracle's side: lost.
        let restarts = self.restarts();
        for e in &pred.items {
            if taken[e.index] || e.optional {
                continue;
            }
            let resolved = match e.fate {
                Fate::Delivered { step } | Fate::DeadLettered { step } => step,
                Fate::Pending => usize::MAX,
                // Owed to no one: not reporting it is right (PROC-11).
                Fate::Acknowledged { .. } => continue,
            };
            let across = restarts.iter().any(|r| e.emitted < *r && *r <= resolved);
            // An agent read the process's output after the notification was
            // emitted (an implementation may hold it past the step it was
            // due): the read is what a gateway takes as "already seen"
            // (PROC-10).
            let read = e.process.as_deref().is_some_and(|p| {
                self.trace.ops.iter().enumerate().any(|(s, op)| {
                    e.emitted <= s && matches!(op, TraceOp::Read { process, .. } if process == p)
                })
            });
            let (rule, why) = match (&e.fate, e.kind) {
                (Fate::Pending | Fate::Acknowledged { .. }, _) => continue,
                (_, _) if across => (
                    "DELIVER-6",
                    "was queued across a restart and never delivered nor dead-lettered",
                ),
                (Fate::DeadLettered { .. }, _) => {
                    ("INV-4", "must be dead-lettered after 6 failed attempts")
                }
                (_, Kind::WatchMatch) => (
                    e.edge.unwrap_or("INV-4"),
                    "was never delivered nor dead-lettered",
                ),
                (_, Kind::WatchDisabled) => (
                    "PROC-5",
                    "(3rd strike) was never delivered nor dead-lettered",
                ),
                (_, Kind::Completion) if e.promise == Some(Promise::Promoted) => (
                    "PROC-5",
                    "(owed because watching was disabled) was never delivered nor dead-lettered",
                ),
                (_, Kind::Completion)
                    if matches!(self.trace.ops.get(e.emitted), Some(TraceOp::Restart { .. })) =>
                {
                    (
                        "PROC-8",
                        "(lost in a restart) was never delivered nor dead-lettered",
                    )
                }
                // Lost after the adapter failed it: a delivery loss; never
                // sent at all: the completion was never produced.
                (_, Kind::Completion) if e.held.iter().any(|(_, h)| *h == Hold::Failed) => {
                    ("INV-4", "was never delivered nor dead-lettered")
                }
                (Fate::Delivered { .. }, Kind::Completion) if read => (
                    "PROC-10",
                    "was never delivered nor dead-lettered after an agent read the process's output",
                ),
                (_, Kind::Completion) => ("PROC-7", "was never delivered nor dead-lettered"),
                (_, Kind::Shutdown) => ("DELIVER-8", "was never delivered nor dead-lettered"),
            };
            let fate = match e.fate {
                Fate::Delivered { step } => format!("; the model delivers it at step {step}"),
                Fate::DeadLettered { step } => {
                    format!("; the model dead-letters it at step {step}")
                }
                Fate::Pending | Fate::Acknowledged { .. } => String::new(),
            };
            self.bad(
                rule,
                format!(
                    "{} {} to {} emitted at step {} {why}{fate}",
                    e.process.as_deref().unwrap_or("(no process)"),
                    e.kind.as_str(),
                    e.place,
                    e.emitted
                ),
            );
        }
    }

    /// What the report has and the oracle does not: unexpected, tagged
    /// with the rule it breaks (a copy: INV-3, DELIVER-3; an unpromised
    /// completion: INV-7; a match the rules suppress: PROC-3..6).
    fn unexpected(&mut self, obs: &[Obs<'a>], misrouted: &[bool]) {
        let pred = self.pred;
        let restarts = self.restarts();
        // Left over on the report's side: should not exist.
        for (i, ob) in obs.iter().enumerate() {
            if misrouted[i] || ob.paired.is_some() {
                continue;
            }
            let o = ob.o;
            let twins: Vec<&Obs<'_>> = obs
                .iter()
                .filter(|x| {
                    x.paired.is_some()
                        && x.o.kind == o.kind
                        && x.o.process == o.process
                        && x.o.destination == o.destination
                        && x.o.text == o.text
                })
                .collect();
            let twin = !twins.is_empty();
            // A copy on the other side of a restart: the delivered log did
            // not survive it (DELIVER-3).
            let resent = twins.iter().any(|x| {
                !x.dead && !ob.dead && restarts.iter().any(|r| x.o.step < *r && *r <= o.step)
            });
            let rule = if o.kind == Kind::Shutdown {
                "DELIVER-8"
            } else if resent {
                "DELIVER-3"
            } else if twin {
                "INV-3"
            } else {
                match o.kind {
                    Kind::WatchMatch => match ob.op.and_then(|op| pred.verdicts.get(&op)) {
                        Some(v) => v.rule(),
                        None => "PROC-4",
                    },
                    Kind::WatchDisabled => "PROC-5",
                    Kind::Completion => {
                        let p = o.process.as_deref().unwrap_or("");
                        let promised = pred
                            .runs_of(p, usize::MAX)
                            .any(|r| r.promise.is_some() && r.home == o.destination);
                        if promised {
                            "INV-3"
                        } else {
                            "INV-7"
                        }
                    }
                    Kind::Shutdown => "DELIVER-8",
                }
            };
            let why = match (rule, o.kind) {
                ("INV-3", _) => "a second copy",
                ("DELIVER-3", _) => {
                    "a second copy, after a restart: the delivered log must survive it"
                }
                ("INV-7", _) => "no completion was promised (notify off, watching never disabled)",
                ("PROC-4", _) => "its match fell inside its process's 15 s cooldown",
                ("PROC-6", _) => "its match fell while the global breaker was open",
                ("PROC-5", Kind::WatchDisabled) => "watching is disabled only at the 3rd strike",
                ("PROC-5", _) => "its process was not watching (any more)",
                ("PROC-3", _) => "no line of that output matched a pattern",
                ("PROC-7", _) => "its process was not running",
                ("DELIVER-8", _) => "one notice per thread with a lane per shutdown, and only once",
                _ => "not predicted",
            };
            self.bad(
                rule,
                format!(
                    "{} {} at step {}: {why}",
                    Self::what(o),
                    if ob.dead {
                        "dead-lettered"
                    } else {
                        "delivered"
                    },
                    o.step
                ),
            );
        }
    }

    /// Order within each thread (INV-5, DELIVER-5).
    fn order(&mut self, obs: &[Obs<'a>]) {
        let pred = self.pred;
        // Order within each thread.
        let mut last: BTreeMap<&Place, (usize, &Expected)> = BTreeMap::new();
        for ob in obs.iter().filter(|o| !o.dead) {
            let Some(e) = ob.paired.map(|e| &pred.items[e]) else {
                continue;
            };
            let Some(order) = e.order.filter(|_| !e.loose && !e.optional) else {
                continue;
            };
            if let Some((prev, pe)) = last.get(&e.place) {
                let same_run = pe.run.is_some() && pe.run == e.run;
                // After a crash (crash-point runs) only a run's own order is
                // certain: the crash may have taken an attempt's record.
                if order < *prev && (same_run || self.crashes.is_empty()) {
                    let rule = if same_run { "INV-5" } else { "DELIVER-5" };
                    self.bad(
                        rule,
                        format!(
                            "{} {} (seq {}, emitted at step {}) arrived after {} {} (seq {}, emitted at step {}) in {}",
                            e.process.as_deref().unwrap_or("notice"),
                            e.kind.as_str(),
                            e.seq,
                            e.emitted,
                            pe.process.as_deref().unwrap_or("notice"),
                            pe.kind.as_str(),
                            pe.seq,
                            pe.emitted,
                            e.place
                        ),
                    );
                }
            }
            if !last.get(&e.place).is_some_and(|(p, _)| order <= *p) {
                last.insert(&e.place, (order, e));
            }
        }
    }

    /// One observation against the notification the model expects it to
    /// be: its fate and timing, then (unless its fate is already wrong)
    /// what it shows and how it says it.
    fn check_pair(&mut self, ob: &Obs<'_>, e: &Expected) {
        if !self.check_fate(ob, e) {
            return;
        }
        self.check_quoted(ob.o, e);
        self.check_wording(ob.o, e);
    }

    /// Delivered or dead-lettered as the model says, at its step (or
    /// within the declared tick); `false` when the fate itself is wrong.
    fn check_fate(&mut self, ob: &Obs<'_>, e: &Expected) -> bool {
        let o = ob.o;
        let what = Self::what(o);
        let fate = if e.loose {
            Fate::Pending
        } else {
            e.fate.clone()
        };
        match (&fate, ob.dead) {
            // Queued across a crash (crash-point runs): any step, any fate.
            _ if e.loose => {}
            (Fate::Acknowledged { step }, dead) => {
                let done = if dead { "dead-lettered" } else { "delivered" };
                self.bad(
                    "PROC-11",
                    format!(
                        "{what} {done} at step {}: the agent of its home thread read the ended run at step {step} while it was queued, which acknowledges it (declared read_acknowledges: own_thread_after_delivery)",
                        o.step
                    ),
                );
                return false;
            }
            (Fate::Delivered { .. }, true) | (Fate::Pending, true) => {
                let rule = match o.cause {
                    Some(Cause::NoRoute) => "ROUTE-4",
                    Some(Cause::OriginConflict) => "ROUTE-5",
                    _ => "DELIVER-4",
                };
                let when = match e.fate {
                    Fate::Delivered { step } => format!("the model delivers it at step {step}"),
                    _ => "the model still has it queued".into(),
                };
                self.bad(
                    rule,
                    format!(
                        "{what} (emitted at step {}) was dead-lettered (reason {}); {when}",
                        e.emitted,
                        j(&o.reason)
                    ),
                );
                return false;
            }
            (Fate::DeadLettered { step }, false) => {
                self.bad(
                    "DELIVER-4",
                    format!(
                        "{what} delivered at step {}: its 6th attempt failed at step {step}, so it must be dead-lettered",
                        o.step
                    ),
                );
                return false;
            }
            (Fate::Delivered { step }, false) if o.step != *step => {
                self.timing(o, e, *step);
            }
            _ => {}
        }
        true
    }

    /// PROC-3, PROC-7: it shows what it must quote, and nothing that is
    /// not its run's (matching) output.
    fn check_quoted(&mut self, o: &Observed, e: &Expected) {
        let what = Self::what(o);
        // Content.
        let shown = words(&o.text);
        let known: BTreeSet<&str> = shown
            .iter()
            .copied()
            .filter(|w| self.pred.tokens.contains_key(*w))
            .collect();
        let rule = if e.kind == Kind::WatchMatch {
            "PROC-3"
        } else {
            "PROC-7"
        };
        // Emitted in a step the gateway crashed in: what it printed since
        // the last checkpoint may be gone with the crash.
        let must = if e.optional {
            None
        } else {
            e.must_show.iter().find(|t| !shown.contains(t.as_str()))
        };
        if let Some(miss) = must {
            self.bad(
                rule,
                format!(
                    "{what} (emitted at step {}) does not show {}, which its {} must quote",
                    e.emitted,
                    j(miss),
                    if e.kind == Kind::WatchMatch {
                        "excerpt"
                    } else {
                        "output tail"
                    }
                ),
            );
        }
        if let Some(extra) = known.iter().find(|t| !e.may_show.contains(**t)) {
            // A completion quoting its own run's output from before its
            // last 2,000 characters: the tail's upper bound (PROC-7).
            let own = self
                .pred
                .tokens
                .get(*extra)
                .and_then(|(r, _)| self.pred.runs.get(*r))
                .is_some_and(|r| Some(r.spawn_step) == e.run);
            self.bad(
                rule,
                format!(
                    "{what} (emitted at step {}) shows {}, which is not {}",
                    e.emitted,
                    j(extra),
                    match e.kind {
                        Kind::WatchMatch => "a matching line of that output",
                        _ if own => "in its run's last 2,000 characters of output (older output is not quoted)",
                        _ => "output of its run",
                    }
                ),
            );
        }
        if e.kind == Kind::WatchMatch {
            self.check_cr(o, e);
        }
    }

    /// TEXT-1, TEXT-4: the pattern named and the suppressed count on the
    /// final line, both outside the quoted output.
    fn check_wording(&mut self, o: &Observed, e: &Expected) {
        let what = Self::what(o);
        if let Some(p) = &e.pattern {
            // Named outside the quoted output (TEXT-2: output lines begin
            // with `| `), where the matched line itself cannot stand in.
            let named = o
                .text
                .split('\n')
                .filter(|l| !l.starts_with("| "))
                .any(|l| l.contains(p.as_str()));
            if !named {
                self.bad(
                    "TEXT-1",
                    format!(
                        "{what}: the text does not name the pattern {} outside the quoted output",
                        j(p)
                    ),
                );
            }
        }
        // TEXT-4: on the final line, outside the quoted output. Anywhere
        // would be too weak: the count is often a digit of the process id
        // or of the output itself (found by `procroute explore`).
        let last = o.text.trim_end().rsplit('\n').next().unwrap_or("");
        if e.suppressed > 0
            && !e.optional
            && (last.starts_with("| ") || !has_number(last, e.suppressed))
        {
            self.bad(
                "TEXT-4",
                format!(
                    "{what}: {} suppressed match(es) are not reported on the final line",
                    e.suppressed
                ),
            );
        }
    }

    /// PROC-3: lines end at `\n`, and a `\r` before it is dropped, so no
    /// quoted line of a watch match ends with a carriage return, raw or
    /// escaped (TEXT-2, any spelling of `\u{d}`) — unless the chunk's
    /// last line ends with one and no `\n` follows it.
    fn check_cr(&mut self, o: &Observed, e: &Expected) {
        let Some(TraceOp::Output { text, .. }) = e.source_op.and_then(|s| self.trace.ops.get(s))
        else {
            return;
        };
        if text.ends_with('\r') {
            return;
        }
        let ends_cr = |l: &str| {
            l.ends_with('\r')
                || l.strip_suffix('}')
                    .and_then(|l| l.rsplit_once("\\u{"))
                    .is_some_and(|(_, hex)| u32::from_str_radix(hex, 16).is_ok_and(|c| c == 0x0d))
        };
        if let Some(line) = o
            .text
            .split('\n')
            .filter(|l| l.starts_with("| "))
            .find(|l| ends_cr(l))
        {
            let what = Self::what(o);
            self.bad(
                "PROC-3",
                format!(
                    "{what} (emitted at step {}) quotes the line {} with the carriage return before its line feed, which a line does not include",
                    e.emitted,
                    j(line)
                ),
            );
        }
    }

    /// For a delivery at step `at`, later than the model's `due`: whether
    /// it falls within the declared tick (P-14), i.e. step `at` starts
    /// before the clock is `tick_ms` past the end of step `due`: `None`
    /// if not (or no tick is declared), else whether a turn was running
    /// in the notification's thread when step `at` started (DELIVER-2).
    fn within_tick(&self, e: &Expected, due: usize, at: usize) -> Option<bool> {
        if self.tick_ms == 0 || at <= due {
            return None;
        }
        let clock_after = |step: usize| -> u64 {
            self.trace.ops[..=step.min(self.trace.ops.len().saturating_sub(1))]
                .iter()
                .map(|op| match op {
                    TraceOp::Advance { ms } => *ms,
                    _ => 0,
                })
                .sum()
        };
        if clock_after(at - 1) >= clock_after(due).saturating_add(self.tick_ms) {
            return None;
        }
        let busy = self
            .pred
            .busy
            .get(at - 1)
            .is_some_and(|b| b.contains(&e.place));
        Some(busy)
    }

    fn timing(&mut self, o: &Observed, e: &Expected, due: usize) {
        let what = Self::what(o);
        match self.within_tick(e, due, o.step) {
            Some(false) => return,
            Some(true) => {
                self.bad(
                    "DELIVER-2",
                    format!(
                        "{what} (emitted at step {}) delivered at step {}, within the declared tick but while a turn was running in that thread",
                        e.emitted, o.step
                    ),
                );
                return;
            }
            None => {}
        }
        if o.step > due {
            let rule = if matches!(self.trace.ops.get(due), Some(TraceOp::Advance { .. })) {
                "INV-8"
            } else {
                "DELIVER-1"
            };
            self.bad(
                rule,
                format!(
                    "{what} (emitted at step {}) delivered at step {}; it was due at step {due} (thread idle, adapter up)",
                    e.emitted, o.step
                ),
            );
            return;
        }
        if o.step < e.emitted {
            let rule = if e.kind == Kind::WatchMatch {
                "PROC-4"
            } else {
                "PROC-7"
            };
            self.bad(
                rule,
                format!(
                    "{what} delivered at step {}, before its event (step {})",
                    o.step, e.emitted
                ),
            );
            return;
        }
        let hold = e.held.iter().find(|(s, _)| *s == o.step).map(|(_, h)| *h);
        let (rule, why) = match hold {
            Some(Hold::Busy) => ("DELIVER-2", "a turn was running in that thread"),
            Some(Hold::BehindHead) => (
                "DELIVER-5",
                "an earlier notification of that thread was still pending",
            ),
            Some(Hold::Backoff) => ("DELIVER-4", "its retry was not due yet (backoff)"),
            Some(Hold::Failed) => ("DELIVER-4", "the adapter was failing"),
            None => ("DELIVER-1", "the model had not sent it yet"),
        };
        self.bad(
            rule,
            format!(
                "{what} (emitted at step {}) delivered at step {}, where {why}; due at step {due}",
                e.emitted, o.step
            ),
        );
    }
}
