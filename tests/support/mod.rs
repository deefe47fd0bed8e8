//! Shrinkable generators for the key tests (proptest and quickcheck).
//!
//! They draw from the same shapes as `procroute_suite::gen` (real platform ids and
//! nasty pieces) so the conformance laws and these tests explore the same
//! space; here every value shrinks towards a short, still-valid id.
#![allow(dead_code)]

use proptest::prelude::*;

use procroute::key::{Policy, Profile};
use procroute::origin::{ChatType, Field, Id, Origin, Platform, MAX_ID_BYTES};
use procroute_suite::gen::{NASTY_PIECES, REAL_IDS};

pub fn id_text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => proptest::sample::select(REAL_IDS).prop_map(str::to_owned),
        3 => proptest::collection::vec(proptest::sample::select(NASTY_PIECES), 1..6)
            .prop_map(|v| v.concat()),
        2 => "\\PC{1,12}",
        1 => any::<String>().prop_filter("non-empty", |s| !s.is_empty()),
    ]
    .prop_map(|mut s| {
        while s.len() > MAX_ID_BYTES {
            s.pop();
        }
        if s.is_empty() {
            s.push(':');
        }
        s
    })
}

pub fn id(field: Field) -> impl Strategy<Value = Id> {
    id_text().prop_map(move |s| Id::new(field, s).expect("strategy yields valid ids"))
}

pub fn origin() -> impl Strategy<Value = Origin> {
    (
        proptest::sample::select(procroute_suite::gen::PLATFORMS),
        proptest::sample::select(&ChatType::ALL[..]),
        id(Field::ChatId),
        proptest::option::of(id(Field::ThreadId)),
        proptest::option::of(id(Field::UserId)),
        any::<bool>(),
    )
        .prop_map(
            |(platform, chat_type, chat, thread, user, thread_is_chat)| {
                // Discord-style threads reuse the chat id as the thread id.
                let thread = if thread_is_chat && thread.is_some() {
                    Some(Id::new(Field::ThreadId, chat.as_str()).expect("valid"))
                } else {
                    thread
                };
                Origin::from_parts(
                    Platform::new(platform).expect("valid"),
                    chat_type,
                    chat,
                    thread,
                    user,
                    None,
                )
            },
        )
}

pub fn policy() -> impl Strategy<Value = Policy> {
    (
        any::<bool>(),
        any::<bool>(),
        proptest::option::of("[a-z0-9][a-z0-9_-]{0,8}"),
    )
        .prop_map(|(g, t, profile)| {
            let p = Policy::new(g, t);
            match profile {
                Some(name) => p.with_profile(Profile::new(name).expect("regex matches the rule")),
                None => p,
            }
        })
}

/// A quickcheck wrapper: an origin whose `shrink` rebuilds through the
/// validating constructors, so every shrunk value is still a valid origin.
#[derive(Debug, Clone)]
pub struct QcOrigin(pub Origin);

fn qc_id(g: &mut quickcheck::Gen, field: Field) -> Id {
    let pieces: Vec<&str> = (0..1 + usize::arbitrary(g) % 4)
        .map(|_| {
            if bool::arbitrary(g) {
                *g.choose(NASTY_PIECES).expect("non-empty")
            } else {
                *g.choose(REAL_IDS).expect("non-empty")
            }
        })
        .collect();
    Id::new(field, pieces.concat()).expect("short pieces are valid")
}

use quickcheck::Arbitrary;

impl Arbitrary for QcOrigin {
    fn arbitrary(g: &mut quickcheck::Gen) -> QcOrigin {
        let platform = Platform::new(
            *g.choose(procroute_suite::gen::PLATFORMS)
                .expect("non-empty"),
        )
        .expect("valid");
        let chat_type = *g.choose(&ChatType::ALL).expect("non-empty");
        let chat = qc_id(g, Field::ChatId);
        let thread = bool::arbitrary(g).then(|| qc_id(g, Field::ThreadId));
        let user = bool::arbitrary(g).then(|| qc_id(g, Field::UserId));
        QcOrigin(Origin::from_parts(
            platform, chat_type, chat, thread, user, None,
        ))
    }

    fn shrink(&self) -> Box<dyn Iterator<Item = QcOrigin>> {
        let o = self.0.clone();
        let mut out = Vec::new();
        let rebuild = |chat: Id, thread: Option<Id>, user: Option<Id>| {
            QcOrigin(Origin::from_parts(
                o.platform().clone(),
                o.chat_type(),
                chat,
                thread,
                user,
                None,
            ))
        };
        if o.thread_id().is_some() {
            out.push(rebuild(o.chat_id().clone(), None, o.user_id().cloned()));
        }
        if o.user_id().is_some() {
            out.push(rebuild(o.chat_id().clone(), o.thread_id().cloned(), None));
        }
        // Shorter chat ids, through the validating constructor.
        for shorter in o.chat_id().as_str().to_owned().shrink() {
            if let Ok(chat) = Id::new(Field::ChatId, shorter) {
                out.push(rebuild(chat, o.thread_id().cloned(), o.user_id().cloned()));
            }
            if out.len() > 16 {
                break;
            }
        }
        Box::new(out.into_iter())
    }
}

#[derive(Debug, Clone)]
pub struct QcPolicy(pub Policy);

impl Arbitrary for QcPolicy {
    fn arbitrary(g: &mut quickcheck::Gen) -> QcPolicy {
        let p = Policy::new(bool::arbitrary(g), bool::arbitrary(g));
        QcPolicy(if bool::arbitrary(g) {
            p.with_profile(Profile::new("coder").expect("valid"))
        } else {
            p
        })
    }

    fn shrink(&self) -> Box<dyn Iterator<Item = QcPolicy>> {
        let d = Policy::default();
        Box::new((self.0 != d).then_some(QcPolicy(d)).into_iter())
    }
}
