//! Lane twins: sibling threads whose ids collide under some gateway's key
//! (KEY-L1's collisions, in traces). The key vectors and the dialect laws (KEY-L1's
//! families) find the collisions one key at a time; a twin puts the same
//! shapes into a trace, with processes of its own beside its partner's, so
//! a gateway that files the two threads under one lane shows what that
//! costs: one thread's notification in the other (INV-1, INV-2), one
//! lost or told twice (INV-3, INV-4).
//!
//! Not a twin: the same ids under another chat type. The key laws check
//! that such origins get different keys (KEY-L1's `chat-type` family),
//! but a send is addressed by platform, chat id and thread alone, so in a
//! trace nothing tells which of the two a notification reached.
//!
//! A twin is drawn from a stream of its own after the rest of the trace
//! (as [`super::gen`]'s reads are), so a seed's trace without a twin is
//! byte for byte what it was before twins existed; with one, the trace
//! gains a thread at the end and the twin's operations beside its
//! partner's.

use super::collide::{canonical, collision, joined, Collision, MARKERS};
use super::steer::{shape_of, Shape, Steering};
use super::TraceOp;
use crate::conform::constraint::Constraints;
use crate::gen::Rng;

use super::{to_origin, RawOrigin};

/// Percentage of generated traces that get a twin.
const TWIN_SHARE: u64 = 40;

/// A twin of `p` in `shape`, if `p` has one (not checked against
/// anything but the shape).
fn sibling(shape: Collision, p: &RawOrigin, rng: &mut Rng) -> Option<RawOrigin> {
    let mut o = p.clone();
    match shape {
        Collision::Whitespace => {
            let pad = *rng.pick(&[" ", "\t", "\u{a0}"]);
            match &p.thread_id {
                Some(t) if rng.chance(50) => o.thread_id = Some(format!("{t}{pad}")),
                _ if rng.chance(50) => o.chat_id = format!("{pad}{}", p.chat_id),
                _ => o.chat_id = format!("{}{pad}", p.chat_id),
            }
        }
        Collision::Case => {
            let flip = |s: &str| -> Option<String> {
                let f: String = s
                    .chars()
                    .map(|c| {
                        if c.is_ascii_lowercase() {
                            c.to_ascii_uppercase()
                        } else {
                            c.to_ascii_lowercase()
                        }
                    })
                    .collect();
                (f != s).then_some(f)
            };
            let thread = p.thread_id.as_deref().and_then(flip);
            match (flip(&p.chat_id), thread) {
                (_, Some(t)) if rng.chance(50) => o.thread_id = Some(t),
                (Some(c), _) => o.chat_id = c,
                (None, Some(t)) => o.thread_id = Some(t),
                (None, None) => {
                    // No letters: a Slack-like id that has some.
                    o.chat_id = format!("{}C0a", p.chat_id);
                    return Some(o);
                }
            }
        }
        Collision::ThreadUser => {
            if p.chat_type == "dm" {
                return None;
            }
            match (&p.thread_id, &p.user_id) {
                (Some(t), _) => {
                    o.thread_id = None;
                    o.user_id = Some(t.clone());
                }
                (None, Some(u)) => {
                    o.thread_id = Some(u.clone());
                    o.user_id = None;
                }
                (None, None) => return None,
            }
        }
        Collision::Canonical => {
            let n = canonical(&p.chat_id).to_owned();
            let forms = [
                format!("{n}@s.whatsapp.net"),
                format!("{n}:47@s.whatsapp.net"),
                format!("+{n}"),
                n.clone(),
            ];
            let forms: Vec<&String> = forms.iter().filter(|f| **f != p.chat_id).collect();
            o.chat_id = (*rng.pick(&forms)).clone();
        }
        Collision::Marker => {
            let w = *rng.pick(MARKERS);
            match &p.thread_id {
                Some(t) => {
                    o.chat_id = format!("{}:{w}:{t}", p.chat_id);
                    o.thread_id = None;
                }
                None => {
                    let (chat, t) = p.chat_id.split_once(&format!(":{w}:"))?;
                    o.chat_id = chat.to_owned();
                    o.thread_id = Some(t.to_owned());
                }
            }
        }
        Collision::Separator => return split(p, rng),
    }
    Some(o)
}

