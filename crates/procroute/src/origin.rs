//! Where a conversation lives: [`Origin`] and its validated parts.
//!
//! Ids are opaque. They are kept byte-exact and case-preserved; any Unicode
//! scalar value is allowed, `:` `%` `/` `+` `=` `$` `!` `@`, whitespace and
//! non-ASCII included (spec rules ORIGIN-1 .. ORIGIN-5). Nothing in this
//! crate trims, folds or normalises an id: the only way to get a different id
//! is to be handed one.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// Largest id, in UTF-8 bytes (ORIGIN-2). Real ids are far smaller (Matrix
/// event ids, the longest shape in `platform-ids.md`, are under 100 bytes);
/// the limit exists so that keys, queues and logs have a size bound.
pub const MAX_ID_BYTES: usize = 512;
/// Largest user display name, in UTF-8 bytes (ORIGIN-2).
pub const MAX_NAME_BYTES: usize = 256;
/// Largest platform token, in bytes (ORIGIN-3).
pub const MAX_PLATFORM_BYTES: usize = 32;

/// Which part of an origin (or policy) a validation error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Field {
    /// An id whose role the context does not name.
    Id,
    /// The platform token (`telegram`, `slack`, …).
    Platform,
    /// The chat type (`dm`, `group`, `channel`, `thread`).
    ChatType,
    /// The chat's id.
    ChatId,
    /// The thread's id within the chat (a topic, a Slack thread, …).
    ThreadId,
    /// The sender's id.
    UserId,
    /// The sender's display name (carried, never keyed).
    UserName,
    /// A profile namespace of a keying policy.
    Profile,
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Field::Id => "id",
            Field::Platform => "platform",
            Field::ChatType => "chat_type",
            Field::ChatId => "chat_id",
            Field::ThreadId => "thread_id",
            Field::UserId => "user_id",
            Field::UserName => "user_name",
            Field::Profile => "profile",
        })
    }
}

/// A value that cannot be part of an [`Origin`] or a policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum OriginError {
    #[error("{field} must not be empty")]
    /// A required value is the empty string.
    Empty {
        /// Which part of the origin is empty.
        field: Field,
    },
    #[error("{field} is {len} bytes long, the limit is {max}")]
    /// A value is longer than its limit.
    TooLong {
        /// Which part of the origin is too long.
        field: Field,
        /// Its length, in bytes.
        len: usize,
        /// The limit, in bytes.
        max: usize,
    },
    #[error("{field} {value:?} is not a valid token: {reason}")]
    /// A token (platform, profile) has a character its grammar does not allow.
    BadToken {
        /// Which part of the origin is wrong.
        field: Field,
        /// The value as given.
        value: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    #[error("chat_type {value:?} is unknown (expected dm, group, channel or thread)")]
    /// A chat type other than the four of ORIGIN-4.
    UnknownChatType {
        /// The value as given.
        value: String,
    },
}

/// An opaque, non-empty id of at most [`MAX_ID_BYTES`] bytes.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Id(Arc<str>);

impl Id {
    /// Validates `value` as an id for `field`.
    pub fn new(field: Field, value: impl Into<String>) -> Result<Id, OriginError> {
        let value = value.into();
        if value.is_empty() {
            return Err(OriginError::Empty { field });
        }
        if value.len() > MAX_ID_BYTES {
            return Err(OriginError::TooLong {
                field,
                len: value.len(),
                max: MAX_ID_BYTES,
            });
        }
        Ok(Id(value.into()))
    }

    /// The id, byte-exact as given (ORIGIN-5).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for Id {
    type Error = OriginError;
    fn try_from(value: String) -> Result<Id, OriginError> {
        Id::new(Field::Id, value)
    }
}

impl From<Id> for String {
    fn from(id: Id) -> String {
        id.0.as_ref().to_owned()
    }
}

impl fmt::Debug for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A platform name such as `telegram`: 1..=32 bytes of `[a-z0-9_]`, starting
/// with a letter (ORIGIN-3). Lower case is required, not produced: an upper
/// case platform is an error, never silently folded.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Platform(Arc<str>);

impl Platform {
    /// Validates a platform token (ORIGIN-3).
    pub fn new(value: impl Into<String>) -> Result<Platform, OriginError> {
        let value = value.into();
        match platform_token_problem(&value) {
            None => Ok(Platform(value.into())),
            Some(Problem::Empty) => Err(OriginError::Empty {
                field: Field::Platform,
            }),
            Some(Problem::TooLong) => Err(OriginError::TooLong {
                field: Field::Platform,
                len: value.len(),
                max: MAX_PLATFORM_BYTES,
            }),
            Some(Problem::Bad(reason)) => Err(OriginError::BadToken {
                field: Field::Platform,
                value,
                reason,
            }),
        }
    }

