//! Session keys ("lanes"): the string a gateway files a conversation under.
//!
//! Two dialects:
//! - [`hermes`] reproduces hermes-agent 0.19.0 byte for byte. Its keys lose
//!   information (ids are not escaped, a 6th part may be a thread or a user),
//!   so its parser reports what a key *cannot* tell as [`Determined::Unknown`].
//! - [`canonical`] is injective and lossless: `parse(build(o, p))` gives back
//!   exactly the keyed fields of `o` under `p`, whatever the ids contain.
//!
//! Both dialects share [`KeyFields`] (what a key is a function of) and
//! [`KeyError`] (what is wrong with a key, and at which byte).

pub mod canonical;
mod head;
pub mod hermes;
mod policy;
mod window;

use std::fmt;

use serde::{Deserialize, Serialize};
use wide::u8x16;

pub(crate) use head::*;
pub use policy::{Policy, Profile, MAX_PROFILE_BYTES};
pub(crate) use window::*;

/// The key parser's internal tiers, for the checking kit, whose fuzz bodies
/// (`procroute-suite`, `fuzzing::key_parse`) hold them to one another: the
/// fast head against the checked one, the 64-byte window against both, the
/// hermes parse's inline path against its general one. Not part of the
/// API: only with the feature `internals`, which no gateway enables.
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod internals {
    pub use super::head::{fast_head, parse_head_checked, parse_scan, Head, Scanned};
    pub use super::window::{window_scan, HEAD_LANES, WINDOW};
    pub use super::Segment;
    pub use crate::origin::MAX_ID_BYTES;

    /// The platform token whose direct chats hermes canonicalises.
    pub const WHATSAPP: &str = crate::origin::WHATSAPP;

    /// `hermes::parse_view`'s inline path alone.
    pub fn hermes_parse_view_inline(key: &str) -> Option<super::hermes::HermesView<'_>> {
        super::hermes::parse_view_inline(key)
    }

    /// `hermes::parse_view`'s general path alone.
    pub fn hermes_parse_view_general(
        key: &str,
    ) -> Result<super::hermes::HermesView<'_>, super::KeyError> {
        super::hermes::parse_view_general(key)
    }
}

use crate::origin::{
    platform_token_problem, ChatType, Field, Id, Origin, Platform, Problem, MAX_PLATFORM_BYTES,
};

/// Longest key either parser accepts, in bytes (KEY-1). A canonical key of
/// three maximal ids, each fully escaped, still fits.
pub const MAX_KEY_BYTES: usize = 8192;

/// The parts of an origin a key is a function of under a policy (KEY-4).
///
/// The thread is keyed whenever present. The user is keyed only outside
/// direct messages, when `group_sessions_per_user` is on, and — inside a
/// thread — only when `thread_sessions_per_user` is on too. The user name is
/// never keyed.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct KeyFields {
    /// `main` or a profile name.
    pub namespace: String,
    /// The platform.
    pub platform: Platform,
    /// The chat type.
    pub chat_type: ChatType,
    /// The chat's id.
    pub chat_id: Id,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The thread's id, when the origin has one.
    pub thread_id: Option<Id>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The user's id, when the policy keys the user (KEY-4).
    pub user_id: Option<Id>,
}

impl KeyFields {
    /// The keyed fields of `origin` under `policy` (KEY-4).
    pub fn of(origin: &Origin, policy: &Policy) -> KeyFields {
        KeyFields {
            namespace: policy.namespace().to_owned(),
            platform: origin.platform().clone(),
            chat_type: origin.chat_type(),
            chat_id: origin.chat_id().clone(),
            thread_id: origin.thread_id().cloned(),
            user_id: if user_is_keyed(origin.chat_type(), origin.thread_id().is_some(), policy) {
                origin.user_id().cloned()
            } else {
                None
            },
        }
    }
}

