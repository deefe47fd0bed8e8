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
pub mod hermes;
mod policy;

use std::fmt;

use serde::{Deserialize, Serialize};

pub use policy::{Policy, Profile, MAX_PROFILE_BYTES};

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
    pub platform: Platform,
    pub chat_type: ChatType,
    pub chat_id: Id,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<Id>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
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
    Prefix,
    Namespace,
    Platform,
    ChatType,
    ChatId,
    ThreadId,
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
    TooLong { len: usize, max: usize },
    #[error("key must start with \"agent:\"")]
    MissingPrefix,
    #[error("key ends before its {part}")]
    Missing { part: Part },
    #[error("{part} is empty")]
    Empty { part: Part },
    #[error("{part} is {len} bytes long, the limit is {max}")]
    PartTooLong { part: Part, len: usize, max: usize },
    #[error("{part} {found:?} is not a valid token: {reason}")]
    BadToken {
        part: Part,
        found: String,
        reason: String,
    },
    #[error("chat type {found:?} is unknown (expected dm, group, channel or thread)")]
    UnknownChatType { found: String },
    #[error("bad escape in {part}: {reason}")]
    BadEscape { part: Part, reason: String },
    #[error("{part} contains {found:?}, which a canonical key must escape")]
    Unescaped { part: Part, found: char },
    #[error("unexpected {found:?} after the {after}")]
    Trailing { after: Part, found: String },
    #[error("a dm key never carries a user id")]
    UserInDm,
}

/// A key that does not parse: the byte offset where the problem starts, and
/// what it is. Displayed as `byte 17: chat type "grp" is unknown (...)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("byte {position}: {kind}")]
pub struct KeyError {
    pub position: usize,
    pub kind: KeyErrorKind,
}

impl KeyError {
    pub(crate) fn at(position: usize, kind: KeyErrorKind) -> KeyError {
        KeyError { position, kind }
    }
}

/// One `:`-separated segment of a key and the byte offset it starts at.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Segment<'a> {
    pub text: &'a str,
    pub start: usize,
}

pub(crate) fn segments(key: &str) -> Vec<Segment<'_>> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, b) in key.bytes().enumerate() {
        if b == b':' {
            out.push(Segment {
                text: &key[start..i],
                start,
            });
            start = i + 1;
        }
    }
    out.push(Segment {
        text: &key[start..],
        start,
    });
    out
}

/// The common head of both dialects: `agent:<namespace>:<platform>:<chat type>`.
/// Returns the namespace, platform, chat type and the remaining segments.
pub(crate) fn parse_head<'a>(
    key: &'a str,
) -> Result<(String, Platform, ChatType, Vec<Segment<'a>>), KeyError> {
    if key.len() > MAX_KEY_BYTES {
        return Err(KeyError::at(
            MAX_KEY_BYTES,
            KeyErrorKind::TooLong {
                len: key.len(),
                max: MAX_KEY_BYTES,
            },
        ));
    }
    let segs = segments(key);
    if segs[0].text != "agent" || segs.len() < 2 {
        return Err(KeyError::at(0, KeyErrorKind::MissingPrefix));
    }
    let ns = segs[1];
    if let Some(reason) = policy::profile_problem(ns.text) {
        let kind = if ns.text.is_empty() {
            KeyErrorKind::Empty {
                part: Part::Namespace,
            }
        } else {
            KeyErrorKind::BadToken {
                part: Part::Namespace,
                found: ns.text.to_owned(),
                reason: reason.to_owned(),
            }
        };
        return Err(KeyError::at(ns.start, kind));
    }
    let Some(plat) = segs.get(2) else {
        return Err(KeyError::at(
            key.len(),
            KeyErrorKind::Missing {
                part: Part::Platform,
            },
        ));
    };
    if let Some(problem) = platform_token_problem(plat.text) {
        let kind = match problem {
            Problem::Empty => KeyErrorKind::Empty {
                part: Part::Platform,
            },
            Problem::TooLong => KeyErrorKind::PartTooLong {
                part: Part::Platform,
                len: plat.text.len(),
                max: MAX_PLATFORM_BYTES,
            },
            Problem::Bad(reason) => KeyErrorKind::BadToken {
                part: Part::Platform,
                found: plat.text.to_owned(),
                reason: reason.to_owned(),
            },
        };
        return Err(KeyError::at(plat.start, kind));
    }
    let platform = Platform::new(plat.text).map_err(|_| {
        KeyError::at(
            plat.start,
            KeyErrorKind::Empty {
                part: Part::Platform,
            },
        )
    })?;
    let Some(ct) = segs.get(3) else {
        return Err(KeyError::at(
            key.len(),
            KeyErrorKind::Missing {
                part: Part::ChatType,
            },
        ));
    };
    let Some(chat_type) = ChatType::from_token(ct.text) else {
        return Err(KeyError::at(
            ct.start,
            KeyErrorKind::UnknownChatType {
                found: ct.text.to_owned(),
            },
        ));
    };
    Ok((ns.text.to_owned(), platform, chat_type, segs[4..].to_vec()))
}

/// What a hermes key says about one field (KEY-H3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", content = "value", rename_all = "snake_case")]
pub enum Determined {
    /// The key determines the value with certainty.
    Known(Id),
    /// The key determines that the field is not in the key. For a thread
    /// this means the origin had none; for a user it means the user is not
    /// keyed (the origin may still have one).
    Absent,
    /// The key cannot tell; the reason says why.
    Unknown(Uncertain),
}

impl Determined {
    pub fn known(&self) -> Option<&Id> {
        match self {
            Determined::Known(id) => Some(id),
            _ => None,
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
