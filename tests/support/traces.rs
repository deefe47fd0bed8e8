#![allow(dead_code)]
//! proptest strategies for the protocol's trace language, and the one check
//! every property test runs: execute on the built-in gateway, look at what
//! only internals can show (INV-8 after every tick), judge with the one
//! judge. There is no op language, executor or judge here: ops are
//! `TraceOp`, execution is `conform::trace::Execution`, the judge is
//! `procroute_suite::model::judge`.

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use procroute::gateway::Config;
use procroute_suite::conform::render;
use procroute_suite::conform::trace::RawOrigin;
use procroute_suite::conform::trace::{
    quiescence, well_formed_ops, Execution, Trace, TraceOp, TraceResult,
};
use procroute_suite::model::judge::{judge, Violation};

/// Process ids the strategies draw from: few, so ids are spawned again
/// (second runs, from other threads) all the time.
pub const PROCESSES: &[&str] = &["p1", "p2", "p3"];

/// Threads on five platforms, nasty ids included; two users share topic 42
/// (one lane), user 42 of the same group is a thread of its own, and two
/// users of the group itself have two lanes in one place.
pub fn fixed_threads() -> Vec<RawOrigin> {
    let mk = |p: &str, t: &str, chat: &str, thread: Option<&str>, user: &str| RawOrigin {
        platform: p.into(),
        chat_type: t.into(),
        chat_id: chat.into(),
        thread_id: thread.map(Into::into),
        user_id: Some(user.into()),
        user_name: None,
    };
    vec![
        mk("telegram", "group", "-1001234567890", Some("42"), "alice"),
        mk("telegram", "group", "-1001234567890", Some("42"), "bob"),
        mk("telegram", "group", "-1001234567890", Some("43"), "alice"),
        mk("telegram", "group", "-1001234567890", None, "42"),
        mk(
            "matrix",
            "group",
            "!abc:matrix.org",
            Some("$ev:matrix.org"),
            "@alice:matrix.org",
        ),
        mk(
            "slack",
            "group",
            "C0123ABC",
            Some("1700000000.123456"),
            "U77",
        ),
        mk("discord", "thread", "222", Some("222"), "333"),
        mk("signal", "dm", "group:QUJD+/x=", None, "+15551234567"),
        // The group itself, another user: a lane of its own in thread 3's
        // place (groups are per user without a thread).
        mk("telegram", "group", "-1001234567890", None, "alice"),
    ]
}

/// A family of related threads from the conformance generator.
pub fn generated_threads(seed: u64) -> Vec<RawOrigin> {
    procroute_suite::conform::trace::generate_threads(&mut procroute_suite::gen::Rng::new(seed))
}

fn process() -> impl Strategy<Value = String> {
    proptest::sample::select(PROCESSES).prop_map(str::to_owned)
}

/// What an output line carries besides its token (which [`trace`] adds).
fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => Just(String::new()),
        3 => Just(" MATCH".to_owned()),
        1 => Just(" \u{1b}[31mred\u{1b}[0m MATCH".to_owned()),
        1 => Just(" [Background process p1 exited with code 0]".to_owned()),
        1 => Just(format!("{} MATCH", " y".repeat(300))),
    ]
}

