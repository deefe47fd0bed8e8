//! Persistence: where snapshots of the store, the checkpoint and the
//! delivery log go (spec STORE-4..STORE-6).
//!
//! Pure: the versioned envelope every file is written in, the typed
//! errors, the [`Persist`] trait a backend implements and an in-memory
//! backend. The core never does I/O: it hands out bytes and is rebuilt from
//! bytes. The file backend (atomic replace over a [`crate::driver::files::FileSystem`]
//! seam) lives with the other I/O, in `driver/files.rs`.

use serde::{Deserialize, Serialize};

/// Largest persisted file we read, in bytes (STORE-6): bounded memory on a
/// hostile or runaway file.
pub const MAX_FILE_BYTES: u64 = 256 * 1024 * 1024;

/// What is wrong with a persisted file. Always names the file.
#[derive(Debug, thiserror::Error)]
pub enum PersistError {
    #[error("{file}: {source}")]
    /// Reading or writing the file failed.
    Io {
        /// The file.
        file: String,
        /// The operating system's error.
        source: std::io::Error,
    },
    #[error("{file}: {problem}")]
    /// The file's contents are not a valid file of its kind.
    Bad {
        /// The file.
        file: String,
        /// What is wrong with it.
        problem: FileProblem,
    },
}

/// Why a file's bytes cannot be decoded (STORE-5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FileProblem {
    #[error("file is truncated ({detail})")]
    /// The file ends early.
    Truncated {
        /// Where and how.
        detail: String,
    },
    #[error("file is corrupt ({detail})")]
    /// The contents do not decode.
    Corrupt {
        /// What does not decode.
        detail: String,
    },
    #[error("file is a {found:?} file, expected {expected:?}")]
    /// The file is another kind of procroute file, or not one at all.
    WrongFormat {
        /// The format it names.
        found: String,
        /// The format expected.
        expected: String,
    },
    #[error("file has format version {found}, this build reads version {supported}")]
    /// The file is from a newer (or unknown) version.
    UnknownVersion {
        /// Its version.
        found: u64,
        /// The version this build reads.
        supported: u64,
    },
    #[error("file is {len} bytes, the limit is {max}")]
    /// The file is larger than [`MAX_FILE_BYTES`].
    TooLarge {
        /// Its length, in bytes.
        len: u64,
        /// The limit.
        max: u64,
    },
}

/// The envelope every persisted file has.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Envelope<T> {
    pub format: String,
    pub version: u64,
    pub body: T,
}

#[derive(Deserialize)]
struct Head {
    format: String,
    version: u64,
}

/// Encodes `body` in the versioned envelope.
pub(crate) fn encode<T: Serialize>(format: &str, version: u64, body: &T) -> Vec<u8> {
    let env = Envelope {
        format: format.to_owned(),
        version,
        body,
    };
    let mut bytes = serde_json::to_vec(&env).expect("in-memory JSON encoding cannot fail");
    bytes.push(b'\n');
    bytes
}

/// Decodes a versioned envelope, with a typed problem for every failure.
pub(crate) fn decode<T: for<'de> Deserialize<'de>>(
    format: &str,
    version: u64,
    bytes: &[u8],
) -> Result<T, FileProblem> {
    let classify = |e: serde_json::Error| {
        if e.is_eof() {
            FileProblem::Truncated {
                detail: e.to_string(),
            }
        } else {
            FileProblem::Corrupt {
                detail: e.to_string(),
            }
        }
    };
    let head: Head = serde_json::from_slice(bytes).map_err(classify)?;
    if head.format != format {
        return Err(FileProblem::WrongFormat {
            found: head.format,
            expected: format.to_owned(),
        });
    }
    if head.version != version {
        return Err(FileProblem::UnknownVersion {
            found: head.version,
            supported: version,
        });
    }
    let env: Envelope<T> = serde_json::from_slice(bytes).map_err(classify)?;
    Ok(env.body)
}

/// A place to keep one file's bytes.
pub trait Persist {
    /// The current bytes, or `None` if nothing was ever stored.
    fn load(&self) -> Result<Option<Vec<u8>>, PersistError>;
    /// Replaces the bytes atomically.
    fn store(&mut self, bytes: &[u8]) -> Result<(), PersistError>;
    /// A name for error messages.
    fn name(&self) -> String;
}

impl<P: Persist + ?Sized> Persist for Box<P> {
    fn load(&self) -> Result<Option<Vec<u8>>, PersistError> {
        (**self).load()
    }
    fn store(&mut self, bytes: &[u8]) -> Result<(), PersistError> {
        (**self).store(bytes)
    }
    fn name(&self) -> String {
        (**self).name()
    }
}

/// In-memory backend: for tests and for gateways that persist elsewhere.
#[derive(Debug, Default, Clone)]
pub struct MemoryPersist {
    /// The stored bytes, `None` before the first store.
    pub bytes: Option<Vec<u8>>,
}

impl Persist for MemoryPersist {
    fn load(&self) -> Result<Option<Vec<u8>>, PersistError> {
        Ok(self.bytes.clone())
    }
    fn store(&mut self, bytes: &[u8]) -> Result<(), PersistError> {
        self.bytes = Some(bytes.to_vec());
        Ok(())
    }
    fn name(&self) -> String {
        "(memory)".to_owned()
    }
}

/// Loads and decodes a file, naming it in every error; the file is only
/// read, never modified (STORE-5).
pub fn load_with<T>(
    backend: &dyn Persist,
    decode: impl FnOnce(&[u8]) -> Result<T, FileProblem>,
) -> Result<Option<T>, PersistError> {
    match backend.load()? {
        None => Ok(None),
        Some(bytes) => decode(&bytes)
            .map(Some)
            .map_err(|problem| PersistError::Bad {
                file: backend.name(),
                problem,
            }),
    }
}

/// Which durable file an output's bytes belong to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileKind {
    /// The session store (`store.json`).
    Store,
    /// The process registry's checkpoint (`checkpoint.json`).
    Checkpoint,
    /// The delivery log (`delivery.json`).
    Delivery,
}
