//! The hermes dialect (KEY-H1 .. KEY-H6): hermes-agent 0.19.0's
//! `gateway/session.py::build_session_key`, byte for byte, and a parser that
//! never claims more than a hermes key can tell.
//!
//! Build, for a namespace `ns` = `agent:main` or `agent:<profile>`:
//! - dm: `ns:plat:dm:<chat>[:<thread>]`. On WhatsApp the chat id is
//!   canonicalised first; if that leaves nothing, the (canonicalised, else
//!   raw) user id takes its place, else the thread id alone, else nothing.
//! - otherwise: `ns:plat:<type>:<chat>[:<thread>][:<user>]`, the user only
//!   when keyed (KEY-4); on WhatsApp the user id is canonicalised (falling
//!   back to the raw id when canonicalisation leaves nothing).
//!
//! Ids go in raw: nothing is escaped. That is where the information loss
//! comes from, and why [`parse`] returns [`Determined`] per field.

use serde::{Deserialize, Serialize};

use crate::key::{
    parse_scan, user_is_keyed, window_ends, Determined, Head, KeyError, KeyErrorKind, Part, Policy,
    Uncertain, WINDOW,
};
use crate::origin::{ChatType, Field, Id, Origin, Platform, MAX_ID_BYTES, WHATSAPP};

/// hermes-agent would raise instead of returning a key (KEY-H2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum HermesBuildError {
    /// On WhatsApp, hermes-agent 0.19.0's alias lookup rejects an id whose
    /// normalised form has characters outside `[A-Za-z0-9.+-]`, and then
    /// calls `min()` on an empty set: `ValueError`. No key exists.
    #[error("hermes-agent raises ValueError canonicalising WhatsApp {field} {normalised:?}")]
    #[serde(rename = "whatsapp_id_rejected")]
    WhatsAppIdRejected {
        /// The id's field (chat, thread or user).
        field: Field,
        /// The id as hermes-agent normalises it before the lookup fails.
        normalised: String,
    },
}

/// Python's `str.isspace()`: Rust's `White_Space` plus U+001C..U+001F.
fn py_isspace(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// `normalize_whatsapp_identifier`: strip, drop the first `+`, cut at the
/// first `:`, then at the first `@`.
fn wa_normalise(id: &str) -> String {
    let stripped = id.trim_matches(py_isspace);
    let without_plus = stripped.replacen('+', "", 1);
    let head = without_plus.split(':').next().unwrap_or("");
    head.split('@').next().unwrap_or("").to_owned()
}

/// `^[A-Za-z0-9@.+\-]+$` as Python's `re.match` reads it: `$` also matches
/// before one trailing newline.
fn wa_safe(s: &str) -> bool {
    let body = s.strip_suffix('\n').unwrap_or(s);
    !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'@' | b'.' | b'+' | b'-'))
}

/// `canonical_whatsapp_identifier` with no bridge lid-mapping files (the
/// mapping is gateway state, not an input of the key function). hermes
/// normalises twice — once in `canonical_whatsapp_identifier`, again in
/// `expand_whatsapp_aliases` — so a second `+` is dropped too, and an id
/// that is empty only after the second pass makes hermes raise.
fn wa_canonical(field: Field, id: &str) -> Result<String, HermesBuildError> {
    let once = wa_normalise(id);
    if once.is_empty() {
        return Ok(once);
    }
    let twice = wa_normalise(&once);
    if !wa_safe(&twice) {
        return Err(HermesBuildError::WhatsAppIdRejected {
            field,
            normalised: twice,
        });
    }
    Ok(twice)
}

