//! The Node helper a harness inherits (`packaging/npm/procroute/
//! harness.mjs`): its node:test suite (the handshake declares what is
//! defined; skips, errors and bad lines answered without stopping; nothing
//! after `stop`; a report refuses unknown kinds). CI also packs and
//! installs the npm packages as a user would (`packaging/npm/pack.sh`).

#[test]
fn the_node_helper_passes_its_tests() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new("node")
        .args(["--test", "packaging/npm/tests/"])
        .current_dir(root)
        .output()
        .expect("node runs (Node 18 or newer)");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let passed: usize = text
        .lines()
        .find_map(|l| l.strip_prefix("# pass ")?.trim().parse().ok())
        .unwrap_or(0);
    assert!(passed >= 4, "only {passed} Node tests passed:\n{text}");
}
