//! Interleaving exploration throughput: steps per second through the real
//! gateway and the model with every invariant checked (divan).
//! Run: `cargo bench --bench exploration`.

#[path = "../tests/support/sim.rs"]
mod sim;

use divan::counter::ItemsCount;
use divan::Bencher;
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

fn main() {
    divan::main();
}

fn traces(n: usize) -> Vec<Vec<sim::Op>> {
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[3; 32]);
    let mut runner = TestRunner::new_with_rng(Config::default(), rng);
    let strat = proptest::collection::vec(sim::op(), 1..64);
    (0..n)
        .map(|_| strat.new_tree(&mut runner).expect("tree").current())
        .collect()
}

#[divan::bench(sample_count = 20)]
fn interleaving_steps(b: Bencher) {
    let ts = traces(200);
    let steps: usize = ts.iter().map(Vec::len).sum();
    b.counter(ItemsCount::new(steps)).bench(|| {
        for t in &ts {
            sim::run_trace(procroute::gateway::Config::default(), t).expect("passes");
        }
    });
}
