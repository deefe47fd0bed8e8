//! Lane collisions: which shape, if any, makes two threads of one
//! platform and chat type collide under some gateway's key (white space,
//! case, thread vs user, WhatsApp canonical forms, marker words, `:` split
//! at another boundary). The twins generator ([`super::twins`]) draws
//! such pairs; a generation profile ([`super::steer`]) refuses them.

use super::RawOrigin;

/// How a twin's ids collide with its partner's. Every shape is a pair of
/// threads with different routes (or keyed users) that some dialect
/// files under one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Collision {
    /// Ids that differ only in surrounding white space (hermes strips them).
    Whitespace,
    /// Ids that differ only in ASCII letter case (OpenClaw folds them).
    Case,
    /// A thread id of one equal to the user id of the other, same chat
    /// (hermes' `group:-100:42`: topic 42 or user 42?).
    ThreadUser,
    /// WhatsApp identities one canonical form merges (`N@s.whatsapp.net`,
    /// the device JID `N:47@s.whatsapp.net`, `+N`, `N`; KEY-H2).
    Canonical,
    /// A thread moved into the chat id behind a marker word (`X:thread:T`
    /// with no thread vs chat `X` thread `T`, OpenClaw's peer grammar).
    Marker,
    /// The same ids joined by `:` and split at another boundary: chat
    /// `a:b` thread `c` vs chat `a` thread `b:c` vs chat `a:b:c` vs chat
    /// `a` user `b:c` … (every raw-joined key: hermes' KEY-H4).
    Separator,
}

impl Collision {
    /// Every shape, in the order [`collision`] tries them.
    pub const ALL: [Collision; 6] = [
        Collision::Whitespace,
        Collision::Case,
        Collision::ThreadUser,
        Collision::Canonical,
        Collision::Marker,
        Collision::Separator,
    ];

    /// Its name (tests and reports).
    pub fn name(self) -> &'static str {
        match self {
            Collision::Whitespace => "whitespace",
            Collision::Case => "case",
            Collision::ThreadUser => "thread-user",
            Collision::Canonical => "canonical",
            Collision::Marker => "marker",
            Collision::Separator => "separator",
        }
    }
}

/// Words gateways put between a chat and a thread in their keys.
pub(super) const MARKERS: &[&str] = &["thread", "topic"];

/// The ids in the order a raw-joined key holds them: chat, thread, and
/// the user where a chat type keys one (never in a dm).
pub(super) fn joined(o: &RawOrigin) -> String {
    let mut s = o.chat_id.clone();
    let user = o.user_id.as_ref().filter(|_| o.chat_type != "dm");
    for id in [o.thread_id.as_ref(), user].into_iter().flatten() {
        s.push(':');
        s.push_str(id);
    }
    s
}

/// The chat and thread as a marker grammar holds them (`X:thread:T`),
/// one string per marker word.
pub(super) fn marked(o: &RawOrigin) -> Vec<String> {
    match &o.thread_id {
        None => vec![o.chat_id.clone()],
        Some(t) => MARKERS
            .iter()
            .map(|w| format!("{}:{w}:{t}", o.chat_id))
            .collect(),
    }
}

/// What a canonicalising dialect keeps of a WhatsApp identity: the
/// number before any `@` or device `:`, without leading `+`.
pub(super) fn canonical(id: &str) -> &str {
    let id = id.trim();
    let id = id.split('@').next().unwrap_or(id);
    let id = id.split(':').next().unwrap_or(id);
    id.trim_start_matches('+')
}

/// The shape by which `b` is a lane twin of `a` (or `a` of `b`), if the
/// two are threads of one platform and chat type with different ids that
/// one of the shapes makes collide.
pub fn collision(a: &RawOrigin, b: &RawOrigin) -> Option<Collision> {
    let ids = |o: &RawOrigin| (o.chat_id.clone(), o.thread_id.clone(), o.user_id.clone());
    if a.platform != b.platform || a.chat_type != b.chat_type || ids(a) == ids(b) {
        return None;
    }
    let trim = |o: &RawOrigin| {
        (
            o.chat_id.trim().to_owned(),
            o.thread_id.as_deref().map(|t| t.trim().to_owned()),
            o.user_id.as_deref().map(|u| u.trim().to_owned()),
        )
    };
    let lower = |o: &RawOrigin| joined(o).to_ascii_lowercase();
    let thread_user = |x: &RawOrigin, y: &RawOrigin| {
        x.chat_id == y.chat_id
            && x.chat_type != "dm"
            && x.thread_id.is_some()
            && y.thread_id.is_none()
            && x.thread_id == y.user_id
    };
    if trim(a) == trim(b) {
        return Some(Collision::Whitespace);
    }
    if lower(a) == lower(b) && joined(a) != joined(b) {
        return Some(Collision::Case);
    }
    if thread_user(a, b) || thread_user(b, a) {
        return Some(Collision::ThreadUser);
    }
    if a.platform == "whatsapp"
        && a.chat_type == "dm"
        && a.chat_id != b.chat_id
        && !canonical(&a.chat_id).is_empty()
        && canonical(&a.chat_id) == canonical(&b.chat_id)
    {
        return Some(Collision::Canonical);
    }
    let (ma, mb) = (marked(a), marked(b));
    if ma.iter().any(|m| mb.contains(m)) && a.thread_id.is_some() != b.thread_id.is_some() {
        return Some(Collision::Marker);
    }
    (joined(a) == joined(b)).then_some(Collision::Separator)
}
