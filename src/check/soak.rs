//! The load driver (issue: 100,000 concurrent processes, 1,000,000 events,
//! 10,000 threads): a deterministic workload fed to the sans-IO gateway in
//! group-commit batches ([`Gateway::handle_batch`]), with an adapter that
//! fails a fixed share of sends. Used by `examples/load.rs` (the measured
//! run, figures in BENCHMARKS.md) and `tests/load.rs` (a short version that
//! checks the bounds and the accounting in CI).
//!
//! Every promised completion is accounted for at the end: delivered, or
//! dead-lettered with a reason. The driver checks it and reports the peaks
//! of every bounded structure next to its limit.

use std::collections::BTreeSet;
use std::time::Instant;

use crate::check::gen::Rng;
use crate::delivery::NotificationId;
use crate::gateway::{Config, Gateway, Input, Output};
use crate::origin::{ChatType, Origin};
use crate::registry::{Completion, RunId};

#[derive(Debug, Clone, Copy)]
/// The load run's shape (`examples/load.rs`).
pub struct Workload {
    /// Processes started.
    pub processes: usize,
    /// Process events (output chunks and ends) in all.
    pub events: usize,
    /// Threads (distinct origins) the processes start from.
    pub threads: usize,
    /// Inputs per group commit.
    pub batch: usize,
    /// One send in this many fails (the adapter is flaky), 0 = never.
    pub fail_one_in: usize,
    /// Seed of the generated workload.
    pub seed: u64,
}