    /// The token.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// True for hermes-agent's WhatsApp platform, whose key builder
    /// canonicalises ids (see `key::hermes`).
    pub fn is_whatsapp(&self) -> bool {
        &*self.0 == WHATSAPP
    }
}

/// hermes-agent's WhatsApp platform token.
pub(crate) const WHATSAPP: &str = "whatsapp";

pub(crate) enum Problem {
    Empty,
    TooLong,
    Bad(&'static str),
}

pub(crate) fn platform_token_problem(value: &str) -> Option<Problem> {
    if value.is_empty() {
        return Some(Problem::Empty);
    }
    if value.len() > MAX_PLATFORM_BYTES {
        return Some(Problem::TooLong);
    }
    if !value.as_bytes()[0].is_ascii_lowercase() {
        return Some(Problem::Bad("must start with a lower-case ASCII letter"));
    }
    if !value
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    {
        return Some(Problem::Bad("only a-z, 0-9 and _ are allowed"));
    }
    None
}

impl TryFrom<String> for Platform {
    type Error = OriginError;
    fn try_from(value: String) -> Result<Platform, OriginError> {
        Platform::new(value)
    }
}

impl From<Platform> for String {
    fn from(p: Platform) -> String {
        p.0.as_ref().to_owned()
    }
}

impl fmt::Debug for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The four chat types every gateway distinguishes (ORIGIN-4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatType {
    /// A direct message between the agent and one user.
    Dm,
    /// A group chat (several users, no threads of its own).
    Group,
    /// A broadcast channel.
    Channel,
    /// A thread of a chat: a forum topic, a Slack or Discord thread.
    Thread,
}

impl ChatType {
    /// Every chat type, in the order of ORIGIN-4.
    pub const ALL: [ChatType; 4] = [
        ChatType::Dm,
        ChatType::Group,
        ChatType::Channel,
        ChatType::Thread,
    ];

    /// The wire form: `dm`, `group`, `channel` or `thread`.
    pub fn as_str(self) -> &'static str {
        match self {
            ChatType::Dm => "dm",
            ChatType::Group => "group",
            ChatType::Channel => "channel",
            ChatType::Thread => "thread",
        }
    }

    /// Exact, case-sensitive match: `DM` is not `dm`.
    pub fn from_token(token: &str) -> Option<ChatType> {
        ChatType::ALL.into_iter().find(|c| c.as_str() == token)
    }
}

impl std::str::FromStr for ChatType {
    type Err = OriginError;
    fn from_str(s: &str) -> Result<ChatType, OriginError> {
        ChatType::from_token(s).ok_or_else(|| OriginError::UnknownChatType {
            value: s.to_owned(),
        })
    }
}

impl fmt::Display for ChatType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A user display name: free text, non-empty, at most
/// [`MAX_NAME_BYTES`]. Never part of a key, carried for the notification.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct UserName(String);

impl UserName {
    /// Validates a display name: non-empty, at most [`MAX_NAME_BYTES`] bytes.
    pub fn new(value: impl Into<String>) -> Result<UserName, OriginError> {
        let value = value.into();
        if value.is_empty() {
            return Err(OriginError::Empty {
                field: Field::UserName,
            });
        }
        if value.len() > MAX_NAME_BYTES {
            return Err(OriginError::TooLong {
                field: Field::UserName,
                len: value.len(),
                max: MAX_NAME_BYTES,
            });
        }
        Ok(UserName(value))
    }

    /// The name as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for UserName {
    type Error = OriginError;
    fn try_from(value: String) -> Result<UserName, OriginError> {
        UserName::new(value)
    }
}

impl From<UserName> for String {
    fn from(n: UserName) -> String {
        n.0
    }
}

impl fmt::Debug for UserName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

/// Where a conversation lives (ORIGIN-1): the destination a notification
/// about a background process must reach.
///
/// Constructed only through [`Origin::new`] and its `with_*` methods, or serde, all
/// of which validate, so an `Origin` in hand is always well formed.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "RawOrigin", into = "RawOrigin")]
pub struct Origin {
    platform: Platform,
    chat_type: ChatType,
    chat_id: Id,
    thread_id: Option<Id>,
    user_id: Option<Id>,
    user_name: Option<UserName>,
}

/// The unvalidated wire shape of an [`Origin`]: what JSON carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawOrigin {
    /// The platform token.
    pub platform: String,
    /// The chat type, one of ORIGIN-4's four.
    pub chat_type: String,
    /// The chat's id.
    pub chat_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The thread's id, if the conversation is in one.
    pub thread_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The sender's id, if known.
    pub user_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The sender's display name, if known.
    pub user_name: Option<String>,
}

