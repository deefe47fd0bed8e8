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
use wide::u8x16;

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

/// A parsed head and what the fast path already knows of the tail's first
/// `:` — so that a parser asking "is there a `:` in the tail?" (the hermes
/// parse) never looks at a byte twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Scanned<'a> {
    pub head: Head<'a>,
    /// A `:` was seen in the tail.
    pub tail_colon: bool,
    /// No `:` of the tail lies before this byte offset: a caller that needs
    /// to know looks at `key[scan_from..]` only (when `tail_colon` is false).
    pub scan_from: usize,
}

impl Scanned<'_> {
    /// Whether the tail holds a `:`.
    #[inline(always)]
    pub(crate) fn tail_has_colon(&self, key: &str) -> bool {
        let rest = &key.as_bytes()[self.scan_from..];
        self.tail_colon || (!rest.is_empty() && memchr::memchr(b':', rest).is_some())
    }
}

/// [`parse_head_checked`], fast. The first [`WINDOW`] bytes of the key are
/// classified at once ([`in_window`]); a head that lies in them is
/// validated with a few mask operations and no loop. Other heads take byte
/// loops against a class table. A key the fast path is not sure of goes to
/// the checked path, which then accepts it or names what is wrong, so both
/// paths always agree (`tests/key_laws.rs`, `fast_head_agrees_*`; also
/// asserted by the `key_parse` fuzz target).
#[inline]
pub(crate) fn parse_head(key: &str) -> Result<Head<'_>, KeyError> {
    match fast_head(key) {
        Some(head) => Ok(head),
        None => parse_head_checked(key),
    }
}

/// [`parse_head`] with what was learnt of the tail on the way.
#[inline(always)]
pub(crate) fn parse_scan(key: &str) -> Result<Scanned<'_>, KeyError> {
    match fast_scan(key) {
        Some(scanned) => Ok(scanned),
        None => scan_checked(key),
    }
}

/// The slow half of [`parse_scan`], kept out of line so that the fast half
/// inlines into its callers.
#[cold]
#[inline(never)]
fn scan_checked(key: &str) -> Result<Scanned<'_>, KeyError> {
    parse_head_checked(key).map(|head| Scanned {
        scan_from: head.tail.map_or(key.len(), |t| t.start),
        tail_colon: false,
        head,
    })
}

/// Byte classes of the head's tokens (KEY-6): bit 1, a namespace (profile)
/// byte `[a-z0-9_-]`; bit 2, a platform byte `[a-z0-9_]`; bit 4, a byte
/// that may start a namespace `[a-z0-9]`; bit 8, one that may start a
/// platform `[a-z]`.
const HEAD_CLASS: [u8; 256] = {
    const fn class(c: u8) -> u8 {
        let lower = c.is_ascii_lowercase();
        let digit = c.is_ascii_digit();
        let mut k = 0;
        if lower || digit || c == b'_' || c == b'-' {
            k |= NS_BYTE;
        }
        if lower || digit || c == b'_' {
            k |= PLATFORM_BYTE;
        }
        if lower || digit {
            k |= NS_FIRST;
        }
        if lower {
            k |= PLATFORM_FIRST;
        }
        k
    }
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < t.len() {
        t[b] = class(b as u8);
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
    let rest = bytes.get(from..)?;
    let len = rest
        .iter()
        .take_while(|&&b| HEAD_CLASS[usize::from(b)] & class != 0)
        .count();
    let end = from + len;
    let ok = (1..=max).contains(&len)
        && HEAD_CLASS[usize::from(rest[0])] & first != 0
        && bytes.get(end) == Some(&b':');
    ok.then_some(end)
}

/// How many leading bytes of a key [`in_window`] classifies at once: the
/// whole of most keys (`agent:main:telegram:group:-1001234567890:42` is
/// 43), one bit per byte in a `u64`.
pub(crate) const WINDOW: usize = 64;
/// How many of its 16-byte lanes may hold the namespace and platform: the
/// first two (`agent:coder:mattermost:` is 23 bytes).
pub(crate) const HEAD_LANES: usize = 2;
// A head in those lanes cannot break the length limits of its tokens, so
// the window need not test them.
const _: () = assert!(16 * HEAD_LANES - 8 <= MAX_PLATFORM_BYTES);
const _: () = assert!(16 * HEAD_LANES - 8 <= MAX_PROFILE_BYTES);

/// The chat-type tokens by length, as little-endian words (KEY-6): each
/// length has at most one, so a token is recognised by one comparison.
const CHAT_TYPE_BY_LEN: [(u64, Option<ChatType>); 8] = {
    const fn word(s: &[u8]) -> u64 {
        let mut w = 0u64;
        let mut i = 0;
        while i < s.len() {
            w |= (s[i] as u64) << (8 * i);
            i += 1;
        }
        w
    }
    [
        (0, None),
        (0, None),
        (word(b"dm"), Some(ChatType::Dm)),
        (0, None),
        (0, None),
        (word(b"group"), Some(ChatType::Group)),
        (word(b"thread"), Some(ChatType::Thread)),
        (word(b"channel"), Some(ChatType::Channel)),
    ]
};

/// Where the parts of a head found by [`window_ends`] end: byte offsets
/// into the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ends {
    /// The `:` after the namespace (the namespace is `6..ns_end`).
    pub ns_end: usize,
    /// The `:` after the platform.
    pub plat_end: usize,
    /// The `:` after the chat type, or the key's length when no tail follows.
    pub ct_end: usize,
    pub chat_type: ChatType,
    /// A `:` lies in the tail within the window.
    pub tail_colon: bool,
}

