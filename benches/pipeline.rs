//! Where gateways call procroute (divan): route resolution with the lane in
//! the store and without; a full trace through registry → router →
//! delivery (events per second); generated conformance traces through the
//! built-in executor and judge (cases per second).
//! Run: `cargo bench --bench pipeline`. Figures: BENCHMARKS.md.

use divan::counter::ItemsCount;
use divan::Bencher;
use procroute::gateway::{Config, Gateway, Input, Output};
use procroute::registry::Completion;
use procroute::router;
use procroute::store::{Lane, SessionStore};
use procroute::{Origin, Policy};
use procroute_suite::conform::trace;
use procroute_suite::gen::{self, Rng};

fn main() {
    divan::main();
}

fn origins(n: usize) -> Vec<Origin> {
    let mut rng = Rng::new(5);
    (0..n).map(|_| gen::origin(&mut rng)).collect()
}

#[divan::bench(args = [true, false])]
fn route_resolution(b: Bencher, lane_in_store: bool) {
    let os = origins(1_000);
    let policy = Policy::default();
    let mut store = SessionStore::new(10_000);
    if lane_in_store {
        for o in &os {
            store.observe(o, &policy, 0).expect("room");
        }
    }
    let lanes: Vec<Lane> = os.iter().map(|o| Lane::of(o, &policy)).collect();
    b.counter(ItemsCount::new(os.len())).bench(|| {
        for (o, lane) in os.iter().zip(&lanes) {
            divan::black_box(router::resolve_parts(&store, lane, Some(o)).expect("routes"));
        }
    });
}

/// Events per second through the sans-IO gateway: spawn, output (some
/// matching), exit, with every send acknowledged; snapshots included.
#[divan::bench(sample_count = 20)]
fn gateway_events(b: Bencher) {
    let os = origins(50);
    let events: usize = 50 * (1 + 8 + 1);
    b.counter(ItemsCount::new(events)).bench(|| {
        let mut g = Gateway::new(Config::default());
        let mut now = 0;
        let ack = |g: &mut Gateway, out: Vec<Output>, now: u64| {
            for o in out {
                if let Output::Send(n) = o {
                    g.handle(
                        now,
                        Input::Sent {
                            id: n.id,
                            error: None,
                        },
                    );
                }
            }
        };
        for (i, o) in os.iter().enumerate() {
            let out = g.handle(
                now,
                Input::Spawn {
                    origin: o.clone(),
                    process_id: format!("p{i}"),
                    command: "make".into(),
                    watch_patterns: vec!["ERROR".into()],
                    notify_on_exit: true,
                },
            );
            let run = out
                .iter()
                .find_map(|x| match x {
                    Output::Spawned { run, .. } => Some(*run),
                    _ => None,
                })
                .expect("spawned");
            for k in 0..8 {
                now += 2_000;
                let chunk = if k % 4 == 0 { "ERROR: x\n" } else { "ok\n" };
                let out = g.handle(
                    now,
                    Input::Output {
                        run,
                        chunk: chunk.into(),
                    },
                );
                ack(&mut g, out, now);
            }
            let out = g.handle(
                now,
                Input::Finished {
                    run,
                    completion: Completion::Exited { code: 0 },
                },
            );
            ack(&mut g, out, now);
        }
        divan::black_box(g.stats().routed_from_store);
    });
}

/// Generated conformance traces (up to 32 steps) executed and judged
/// in-process: the ceiling of what `conform` can do per second.
#[divan::bench(sample_count = 10)]
fn conformance_cases(b: Bencher) {
    let ts: Vec<_> = (0..200)
        .map(|n| trace::generate(24301 * 1_000_003 + n, 32))
        .collect();
    b.counter(ItemsCount::new(ts.len())).bench(|| {
        for t in &ts {
            let r = trace::execute(t).expect("runs");
            assert!(procroute_suite::model::judge::judge(t, &r).is_empty());
        }
    });
}

/// The same generated traces over the protocol: `conform`'s trace stage
/// against the built-in harness (`procroute harness`, a child process),
/// JSON lines both ways, judged by the runner. Includes the harness's start.
#[divan::bench(sample_count = 5, args = [1, 2])]
fn conformance_cases_over_the_protocol(b: Bencher, jobs: usize) {
    let exe = env!("CARGO_BIN_EXE_procroute");
    traces_through(b, jobs, exe, &["harness".to_owned()]);
}

/// The same 500 traces through the Python template harness, on one and
/// two harness processes (`conform --jobs`).
#[divan::bench(sample_count = 5, args = [1, 2])]
fn conformance_cases_python_template(b: Bencher, jobs: usize) {
    let template = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/spec/harnesses/example-python/harness.py"
    );
    traces_through(b, jobs, "python3", &[template.to_owned()]);
}

fn traces_through(b: Bencher, jobs: usize, program: &str, args: &[String]) {
    use procroute_suite::conform::runner::{run_traces, TraceRun};
    let cfg = TraceRun {
        seed: 24301,
        cases: 500,
        max_steps: 32,
        save_dir: None,
        max_shrink_runs: 0,
        max_shrunk: usize::MAX,
        svg: None,
        validate: false,
        known: Vec::new(),
        min_coverage: 0.0,
        stored: false,
        jobs,
        unsteered: false,
    };
    b.counter(ItemsCount::new(cfg.cases)).bench(|| {
        let outcomes = run_traces(
            program,
            args,
            &cfg,
            std::time::Duration::from_secs(10),
            |_| true,
        )
        .expect("the harness runs");
        assert!(outcomes.iter().all(|o| o.passed), "a trace failed");
    });
}