/// KEY-4: whether a user id (when there is one) is part of the key.
pub fn user_is_keyed(chat_type: ChatType, has_thread: bool, policy: &Policy) -> bool {
    chat_type != ChatType::Dm
        && policy.group_sessions_per_user
        && (!has_thread || policy.thread_sessions_per_user)
}

/// Which part of a key a parse error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Part {
    /// The `agent:` prefix.
    Prefix,
    /// The namespace (`main` or a profile).
    Namespace,
    /// The platform token.
    Platform,
    /// The chat type.
    ChatType,
    /// The chat id.
    ChatId,
    /// The thread id.
    ThreadId,
    /// The user id.
    UserId,
}

impl fmt::Display for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Part::Prefix => "prefix",
            Part::Namespace => "namespace",
            Part::Platform => "platform",
            Part::ChatType => "chat type",
            Part::ChatId => "chat id",
            Part::ThreadId => "thread id",
            Part::UserId => "user id",
        })
    }
}

impl Part {
    pub(crate) fn of_field(field: Field) -> Part {
        match field {
            Field::ThreadId => Part::ThreadId,
            Field::UserId => Part::UserId,
            _ => Part::ChatId,
        }
    }
}

/// What is wrong with a key (KEY-9). Every variant is reachable from some
/// input; none is a panic in disguise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum KeyErrorKind {
    #[error("key is {len} bytes long, the limit is {max}")]
    /// The key is longer than [`MAX_KEY_BYTES`].
    TooLong {
        /// Its length, in bytes.
        len: usize,
        /// The limit, in bytes.
        max: usize,
    },
    #[error("key must start with \"agent:\"")]
    /// The key does not start with `agent:`.
    MissingPrefix,
    #[error("key ends before its {part}")]
    /// The key ends before a part it must have.
    Missing {
        /// The first part that is missing.
        part: Part,
    },
    #[error("{part} is empty")]
    /// A part is empty.
    Empty {
        /// Which part.
        part: Part,
    },
    #[error("{part} is {len} bytes long, the limit is {max}")]
    /// A part is longer than its limit.
    PartTooLong {
        /// Which part.
        part: Part,
        /// Its length, in bytes.
        len: usize,
        /// The limit, in bytes.
        max: usize,
    },
    #[error("{part} {found:?} is not a valid token: {reason}")]
    /// A token part (namespace, platform) breaks its grammar.
    BadToken {
        /// Which part.
        part: Part,
        /// The part as found.
        found: String,
        /// What is wrong with it.
        reason: String,
    },
    #[error("chat type {found:?} is unknown (expected dm, group, channel or thread)")]
    /// A chat type other than the four of ORIGIN-4.
    UnknownChatType {
        /// The chat type as found.
        found: String,
    },
    #[error("bad escape in {part}: {reason}")]
    /// A `%` escape that is not `%` and two upper-case hex digits (KEY-C3).
    BadEscape {
        /// The part it is in.
        part: Part,
        /// What is wrong with the escape.
        reason: String,
    },
    #[error("{part} contains {found:?}, which a canonical key must escape")]
    /// A character the canonical dialect always escapes, found raw (KEY-C3).
    Unescaped {
        /// The part it is in.
        part: Part,
        /// The character.
        found: char,
    },
    #[error("unexpected {found:?} after the {after}")]
    /// Something follows the last part a key of its shape can have.
    Trailing {
        /// The part it follows.
        after: Part,
        /// What follows, as found.
        found: String,
    },
    #[error("a dm key never carries a user id")]
    /// A `dm` key with a user segment: direct messages never key the user.
    UserInDm,
}

/// A key that does not parse: the byte offset where the problem starts, and
/// what it is. Displayed as `byte 17: chat type "grp" is unknown (...)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("byte {position}: {kind}")]
pub struct KeyError {
    /// The byte offset where the problem starts.
    pub position: usize,
    /// What the problem is.
    pub kind: KeyErrorKind,
}

