//! Generation profiles (PROTOCOL P-13): a trace steered off a shape has
//! none of it, unsteered generation is what it always was, and each shape
//! does occur without steering (so the checks below can fail).

use procroute_suite::conform::constraint::Constraints;
use procroute_suite::conform::trace::collide::{collision, Collision};
use procroute_suite::conform::trace::steer::{Shape, Steering};
use procroute_suite::conform::trace::{generate, generate_steered, Trace, TraceOp};

const ALL: [Shape; 13] = [
    Shape::WatchWithNotify,
    Shape::WatchOnly,
    Shape::PaddedIds,
    Shape::ThreadUserIds,
    Shape::ControlOutput,
    Shape::Shutdown,
    Shape::AdapterDown,
    Shape::Restart,
    Shape::Read,
    Shape::Turns,
    Shape::UndrainedMatch,
    Shape::SeparatorIds,
    Shape::CanonicalIds,
];

/// The collision shapes of `t`'s pairs of threads.
fn collisions(t: &Trace) -> Vec<(usize, usize, Collision)> {
    let mut out = Vec::new();
    for (i, a) in t.threads.iter().enumerate() {
        for (k, b) in t.threads.iter().enumerate().skip(i + 1) {
            if let Some(c) = collision(a, b) {
                out.push((i, k, c));
            }
        }
    }
    out
}

/// Whether `t` has `shape`, read from the trace alone.
fn has(t: &Trace, shape: Shape) -> bool {
    let ops = &t.ops;
    let padded = |s: &str| s.trim() != s;
    match shape {
        Shape::WatchWithNotify => ops.iter().any(
            |op| matches!(op, TraceOp::Spawn { watch, notify: true, .. } if !watch.is_empty()),
        ),
        Shape::WatchOnly => ops.iter().any(
            |op| matches!(op, TraceOp::Spawn { watch, notify: false, .. } if !watch.is_empty()),
        ),
        Shape::PaddedIds => t.threads.iter().any(|o| {
            padded(&o.chat_id)
                || o.thread_id.as_deref().is_some_and(padded)
                || o.user_id.as_deref().is_some_and(padded)
        }),
        Shape::ThreadUserIds => t.threads.iter().enumerate().any(|(i, a)| {
            t.threads.iter().enumerate().any(|(k, b)| {
                i != k
                    && a.platform == b.platform
                    && a.chat_id == b.chat_id
                    && a.thread_id.is_some()
                    && a.thread_id == b.user_id
            })
        }),
        Shape::ControlOutput => ops.iter().any(|op| {
            matches!(op, TraceOp::Output { text, .. }
                if text.contains(['\t', '\u{1b}', '\r', '\u{202e}', '\u{2028}']))
        }),
        Shape::Shutdown => ops.iter().any(|op| matches!(op, TraceOp::Shutdown)),
        Shape::AdapterDown => ops
            .iter()
            .any(|op| matches!(op, TraceOp::Adapter { up: false })),
        Shape::Restart => ops.iter().any(|op| matches!(op, TraceOp::Restart { .. })),
        Shape::Read => ops.iter().any(|op| matches!(op, TraceOp::Read { .. })),
        Shape::Turns => ops.iter().any(|op| matches!(op, TraceOp::TurnStart { .. })),
        Shape::UndrainedMatch => ops.iter().enumerate().any(|(i, op)| {
            let hit = matches!(op, TraceOp::Output { text, .. }
                if text.contains("MATCH") || text.contains("ERR"));
            let next = ops[i + 1..]
                .iter()
                .find(|o| !matches!(o, TraceOp::Read { .. }));
            hit && !matches!(next, Some(TraceOp::Message { .. }))
        }),
        Shape::SeparatorIds => collisions(t)
            .iter()
            .any(|(_, _, c)| matches!(c, Collision::Separator | Collision::Marker)),
        Shape::CanonicalIds => collisions(t)
            .iter()
            .any(|(_, _, c)| *c == Collision::Canonical),
    }
}

#[test]
fn a_steered_trace_has_none_of_the_shapes_it_avoids() {
    let none = Constraints::default();
    for shape in ALL {
        let steering = Steering::avoiding(&[shape]);
        let mut unsteered_had = 0;
        for seed in 0..400 {
            let t = generate_steered(seed, 60, &none, &steering);
            assert!(
                !has(&t, shape),
                "seed {seed} steered off {} has it: {t:?}",
                shape.name()
            );
            if has(&generate(seed, 60), shape) {
                unsteered_had += 1;
            }
        }
        assert!(
            unsteered_had >= 10,
            "{}: only {unsteered_had} of 400 unsteered traces have it, the check is weak",
            shape.name()
        );
    }
}

#[test]
fn steering_off_everything_still_spawns_and_notifies() {
    let none = Constraints::default();
    let steering = Steering::avoiding(&ALL);
    let mut spawns = 0;
    let mut ends = 0;
    for seed in 0..200 {
        let t = generate_steered(seed, 60, &none, &steering);
        for shape in ALL {
            assert!(!has(&t, shape), "seed {seed}: {}", shape.name());
        }
        spawns += t
            .ops
            .iter()
            .filter(|o| matches!(o, TraceOp::Spawn { .. }))
            .count();
        ends += t
            .ops
            .iter()
            .filter(|o| matches!(o, TraceOp::Exit { .. } | TraceOp::Kill { .. }))
            .count();
    }
    assert!(spawns > 500 && ends > 300, "{spawns} spawns, {ends} ends");
}

#[test]
fn without_steering_generation_is_unchanged() {
    let none = Constraints::default();
    for seed in 0..300 {
        assert_eq!(
            generate_steered(seed, 60, &none, &Steering::default()),
            generate(seed, 60)
        );
    }
}

#[test]
fn lane_twins_of_every_shape_run_processes_beside_their_partner() {
    // KEY-L1's collisions in traces: each collision shape the key vectors and the
    // dialect laws know appears in traces as two threads that both spawn.
    let mut seen = std::collections::BTreeMap::new();
    for seed in 0..1_000 {
        let t = generate(seed, 60);
        let spawns = |thread: usize| {
            t.ops
                .iter()
                .any(|op| matches!(op, TraceOp::Spawn { thread: s, .. } if *s == thread))
        };
        for (a, b, c) in collisions(&t) {
            if spawns(a) && spawns(b) {
                *seen.entry(c.name()).or_insert(0) += 1;
            }
        }
    }
    for c in Collision::ALL {
        let n = seen.get(c.name()).copied().unwrap_or(0);
        assert!(n >= 10, "{}: {n} of 1000 traces ({seen:?})", c.name());
    }
    eprintln!("lane twins that both spawn, per shape, in 1000 traces: {seen:?}");
}

#[test]
fn every_shape_is_in_the_protocol_schema() {
    // A shape the generator knows but the schema refuses makes every
    // handshake that declares it an error under `--validate`.
    let schema = procroute_suite::conform::schema::Schema::protocol();
    for shape in ALL {
        let steer = serde_json::json!({"shape": shape.name(), "share": 10, "reason": "r"});
        assert_eq!(schema.validate("steer", &steer), Ok(()), "{}", shape.name());
        let back: Shape = serde_json::from_value(steer["shape"].clone()).unwrap();
        assert_eq!(back, shape);
    }
    let bad = serde_json::json!({"shape": "no_such_shape", "share": 10, "reason": "r"});
    assert!(schema.validate("steer", &bad).is_err());
}