/// The head, when all of it lies in the first [`WINDOW`] bytes, as offsets.
/// Four 16-byte lanes are classified with vector compares; from then on
/// each `:` is a bit, each token a bit range, and validating a token is one
/// mask test — no loop whose exit the CPU could mispredict. `None` means
/// "not sure": the caller takes the byte loops.
#[inline(always)]
pub(crate) fn window_ends(bytes: &[u8]) -> Option<Ends> {
    let len = bytes.len();
    if !(16..=MAX_KEY_BYTES).contains(&len) {
        return None;
    }
    // Per 16-byte lane: the `:` bytes, the namespace bytes `[a-z0-9_-]`
    // and the `-` bytes, as bit masks (platform bytes are namespace bytes
    // other than `-`), each bit at its byte's offset in the key. A lane past
    // the end of a short key is read as the key's last 16 bytes: it re-reads
    // bytes an earlier lane classified, and sets exactly the bits they set
    // (`|` is idempotent), so there is no copy, no shift back and no branch.
    let (mut colon, mut ns_ok, mut dash) = (0u64, 0u64, 0u64);
    let splat = u8x16::splat;
    let in_range = |v: u8x16, lo: u8, hi: u8| v.max(splat(lo)).min(splat(hi)).cmp_eq(v);
    // Lane `k`, read from `from`: `16 * k`, or less when that would run
    // past the end.
    let lane = |k: usize| {
        let from = (16 * k).min(len - 16);
        let mut a = [0u8; 16];
        a.copy_from_slice(&bytes[from..from + 16]);
        (u8x16::new(a), from)
    };
    // `from + 16 <= WINDOW`: every bit lands inside the `u64`.
    let bits = |m: u8x16, from: usize| u64::from(m.move_mask() as u16) << from;
    for k in 0..WINDOW / 16 {
        let (v, from) = lane(k);
        colon |= bits(v.cmp_eq(splat(b':')), from);
    }
    for k in 0..HEAD_LANES {
        let (v, from) = lane(k);
        let is_dash = v.cmp_eq(splat(b'-'));
        let token =
            in_range(v, b'a', b'z') | in_range(v, b'0', b'9') | v.cmp_eq(splat(b'_')) | is_dash;
        ns_ok |= bits(token, from);
        dash |= bits(is_dash, from);
    }
    // The eight bytes from `from` (`from + 8 <= len`), little-endian.
    let word = |from: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&bytes[from..from + 8]);
        u64::from_le_bytes(w)
    };
    // The `:` after "agent" is bit 5; the next three end the namespace,
    // the platform and the chat type; a fourth lies in the tail.
    let after_prefix = colon & !0x3f;
    let ns_end = after_prefix.trailing_zeros() as usize;
    let rest = after_prefix & after_prefix.wrapping_sub(1);
    let plat_end = rest.trailing_zeros() as usize;
    if plat_end >= 16 * HEAD_LANES {
        return None;
    }
    let rest = rest & rest.wrapping_sub(1);
    let ct_colon = rest.trailing_zeros() as usize;
    let tail_colon = rest & rest.wrapping_sub(1) != 0;
    // The namespace and the platform are bits `6..plat_end`: each a
    // namespace byte, except the `:` between them (bit `ns_end`), and no
    // `-` from that `:` on (platform bytes are namespace bytes but `-`).
    let ns_colon = after_prefix & after_prefix.wrapping_neg();
    let head_span = (1u64 << plat_end) - (1u64 << 6);
    let plat_start = ns_end + 1;
    // Non-short-circuit `&`: one branch for the whole head. An empty token
    // needs no test of its own: its first byte is the next `:`, which is
    // in no first-byte class.
    let first = word(0);
    let head_ok = (first & 0xffff_ffff_ffff == u64::from_le_bytes(*b"agent:\0\0"))
        & ((ns_ok | ns_colon) & head_span == head_span)
        & ((dash & head_span) >> ns_end == 0)
        & (HEAD_CLASS[(first >> 48) as u8 as usize] & NS_FIRST != 0)
        & (HEAD_CLASS[usize::from(bytes[plat_start])] & PLATFORM_FIRST != 0);
    // The chat type ends at the third `:` or, with no tail, at the end.
    let ct_start = plat_end + 1;
    let ct_end = if ct_colon < WINDOW {
        ct_colon
    } else if bytes.len() <= WINDOW {
        bytes.len()
    } else {
        return None;
    };
    let ct_len = ct_end - ct_start;
    let (pattern, chat_type) = *CHAT_TYPE_BY_LEN.get(ct_len)?;
    // The eight bytes that end where the chat type ends, shifted down so
    // that only the chat type's bytes remain: no mask, no read past the
    // key. `ct_end >= 8`: "agent:", a namespace byte, `:` and a platform
    // byte come first. A shift of 64 (length 0) wraps to 0; that row is
    // `None` anyway.
    debug_assert!(ct_end >= 8);
    let ct_word = word(ct_end - 8).wrapping_shr((64 - 8 * ct_len) as u32);
    let chat_type = chat_type.filter(|_| head_ok & (ct_word == pattern))?;
    Some(Ends {
        ns_end,
        plat_end,
        ct_end,
        chat_type,
        tail_colon,
    })
}

