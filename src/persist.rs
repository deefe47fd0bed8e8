//! Persistence: where snapshots of the store, the checkpoint and the
//! delivery log go (spec STORE-4..STORE-6).
//!
//! The core never does I/O: it hands out bytes ([`Snapshot`]) and is rebuilt
//! from bytes. A [`Persist`] backend moves the bytes. [`FilePersist`] is the
//! embedded default: atomic replace (temp file, fsync, rename, fsync of the
//! directory), so a reader sees the old file or the new one, never a mix.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Largest persisted file we read, in bytes (STORE-6): bounded memory on a
/// hostile or runaway file.
pub const MAX_FILE_BYTES: u64 = 256 * 1024 * 1024;

/// What is wrong with a persisted file. Always names the file.
#[derive(Debug, thiserror::Error)]
pub enum PersistError {
    #[error("{file}: {source}")]
    Io {
        file: String,
        source: std::io::Error,
    },
    #[error("{file}: {problem}")]
    Bad { file: String, problem: FileProblem },
}

/// Why a file's bytes cannot be decoded (STORE-5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FileProblem {
    #[error("file is truncated ({detail})")]
    Truncated { detail: String },
    #[error("file is corrupt ({detail})")]
    Corrupt { detail: String },
    #[error("file is a {found:?} file, expected {expected:?}")]
    WrongFormat { found: String, expected: String },
    #[error("file has format version {found}, this build reads version {supported}")]
    UnknownVersion { found: u64, supported: u64 },
    #[error("file is {len} bytes, the limit is {max}")]
    TooLarge { len: u64, max: u64 },
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

/// In-memory backend: for tests and for gateways that persist elsewhere.
#[derive(Debug, Default, Clone)]
pub struct MemoryPersist {
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

/// The file operations [`FilePersist`] needs, so that a simulated disk
/// ([`crate::simfs::SimFs`]) can stand in for the real one and crash at
/// every write, fsync and rename.
pub trait FileSystem {
    /// The file's length, or `None` if it does not exist.
    fn len(&self, path: &Path) -> std::io::Result<Option<u64>>;
    fn read(&self, path: &Path) -> std::io::Result<Vec<u8>>;
    /// Creates or truncates `path` and writes `bytes` (not yet durable).
    fn write(&mut self, path: &Path, bytes: &[u8]) -> std::io::Result<()>;
    /// Makes the file's contents durable.
    fn sync_file(&mut self, path: &Path) -> std::io::Result<()>;
    /// Atomically replaces `to` by `from` (not yet durable).
    fn rename(&mut self, from: &Path, to: &Path) -> std::io::Result<()>;
    /// Makes the directory's entries (creates, renames) durable.
    fn sync_dir(&mut self, dir: &Path) -> std::io::Result<()>;
}

/// The real file system.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealFs;

impl FileSystem for RealFs {
    fn len(&self, path: &Path) -> std::io::Result<Option<u64>> {
        match fs::metadata(path) {
            Ok(m) => Ok(Some(m.len())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }
    fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        fs::read(path)
    }
    fn write(&mut self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?
            .write_all(bytes)
    }
    fn sync_file(&mut self, path: &Path) -> std::io::Result<()> {
        // fsync through any descriptor flushes the file (POSIX).
        OpenOptions::new().write(true).open(path)?.sync_all()
    }
    fn rename(&mut self, from: &Path, to: &Path) -> std::io::Result<()> {
        fs::rename(from, to)
    }
    fn sync_dir(&mut self, dir: &Path) -> std::io::Result<()> {
        File::open(dir)?.sync_all()
    }
}

/// Durable file backend with atomic replace (STORE-4): write a temporary
/// file, fsync it, rename it over the file, fsync the directory. After a
/// crash at any point the file holds the old bytes or the new ones.
#[derive(Debug, Clone)]
pub struct FilePersist<F: FileSystem = RealFs> {
    path: PathBuf,
    fs: F,
}

impl FilePersist<RealFs> {
    pub fn new(path: impl Into<PathBuf>) -> FilePersist<RealFs> {
        FilePersist::with_fs(path, RealFs)
    }
}

impl<F: FileSystem> FilePersist<F> {
    pub fn with_fs(path: impl Into<PathBuf>, fs: F) -> FilePersist<F> {
        FilePersist {
            path: path.into(),
            fs,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn io(&self, source: std::io::Error) -> PersistError {
        PersistError::Io {
            file: self.path.display().to_string(),
            source,
        }
    }
}

impl<F: FileSystem> Persist for FilePersist<F> {
    fn load(&self) -> Result<Option<Vec<u8>>, PersistError> {
        let len = match self.fs.len(&self.path).map_err(|e| self.io(e))? {
            None => return Ok(None),
            Some(len) => len,
        };
        if len > MAX_FILE_BYTES {
            return Err(PersistError::Bad {
                file: self.path.display().to_string(),
                problem: FileProblem::TooLarge {
                    len,
                    max: MAX_FILE_BYTES,
                },
            });
        }
        self.fs.read(&self.path).map(Some).map_err(|e| self.io(e))
    }

    fn store(&mut self, bytes: &[u8]) -> Result<(), PersistError> {
        let mut tmp = self.path.clone().into_os_string();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        let path = self.path.clone();
        let fs = &mut self.fs;
        let mut write = || -> std::io::Result<()> {
            fs.write(&tmp, bytes)?;
            fs.sync_file(&tmp)?;
            fs.rename(&tmp, &path)?;
            match path.parent().filter(|d| !d.as_os_str().is_empty()) {
                // Make the rename itself durable.
                Some(dir) => fs.sync_dir(dir),
                None => fs.sync_dir(Path::new(".")),
            }
        };
        write().map_err(|e| self.io(e))
    }

    fn name(&self) -> String {
        self.path.display().to_string()
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
