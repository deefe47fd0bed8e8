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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Segment<'a> {
    pub text: &'a str,
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

/// The common head of both dialects, `agent:<namespace>:<platform>:<chat
/// type>`, validated, and the unsplit tail after it (`None` when the key
/// ends right after the chat type). Borrows from the key; allocates
/// nothing unless it reports an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Head<'a> {
    pub namespace: &'a str,
    /// A valid platform token (ORIGIN-2).
    pub platform: &'a str,
    pub chat_type: ChatType,
    pub tail: Option<Segment<'a>>,
}

/// [`parse_head_checked`], fast: one pass over the head with a byte-class
/// table, validating while it looks for each `:`. A key it is not sure of
/// goes to the checked path, which then accepts it or names what is wrong,
/// so both paths always agree (`fast_head_agrees_with_the_checked_path`).
#[inline]
pub(crate) fn parse_head(key: &str) -> Result<Head<'_>, KeyError> {
    match fast_head(key) {
        Some(head) => Ok(head),
        None => parse_head_checked(key),
    }
}

/// Byte classes of the head's tokens (KEY-6): bit 1, a namespace (profile)
/// byte `[a-z0-9_-]`; bit 2, a platform byte `[a-z0-9_]`; bit 4, a byte
/// that may start a namespace `[a-z0-9]`; bit 8, one that may start a
/// platform `[a-z]`.
const HEAD_CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        let lower = c.is_ascii_lowercase();
        let digit = c.is_ascii_digit();
        if lower || digit || c == b'_' || c == b'-' {
            t[b] |= NS_BYTE;
        }
        if lower || digit || c == b'_' {
            t[b] |= PLATFORM_BYTE;
        }
        if lower || digit {
            t[b] |= NS_FIRST;
        }
        if lower {
            t[b] |= PLATFORM_FIRST;
        }
        b += 1;
    }
    t
};
const NS_BYTE: u8 = 1;
const PLATFORM_BYTE: u8 = 2;
const NS_FIRST: u8 = 4;
const PLATFORM_FIRST: u8 = 8;

/// The token of `class` bytes starting at `from`, ending at a `:`, with a
/// first byte of class `first` and at most `max` bytes. Returns the end
/// (the `:`'s index), or `None` for anything else.
#[inline(always)]
fn head_token(bytes: &[u8], from: usize, class: u8, first: u8, max: usize) -> Option<usize> {
    if HEAD_CLASS[*bytes.get(from)? as usize] & first == 0 {
        return None;
    }
    let mut i = from + 1;
    while i < bytes.len() && HEAD_CLASS[bytes[i] as usize] & class != 0 {
        i += 1;
    }
    (i - from <= max && bytes.get(i) == Some(&b':')).then_some(i)
}