/// [`window_ends`] as a [`Scanned`] head.
#[inline(always)]
fn in_window(key: &str) -> Option<Scanned<'_>> {
    let e = window_ends(key.as_bytes())?;
    let tail = (e.ct_end < key.len()).then(|| Segment {
        text: &key[e.ct_end + 1..],
        start: e.ct_end + 1,
    });
    Some(Scanned {
        head: Head {
            namespace: &key[6..e.ns_end],
            platform: &key[e.ns_end + 1..e.plat_end],
            chat_type: e.chat_type,
            tail,
        },
        tail_colon: e.tail_colon,
        scan_from: key.len().min(WINDOW),
    })
}

/// [`in_window`], for the fuzz target's check that it takes every head it
/// must (`fuzzing::window_takes`).
pub(crate) fn window_scan(key: &str) -> Option<Scanned<'_>> {
    in_window(key)
}

#[inline(always)]
pub(crate) fn fast_head(key: &str) -> Option<Head<'_>> {
    fast_scan(key).map(|s| s.head)
}

#[inline(always)]
pub(crate) fn fast_scan(key: &str) -> Option<Scanned<'_>> {
    if let Some(scanned) = in_window(key) {
        return Some(scanned);
    }
    // Heads outside the window: byte loops against the class table.
    let bytes = key.as_bytes();
    if key.len() > MAX_KEY_BYTES || !bytes.starts_with(b"agent:") {
        return None;
    }
    let ns_end = head_token(bytes, 6, NS_BYTE, NS_FIRST, MAX_PROFILE_BYTES)?;
    let plat_end = head_token(
        bytes,
        ns_end + 1,
        PLATFORM_BYTE,
        PLATFORM_FIRST,
        MAX_PLATFORM_BYTES,
    )?;
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
    Some(Scanned {
        head: Head {
            namespace: &key[6..ns_end],
            platform: &key[ns_end + 1..plat_end],
            chat_type,
            tail,
        },
        tail_colon: false,
        scan_from: tail.map_or(key.len(), |t| t.start),
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