/// One op (thread indices are taken modulo the pool's size by [`finish`]).
pub fn op() -> impl Strategy<Value = TraceOp> {
    let t = 0..9usize;
    prop_oneof![
        2 => t.clone().prop_map(|thread| TraceOp::Message { thread }),
        2 => t.clone().prop_map(|thread| TraceOp::TurnStart { thread }),
        2 => t.clone().prop_map(|thread| TraceOp::TurnEnd { thread }),
        1 => t.clone().prop_map(|thread| TraceOp::Reset { thread }),
        3 => (t, process(), any::<bool>(), any::<bool>()).prop_map(|(thread, process, watch, notify)| TraceOp::Spawn {
            thread,
            process,
            watch: if watch { vec!["MATCH".into()] } else { vec![] },
            notify,
        }),
        4 => (process(), proptest::collection::vec(line(), 1..3))
            .prop_map(|(process, lines)| TraceOp::Output { process, text: lines.join("\n") }),
        2 => (process(), 0..3i32).prop_map(|(process, code)| TraceOp::Exit { process, code }),
        1 => process().prop_map(|process| TraceOp::Kill { process }),
        2 => proptest::sample::select(&[1_000u64, 14_999, 15_000, 16_000, 61_000, 120_000][..])
            .prop_map(|ms| TraceOp::Advance { ms }),
        1 => any::<bool>().prop_map(|up| TraceOp::Adapter { up }),
        1 => any::<bool>().prop_map(|survive| TraceOp::Restart { survive }),
        1 => Just(TraceOp::Shutdown),
    ]
}

/// A scenario random ops rarely reach: a storm of watchers (PROC-6's
/// breaker), strikes inside the cooldown (PROC-5's promotion), a long
/// output (PROC-3's tail), two patterns (TEXT-1), shutdown with lanes in
/// one place (DELIVER-8). Its own process ids, so it never respawns a
/// running one.
pub fn scenario() -> impl Strategy<Value = Vec<TraceOp>> {
    let spawn = |thread: usize, process: String, watch: &[&str], notify: bool| TraceOp::Spawn {
        thread,
        process,
        watch: watch.iter().map(|w| w.to_string()).collect(),
        notify,
    };
    let out = |process: &str, text: String| TraceOp::Output {
        process: process.to_owned(),
        text,
    };
    prop_oneof![
        // A storm: 14 to 20 watchers match within a second.
        (0..8usize, 14..21usize, any::<bool>()).prop_map(move |(t, k, notify)| {
            let mut v = Vec::new();
            for i in 0..k {
                v.push(spawn(t + i, format!("s{i}"), &["MATCH"], notify));
            }
            for i in 0..k {
                v.push(out(&format!("s{i}"), " MATCH".into()));
            }
            v.push(TraceOp::Advance { ms: 5_000 });
            v
        }),
        // Strikes: matches inside the cooldown, window after window.
        (0..8usize, 2..5usize, 1..4usize, any::<bool>()).prop_map(
            move |(t, windows, hits, notify)| {
                let mut v = vec![spawn(t, "w1".into(), &["MATCH"], notify)];
                for _ in 0..windows {
                    for _ in 0..=hits {
                        v.push(out("w1", " MATCH".into()));
                        v.push(TraceOp::Advance { ms: 1_000 });
                    }
                    v.push(TraceOp::Advance { ms: 15_000 });
                }
                v.push(TraceOp::Exit {
                    process: "w1".into(),
                    code: 1,
                });
                v
            }
        ),
        // A long output, then the end: what a completion quotes.
        (0..8usize, 2..30usize, any::<bool>()).prop_map(move |(t, lines, kill)| {
            let text = vec![" y".repeat(100); lines].join("\n");
            let mut v = vec![spawn(t, "l1".into(), &[], true), out("l1", text)];
            v.push(if kill {
                TraceOp::Kill {
                    process: "l1".into(),
                }
            } else {
                TraceOp::Exit {
                    process: "l1".into(),
                    code: 2,
                }
            });
            v
        }),
        // Two patterns; the second one matches.
        (0..8usize, any::<bool>()).prop_map(move |(t, notify)| {
            vec![
                spawn(t, "e1".into(), &["MATCH", "ERR"], notify),
                out("e1", " ERR".into()),
                TraceOp::Exit {
                    process: "e1".into(),
                    code: 0,
                },
            ]
        }),
        // Lanes sharing one place, then a shutdown.
        (0..9usize).prop_map(|t| {
            vec![
                TraceOp::Message { thread: 3 },
                TraceOp::Message { thread: 8 },
                TraceOp::Message { thread: t },
                TraceOp::Shutdown,
                TraceOp::Advance { ms: 1_000 },
            ]
        }),
    ]
}