/// Builds the hermes-agent 0.19.0 session key of `origin` under `policy`.
pub fn build(origin: &Origin, policy: &Policy) -> Result<String, HermesBuildError> {
    let mut key = String::with_capacity(64);
    key.push_str("agent:");
    key.push_str(policy.namespace());
    key.push(':');
    key.push_str(origin.platform().as_str());
    key.push(':');
    key.push_str(origin.chat_type().as_str());
    let whatsapp = origin.platform().is_whatsapp();
    let thread = origin.thread_id().map(Id::as_str);
    let push = |key: &mut String, part: &str| {
        key.push(':');
        key.push_str(part);
    };

    if origin.chat_type() == ChatType::Dm {
        let chat = if whatsapp {
            wa_canonical(Field::ChatId, origin.chat_id().as_str())?
        } else {
            origin.chat_id().as_str().to_owned()
        };
        if !chat.is_empty() {
            push(&mut key, &chat);
        } else if let Some(user) = origin.user_id() {
            // Only reachable on WhatsApp: a chat id that canonicalises to "".
            let canonical = wa_canonical(Field::UserId, user.as_str())?;
            let user = if canonical.is_empty() {
                user.as_str()
            } else {
                &canonical
            };
            push(&mut key, user);
        }
        if let Some(thread) = thread {
            push(&mut key, thread);
        }
        return Ok(key);
    }

    // hermes canonicalises the participant before it knows whether the
    // policy keys it, so a rejected WhatsApp user id fails every policy.
    let participant = match origin.user_id() {
        Some(user) if whatsapp => {
            let canonical = wa_canonical(Field::UserId, user.as_str())?;
            Some(if canonical.is_empty() {
                user.as_str().to_owned()
            } else {
                canonical
            })
        }
        Some(user) => Some(user.as_str().to_owned()),
        None => None,
    };
    push(&mut key, origin.chat_id().as_str());
    if let Some(thread) = thread {
        push(&mut key, thread);
    }
    if user_is_keyed(origin.chat_type(), thread.is_some(), policy) {
        if let Some(user) = participant {
            push(&mut key, &user);
        }
    }
    Ok(key)
}

/// What a hermes key determines (KEY-H3..KEY-H5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HermesParsed {
    /// The namespace: `main` or the profile.
    pub namespace: String,
    /// The platform.
    pub platform: Platform,
    /// The chat type.
    pub chat_type: ChatType,
    /// The chat id, when the key determines it (KEY-H3).
    pub chat_id: Determined,
    /// The thread id, when the key determines it.
    pub thread_id: Determined,
    /// The user id, when the key determines it.
    pub user_id: Determined,
}

/// [`HermesParsed`] borrowed from the key: the same determination, with no
/// allocation. What a router on the hot path reads ([`parse_view`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HermesView<'a> {
    /// The namespace: `main` or the profile.
    pub namespace: &'a str,
    /// A valid platform token.
    pub platform: &'a str,
    /// The chat type.
    pub chat_type: ChatType,
    /// A known chat id is non-empty and at most `MAX_ID_BYTES` long.
    pub chat_id: Determined<&'a str>,
    /// The thread id, when the key determines it.
    pub thread_id: Determined<&'a str>,
    /// The user id, when the key determines it.
    pub user_id: Determined<&'a str>,
}

impl HermesView<'_> {
    /// The owned form. Cannot fail: [`parse_view`] validated every part.
    pub fn to_parsed(&self) -> HermesParsed {
        let id = |field, v: &str| Id::new(field, v).expect("parse_view validated the id");
        HermesParsed {
            namespace: self.namespace.to_owned(),
            platform: Platform::new(self.platform).expect("parse_view validated the platform"),
            chat_type: self.chat_type,
            chat_id: self.chat_id.map(|v| id(Field::ChatId, v)),
            thread_id: self.thread_id.map(|v| id(Field::ThreadId, v)),
            user_id: self.user_id.map(|v| id(Field::UserId, v)),
        }
    }
}

/// Parses a hermes key without ever returning a wrong field (KEY-H3).
/// [`parse_view`] without the borrow.
pub fn parse(key: &str) -> Result<HermesParsed, KeyError> {
    parse_view(key).map(|v| v.to_parsed())
}

/// Parses a hermes key without ever returning a wrong field (KEY-H3), and
/// without allocating unless the key is bad.
///
/// The decision procedure (spec KEY-H4): let the tail be the segments after
/// the chat type.
/// - Not WhatsApp, or WhatsApp outside a dm: one segment → chat known,
///   thread absent, user absent; two or more → chat, thread and user
///   unknown ([`Uncertain::ColonSplit`]) — except that a dm's user is
///   absent whatever the tail. No segment → error: the chat id is required.
/// - WhatsApp dm: the chat slot holds a rewritten id. No segment → chat
///   unknown, thread and user absent; otherwise all three unknown.
///
/// Only the head and the tail's first `:` are looked for: whether the tail
/// has two segments or twenty, the answer is the same.
pub fn parse_view(key: &str) -> Result<HermesView<'_>, KeyError> {
    match parse_view_inline(key) {
        Some(view) => Ok(view),
        None => parse_view_general(key),
    }
}

