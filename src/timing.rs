//! `procroute timeit`: procroute's side of the side-by-side comparison with
//! hermes-agent (`spec/harnesses/hermes-agent/side_by_side.py`). Reads the
//! corpus lines `procroute keys-corpus` prints, times each operation over
//! all of them for several rounds, and prints one JSON object per
//! operation: median, min and max nanoseconds per call across rounds.

use std::hint::black_box;
use std::time::Instant;

use serde_json::{json, Value};

use crate::key::{canonical, hermes, Policy, Profile};
use crate::origin::{Origin, RawOrigin};
use crate::router;
use crate::store::{Lane, SessionStore};

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

/// Median, min and max ns per call of `f` over `cases`, `rounds` times.
fn time(rounds: usize, calls: usize, mut f: impl FnMut()) -> Value {
    let mut per_call: Vec<f64> = (0..rounds)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_nanos() as f64 / calls.max(1) as f64
        })
        .collect();
    per_call.sort_by(f64::total_cmp);
    json!({
        "median_ns": per_call[per_call.len() / 2],
        "min_ns": per_call[0],
        "max_ns": per_call[per_call.len() - 1],
        "calls": calls,
        "rounds": rounds,
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
    // The byte-scan floor: find every `:` of each hermes key, nothing else.
    let floor = time(rounds, hkeys.len(), || {
        for k in &hkeys {
            black_box(k.bytes().filter(|b| *b == b':').count());
        }
    });
    Ok(json!({
        "hermes_build": time(rounds, n, || for c in &cs { let _ = black_box(hermes::build(&c.origin, &c.policy)); }),
        "hermes_parse": time(rounds, hkeys.len(), || for k in &hkeys { let _ = black_box(hermes::parse(k)); }),
        "canonical_build": time(rounds, n, || for c in &cs { black_box(canonical::build(&c.origin, &c.policy)); }),
        "canonical_parse": time(rounds, n, || for c in &cs { let _ = black_box(canonical::parse(&c.canonical_key)); }),
        "route_store_hit": time(rounds, n, || for (c, l) in cs.iter().zip(&lanes) { let _ = black_box(router::resolve_parts(&hit, l, Some(&c.origin))); }),
        "route_store_miss": time(rounds, n, || for (c, l) in cs.iter().zip(&lanes) { let _ = black_box(router::resolve_parts(&miss, l, Some(&c.origin))); }),
        "byte_scan_floor": floor,
    }))
}