#[derive(Debug, Clone, Default)]
/// What a load run measured.
pub struct Report {
    /// Inputs handed to the gateway.
    pub inputs: u64,
    /// Process events among them.
    pub events: u64,
    /// Group commits.
    pub batches: u64,
    /// Bytes the gateway asked to persist.
    pub persisted_bytes: u64,
    /// Notifications offered to the adapter.
    pub sends: u64,
    /// Sends that succeeded.
    pub delivered: u64,
    /// Sends that failed (and were retried).
    pub failed_sends: u64,
    /// Completions owed (notify-on-exit processes that ended).
    pub completions_promised: u64,
    /// Completions delivered.
    pub completions_delivered: u64,
    /// Completions dead-lettered.
    pub completions_dead: u64,
    /// Watch matches delivered.
    pub watch_delivered: u64,
    /// Most processes running at once.
    pub peak_running: usize,
    /// Most notifications queued at once.
    pub peak_queued: usize,
    /// Dead letters in all.
    pub dead_letters: u64,
    /// Wall time of the run, in seconds.
    pub seconds: f64,
    /// `(what, limit, peak)` for every bounded structure.
    pub bounds: Vec<(&'static str, usize, usize)>,
    /// Promised completions neither delivered nor dead-lettered (must be 0).
    pub unaccounted: u64,
    /// Notifications still queued when the drain gave up after
    /// [`MAX_DRAIN_TICKS`] (must be 0).
    pub undrained: usize,
}

/// Ticks the final drain waits for the delivery queue to empty. Every
/// queued notification is delivered or dead-lettered after at most
/// `max_attempts` sends (DELIVER-4), each retry due within minutes; ten
/// thousand 61-second ticks (a week of virtual time) is far more than that
/// needs. A queue still holding notifications then is a bug, and the run
/// reports it (`undrained`) instead of spinning forever.
pub const MAX_DRAIN_TICKS: u32 = 10_000;

fn origin(i: usize) -> Origin {
    const PLATFORMS: [&str; 5] = ["telegram", "slack", "discord", "matrix", "signal"];
    let p = PLATFORMS[i % PLATFORMS.len()];
    let (chat_type, chat, thread) = match p {
        "telegram" => (
            ChatType::Group,
            format!("-100{}", 1_000_000 + i),
            Some(format!("{}", i % 97)),
        ),
        "slack" => (
            ChatType::Channel,
            format!("C{i:08X}"),
            Some(format!("17000{i}.000100")),
        ),
        "discord" => (
            ChatType::Thread,
            format!("{}", 900_000_000_000u64 + i as u64),
            None,
        ),
        "matrix" => (ChatType::Group, format!("!room{i}:matrix.org"), None),
        _ => (ChatType::Dm, format!("+1555{i:07}"), None),
    };
    let mut o = Origin::new(p, chat_type, &chat).expect("origin");
    if let Some(t) = thread {
        o = o.with_thread(&t).expect("thread");
    }
    o.with_user(&format!("u{}", i % 5000)).expect("user")
}

/// Runs the workload; returns the figures.
pub fn run(w: Workload) -> Report {
    let started = Instant::now();
    let mut rng = Rng::new(w.seed);
    let mut g = Gateway::new(Config::default());
    let mut r = Report::default();
    let mut now: u64 = 0;
    let threads: Vec<Origin> = (0..w.threads.max(1)).map(origin).collect();
    let mut pending: Vec<Input> = threads
        .iter()
        .map(|o| Input::Message { origin: o.clone() })
        .collect();
    let mut runs: Vec<RunId> = Vec::new();
    let mut finished: BTreeSet<RunId> = BTreeSet::new();
    let mut spawned = 0usize;
    let mut next_exit = 0usize;
    let mut seen_completion: BTreeSet<RunId> = BTreeSet::new();
    let mut send_count = 0u64;
    let mut drain_ticks = 0u32;
    let commit = |g: &mut Gateway, now: u64, inputs: Vec<Input>, r: &mut Report| -> Vec<Output> {
        r.inputs += inputs.len() as u64;
        r.batches += 1;
        let out = g.handle_batch(now, inputs);
        for o in &out {
            if let Output::Persist { bytes, .. } = o {
                r.persisted_bytes += bytes.len() as u64;
            }
        }
        out
    };
    loop {
        // Fill the batch: spawns first, then events, then exits.
        while pending.len() < w.batch {
            if spawned < w.processes {
                let home = &threads[spawned % threads.len()];
                pending.push(Input::Spawn {
                    origin: home.clone(),
                    process_id: format!("job{spawned}"),
                    command: format!("make -j4 target{spawned}"),
                    watch_patterns: if spawned % 2 == 0 {
                        vec!["ERROR".into()]
                    } else {
                        vec![]
                    },
                    notify_on_exit: true,
                });
                spawned += 1;
            } else if (r.events as usize) < w.events.saturating_sub(w.processes) && !runs.is_empty()
            {
                let run = runs[rng.below(runs.len())];
                if finished.contains(&run) {
                    continue;
                }
                let hit = rng.chance(5);
                pending.push(Input::Output {
                    run,
                    chunk: format!(
                        "[{}] compiling unit {}{}\n",
                        r.events,
                        rng.below(1000),
                        if hit {
                            " ERROR: undefined reference"
                        } else {
                            ""
                        }
                    ),
                });
                r.events += 1;
            } else if next_exit < runs.len() {
                let run = runs[next_exit];
                next_exit += 1;
                finished.insert(run);
                pending.push(Input::Finished {
                    run,
                    completion: Completion::Exited {
                        code: (run.0 % 3) as i32,
                    },
                });
                r.completions_promised += 1;
                r.events += 1;
            } else {
                break;
            }
        }
        if pending.is_empty() {
            // Quiescence: let retries come due until nothing is queued.
            if g.delivery().queued() == 0 || drain_ticks == MAX_DRAIN_TICKS {
                break;
            }
            drain_ticks += 1;
            now += 61_000;
            pending.push(Input::Tick);
        }
        let out = commit(&mut g, now, std::mem::take(&mut pending), &mut r);
        now += 10;
        for o in out {
            match o {
                Output::Spawned { run, .. } => runs.push(run),
                Output::Send(n) => {
                    r.sends += 1;
                    send_count += 1;
                    let fail = w.fail_one_in > 0 && send_count % w.fail_one_in as u64 == 0;
                    if fail {
                        r.failed_sends += 1;
                    } else {
                        r.delivered += 1;
                        if n.text.contains("matched watch pattern") {
                            r.watch_delivered += 1;
                        }
                        if let NotificationId::Process { run, .. } = n.id {
                            if finished.contains(&run)
                                && !n.text.contains("matched watch pattern")
                                && !n.text.contains("watch patterns disabled")
                                && seen_completion.insert(run)
                            {
                                r.completions_delivered += 1;
                            }
                        }
                    }
                    pending.push(Input::Sent {
                        id: n.id,
                        error: fail.then(|| "adapter: 503".to_owned()),
                    });
                }
                _ => {}
            }
        }
        r.peak_running = r.peak_running.max(g.registry().running().count());
        r.peak_queued = r.peak_queued.max(g.delivery().queued());
        if r.batches % 64 == 0 {
            // Time passes now and then: cooldowns end, retries come due.
            now += 16_000;
            pending.push(Input::Tick);
        }
    }
    for d in g.delivery().dead_letters() {
        r.dead_letters += 1;
        if let NotificationId::Process { run, .. } = d.notification.id {
            if finished.contains(&run)
                && !d.notification.text.contains("matched watch pattern")
                && seen_completion.insert(run)
            {
                r.completions_dead += 1;
            }
        }
    }
    r.unaccounted = r.completions_promised - r.completions_delivered - r.completions_dead;
    r.undrained = g.delivery().queued();
    let dl = Config::default().delivery;
    let lim = Config::default().limits;
    r.bounds = vec![
        ("running processes", lim.max_processes, r.peak_running),
        ("queued notifications", dl.queue_max, r.peak_queued),
        (
            "dead letters kept",
            dl.dead_letter_max,
            g.delivery().dead_letters().count(),
        ),
    ];
    r.seconds = started.elapsed().as_secs_f64();
    r
}

/// Peak resident memory of this process, from `/proc/self/status` (Linux).
pub fn peak_rss_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}
