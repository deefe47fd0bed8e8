//! The canonical dialect (KEY-C1 .. KEY-C6): hermes-shaped, but lossless.
//!
//! ```text
//! agent:<namespace>:<platform>:<chat type>:<chat id>[:<thread id>][:~<user id>]
//! ```
//!
//! It differs from the hermes dialect in exactly three ways, each needed for
//! injectivity:
//! 1. Ids are escaped: `%`, `:`, `~` and the ASCII control characters
//!    become `%XX` (upper-case hex). Nothing else is touched, so Telegram,
//!    Slack, Discord, Signal and most other ids look exactly as in hermes.
//! 2. A keyed user id is marked with a leading `~`, so a thread and a user in
//!    the 6th position can no longer be confused.
//! 3. WhatsApp ids are not canonicalised: the key keeps the id as given.
//!
//! Parsing is strict: an escape that is not needed, lower-case hex, or a raw
//! character that should have been escaped is an error. That makes every
//! valid key the image of exactly one [`KeyFields`] (`build ∘ parse = id`).

use crate::key::{parse_head, KeyError, KeyErrorKind, KeyFields, Part, Segment, Segments};
use crate::key::{user_is_keyed, Policy, MAX_KEY_BYTES};
use crate::origin::{ChatType, Field, Id, Origin, Platform, MAX_ID_BYTES};

/// The marker that starts a user segment.
const USER_MARK: char = '~';

fn must_escape(c: char) -> bool {
    matches!(c, '%' | ':' | USER_MARK) || c.is_ascii_control()
}

fn push_escaped(out: &mut String, id: &str) {
    if !id
        .bytes()
        .any(|b| matches!(b, b'%' | b':' | b'~') || b.is_ascii_control())
    {
        out.push_str(id);
        return;
    }
    for c in id.chars() {
        if must_escape(c) {
            let b = c as u32 as u8; // every escaped char is ASCII
            out.push('%');
            out.push(HEX[(b >> 4) as usize] as char);
            out.push(HEX[(b & 0xF) as usize] as char);
        } else {
            out.push(c);
        }
    }
}

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// Builds the canonical key of `fields`.
pub fn build_fields(fields: &KeyFields) -> String {
    write_key(
        &fields.namespace,
        &fields.platform,
        fields.chat_type,
        &fields.chat_id,
        fields.thread_id.as_ref(),
        fields.user_id.as_ref(),
    )
}

/// Builds the canonical key of `origin` under `policy` (no intermediate
/// [`KeyFields`]: this is on the routing hot path).
pub fn build(origin: &Origin, policy: &Policy) -> String {
    let user = origin
        .user_id()
        .filter(|_| user_is_keyed(origin.chat_type(), origin.thread_id().is_some(), policy));
    write_key(
        policy.namespace(),
        origin.platform(),
        origin.chat_type(),
        origin.chat_id(),
        origin.thread_id(),
        user,
    )
}

fn write_key(
    namespace: &str,
    platform: &Platform,
    chat_type: ChatType,
    chat: &Id,
    thread: Option<&Id>,
    user: Option<&Id>,
) -> String {
    let mut out = String::with_capacity(
        16 + namespace.len()
            + platform.as_str().len()
            + chat.as_str().len()
            + thread.map_or(0, |t| t.as_str().len() + 1)
            + user.map_or(0, |u| u.as_str().len() + 2),
    );
    out.push_str("agent:");
    out.push_str(namespace);
    out.push(':');
    out.push_str(platform.as_str());
    out.push(':');
    out.push_str(chat_type.as_str());
    out.push(':');
    push_escaped(&mut out, chat.as_str());
    if let Some(thread) = thread {
        out.push(':');
        push_escaped(&mut out, thread.as_str());
    }
    if let Some(user) = user {
        out.push(':');
        out.push(USER_MARK);
        push_escaped(&mut out, user.as_str());
    }
    debug_assert!(out.len() <= MAX_KEY_BYTES);
    out
}