/// The ends of the namespace and the platform (the indices of their `:`)
/// when both, with their `:`, lie within bytes 6..22 of the key — most
/// keys: `agent:main:telegram:…`, `agent:coder:discord:…`. One 128-bit word
/// holds the 16 bytes; every byte is classified at once with SWAR
/// arithmetic, so there is no loop whose exit the CPU could mispredict.
/// `None` means "not sure": the caller takes the byte loops.
#[inline(always)]
fn head_window(bytes: &[u8]) -> Option<(usize, usize)> {
    const FROM: usize = 6; // after "agent:"
    const LOW7: u128 = u128::from_ne_bytes([0x7f; 16]);
    const HIGH: u128 = u128::from_ne_bytes([0x80; 16]);
    let rep = |b: u8| u128::from_ne_bytes([b; 16]);
    // For words whose bytes are all below 0x80, as the high bit of each
    // byte: the zero bytes; the bytes >= lo; the bytes <= hi. No carry or
    // borrow crosses a byte, so each byte is classified on its own.
    let zeros = |x: u128| !(((x & LOW7) + LOW7) | x | LOW7);
    let at_least = |x: u128, lo: u8| ((x | HIGH) - rep(lo)) & HIGH;
    let at_most = |x: u128, hi: u8| ((rep(hi) | HIGH) - x) & HIGH;
    // The high bit of each byte of `x` (nothing else may be set), as a
    // 16-bit mask: multiplying by the magic moves bit 8i+7 to bit 56+i, and
    // no two partial products land on one bit, so nothing carries.
    let mask = |x: u128| {
        const MAGIC: u64 = 0x0002_0408_1020_4081;
        let half = |h: u64| (h.wrapping_mul(MAGIC) >> 56) as u32;
        half(x as u64) | half((x >> 64) as u64) << 8
    };
    let window: [u8; 16] = bytes.get(FROM..FROM + 16)?.try_into().ok()?;
    let word = u128::from_le_bytes(window);
    let ascii = word & LOW7;
    // `& !word`: a byte >= 0x80 is never a `:` nor a token byte.
    let colons = mask(zeros(ascii ^ rep(b':')) & !word);
    let second = colons & colons.wrapping_sub(1); // without the first `:`
    if second == 0 {
        return None;
    }
    let ns_len = colons.trailing_zeros();
    let plat_end = second.trailing_zeros();
    let plat_start = ns_len + 1;
    // A token's first byte has its own class (never `:`, so an empty
    // token fails here too).
    if HEAD_CLASS[window[0] as usize] & NS_FIRST == 0
        || HEAD_CLASS[window[plat_start as usize] as usize] & PLATFORM_FIRST == 0
    {
        return None;
    }
    let platform_ok = mask(
        ((at_least(ascii, b'a') & at_most(ascii, b'z'))
            | (at_least(ascii, b'0') & at_most(ascii, b'9'))
            | zeros(ascii ^ rep(b'_')))
            & !word,
    );
    let ns_ok = platform_ok | mask(zeros(ascii ^ rep(b'-')) & !word);
    // The bytes of each token, as bits; both ends are < 16.
    let ns_bytes = (1u32 << ns_len) - 1;
    let plat_bytes = ((1u32 << plat_end) - 1) & !((1u32 << plat_start) - 1);
    (ns_ok & ns_bytes == ns_bytes && platform_ok & plat_bytes == plat_bytes)
        .then_some((FROM + ns_len as usize, FROM + plat_end as usize))
}

#[inline(always)]
pub(crate) fn fast_head(key: &str) -> Option<Head<'_>> {
    let bytes = key.as_bytes();
    if key.len() > MAX_KEY_BYTES || !bytes.starts_with(b"agent:") {
        return None;
    }
    let (ns_end, plat_end) = match head_window(bytes) {
        Some(ends) => ends,
        None => {
            let ns_end = head_token(bytes, 6, NS_BYTE, NS_FIRST, MAX_PROFILE_BYTES)?;
            let plat_end = head_token(
                bytes,
                ns_end + 1,
                PLATFORM_BYTE,
                PLATFORM_FIRST,
                MAX_PLATFORM_BYTES,
            )?;
            (ns_end, plat_end)
        }
    };
    let ct_start = plat_end + 1;
    let after = &bytes[ct_start..];
    let (chat_type, len) = match after.first()? {
        b'd' if after.starts_with(b"dm") => (ChatType::Dm, 2),
        b'g' if after.starts_with(b"group") => (ChatType::Group, 5),
        b'c' if after.starts_with(b"channel") => (ChatType::Channel, 7),
        b't' if after.starts_with(b"thread") => (ChatType::Thread, 6),
        _ => return None,
    };
    let tail = match after.get(len) {
        None => None,
        Some(b':') => Some(Segment {
            text: &key[ct_start + len + 1..],
            start: ct_start + len + 1,
        }),
        Some(_) => return None,
    };
    Some(Head {
        namespace: &key[6..ns_end],
        platform: &key[ns_end + 1..plat_end],
        chat_type,
        tail,
    })
}

/// The head parser that names every problem; the reference for
/// [`fast_head`].
pub(crate) fn parse_head_checked(key: &str) -> Result<Head<'_>, KeyError> {
    if key.len() > MAX_KEY_BYTES {
        return Err(KeyError::at(
            MAX_KEY_BYTES,
            KeyErrorKind::TooLong {
                len: key.len(),
                max: MAX_KEY_BYTES,
            },
        ));
    }
    let mut segs = Segments::new(key);
    let prefix = segs.next().map(|s| s.text);
    let Some(ns) = segs.next().filter(|_| prefix == Some("agent")) else {
        return Err(KeyError::at(0, KeyErrorKind::MissingPrefix));
    };
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
    let Some(plat) = segs.next() else {
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
    let Some(ct) = segs.next() else {
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
    Ok(Head {
        namespace: ns.text,
        platform: plat.text,
        chat_type,
        tail: segs.rest(),
    })
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
    pub fn known(&self) -> Option<&T> {
        match self {
            Determined::Known(id) => Some(id),
            _ => None,
        }
    }

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
