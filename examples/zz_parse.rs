use std::hint::black_box;
fn main() {
    let corpus = std::fs::read_to_string("/tmp/corpus.jsonl").unwrap();
    let keys: Vec<String> = corpus
        .lines()
        .filter_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).ok()?;
            v["hermes"]["Ok"].as_str().map(str::to_owned)
        })
        .collect();
    let mode = std::env::args().nth(1).unwrap_or_default();
    let n = 20000;
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = std::time::Instant::now();
        for _ in 0..n / 5 {
            for k in &keys {
                if mode == "floor" {
                    black_box(memchr::memchr_iter(b':', black_box(k).as_bytes()).count());
                } else {
                    let _ = black_box(procroute::key::hermes::parse_view(black_box(k)));
                }
            }
        }
        best = best.min(t.elapsed().as_nanos() as f64 / (n / 5 * keys.len()) as f64);
    }
    println!("{mode} {:.1} ns", best);
}