/// `p`'s ids joined by `:` and cut again at other boundaries: every `:`
/// of the joined text, the ones inside ids included, can become the end
/// of the chat or of the thread, so over many traces every split occurs.
fn split(p: &RawOrigin, rng: &mut Rng) -> Option<RawOrigin> {
    let text = joined(p);
    let cuts: Vec<usize> = text.match_indices(':').map(|(i, _)| i).collect();
    if cuts.is_empty() {
        return None;
    }
    for _ in 0..8 {
        let users = p.chat_type != "dm";
        let most = if users { 2 } else { 1 };
        let n = rng.below(most.min(cuts.len()) + 1);
        let mut chosen: Vec<usize> = Vec::new();
        while chosen.len() < n {
            let c = *rng.pick(&cuts);
            if !chosen.contains(&c) {
                chosen.push(c);
            }
        }
        chosen.sort_unstable();
        let mut parts = Vec::new();
        let mut from = 0;
        for c in &chosen {
            parts.push(text[from..*c].to_owned());
            from = c + 1;
        }
        parts.push(text[from..].to_owned());
        let mut o = p.clone();
        o.chat_id = parts[0].clone();
        o.thread_id = None;
        if users {
            o.user_id = None;
        }
        match parts.len() {
            1 => {}
            2 if users && rng.chance(40) => o.user_id = Some(parts[1].clone()),
            2 => o.thread_id = Some(parts[1].clone()),
            _ => {
                o.thread_id = Some(parts[1].clone());
                o.user_id = Some(parts[2].clone());
            }
        }
        if collision(p, &o) == Some(Collision::Separator) {
            return Some(o);
        }
    }
    None
}

/// `ops` with a lane twin in [`TWIN_SHARE`] % of the traces: a thread
/// appended to `threads` that collides with one of them in a shape the
/// steering does not leave out, whose processes mirror the partner's
/// (spawned, printing, reading, ending right after it). A partner without
/// a process gets one; a WhatsApp twin gets a WhatsApp partner of its
/// own. Drawn from its own stream (see the module's doc).
pub(super) fn with_twin(
    seed: u64,
    threads: &mut Vec<RawOrigin>,
    ops: Vec<TraceOp>,
    limits: &Constraints,
    steering: &Steering,
) -> Vec<TraceOp> {
    let mut rng = Rng::new(seed ^ 0x7A1E_5EB1_1D6E_0C0A);
    if !rng.chance(TWIN_SHARE) {
        return ops;
    }
    let allowed: Vec<Collision> = Collision::ALL
        .into_iter()
        .filter(|c| shape_of(*c).map_or(true, |s| !steering.avoids(s)))
        .collect();
    if allowed.is_empty() || threads.is_empty() {
        return ops;
    }
    let shape = *rng.pick(&allowed);
    let mut candidates = threads.clone();
    let mut partner = rng.below(threads.len());
    if shape == Collision::Canonical && threads[partner].platform != "whatsapp" {
        let chat = *rng.pick(&[
            "60123456789@s.whatsapp.net",
            "+15551234567",
            "4915112345678",
        ]);
        let w = RawOrigin {
            platform: "whatsapp".into(),
            chat_type: "dm".into(),
            chat_id: chat.into(),
            thread_id: None,
            user_id: None,
            user_name: None,
        };
        candidates.push(w);
        partner = candidates.len() - 1;
    }
    let accepted = |o: &RawOrigin, others: &[RawOrigin]| {
        to_origin(o).is_ok()
            && limits.broken_by(o).is_none()
            && !steering.refuses_thread(o, others)
            && !others.iter().any(|x| x == o)
    };
    if !accepted(&candidates[partner], &candidates[..partner]) {
        return ops;
    }
    let twin = (0..8).find_map(|_| {
        sibling(shape, &candidates[partner], &mut rng)
            .filter(|o| collision(&candidates[partner], o) == Some(shape))
            .filter(|o| accepted(o, &candidates))
    });
    let Some(twin) = twin else { return ops };
    *threads = candidates;
    threads.push(twin);
    let ops = with_partner_process(ops, partner, steering, &mut rng);
    mirror(ops, partner, threads.len() - 1, steering, &mut rng)
}