impl TryFrom<RawOrigin> for Origin {
    type Error = OriginError;
    fn try_from(raw: RawOrigin) -> Result<Origin, OriginError> {
        let opt = |field, v: Option<String>| v.map(|v| Id::new(field, v)).transpose();
        Ok(Origin {
            platform: Platform::new(raw.platform)?,
            chat_type: raw.chat_type.parse()?,
            chat_id: Id::new(Field::ChatId, raw.chat_id)?,
            thread_id: opt(Field::ThreadId, raw.thread_id)?,
            user_id: opt(Field::UserId, raw.user_id)?,
            user_name: raw.user_name.map(UserName::new).transpose()?,
        })
    }
}

impl From<Origin> for RawOrigin {
    fn from(o: Origin) -> RawOrigin {
        RawOrigin {
            platform: o.platform.into(),
            chat_type: o.chat_type.as_str().to_owned(),
            chat_id: o.chat_id.into(),
            thread_id: o.thread_id.map(Into::into),
            user_id: o.user_id.map(Into::into),
            user_name: o.user_name.map(Into::into),
        }
    }
}

impl Origin {
    /// The required parts; add optional ones with the `with_*` methods.
    pub fn new(platform: &str, chat_type: ChatType, chat_id: &str) -> Result<Origin, OriginError> {
        Ok(Origin {
            platform: Platform::new(platform)?,
            chat_type,
            chat_id: Id::new(Field::ChatId, chat_id)?,
            thread_id: None,
            user_id: None,
            user_name: None,
        })
    }

    /// The same origin in the thread `thread_id` (validated like every id).
    pub fn with_thread(mut self, thread_id: &str) -> Result<Origin, OriginError> {
        self.thread_id = Some(Id::new(Field::ThreadId, thread_id)?);
        Ok(self)
    }

    /// The same origin from the user `user_id` (validated like every id).
    pub fn with_user(mut self, user_id: &str) -> Result<Origin, OriginError> {
        self.user_id = Some(Id::new(Field::UserId, user_id)?);
        Ok(self)
    }

    /// The same origin with the sender's display name `name`.
    pub fn with_user_name(mut self, name: &str) -> Result<Origin, OriginError> {
        self.user_name = Some(UserName::new(name)?);
        Ok(self)
    }

    /// Assembles an origin from already validated parts.
    pub fn from_parts(
        platform: Platform,
        chat_type: ChatType,
        chat_id: Id,
        thread_id: Option<Id>,
        user_id: Option<Id>,
        user_name: Option<UserName>,
    ) -> Origin {
        Origin {
            platform,
            chat_type,
            chat_id,
            thread_id,
            user_id,
            user_name,
        }
    }

    /// The platform.
    pub fn platform(&self) -> &Platform {
        &self.platform
    }
    /// The chat type.
    pub fn chat_type(&self) -> ChatType {
        self.chat_type
    }
    /// The chat's id.
    pub fn chat_id(&self) -> &Id {
        &self.chat_id
    }
    /// The thread's id, if any.
    pub fn thread_id(&self) -> Option<&Id> {
        self.thread_id.as_ref()
    }
    /// The sender's id, if any.
    pub fn user_id(&self) -> Option<&Id> {
        self.user_id.as_ref()
    }
    /// The sender's display name, if any.
    pub fn user_name(&self) -> Option<&UserName> {
        self.user_name.as_ref()
    }
}

#[cfg(feature = "arbitrary")]
mod arb {
    use super::*;
    use arbitrary::{Arbitrary, Unstructured};

    /// Any string, forced into the id rules (non-empty, bounded) so that
    /// every fuzz input yields a valid origin.
    fn id(u: &mut Unstructured<'_>, field: Field) -> arbitrary::Result<Id> {
        let mut s: String = u.arbitrary()?;
        if s.is_empty() {
            s.push(':');
        }
        while s.len() > MAX_ID_BYTES {
            s.pop();
        }
        Ok(Id::new(field, s).expect("forced valid"))
    }

    impl<'a> Arbitrary<'a> for Origin {
        fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Origin> {
            const PLATFORMS: [&str; 6] = [
                "telegram", "discord", "slack", "matrix", "whatsapp", "signal",
            ];
            let platform = Platform::new(*u.choose(&PLATFORMS)?).expect("valid");
            let chat_type = *u.choose(&ChatType::ALL)?;
            let chat_id = id(u, Field::ChatId)?;
            let thread_id = if u.arbitrary()? {
                Some(id(u, Field::ThreadId)?)
            } else {
                None
            };
            let user_id = if u.arbitrary()? {
                Some(id(u, Field::UserId)?)
            } else {
                None
            };
            Ok(Origin::from_parts(
                platform, chat_type, chat_id, thread_id, user_id, None,
            ))
        }
    }
}