/// Parses a canonical key back into exactly the fields it was built from.
pub fn parse(key: &str) -> Result<KeyFields, KeyError> {
    let head = parse_head(key)?;
    // KEY-2: `default` and `main` name one namespace, and `build` writes
    // it `main`; a canonical key has one spelling per session (KEY-C6).
    if head.namespace == "default" {
        return Err(KeyError::at(
            "agent:".len(),
            KeyErrorKind::BadToken {
                part: Part::Namespace,
                found: head.namespace.to_owned(),
                reason: "the default namespace is written `main` in a canonical key".to_owned(),
            },
        ));
    }
    let chat_type = head.chat_type;
    let mut rest = head.tail.into_iter().flat_map(|tail| {
        Segments::new(tail.text).map(move |seg| Segment {
            text: seg.text,
            start: tail.start + seg.start,
        })
    });
    let Some(chat) = rest.next() else {
        return Err(KeyError::at(
            key.len(),
            KeyErrorKind::Missing { part: Part::ChatId },
        ));
    };
    let chat_id = decode(chat, Field::ChatId)?;
    let mut thread_id = None;
    let mut user_id = None;
    let mut last = Part::ChatId;
    for seg in rest {
        if user_id.is_some() {
            return Err(KeyError::at(
                seg.start.saturating_sub(1),
                KeyErrorKind::Trailing {
                    after: Part::UserId,
                    found: format!(":{}", seg.text),
                },
            ));
        }
        if let Some(user) = seg.text.strip_prefix(USER_MARK) {
            if chat_type == ChatType::Dm {
                return Err(KeyError::at(seg.start, KeyErrorKind::UserInDm));
            }
            let user_seg = Segment {
                text: user,
                start: seg.start + USER_MARK.len_utf8(),
            };
            user_id = Some(decode(user_seg, Field::UserId)?);
            last = Part::UserId;
        } else if thread_id.is_none() {
            thread_id = Some(decode(seg, Field::ThreadId)?);
            last = Part::ThreadId;
        } else {
            return Err(KeyError::at(
                seg.start.saturating_sub(1),
                KeyErrorKind::Trailing {
                    after: last,
                    found: format!(":{}", seg.text),
                },
            ));
        }
    }
    Ok(KeyFields {
        namespace: head.namespace.to_owned(),
        platform: Platform::new(head.platform).expect("parse_head validated the platform"),
        chat_type,
        chat_id,
        thread_id,
        user_id,
    })
}

/// Decodes one escaped id segment, strictly (KEY-C3).
fn decode(seg: Segment<'_>, field: Field) -> Result<Id, KeyError> {
    let part = Part::of_field(field);
    if seg.text.is_empty() {
        return Err(KeyError::at(seg.start, KeyErrorKind::Empty { part }));
    }
    let mut out = String::with_capacity(seg.text.len());
    let bytes = seg.text.as_bytes();
    let mut chars = seg.text.char_indices();
    while let Some((i, c)) = chars.next() {
        if c == '%' {
            let hex = bytes.get(i + 1..i + 3);
            let value = hex.and_then(|h| Some(hex_val(h[0])? * 16 + hex_val(h[1])?));
            let Some(b) = value else {
                return Err(KeyError::at(
                    seg.start + i,
                    KeyErrorKind::BadEscape {
                        part,
                        reason: "`%` must be followed by two upper-case hex digits".to_owned(),
                    },
                ));
            };
            let decoded = b as char;
            if b >= 0x80 || !must_escape(decoded) {
                return Err(KeyError::at(
                    seg.start + i,
                    KeyErrorKind::BadEscape {
                        part,
                        reason: format!("%{:02X} escapes a byte that must appear as itself", b),
                    },
                ));
            }
            out.push(decoded);
            chars.next();
            chars.next();
        } else if must_escape(c) {
            return Err(KeyError::at(
                seg.start + i,
                KeyErrorKind::Unescaped { part, found: c },
            ));
        } else {
            out.push(c);
        }
    }
    if out.len() > MAX_ID_BYTES {
        return Err(KeyError::at(
            seg.start,
            KeyErrorKind::PartTooLong {
                part,
                len: out.len(),
                max: MAX_ID_BYTES,
            },
        ));
    }
    Id::new(field, out).map_err(|_| KeyError::at(seg.start, KeyErrorKind::Empty { part }))
}

fn hex_val(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}
