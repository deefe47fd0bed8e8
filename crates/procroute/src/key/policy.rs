//! The keying policy: which parts of an origin go into its session key.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::origin::{Field, OriginError};

/// Largest profile name, in bytes (KEY-2).
pub const MAX_PROFILE_BYTES: usize = 64;

/// A profile namespace such as `coder` (KEY-2): 1..=64 bytes of
/// `[a-z0-9_-]`, starting with a letter or digit. `main` and `default` name
/// the default namespace and are not profiles (hermes-agent maps both to
/// `agent:main`), so [`Policy::with_profile`] turns them into `None`.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Profile(String);

impl Profile {
    /// Validates a profile name (KEY-2).
    pub fn new(value: impl Into<String>) -> Result<Profile, OriginError> {
        let value = value.into();
        if let Some(reason) = profile_problem(&value) {
            return Err(match reason {
                "empty" => OriginError::Empty {
                    field: Field::Profile,
                },
                "too long" => OriginError::TooLong {
                    field: Field::Profile,
                    len: value.len(),
                    max: MAX_PROFILE_BYTES,
                },
                reason => OriginError::BadToken {
                    field: Field::Profile,
                    value,
                    reason,
                },
            });
        }
        Ok(Profile(value))
    }

    /// The profile name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Why `value` is not a namespace token, or `None` when it is one.
pub(crate) fn profile_problem(value: &str) -> Option<&'static str> {
    if value.is_empty() {
        return Some("empty");
    }
    if value.len() > MAX_PROFILE_BYTES {
        return Some("too long");
    }
    let first = value.as_bytes()[0];
    if !(first.is_ascii_lowercase() || first.is_ascii_digit()) {
        return Some("must start with a-z or 0-9");
    }
    if !value
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
    {
        return Some("only a-z, 0-9, _ and - are allowed");
    }
    None
}

impl TryFrom<String> for Profile {
    type Error = OriginError;
    fn try_from(value: String) -> Result<Profile, OriginError> {
        Profile::new(value)
    }
}

impl From<Profile> for String {
    fn from(p: Profile) -> String {
        p.0
    }
}

impl fmt::Debug for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

/// The knobs hermes-agent has (KEY-3). Defaults: group sessions per user on,
/// thread sessions per user off, default namespace.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// In a group or channel, each participant gets a lane of their own.
    #[serde(default = "yes")]
    pub group_sessions_per_user: bool,
    /// Inside a thread, each participant gets a lane of their own (when off,
    /// a thread is one shared lane whatever `group_sessions_per_user` says).
    #[serde(default)]
    pub thread_sessions_per_user: bool,
    /// The namespace; `None` is the default `main`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "de_profile"
    )]
    profile: Option<Profile>,
}

fn de_profile<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Profile>, D::Error> {
    let p: Option<Profile> = Option::deserialize(d)?;
    Ok(p.filter(|p| !matches!(p.as_str(), "main" | "default")))
}

fn yes() -> bool {
    true
}

impl Default for Policy {
    fn default() -> Policy {
        Policy {
            group_sessions_per_user: true,
            thread_sessions_per_user: false,
            profile: None,
        }
    }
}

impl Policy {
    /// A policy in the default namespace with the two knobs of KEY-3.
    pub fn new(group_sessions_per_user: bool, thread_sessions_per_user: bool) -> Policy {
        Policy {
            group_sessions_per_user,
            thread_sessions_per_user,
            profile: None,
        }
    }

    /// Sets the profile namespace; `main` and `default` mean the default.
    pub fn with_profile(mut self, profile: Profile) -> Policy {
        self.profile = match profile.as_str() {
            "main" | "default" => None,
            _ => Some(profile),
        };
        self
    }

    /// The profile namespace, if not the default.
    pub fn profile(&self) -> Option<&Profile> {
        self.profile.as_ref()
    }

    /// The namespace segment of a key: the profile, or `main`.
    pub fn namespace(&self) -> &str {
        self.profile.as_ref().map_or("main", Profile::as_str)
    }

    /// Every combination of the two switches, default namespace first.
    pub fn all_switches() -> [Policy; 4] {
        [
            Policy::new(true, false),
            Policy::new(true, true),
            Policy::new(false, false),
            Policy::new(false, true),
        ]
    }
}