/// The common case of [`parse_view`], inline: a head in the window, a
/// tail, not a WhatsApp dm, and a tail that splits or is a valid chat id.
/// `None` for everything else; the general path then answers, naming any
/// problem. The fuzz body holds this path to the general one and to this
/// domain (`fuzzing::key_parse`).
#[inline(always)]
pub(crate) fn parse_view_inline(key: &str) -> Option<HermesView<'_>> {
    let bytes = key.as_bytes();
    let e = window_ends(bytes)?;
    let platform = &key[e.ns_end + 1..e.plat_end];
    if e.ct_end == key.len() || (e.chat_type == ChatType::Dm && platform == WHATSAPP) {
        return None;
    }
    let tail = &key[e.ct_end + 1..];
    let split =
        e.tail_colon || (bytes.len() > WINDOW && memchr::memchr(b':', &bytes[WINDOW..]).is_some());
    if !split && (tail.is_empty() || tail.len() > MAX_ID_BYTES) {
        return None;
    }
    // Selects, not branches: whether the tail splits is the one thing
    // about a key a branch predictor cannot learn.
    let cs = Determined::Unknown(Uncertain::ColonSplit);
    Some(HermesView {
        namespace: &key[6..e.ns_end],
        platform,
        chat_type: e.chat_type,
        chat_id: if split { cs } else { Determined::Known(tail) },
        thread_id: if split { cs } else { Determined::Absent },
        user_id: if split && e.chat_type != ChatType::Dm {
            cs
        } else {
            Determined::Absent
        },
    })
}

/// [`parse_view`] for every key: the head through [`parse_scan`]. The
/// fuzz target and the laws hold the inline fast path to it.
#[inline(never)]
pub(crate) fn parse_view_general(key: &str) -> Result<HermesView<'_>, KeyError> {
    let scanned = parse_scan(key)?;
    let head = scanned.head;
    let whatsapp_dm = head.platform == WHATSAPP && head.chat_type == ChatType::Dm;
    let wa = Determined::Unknown(Uncertain::WhatsAppCanonical);
    let Some(seg) = head.tail else {
        if whatsapp_dm {
            return Ok(view(head, wa, Determined::Absent, Determined::Absent));
        }
        return Err(KeyError::at(
            key.len(),
            KeyErrorKind::Missing { part: Part::ChatId },
        ));
    };
    if whatsapp_dm {
        return Ok(view(head, wa, wa, wa));
    }
    let split = scanned.tail_has_colon(key);
    if !split && (seg.text.is_empty() || seg.text.len() > MAX_ID_BYTES) {
        let kind = if seg.text.is_empty() {
            KeyErrorKind::Empty { part: Part::ChatId }
        } else {
            KeyErrorKind::PartTooLong {
                part: Part::ChatId,
                len: seg.text.len(),
                max: MAX_ID_BYTES,
            }
        };
        return Err(KeyError::at(seg.start, kind));
    }
    // Selects, not branches: whether the tail splits is the one thing
    // about a key a branch predictor cannot learn.
    let cs = Determined::Unknown(Uncertain::ColonSplit);
    let chat_id = if split {
        cs
    } else {
        Determined::Known(seg.text)
    };
    let thread_id = if split { cs } else { Determined::Absent };
    let user_id = if split && head.chat_type != ChatType::Dm {
        cs
    } else {
        Determined::Absent
    };
    Ok(view(head, chat_id, thread_id, user_id))
}

#[inline(always)]
fn view<'a>(
    head: Head<'a>,
    chat_id: Determined<&'a str>,
    thread_id: Determined<&'a str>,
    user_id: Determined<&'a str>,
) -> HermesView<'a> {
    HermesView {
        namespace: head.namespace,
        platform: head.platform,
        chat_type: head.chat_type,
        chat_id,
        thread_id,
        user_id,
    }
}

/// What hermes-agent 0.19.0's own `gateway/run.py::_parse_session_key`
/// returns for `key` (`None` when it rejects the key). Used by the
/// conformance report to show where hermes' parser contradicts an origin;
/// procroute itself never routes on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HermesOwnParse {
    /// The platform, as hermes-agent's parser returns it.
    pub platform: String,
    /// The chat type, as returned.
    pub chat_type: String,
    /// The chat id, as returned.
    pub chat_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The thread id, when it returns one.
    pub thread_id: Option<String>,
}

/// Mirror of hermes' positional parser (split on `:`, parts 2..=5).
pub fn hermes_own_parse(key: &str) -> Option<HermesOwnParse> {
    let parts: Vec<&str> = key.split(':').collect();
    if parts.len() < 5 || parts[0] != "agent" || parts[1] != "main" {
        return None;
    }
    let thread_id =
        (parts.len() > 5 && matches!(parts[3], "dm" | "thread")).then(|| parts[5].to_owned());
    Some(HermesOwnParse {
        platform: parts[2].to_owned(),
        chat_type: parts[3].to_owned(),
        chat_id: parts[4].to_owned(),
        thread_id,
    })
}
