//! Every stored trace under `spec/vectors/traces/` replays against the real
//! router: invariants hold and the deliveries are exactly the expected ones.
//! On failure the trace is printed as a per-thread swimlane timeline with
//! the misrouted or missing notification marked.

#[path = "support/sim.rs"]
mod sim;

use procroute::gateway::Config;

#[test]
fn stored_traces_replay() {
    let mut files: Vec<_> = std::fs::read_dir(sim::traces_dir())
        .expect("spec/vectors/traces exists")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 6,
        "expected the six fault traces, found {}",
        files.len()
    );
    let mut ids = std::collections::BTreeSet::new();
    for path in files {
        let text = std::fs::read_to_string(&path).expect("readable");
        let t: sim::TraceFile =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(ids.insert(t.id.clone()), "duplicate trace id {}", t.id);
        assert_eq!(t.suite_version, procroute::SUITE_VERSION, "{}", t.id);
        let result = sim::run_trace(Config::default(), &t.ops);
        let shown = sim::run_for_timeline(Config::default(), &t.ops);
        let got = sim::deliveries(&shown);
        if result.is_err() || got != t.expect {
            let missing: Vec<_> = t.expect.iter().filter(|e| !got.contains(e)).collect();
            panic!(
                "{} [{}] failed: {:?}\nmissing: {missing:?}\n{}",
                t.id,
                t.rules.join(", "),
                result.err(),
                sim::timeline(&shown, &t.ops)
            );
        }
    }
}
