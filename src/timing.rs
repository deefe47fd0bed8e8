//! `procroute timeit`: procroute's side of the side-by-side comparison with
//! hermes-agent (`spec/harnesses/hermes-agent/side_by_side.py`). Reads the
//! corpus lines `procroute keys-corpus` prints, times each operation over
//! all of them for several rounds, and prints one JSON object per
//! operation: median, min and max nanoseconds per call across rounds.

use std::hint::black_box;
use std::time::Instant;

use serde_json::{json, Value};

use procroute::key::{canonical, hermes, Policy, Profile};
use procroute::origin::{Origin, RawOrigin};
use procroute::router;
use procroute::store::{Lane, SessionStore};

struct Case {
    origin: Origin,
    policy: Policy,
    hermes_key: Option<String>,
    canonical_key: String,
}

fn policy_of(v: &Value) -> Policy {
    let flag = |k: &str, d: bool| v.get(k).and_then(Value::as_bool).unwrap_or(d);
    let mut p = Policy::new(
        flag("group_sessions_per_user", true),
        flag("thread_sessions_per_user", false),
    );
    if let Some(name) = v.get("profile").and_then(Value::as_str) {
        if let Ok(profile) = Profile::new(name) {
            p = p.with_profile(profile);
        }
    }
    p
}

fn cases(lines: &str) -> Result<Vec<Case>, String> {
    let mut out = Vec::new();
    for (n, line) in lines
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let v: Value = serde_json::from_str(line).map_err(|e| format!("line {}: {e}", n + 1))?;
        let raw: RawOrigin = serde_json::from_value(v["origin"].clone())
            .map_err(|e| format!("line {}: {e}", n + 1))?;
        let origin = Origin::try_from(raw).map_err(|e| format!("line {}: {e}", n + 1))?;
        let policy = policy_of(&v["policy"]);
        out.push(Case {
            hermes_key: v["hermes"]["Ok"].as_str().map(str::to_owned),
            canonical_key: canonical::build(&origin, &policy),
            origin,
            policy,
        });
    }
    Ok(out)
}

/// Median, min and max ns per call of `f` over `cases`, `rounds` times
/// after one warm-up pass,
/// and every round's figure (`per_round_ns`, in the order run) so a caller
/// can pool rounds from several runs.
fn time(rounds: usize, calls: usize, mut f: impl FnMut()) -> Value {
    // One untimed pass first: caches, page tables and branch predictors
    // warm, as they are in a gateway that has been running.
    f();
    let per_round: Vec<f64> = (0..rounds)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_nanos() as f64 / calls.max(1) as f64
        })
        .collect();
    let mut sorted = per_round.clone();
    sorted.sort_by(f64::total_cmp);
    json!({
        "median_ns": sorted[sorted.len() / 2],
        "min_ns": sorted[0],
        "max_ns": sorted[sorted.len() - 1],
        "calls": calls,
        "rounds": rounds,
        "per_round_ns": per_round,
    })
}

/// Runs every operation; returns `{op: timing}`.
pub fn run(corpus: &str, rounds: usize) -> Result<Value, String> {
    let cs = cases(corpus)?;
    let hkeys: Vec<&str> = cs.iter().filter_map(|c| c.hermes_key.as_deref()).collect();
    let mut hit = SessionStore::new(cs.len() + 1);
    for c in &cs {
        hit.observe(&c.origin, &c.policy, 0)
            .map_err(|e| e.to_string())?;
    }
    let miss = SessionStore::new(1);
    let lanes: Vec<Lane> = cs.iter().map(|c| Lane::of(&c.origin, &c.policy)).collect();
    let n = cs.len();
    // The byte-scan floor: find every `:` of each hermes key, nothing else,
    // two ways; the floor is the faster of the two in this run.
    let scan_naive = time(rounds, hkeys.len(), || {
        for k in &hkeys {
            black_box(black_box(k).bytes().filter(|b| *b == b':').count());
        }
    });
    let scan_memchr = time(rounds, hkeys.len(), || {
        for k in &hkeys {
            black_box(memchr::memchr_iter(b':', black_box(k).as_bytes()).count());
        }
    });
    let floor = if scan_naive["median_ns"].as_f64() <= scan_memchr["median_ns"].as_f64() {
        scan_naive.clone()
    } else {
        scan_memchr.clone()
    };
    Ok(json!({
        "hermes_build": time(rounds, n, || for c in &cs { let _ = black_box(hermes::build(&c.origin, &c.policy)); }),
        "hermes_parse": time(rounds, hkeys.len(), || for k in &hkeys { let _ = black_box(hermes::parse_view(black_box(k))); }),
        "hermes_parse_owned": time(rounds, hkeys.len(), || for k in &hkeys { let _ = black_box(hermes::parse(black_box(k))); }),
        "canonical_build": time(rounds, n, || for c in &cs { black_box(canonical::build(&c.origin, &c.policy)); }),
        "canonical_parse": time(rounds, n, || for c in &cs { let _ = black_box(canonical::parse(&c.canonical_key)); }),
        "route_store_hit": time(rounds, n, || for (c, l) in cs.iter().zip(&lanes) { let _ = black_box(router::resolve_parts(&hit, l, Some(&c.origin))); }),
        "route_store_miss": time(rounds, n, || for (c, l) in cs.iter().zip(&lanes) { let _ = black_box(router::resolve_parts(&miss, l, Some(&c.origin))); }),
        "byte_scan_floor": floor,
        "byte_scan_naive": scan_naive,
        "byte_scan_memchr": scan_memchr,
    }))
}
