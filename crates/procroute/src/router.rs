//! The router: an event's destination, from the event's own captured origin
//! resolved against the store — never from "current" context (ROUTE-1..5).
//!
//! [`resolve`] takes the store and the event and nothing else: there is no
//! parameter through which a foreground thread could reach it (ROUTE-1).

use serde::{Deserialize, Serialize};

use crate::key::{canonical, hermes, Determined};
use crate::origin::{ChatType, Id, Origin, Platform};
use crate::registry::ProcessEvent;
use crate::store::{Lane, SessionStore};

/// Where a notification goes: a thread (or a chat without threads).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Destination {
    /// The platform.
    pub platform: Platform,
    /// The chat type.
    pub chat_type: ChatType,
    /// The chat's id.
    pub chat_id: Id,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The thread, if the conversation is in one.
    pub thread_id: Option<Id>,
}

impl Destination {
    /// Where a notification for this origin goes.
    pub fn of(origin: &Origin) -> Destination {
        Destination {
            platform: origin.platform().clone(),
            chat_type: origin.chat_type(),
            chat_id: origin.chat_id().clone(),
            thread_id: origin.thread_id().cloned(),
        }
    }
}

/// Which step of the resolution order produced the destination (ROUTE-2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RouteSource {
    /// The persisted session store's origin of the lane.
    Store,
    /// The origin the event captured at spawn.
    Captured,
    /// The session key itself, where it determines chat and thread.
    Key,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
/// A destination, and where the router found it.
pub struct Routed {
    /// Where the notification goes.
    pub destination: Destination,
    /// Which step of ROUTE-2 found it.
    pub source: RouteSource,
}

/// Why an event was not routed (ROUTE-4). Recorded, counted and logged by
/// the caller; an undeliverable promised notification is dead-lettered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum DropReason {
    /// The stored origin of the lane and the event's captured origin name
    /// different threads. Only corrupted or foreign data can do this;
    /// guessing would risk a leak, so the event goes nowhere.
    #[error("lane {lane}: stored origin and captured origin disagree")]
    OriginConflict {
        /// The lane.
        lane: Lane,
        /// The thread the store names.
        stored: Box<Destination>,
        /// The thread the event captured.
        captured: Box<Destination>,
    },
    /// No stored origin, no captured origin, and the key does not determine
    /// chat and thread with certainty.
    #[error("lane {lane}: no stored or captured origin, and the key cannot tell ({why})")]
    NoRoute {
        /// The lane.
        lane: Lane,
        /// Why the key cannot tell.
        why: String,
    },
}

/// Resolves a registry event (ROUTE-2): the stored origin of its lane, else
/// its captured origin. A registry event always has one, so it always routes
/// unless the two disagree.
pub fn resolve(store: &SessionStore, event: &ProcessEvent) -> Result<Routed, DropReason> {
    resolve_parts(store, &event.lane, Some(&event.origin))
}

/// The full resolution order, for events from foreign sources that may lack
/// a captured origin (ROUTE-2, ROUTE-3).
pub fn resolve_parts(
    store: &SessionStore,
    lane: &Lane,
    captured: Option<&Origin>,
) -> Result<Routed, DropReason> {
    if let Some(entry) = store.get(lane) {
        if let Some(c) = captured.filter(|c| !same_thread(&entry.origin, c)) {
            return Err(DropReason::OriginConflict {
                lane: lane.clone(),
                stored: Box::new(Destination::of(&entry.origin)),
                captured: Box::new(Destination::of(c)),
            });
        }
        return Ok(Routed {
            destination: Destination::of(&entry.origin),
            source: RouteSource::Store,
        });
    }
    if let Some(origin) = captured {
        return Ok(Routed {
            destination: Destination::of(origin),
            source: RouteSource::Captured,
        });
    }
    from_key(lane.as_str())
        .map(|destination| Routed {
            destination,
            source: RouteSource::Key,
        })
        .map_err(|why| DropReason::NoRoute {
            lane: lane.clone(),
            why,
        })
}

/// Whether two origins name the same thread: `Destination::of(a) ==
/// Destination::of(b)`, without building either.
fn same_thread(a: &Origin, b: &Origin) -> bool {
    a.platform() == b.platform()
        && a.chat_type() == b.chat_type()
        && a.chat_id() == b.chat_id()
        && a.thread_id() == b.thread_id()
}

/// ROUTE-3: a destination from a lane alone. Lanes are canonical keys,
/// which determine chat and thread exactly (KEY-C4). A lane that is not a
/// canonical key cannot be routed: it is never re-read as a hermes key,
/// because `group:-100:42` means different things in the two dialects.
pub fn from_key(key: &str) -> Result<Destination, String> {
    let f = canonical::parse(key).map_err(|e| format!("not a canonical key: {e}"))?;
    Ok(Destination {
        platform: f.platform,
        chat_type: f.chat_type,
        chat_id: f.chat_id,
        thread_id: f.thread_id,
    })
}

/// ROUTE-3 for keys known to be hermes keys (foreign gateways): only when
/// the chat is known and the thread known or absent (KEY-H3).
pub fn from_hermes_key(key: &str) -> Result<Destination, String> {
    let h = hermes::parse(key).map_err(|e| format!("not a hermes key: {e}"))?;
    let chat = match h.chat_id {
        Determined::Known(c) => c,
        other => return Err(format!("chat id is {other:?}")),
    };
    let thread_id = match h.thread_id {
        Determined::Known(t) => Some(t),
        Determined::Absent => None,
        other => return Err(format!("thread id is {other:?}")),
    };
    Ok(Destination {
        platform: h.platform,
        chat_type: h.chat_type,
        chat_id: chat,
        thread_id,
    })
}
