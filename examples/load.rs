//! The load run: `cargo run --release --example load -- [PROCS EVENTS THREADS BATCH]`
//! (default 100000 1000000 10000 1000). Prints time per event, peak memory
//! and every bounded structure's peak next to its limit; exits non-zero if a
//! promised completion is unaccounted for. Figures: BENCHMARKS.md.

fn main() {
    let arg = |i: usize, d: usize| {
        std::env::args()
            .nth(i)
            .and_then(|a| a.parse().ok())
            .unwrap_or(d)
    };
    let w = procroute::check::soak::Workload {
        processes: arg(1, 100_000),
        events: arg(2, 1_000_000),
        threads: arg(3, 10_000),
        batch: arg(4, 1_000),
        fail_one_in: 100,
        seed: 1,
    };
    let r = procroute::check::soak::run(w);
    println!("workload: {w:?}");
    println!(
        "{} inputs in {} group commits, {:.1} s: {:.2} µs per input, {:.2} µs per event",
        r.inputs,
        r.batches,
        r.seconds,
        r.seconds * 1e6 / r.inputs as f64,
        r.seconds * 1e6 / r.events.max(1) as f64
    );
    println!(
        "persisted {:.1} MiB ({:.1} KiB per commit)",
        r.persisted_bytes as f64 / 1048576.0,
        r.persisted_bytes as f64 / 1024.0 / r.batches as f64
    );
    println!(
        "sends {} (failed {}), completions promised {} = delivered {} + dead-lettered {} (unaccounted {}), watch matches delivered {}",
        r.sends, r.failed_sends, r.completions_promised, r.completions_delivered,
        r.completions_dead, r.unaccounted, r.watch_delivered
    );
    for (what, limit, peak) in &r.bounds {
        println!("bound {what}: peak {peak} of {limit}");
    }
    if let Some(kib) = procroute::check::soak::peak_rss_kib() {
        println!("peak RSS {:.1} MiB", kib as f64 / 1024.0);
    }
    if r.unaccounted != 0 || r.undrained != 0 {
        eprintln!(
            "FAILED: {} completions unaccounted, {} notifications never drained",
            r.unaccounted, r.undrained
        );
        std::process::exit(1);
    }
}
