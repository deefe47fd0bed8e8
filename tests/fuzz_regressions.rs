//! Every input kept under `fuzz/regressions/<target>/` replays through the
//! fuzz target's body (`procroute_suite::fuzzing`). A crash found by cargo-fuzz is
//! copied there and stays a test forever.

use std::fs;
use std::path::Path;

fn inputs(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/regressions")
        .join(target);
    let mut out: Vec<(String, Vec<u8>)> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.is_file())
        .map(|p| (p.display().to_string(), fs::read(&p).expect("readable")))
        .collect();
    out.sort();
    out
}

#[test]
fn key_parse_regressions() {
    let all = inputs("key_parse");
    assert!(!all.is_empty(), "no regression inputs kept");
    for (_name, bytes) in all {
        procroute_suite::fuzzing::key_parse(&bytes);
    }
}

#[cfg(feature = "arbitrary")]
#[test]
fn key_roundtrip_regressions() {
    use arbitrary::{Arbitrary, Unstructured};
    let all = inputs("key_roundtrip");
    assert!(!all.is_empty(), "no regression inputs kept");
    for (_name, bytes) in all {
        let mut u = Unstructured::new(&bytes);
        if let Ok((o, g, t, p)) = <(procroute::Origin, bool, bool, bool)>::arbitrary(&mut u) {
            procroute_suite::fuzzing::key_roundtrip(&o, g, t, p);
        }
    }
}

#[test]
fn decode_file_regressions() {
    use procroute::gateway::FileKind;
    for (target, kind) in [
        ("decode_store", FileKind::Store),
        ("decode_checkpoint", FileKind::Checkpoint),
        ("decode_delivery", FileKind::Delivery),
    ] {
        let all = inputs(target);
        assert!(all.len() >= 3, "{target}: regression inputs missing");
        for (_name, bytes) in all {
            procroute_suite::fuzzing::decode_file(kind, &bytes);
        }
    }
}

#[cfg(feature = "arbitrary")]
#[test]
fn trace_vs_model_regressions() {
    use arbitrary::{Arbitrary, Unstructured};
    let all = inputs("trace_vs_model");
    assert!(!all.is_empty(), "no regression inputs kept");
    let mut ran = 0;
    for (_name, bytes) in all {
        let u = Unstructured::new(&bytes);
        if let Ok(t) = procroute_suite::fuzzing::FuzzTrace::arbitrary_take_rest(u) {
            procroute_suite::fuzzing::trace_vs_model(&t.trace);
            ran += 1;
        }
    }
    assert!(ran > 0, "no regression input decoded to a trace");
}