/// `ops` with a process of `partner`'s if it spawns none: a spawn that
/// asks for its completion (and watches, sometimes), a matching line and
/// an exit, at random places.
fn with_partner_process(
    mut ops: Vec<TraceOp>,
    partner: usize,
    steering: &Steering,
    rng: &mut Rng,
) -> Vec<TraceOp> {
    let spawns = ops
        .iter()
        .any(|op| matches!(op, TraceOp::Spawn { thread, .. } if *thread == partner));
    if spawns {
        return ops;
    }
    let process = "lane1".to_owned();
    let at = slot(&ops, rng.below(ops.len() + 1));
    ops.insert(
        at,
        TraceOp::Spawn {
            thread: partner,
            process: process.clone(),
            watch: if rng.chance(40) && !steering.avoids(Shape::WatchWithNotify) {
                vec!["MATCH".into()]
            } else {
                vec![]
            },
            notify: true,
        },
    );
    let at = slot(&ops, at + 1 + rng.below(ops.len() - at));
    ops.insert(
        at,
        TraceOp::Output {
            process: process.clone(),
            text: format!("tok0of{process} MATCH\n"),
        },
    );
    let at = if steering.avoids(Shape::UndrainedMatch) {
        ops.insert(at + 1, TraceOp::Message { thread: partner });
        at + 1
    } else {
        at
    };
    let at = slot(&ops, at + 1 + rng.below(ops.len() - at));
    ops.insert(at, TraceOp::Exit { process, code: 0 });
    ops
}

/// `at`, or the first place after it that does not come between an
/// output that may match and the message that follows it (P-13's
/// `undrained_match` steered off puts one there).
fn slot(ops: &[TraceOp], mut at: usize) -> usize {
    let hit = |op: &TraceOp| matches!(op, TraceOp::Output { text, .. } if text.contains("MATCH") || text.contains("ERR"));
    while at < ops.len() {
        let before = ops[..at]
            .iter()
            .rev()
            .find(|op| !matches!(op, TraceOp::Read { .. }));
        if !before.is_some_and(hit) {
            break;
        }
        at += 1;
    }
    at
}

