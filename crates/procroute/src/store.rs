//! The session store: lane → entry {origin, conversation, created, updated}
//! (spec STORE-1..STORE-3).
//!
//! A lane is the canonical key of the origin that opened it, so the lane
//! alone determines platform, chat type, chat and thread (KEY-C5). The
//! origin recorded when a lane is created is kept for the life of the lane;
//! `/new` starts a new conversation on the same lane and keeps the origin.

use std::collections::HashMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::key::{canonical, Policy};
use crate::origin::Origin;
use crate::persist::{self, FileProblem};

/// Default bound on the number of lanes (STORE-3).
pub const DEFAULT_MAX_LANES: usize = 1_000_000;

const FORMAT: &str = "procroute.store";
const VERSION: u64 = 1;

/// Lanes are hashed with foldhash seeded at random per store: several times
/// faster than SipHash on 50–500-byte keys, and still seeded, so ids chosen
/// by a hostile server (Matrix room and event ids are) cannot be aimed at
/// one bucket without learning the seed. Iteration order is therefore
/// arbitrary; nothing depends on it (encode sorts).
type LaneHasher = foldhash::quality::RandomState;

/// A session key in the canonical dialect.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Lane(String);

impl Lane {
    /// The lane of `origin` under `policy`.
    pub fn of(origin: &Origin, policy: &Policy) -> Lane {
        Lane(canonical::build(origin, policy))
    }

    /// The key, in the canonical dialect.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Lane {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl fmt::Display for Lane {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
/// What the store knows about one lane.
pub struct Entry {
    /// The origin that created the lane (STORE-1).
    pub origin: Origin,
    /// Changes on `/new` (STORE-2).
    pub conversation: u64,
    /// When the lane was first seen (the explicit clock's ms).
    pub created_ms: u64,
    /// When the lane was last observed.
    pub updated_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
/// Why the store refused a change.
pub enum StoreError {
    #[error("the store holds {max} lanes, its limit; lane {lane} not created")]
    /// The store holds [`SessionStore::new`]'s `max_lanes` lanes already.
    Full {
        /// The lane that was not created.
        lane: Lane,
        /// The limit.
        max: usize,
    },
    #[error("lane {lane} does not exist")]
    /// The lane named does not exist.
    NoSuchLane {
        /// The lane named.
        lane: Lane,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Body {
    next_conversation: u64,
    lanes: Vec<(Lane, Entry)>,
}

/// [`Body`] borrowed, for encoding without cloning every entry.
#[derive(Serialize)]
struct BodyRef<'a> {
    next_conversation: u64,
    lanes: Vec<(&'a Lane, &'a Entry)>,
}

#[derive(Clone, PartialEq, Eq)]
/// The persisted session store: each lane's origin and conversation,
/// the origin a notification is routed to (STORE-1). Plain data, no I/O.
pub struct SessionStore {
    lanes: HashMap<Lane, Entry, LaneHasher>,
    next_conversation: u64,
    max_lanes: usize,
    /// Lanes changed since the last [`SessionStore::take_changes`], when
    /// the gateway keeps a journal (`None`: not tracked).
    changes: Option<crate::changes::Changes<std::collections::BTreeSet<Lane>>>,
}

/// One change to the store's file image, for the journal (STORE-7): a
/// lane as it now is, and the conversation counter beside it (the only
/// time the counter moves is when a lane is created or reset).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreRecord {
    lane: Lane,
    entry: Entry,
    next_conversation: u64,
}

/// Lanes in order: the map's hasher is seeded at random, and a debug view
/// (and exploration's state fingerprint, which hashes it) must not depend
/// on the seed.
impl fmt::Debug for SessionStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lanes: std::collections::BTreeMap<&Lane, &Entry> = self.lanes.iter().collect();
        f.debug_struct("SessionStore")
            .field("lanes", &lanes)
            .field("next_conversation", &self.next_conversation)
            .field("max_lanes", &self.max_lanes)
            .field("changes", &self.changes)
            .finish()
    }
}

impl Default for SessionStore {
    fn default() -> SessionStore {
        SessionStore::new(DEFAULT_MAX_LANES)
    }
}

impl SessionStore {
    /// An empty store that holds at most `max_lanes` lanes.
    pub fn new(max_lanes: usize) -> SessionStore {
        SessionStore {
            lanes: HashMap::default(),
            next_conversation: 1,
            max_lanes,
            changes: None,
        }
    }

    /// From now on, remember what changes for [`SessionStore::take_changes`]
    /// (a journaling gateway). `full`: the next take is the whole image (the
    /// state no longer matches what was last persisted, e.g. after recovery).
    pub fn track_changes(&mut self, full: bool) {
        self.changes = Some(crate::changes::Changes::new(full));
    }

    fn touched(&mut self, lane: &Lane) {
        if let Some(c) = &mut self.changes {
            if !c.full {
                c.set.insert(lane.clone());
            }
        }
    }

