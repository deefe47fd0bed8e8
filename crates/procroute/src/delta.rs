//! Delta outputs (STORE-7): what changed in the durable state, as
//! records a backend appends, instead of whole-file snapshots.
//!
//! Pure. A journaling [`crate::gateway::Gateway`]
//! ([`Durability::Journal`]) emits [`crate::gateway::Output::Append`] where
//! a snapshotting one emits `Persist`: at the same points, with the same
//! meaning ("durable before anything later in this batch"), holding the
//! records of what changed since the last append — each lane, run and
//! thread queue that changed, each delivered id, dead letter and held
//! completion. A record is the *state* of what it names (a thread's whole
//! queue, a run's counters and the characters its tail gained), not the
//! input that changed it, so applying it needs no logic beyond placing it.
//!
//! [`Image`] is the other half: the three file images rebuilt from a base
//! and the records appended since. The invariant, checked on generated
//! traces (`tests/delta.rs`): at every point, the images a journaling
//! gateway's records rebuild are byte for byte the files a snapshotting
//! gateway has written. Recovery then goes through the one path both
//! share, [`crate::gateway::Gateway::recover`], with every check the
//! snapshot files get.

use serde::{Deserialize, Serialize};

use crate::delivery::{DeliveryEngine, DeliveryLimits, DeliveryRecord};
use crate::persist::{FileKind, FileProblem};
use crate::registry::{Limits, Registry, RegistryRecord};
use crate::store::{SessionStore, StoreRecord, DEFAULT_MAX_LANES};

/// How a gateway makes its state durable.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Durability {
    /// Whole-file snapshots (`Output::Persist`): each changed file is
    /// rewritten, at a cost that grows with the state.
    Snapshots,
    /// Records of what changed (`Output::Append`), for a journal backend
    /// (`driver::journal`): the cost of the change. The default.
    #[default]
    Journal,
}

/// One change to the durable state. Externally tagged (`{"store": …}`):
/// an image's raw JSON cannot pass through the buffering an internal tag
/// needs.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Record {
    /// A change to the session store's image.
    Store {
        /// The change.
        change: StoreRecord,
    },
    /// A change to the checkpoint's image.
    Checkpoint {
        /// The change.
        change: RegistryRecord,
    },
    /// A change to the delivery log's image.
    Delivery {
        /// The change.
        change: DeliveryRecord,
    },
    /// A whole file image (what a snapshot would write): after recovery,
    /// or when more changed than is worth recording one by one.
    Image {
        /// Which file.
        of: FileKind,
        /// Its bytes: the file's versioned JSON envelope, carried as JSON
        /// (not escaped into a string: an image can be tens of MiB).
        bytes: Box<serde_json::value::RawValue>,
    },
    /// Backend bookkeeping, never emitted by the gateway: the generation a
    /// journal file or a base belongs to (`driver::journal`).
    Generation {
        /// The generation.
        number: u64,
    },
}

/// Records are equal when they encode alike (an image's JSON is compared
/// as written).
impl PartialEq for Record {
    fn eq(&self, other: &Record) -> bool {
        self.encode() == other.encode()
    }
}

impl Eq for Record {}

impl Record {
    /// The record as a journal payload (JSON).
    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("in-memory JSON encoding cannot fail")
    }

    /// Reads a journal payload.
    pub fn decode(bytes: &[u8]) -> Result<Record, FileProblem> {
        serde_json::from_slice(bytes).map_err(|e| FileProblem::Corrupt {
            detail: format!("journal record: {e}"),
        })
    }

    /// A whole file image as a record.
    pub fn image(of: FileKind, bytes: Vec<u8>) -> Record {
        let mut text = String::from_utf8(bytes).expect("file images are JSON text");
        // The envelope ends with a newline; JSON values carry none.
        let trimmed = text.trim_end().len();
        text.truncate(trimmed);
        Record::Image {
            of,
            bytes: serde_json::value::RawValue::from_string(text)
                .expect("file images are JSON values"),
        }
    }
}

/// The three file images, rebuilt from a base and the records appended
/// since (recovery of a journaling gateway).
#[derive(Debug, Clone)]
pub struct Image {
    store: SessionStore,
    registry: Registry,
    delivery: DeliveryEngine,
}

impl Image {
    /// The images of a gateway that has persisted nothing.
    pub fn empty(limits: &Limits, delivery: &DeliveryLimits) -> Image {
        Image {
            store: SessionStore::new(DEFAULT_MAX_LANES),
            registry: Registry::new(limits.clone()),
            delivery: DeliveryEngine::new(delivery.clone()),
        }
    }

    /// Applies one record; a record that does not fit the images (a run
    /// they do not hold, an image that does not decode) is refused.
    pub fn apply(&mut self, r: Record) -> Result<(), (FileKind, FileProblem)> {
        match r {
            Record::Store { change } => self.store.apply(change),
            Record::Checkpoint { change } => self
                .registry
                .apply(change)
                .map_err(|e| (FileKind::Checkpoint, e))?,
            Record::Delivery { change } => self.delivery.apply(change),
            Record::Image { of, bytes } => self
                .set_file(of, bytes.get().as_bytes())
                .map_err(|p| (of, p))?,
            Record::Generation { .. } => {}
        }
        Ok(())
    }

    /// Replaces one file's image by `bytes` (a whole file, as a snapshot
    /// holds it), decoded with every check that file gets.
    pub fn set_file(&mut self, of: FileKind, bytes: &[u8]) -> Result<(), FileProblem> {
        match of {
            FileKind::Store => self.store = SessionStore::decode(bytes, DEFAULT_MAX_LANES)?,
            FileKind::Checkpoint => {
                self.registry = Registry::decode_image(bytes, self.registry.limits().clone())?
            }
            FileKind::Delivery => {
                self.delivery = DeliveryEngine::decode(bytes, self.delivery.limits().clone())?
            }
        }
        Ok(())
    }

    /// The three files' bytes: store, checkpoint, delivery log.
    pub fn files(&self) -> [Vec<u8>; 3] {
        [
            self.store.encode(),
            self.registry.encode(),
            self.delivery.encode(),
        ]
    }

    /// One file's bytes.
    pub fn file(&self, of: FileKind) -> Vec<u8> {
        match of {
            FileKind::Store => self.store.encode(),
            FileKind::Checkpoint => self.registry.encode(),
            FileKind::Delivery => self.delivery.encode(),
        }
    }
}
