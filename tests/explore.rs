//! Exhaustive exploration of the default scope on the built-in router
//! (`procroute explore`): every reached state is judged clean, states are
//! deduplicated (fewer distinct than explored) and symmetric choices are
//! not offered twice. The faults it finds are in `tests/faults.rs`.

use procroute::check::explore::{explore, Scope};
use procroute::gateway::Config;

#[test]
fn the_default_scope_to_depth_3_passes_and_deduplicates() {
    let scope = Scope {
        depth: 3,
        ..Scope::default()
    };
    let s = explore(&scope, &Config::default(), None);
    assert_eq!(s.failed, 0, "{:?}", s.counterexample);
    assert_eq!(s.complete_depth, 3);
    assert!(s.distinct > 1_000, "{} distinct states", s.distinct);
    assert!(s.distinct < s.explored, "no state was reached twice");
    assert_eq!(
        s.judged + 1,
        s.distinct,
        "every distinct state but the empty one is judged"
    );
}

#[test]
fn interchangeable_threads_are_explored_once() {
    // With the two topics declared interchangeable, fewer states than
    // without: the second topic is only offered once the first is used.
    let depth = 2;
    let reduced = explore(
        &Scope {
            depth,
            ..Scope::default()
        },
        &Config::default(),
        None,
    );
    let full = explore(
        &Scope {
            depth,
            symmetric: Vec::new(),
            ..Scope::default()
        },
        &Config::default(),
        None,
    );
    assert_eq!(reduced.failed + full.failed, 0);
    assert!(
        reduced.explored < full.explored,
        "{} vs {}",
        reduced.explored,
        full.explored
    );
}