impl KeyError {
    pub(crate) fn at(position: usize, kind: KeyErrorKind) -> KeyError {
        KeyError { position, kind }
    }
}

/// One `:`-separated segment of a key and the byte offset it starts at.
/// (Public only for `internals`; the module path it is reached by from
/// outside is hidden.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[doc(hidden)]
pub struct Segment<'a> {
    /// The segment's text.
    pub text: &'a str,
    /// Its byte offset in the key.
    pub start: usize,
}

/// The `:`-separated segments of `key`, left to right, without allocating.
/// `rest` hands back everything not yet split as one segment, so a parser
/// can split the head and look at the tail as a whole.
#[derive(Debug, Clone)]
pub(crate) struct Segments<'a> {
    key: &'a str,
    /// Start of the next segment; `None` once the last one was returned.
    next: Option<usize>,
}

impl<'a> Segments<'a> {
    pub(crate) fn new(key: &'a str) -> Segments<'a> {
        Segments { key, next: Some(0) }
    }

    /// The unsplit remainder as one segment (`None` when nothing is left).
    pub(crate) fn rest(self) -> Option<Segment<'a>> {
        let start = self.next?;
        Some(Segment {
            text: &self.key[start..],
            start,
        })
    }
}

impl<'a> Iterator for Segments<'a> {
    type Item = Segment<'a>;

    fn next(&mut self) -> Option<Segment<'a>> {
        let start = self.next?;
        let rest = &self.key.as_bytes()[start..];
        let end = match memchr::memchr(b':', rest) {
            Some(i) => {
                self.next = Some(start + i + 1);
                start + i
            }
            None => {
                self.next = None;
                self.key.len()
            }
        };
        Some(Segment {
            text: &self.key[start..end],
            start,
        })
    }
}

/// What a hermes key says about one field (KEY-H3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", content = "value", rename_all = "snake_case")]
pub enum Determined<T = Id> {
    /// The key determines the value with certainty.
    Known(T),
    /// The key determines that the field is not in the key. For a thread
    /// this means the origin had none; for a user it means the user is not
    /// keyed (the origin may still have one).
    Absent,
    /// The key cannot tell; the reason says why.
    Unknown(Uncertain),
}

impl<T> Determined<T> {
    /// The value, when the key determines it.
    pub fn known(&self) -> Option<&T> {
        match self {
            Determined::Known(id) => Some(id),
            _ => None,
        }
    }

    /// Maps a known value, keeping `Absent` and `Unknown` as they are.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Determined<U> {
        match self {
            Determined::Known(v) => Determined::Known(f(v)),
            Determined::Absent => Determined::Absent,
            Determined::Unknown(why) => Determined::Unknown(why),
        }
    }
}

/// Why a hermes key cannot determine a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Uncertain {
    /// The tail has more than one `:`-separated segment, and ids may contain
    /// `:`: the split into chat / thread / user is not determined.
    ColonSplit,
    /// hermes-agent rewrote a WhatsApp id (JID suffix and device cut, or a
    /// fallback to the sender or thread id): the original is gone.
    WhatsAppCanonical,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_split_like_str_split_and_keep_offsets() {
        for key in ["", ":", "a", "a:", ":a", "a::b", "agent:main:x:dm:1:2:3"] {
            let segs: Vec<Segment<'_>> = Segments::new(key).collect();
            let texts: Vec<&str> = segs.iter().map(|s| s.text).collect();
            assert_eq!(texts, key.split(':').collect::<Vec<_>>(), "{key:?}");
            for s in &segs {
                assert_eq!(&key[s.start..s.start + s.text.len()], s.text);
            }
        }
        let mut it = Segments::new("a:b:c");
        it.next();
        assert_eq!(
            it.rest(),
            Some(Segment {
                text: "b:c",
                start: 2
            })
        );
        let mut done = Segments::new("a");
        done.next();
        assert_eq!(done.rest(), None);
    }
}
