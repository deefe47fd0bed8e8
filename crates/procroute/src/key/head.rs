//! The head every key of both dialects starts with,
//! `agent:<namespace>:<platform>:<chat type>` (KEY-6), parsed three ways
//! that must agree exactly: the vector window (`window.rs`) for heads in a
//! key's first 64 bytes, byte loops against a class table for the rest
//! ([`fast_scan`]), and [`parse_head_checked`], the reference, which names
//! every problem. `fuzzing::key_parse` holds them to one another.

use super::*;

/// The common head of both dialects, `agent:<namespace>:<platform>:<chat
/// type>`, validated, and the unsplit tail after it (`None` when the key
/// ends right after the chat type). Borrows from the key; allocates
/// nothing unless it reports an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head<'a> {
    /// The namespace (`main`, or a profile's name).
    pub namespace: &'a str,
    /// A valid platform token (ORIGIN-2).
    pub platform: &'a str,
    /// The chat type (ORIGIN-4).
    pub chat_type: ChatType,
    /// The unsplit rest of the key after the chat type.
    pub tail: Option<Segment<'a>>,
}

/// A parsed head and what the fast path already knows of the tail's first
/// `:` — so that a parser asking "is there a `:` in the tail?" (the hermes
/// parse) never looks at a byte twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scanned<'a> {
    /// The head.
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
    pub fn tail_has_colon(&self, key: &str) -> bool {
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

/// `parse_head` with what was learnt of the tail on the way.
#[inline(always)]
pub fn parse_scan(key: &str) -> Result<Scanned<'_>, KeyError> {
    match fast_scan(key) {
        Some(scanned) => Ok(scanned),
        None => scan_checked(key),
    }
}

/// The slow half of [`parse_scan`], kept out of line so that the fast half
/// inlines into its callers.
#[cold]
#[inline(never)]
pub(crate) fn scan_checked(key: &str) -> Result<Scanned<'_>, KeyError> {
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
pub(crate) const HEAD_CLASS: [u8; 256] = {
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
pub(crate) const NS_BYTE: u8 = 1;
pub(crate) const PLATFORM_BYTE: u8 = 2;
pub(crate) const NS_FIRST: u8 = 4;
pub(crate) const PLATFORM_FIRST: u8 = 8;

/// The token of `class` bytes starting at `from`, ending at a `:`, with a
/// first byte of class `first` and at most `max` bytes. Returns the end
/// (the `:`'s index), or `None` for anything else.
#[inline(always)]
pub(crate) fn head_token(
    bytes: &[u8],
    from: usize,
    class: u8,
    first: u8,
    max: usize,
) -> Option<usize> {
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

/// The head of `key` by the fast path alone ([`parse_head_checked`]'s
/// answer whenever that accepts, `None` otherwise).
#[inline(always)]
pub fn fast_head(key: &str) -> Option<Head<'_>> {
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
pub fn parse_head_checked(key: &str) -> Result<Head<'_>, KeyError> {
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
    // KEY-6: an empty part is `empty` where it starts, the chat type too.
    if ct.text.is_empty() {
        return Err(KeyError::at(
            ct.start,
            KeyErrorKind::Empty {
                part: Part::ChatType,
            },
        ));
    }
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
