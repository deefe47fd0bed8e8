//! The Python helper a harness inherits (`packaging/python/src/procroute/
//! harness.py`): its own unittest suite (the handshake declares what is
//! defined; skips, errors and bad lines answered without stopping; nothing
//! after `stop`; a report refuses unknown kinds). The template harness
//! written on it passes `conform` in `tests/conform_runner.rs` and CI.

#[test]
fn the_python_helper_passes_its_tests() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new("python3")
        .args(["-m", "unittest", "discover", "-s", "packaging/python/tests"])
        .env("PYTHONPATH", root.join("packaging/python/src"))
        .current_dir(root)
        .output()
        .expect("python3 runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let ran: usize = err
        .lines()
        .find_map(|l| {
            l.strip_prefix("Ran ")?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or(0);
    assert!(ran >= 4, "only {ran} Python tests ran:\n{err}");
}
