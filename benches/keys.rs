//! Key build and parse in both dialects (divan). Run: `cargo bench --bench keys`.

use divan::{black_box, Bencher};
use procroute::key::{canonical, hermes};
use procroute::{ChatType, Origin, Policy};

fn main() {
    divan::main();
}

fn origins() -> Vec<(&'static str, Origin)> {
    vec![
        (
            "telegram_topic",
            Origin::new("telegram", ChatType::Group, "-1001234567890")
                .and_then(|o| o.with_thread("42"))
                .and_then(|o| o.with_user("123456789"))
                .expect("valid"),
        ),
        (
            "matrix_room",
            Origin::new("matrix", ChatType::Group, "!abc:matrix.org")
                .and_then(|o| o.with_user("@alice:matrix.org"))
                .expect("valid"),
        ),
        (
            "slack_thread",
            Origin::new("slack", ChatType::Group, "C0123ABC")
                .and_then(|o| o.with_thread("1700000000.123456"))
                .expect("valid"),
        ),
    ]
}

const SHAPES: [&str; 3] = ["telegram_topic", "matrix_room", "slack_thread"];

fn pick(name: &str) -> Origin {
    origins()
        .into_iter()
        .find(|(n, _)| *n == name)
        .map(|(_, o)| o)
        .expect("known shape")
}

#[divan::bench(args = SHAPES)]
fn hermes_build(b: Bencher, shape: &str) {
    let o = pick(shape);
    let p = Policy::default();
    b.bench(|| hermes::build(black_box(&o), black_box(&p)));
}

#[divan::bench(args = SHAPES)]
fn hermes_parse(b: Bencher, shape: &str) {
    let key = hermes::build(&pick(shape), &Policy::default()).expect("builds");
    b.bench(|| hermes::parse(black_box(&key)));
}

/// The zero-copy parse a router's hot path uses (what `side_by_side.py`
/// compares with hermes-agent's own parser).
#[divan::bench(args = SHAPES)]
fn hermes_parse_view(b: Bencher, shape: &str) {
    let key = hermes::build(&pick(shape), &Policy::default()).expect("builds");
    b.bench(|| hermes::parse_view(black_box(&key)));
}

#[divan::bench(args = SHAPES)]
fn canonical_build(b: Bencher, shape: &str) {
    let o = pick(shape);
    let p = Policy::default();
    b.bench(|| canonical::build(black_box(&o), black_box(&p)));
}

#[divan::bench(args = SHAPES)]
fn canonical_parse(b: Bencher, shape: &str) {
    let key = canonical::build(&pick(shape), &Policy::default());
    b.bench(|| canonical::parse(black_box(&key)));
}

/// The floor for parsing: one pass over the bytes counting separators.
#[divan::bench(args = SHAPES)]
fn byte_scan_floor(b: Bencher, shape: &str) {
    let key = canonical::build(&pick(shape), &Policy::default());
    b.bench(|| black_box(&key).bytes().filter(|&c| c == b':').count());
}
