//! Interleaving exploration throughput: protocol-trace ops per second
//! through the built-in gateway, and through the gateway plus the one
//! judge (oracle prediction and pairing), side by side (divan).
//! Run: `cargo bench --bench exploration`.

use divan::counter::ItemsCount;
use divan::Bencher;

use procroute_suite::conform::trace::{execute, generate, Trace};
use procroute_suite::model::judge::judge;

fn main() {
    divan::main();
}

fn traces(n: u64) -> Vec<Trace> {
    (0..n).map(|seed| generate(seed, 64)).collect()
}

#[divan::bench(sample_count = 20)]
fn execute_only(b: Bencher) {
    let ts = traces(200);
    let ops: usize = ts.iter().map(|t| t.ops.len()).sum();
    b.counter(ItemsCount::new(ops)).bench(|| {
        for t in &ts {
            divan::black_box(execute(t).expect("runs"));
        }
    });
}

#[divan::bench(sample_count = 20)]
fn execute_and_judge(b: Bencher) {
    let ts = traces(200);
    let ops: usize = ts.iter().map(|t| t.ops.len()).sum();
    b.counter(ItemsCount::new(ops)).bench(|| {
        for t in &ts {
            let r = execute(t).expect("runs");
            assert!(judge(t, &r).is_empty());
        }
    });
}