/// The twin's operations beside the partner's: each process the partner
/// spawns gets a twin process (`<id>t`) spawned right after it, with the
/// same watch and notify, printing the same lines with its own tokens
/// (`sib…` for `tok…`, so a byte of one in the other's thread is
/// visible), read and ended right after it; half the partner's messages
/// are followed by one in the twin's thread.
fn mirror(
    ops: Vec<TraceOp>,
    partner: usize,
    twin: usize,
    steering: &Steering,
    rng: &mut Rng,
) -> Vec<TraceOp> {
    let mut mirrored: Vec<String> = Vec::new();
    let name = |p: &str| format!("{p}t");
    let mut out = Vec::with_capacity(ops.len() * 2);
    for op in ops {
        let extra = match &op {
            TraceOp::Spawn {
                thread,
                process,
                watch,
                notify,
            } => {
                mirrored.retain(|p| p != process);
                (*thread == partner).then(|| {
                    mirrored.push(process.clone());
                    TraceOp::Spawn {
                        thread: twin,
                        process: name(process),
                        watch: watch.clone(),
                        notify: *notify,
                    }
                })
            }
            TraceOp::Output { process, text } if mirrored.contains(process) => {
                let twin_output = TraceOp::Output {
                    process: name(process),
                    text: text
                        .replace("tok", "sib")
                        .replace(&format!("of{process}"), &format!("of{}", name(process))),
                };
                // A trace steered off undrained matches (P-13) has a
                // message after every output that may match: the twin's
                // goes first, with a message in its own thread.
                let hit = text.contains("MATCH") || text.contains("ERR");
                if hit && steering.avoids(Shape::UndrainedMatch) {
                    out.push(twin_output);
                    out.push(TraceOp::Message { thread: twin });
                    None
                } else {
                    Some(twin_output)
                }
            }
            TraceOp::Exit { process, code } if mirrored.contains(process) => Some(TraceOp::Exit {
                process: name(process),
                code: *code,
            }),
            TraceOp::Kill { process } if mirrored.contains(process) => Some(TraceOp::Kill {
                process: name(process),
            }),
            TraceOp::Read { thread, process }
                if *thread == partner && mirrored.contains(process) =>
            {
                Some(TraceOp::Read {
                    thread: twin,
                    process: name(process),
                })
            }
            TraceOp::Message { thread } if *thread == partner && rng.chance(50) => {
                Some(TraceOp::Message { thread: twin })
            }
            _ => None,
        };
        out.push(op);
        out.extend(extra);
    }
    super::well_formed_ops(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn o(chat_type: &str, chat: &str, thread: Option<&str>, user: Option<&str>) -> RawOrigin {
        RawOrigin {
            platform: "telegram".into(),
            chat_type: chat_type.into(),
            chat_id: chat.into(),
            thread_id: thread.map(Into::into),
            user_id: user.map(Into::into),
            user_name: None,
        }
    }

    #[test]
    fn every_boundary_of_a_lane_is_a_separator_twin() {
        let p = o("group", "a:b", Some("c"), Some("d"));
        let twins = [
            o("group", "a", Some("b:c"), Some("d")),
            o("group", "a:b:c", None, Some("d")),
            o("group", "a", Some("b"), Some("c:d")),
            o("group", "a:b:c:d", None, None),
            o("group", "a", None, Some("b:c:d")),
        ];
        for t in &twins {
            assert_eq!(collision(&p, t), Some(Collision::Separator), "{t:?}");
        }
        // Found by the generator too.
        let mut rng = Rng::new(7);
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..400 {
            if let Some(t) = split(&p, &mut rng) {
                assert_eq!(collision(&p, &t), Some(Collision::Separator));
                seen.insert(joined_parts(&t));
            }
        }
        // "a:b:c:d" has 3 cuts: one part (1), two parts with the second
        // a thread or a user (3 × 2), three parts (3, less `p` itself).
        assert_eq!(seen.len(), 1 + 6 + 2, "{seen:?}");
    }

    fn joined_parts(o: &RawOrigin) -> String {
        format!("{}|{:?}|{:?}", o.chat_id, o.thread_id, o.user_id)
    }

    #[test]
    fn each_shape_is_told_apart() {
        let p = o("group", "-100", Some("5"), Some("42"));
        let cases = [
            (
                o("group", "-100 ", Some("5"), Some("42")),
                Collision::Whitespace,
            ),
            (o("group", "-100", None, Some("5")), Collision::ThreadUser),
            (
                o("group", "-100:thread:5", None, Some("42")),
                Collision::Marker,
            ),
            (o("group", "-100:5", None, Some("42")), Collision::Separator),
        ];
        for (t, want) in cases {
            assert_eq!(collision(&p, &t), Some(want), "{t:?}");
            assert_eq!(collision(&t, &p), Some(want), "{t:?} (reversed)");
        }
        let c = o("group", "C0abc", None, None);
        assert_eq!(
            collision(&c, &o("group", "c0ABC", None, None)),
            Some(Collision::Case)
        );
        let mut w = o("dm", "60123456789@s.whatsapp.net", None, None);
        w.platform = "whatsapp".into();
        let mut w2 = w.clone();
        w2.chat_id = "60123456789:47@s.whatsapp.net".into();
        assert_eq!(collision(&w, &w2), Some(Collision::Canonical));
        // Unrelated threads and the same thread are not twins.
        assert_eq!(collision(&p, &p), None);
        assert_eq!(
            collision(&p, &o("channel", "-100", Some("5"), Some("42"))),
            None
        );
        assert_eq!(collision(&p, &o("group", "-200", Some("5"), None)), None);
    }
}