    /// What changed since the last take: `Some(records)` to append, or
    /// `None` when only the whole image will do (see
    /// [`SessionStore::track_changes`]); then tracking starts afresh.
    pub fn take_changes(&mut self) -> Option<Vec<StoreRecord>> {
        let c = self.changes.as_mut()?;
        if std::mem::take(&mut c.full) {
            c.set.clear();
            return None;
        }
        let lanes = std::mem::take(&mut c.set);
        Some(
            lanes
                .into_iter()
                .filter_map(|lane| {
                    let entry = self.lanes.get(&lane)?.clone();
                    Some(StoreRecord {
                        lane,
                        entry,
                        next_conversation: self.next_conversation,
                    })
                })
                .collect(),
        )
    }

    /// Applies a journal record to a store read from its file image
    /// (recovery): the lane becomes the recorded entry. The image is
    /// checked as a whole afterwards ([`SessionStore::decode`]).
    pub fn apply(&mut self, r: StoreRecord) {
        self.next_conversation = r.next_conversation;
        self.lanes.insert(r.lane, r.entry);
    }

    /// A message arrived from `origin`: create its lane (recording the
    /// origin) or touch it. Returns the lane and whether it is new.
    pub fn observe(
        &mut self,
        origin: &Origin,
        policy: &Policy,
        now_ms: u64,
    ) -> Result<(Lane, bool), StoreError> {
        let lane = Lane::of(origin, policy);
        if let Some(e) = self.lanes.get_mut(&lane) {
            if now_ms > e.updated_ms {
                e.updated_ms = now_ms;
                self.touched(&lane);
            }
            return Ok((lane, false));
        }
        if self.lanes.len() >= self.max_lanes {
            return Err(StoreError::Full {
                lane,
                max: self.max_lanes,
            });
        }
        let conversation = self.take_conversation();
        self.lanes.insert(
            lane.clone(),
            Entry {
                origin: origin.clone(),
                conversation,
                created_ms: now_ms,
                updated_ms: now_ms,
            },
        );
        self.touched(&lane);
        Ok((lane, true))
    }

    /// `/new`: a new conversation id on the same lane; the origin stays.
    pub fn reset(&mut self, lane: &Lane, now_ms: u64) -> Result<u64, StoreError> {
        let conversation = self.next_conversation;
        let e = self
            .lanes
            .get_mut(lane)
            .ok_or_else(|| StoreError::NoSuchLane { lane: lane.clone() })?;
        e.conversation = conversation;
        e.updated_ms = e.updated_ms.max(now_ms);
        self.next_conversation += 1;
        self.touched(lane);
        Ok(conversation)
    }

    fn take_conversation(&mut self) -> u64 {
        let c = self.next_conversation;
        self.next_conversation += 1;
        c
    }

    /// The lane's entry, if the store has it.
    pub fn get(&self, lane: &Lane) -> Option<&Entry> {
        self.lanes.get(lane)
    }

    /// How many lanes the store holds.
    pub fn len(&self) -> usize {
        self.lanes.len()
    }

    /// Whether the store holds no lane.
    pub fn is_empty(&self) -> bool {
        self.lanes.is_empty()
    }

    /// Every lane and its entry, in no particular order.
    pub fn lanes(&self) -> impl Iterator<Item = (&Lane, &Entry)> {
        self.lanes.iter()
    }

    /// The versioned file image (STORE-4): lanes in key order, so equal
    /// stores have equal images.
    pub fn encode(&self) -> Vec<u8> {
        let mut lanes: Vec<(&Lane, &Entry)> = self.lanes.iter().collect();
        lanes.sort_unstable_by(|a, b| a.0.cmp(b.0));
        persist::encode(
            FORMAT,
            VERSION,
            &BodyRef {
                next_conversation: self.next_conversation,
                lanes,
            },
        )
    }

    /// Rebuilds a store from its file image. Beyond the envelope checks,
    /// every lane must be the canonical key of its recorded origin under
    /// some policy, so a tampered file cannot re-point a lane (STORE-5).
    pub fn decode(bytes: &[u8], max_lanes: usize) -> Result<SessionStore, FileProblem> {
        let body: Body = persist::decode(FORMAT, VERSION, bytes)?;
        let mut lanes = HashMap::default();
        for (lane, entry) in body.lanes {
            let parsed = canonical::parse(lane.as_str()).map_err(|e| FileProblem::Corrupt {
                detail: format!("lane {lane}: {e}"),
            })?;
            let o = &entry.origin;
            if &parsed.platform != o.platform()
                || parsed.chat_type != o.chat_type()
                || &parsed.chat_id != o.chat_id()
                || parsed.thread_id.as_ref() != o.thread_id()
            {
                return Err(FileProblem::Corrupt {
                    detail: format!("lane {lane} does not match its recorded origin"),
                });
            }
            if entry.conversation >= body.next_conversation {
                return Err(FileProblem::Corrupt {
                    detail: format!("lane {lane}: conversation id from the future"),
                });
            }
            if lanes.insert(lane.clone(), entry).is_some() {
                return Err(FileProblem::Corrupt {
                    detail: format!("lane {lane} appears twice"),
                });
            }
        }
        if lanes.len() > max_lanes {
            return Err(FileProblem::Corrupt {
                detail: format!("{} lanes, the limit is {max_lanes}", lanes.len()),
            });
        }
        Ok(SessionStore {
            lanes,
            next_conversation: body.next_conversation,
            max_lanes,
            changes: None,
        })
    }
}
