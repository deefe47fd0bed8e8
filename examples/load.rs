//! The load run (STORE-7's cost, side by side: BENCHMARKS.md).
//!
//! `cargo run --release --example load` runs, side by side in one process,
//! the default workload (1,000,000 events from 10,000 threads, group
//! commits of 1,000 inputs, a flaky adapter) with 10,000 and with 100,000
//! processes, each with the journal and with whole-file snapshots, and
//! prints µs per event (spent in the gateway and the backend; the
//! driver's own work is printed beside, not counted), bytes and fsyncs
//! per commit, and recovery time at the peak, then the journal's targets: at 100,000 processes within 1.5×
//! its time at 10,000, at least 10× faster and 20× fewer bytes than the
//! snapshots. With `--features sqlite` the SQLite backend runs beside them.
//!
//! `cargo run --release --example load -- PROCS EVENTS THREADS BATCH
//! [journal|snapshots|sqlite|none] [CONCURRENT]` runs one workload
//! (`none`: a journaling gateway whose records are dropped, the floor). Every run checks that each
//! promised completion was delivered or dead-lettered (exit 1 otherwise)
//! and prints every bounded structure's peak next to its limit.

use procroute_suite::soak::{self, Report, Storage, Workload};

fn run(w: Workload) -> Report {
    let r = soak::run(w);
    println!(
        "{:>7} running, {:?}: {} inputs in {} group commits, {:.1} s in the gateway and backend \
         ({:.1} s in all): {:.2} µs per event; \
         {:.1} MiB written ({:.0} B per event), {} durable commits, {:.2} fsyncs each, \
         {} compactions; recovery with {} running: {}",
        w.concurrent.min(w.processes),
        w.storage,
        r.inputs,
        r.batches,
        r.seconds,
        r.wall_seconds,
        per_event_us(&r),
        r.persisted_bytes as f64 / 1048576.0,
        r.persisted_bytes as f64 / r.events.max(1) as f64,
        r.durable_commits,
        r.fsyncs as f64 / r.durable_commits.max(1) as f64,
        r.compactions,
        r.recovery.map_or(0, |(_, n)| n),
        r.recovery
            .map_or("not reached".to_owned(), |(s, _)| format!(
                "{:.0} ms",
                s * 1e3
            )),
    );
    println!(
        "    sends {} (failed {}), completions promised {} = delivered {} + dead-lettered {} (unaccounted {}), watch matches delivered {}",
        r.sends, r.failed_sends, r.completions_promised, r.completions_delivered,
        r.completions_dead, r.unaccounted, r.watch_delivered
    );
    for (what, limit, peak) in &r.bounds {
        println!("    bound {what}: peak {peak} of {limit}");
    }
    if r.unaccounted != 0 || r.undrained != 0 {
        eprintln!(
            "FAILED: {} completions unaccounted, {} notifications never drained",
            r.unaccounted, r.undrained
        );
        std::process::exit(1);
    }
    r
}

fn per_event_us(r: &Report) -> f64 {
    r.seconds * 1e6 / r.events.max(1) as f64
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, d: usize| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(d);
    let base = Workload {
        processes: arg(0, 100_000),
        concurrent: arg(0, 100_000),
        events: arg(1, 1_000_000),
        threads: arg(2, 10_000),
        batch: arg(3, 1_000),
        fail_one_in: 100,
        seed: 1,
        storage: Storage::Journal,
    };
    if !args.is_empty() {
        let storage = match args.get(4).map(String::as_str) {
            None | Some("journal") => Storage::Journal,
            Some("snapshots") => Storage::Snapshots,
            #[cfg(feature = "sqlite")]
            Some("sqlite") => Storage::Sqlite,
            Some("none") => Storage::Discard,
            Some(other) => {
                eprintln!("unknown storage {other:?}: journal, snapshots, none (or sqlite, feature `sqlite`)");
                std::process::exit(2);
            }
        };
        run(Workload {
            storage,
            concurrent: arg(5, base.processes),
            ..base
        });
    } else {
        // The same events — 100,000 spawns, outputs, exits and their
        // notifications — with 10,000 running at a time.
        let small = Workload {
            concurrent: 10_000,
            ..base
        };
        let j10 = run(small);
        let j100 = run(base);
        let floor = run(Workload {
            storage: Storage::Discard,
            ..base
        });
        #[cfg(feature = "sqlite")]
        for w in [small, base] {
            run(Workload {
                storage: Storage::Sqlite,
                ..w
            });
        }
        let s10 = run(Workload {
            storage: Storage::Snapshots,
            ..small
        });
        let s100 = run(Workload {
            storage: Storage::Snapshots,
            ..base
        });
        let growth = per_event_us(&j100) / per_event_us(&j10);
        let faster = per_event_us(&s100) / per_event_us(&j100);
        let fewer = s100.persisted_bytes as f64 / j100.persisted_bytes.max(1) as f64;
        println!("journal at 100,000 processes vs 10,000: {growth:.3}× the time per event (target ≤ 1.5)");
        println!("journal vs snapshots at 100,000: {faster:.2}× faster (target ≥ 10), {fewer:.1}× fewer bytes (target ≥ 20)");
        println!(
            "snapshots at 100,000 vs 10,000: {:.2}× the time per event",
            per_event_us(&s100) / per_event_us(&s10)
        );
        println!(
            "the floor at 100,000 (records dropped): {:.2} µs per event; the journal adds {:.2}; \
             snapshots are {:.1}× the floor",
            per_event_us(&floor),
            per_event_us(&j100) - per_event_us(&floor),
            per_event_us(&s100) / per_event_us(&floor)
        );
    }
    if let Some(kib) = soak::peak_rss_kib() {
        println!("peak RSS {:.1} MiB", kib as f64 / 1024.0);
    }
}