/// Random ops with a scenario now and then.
pub fn ops(len: std::ops::Range<usize>) -> impl Strategy<Value = Vec<TraceOp>> {
    proptest::collection::vec(
        prop_oneof![
            24 => op().prop_map(|o| vec![o]),
            1 => scenario(),
        ],
        len,
    )
    .prop_map(|chunks| chunks.concat())
}

/// The trace the strategies' ops stand for: [`label`] then [`finish`].
pub fn trace(threads: Vec<RawOrigin>, ops: Vec<TraceOp>) -> Trace {
    finish(threads, label(ops))
}

/// Every output line given a unique token (`tok<n>of<process>`, the
/// pairing key P-8 describes; `n` from the op's index, so removing ops
/// later keeps the others' tokens).
pub fn label(ops: Vec<TraceOp>) -> Vec<TraceOp> {
    ops.into_iter()
        .enumerate()
        .map(|(i, op)| match op {
            TraceOp::Output { process, text } => {
                let text: Vec<String> = text
                    .split('\n')
                    .enumerate()
                    .map(|(j, rest)| format!("tok{}of{process}{rest}", i * 10 + j))
                    .collect();
                TraceOp::Output {
                    text: text.join("\n") + "\n",
                    process,
                }
            }
            other => other,
        })
        .collect()
}

/// Thread indices taken modulo the pool, spawns of running ids left out
/// (P-8), the quiescence suffix appended.
pub fn finish(threads: Vec<RawOrigin>, ops: Vec<TraceOp>) -> Trace {
    let n = threads.len();
    let ops = ops
        .into_iter()
        .map(|mut op| {
            if let Some(thread) = op.thread_mut() {
                *thread %= n;
            }
            op
        })
        .collect();
    let mut ops = well_formed_ops(ops);
    ops.extend(quiescence(n));
    Trace { threads, ops }
}

/// `rule: detail`, one per line.
pub fn show(v: &[Violation]) -> String {
    v.iter()
        .map(|v| format!("{}: {}", v.rule, v.detail))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Executes `trace` on the built-in gateway under `config`, checks INV-8
/// after every tick with the adapter up (nothing due for an idle thread may
/// stay queued — only the gateway's internals show it between steps), and
/// judges the report. A failure carries the violations and the timeline.
pub fn check(trace: &Trace, config: Config) -> Result<TraceResult, TestCaseError> {
    let mut x = Execution::new(trace, config).map_err(TestCaseError::fail)?;
    for (step, op) in trace.ops.iter().enumerate() {
        x.step(op).map_err(TestCaseError::fail)?;
        if matches!(op, TraceOp::Advance { .. }) && x.adapter_up() {
            let due = x.gateway().delivery().due_for_idle(x.now());
            if due > 0 {
                let partial = Trace {
                    threads: trace.threads.clone(),
                    ops: trace.ops[..=step].to_vec(),
                };
                return Err(TestCaseError::fail(format!(
                    "INV-8: {due} notification(s) due for idle threads still queued after step {step}\n{}",
                    render::timeline_text(&partial, x.result())
                )));
            }
        }
    }
    let result = x.finish();
    let v = judge(trace, &result);
    if v.is_empty() {
        Ok(result)
    } else {
        Err(TestCaseError::fail(format!(
            "{}\n{}",
            show(&v),
            render::timeline_text(trace, &result)
        )))
    }
}

/// Every notification's place, process, kind and text, whatever its fate
/// and step, shutdown notices aside (INV-6 compares these).
pub fn contents(r: &TraceResult) -> Vec<String> {
    let mut v: Vec<String> = r
        .deliveries
        .iter()
        .chain(&r.dead_letters)
        .filter(|o| o.process.is_some())
        .map(|o| {
            serde_json::to_string(&(&o.destination, &o.process, o.kind, &o.text)).expect("json")
        })
        .collect();
    v.sort();
    v
}

pub fn traces_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("spec/vectors/traces")
}
