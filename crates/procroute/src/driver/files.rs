//! Durable files: [`FilePersist`], the embedded default backend, writes by
//! atomic replace (temp file, fsync, rename, fsync of the directory), so a
//! reader sees the old file or the new one, never a mix (STORE-4). Every
//! file operation goes through the [`FileSystem`] seam: [`RealFs`] in
//! production, the simulated crashing disk (`procroute_suite::simfs::SimFs`) in the
//! crash-point tests.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::persist::{FileProblem, Persist, PersistError, MAX_FILE_BYTES};

/// The file operations [`FilePersist`] needs, so that a simulated disk
/// (`procroute_suite::simfs::SimFs`) can stand in for the real one and crash at
/// every write, fsync and rename.
pub trait FileSystem {
    /// The file's length, or `None` if it does not exist.
    fn len(&self, path: &Path) -> std::io::Result<Option<u64>>;
    /// The file's contents.
    fn read(&self, path: &Path) -> std::io::Result<Vec<u8>>;
    /// Creates or truncates `path` and writes `bytes` (not yet durable).
    fn write(&mut self, path: &Path, bytes: &[u8]) -> std::io::Result<()>;
    /// [`FileSystem::write`] of `parts` one after the other: one write of
    /// their bytes, without joining them first (a compaction's base is
    /// images of tens of MiB between a few framing bytes). The default
    /// joins them.
    fn write_parts(&mut self, path: &Path, parts: &[&[u8]]) -> std::io::Result<()> {
        self.write(path, &parts.concat())
    }
    /// Appends `bytes` to `path`, creating it if missing (not yet
    /// durable).
    fn append(&mut self, path: &Path, bytes: &[u8]) -> std::io::Result<()>;
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
    fn write_parts(&mut self, path: &Path, parts: &[&[u8]]) -> std::io::Result<()> {
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        for part in parts {
            file.write_all(part)?;
        }
        Ok(())
    }
    fn append(&mut self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        OpenOptions::new()
            .append(true)
            .create(true)
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
    /// A file on the real disk at `path`.
    pub fn new(path: impl Into<PathBuf>) -> FilePersist<RealFs> {
        FilePersist::with_fs(path, RealFs)
    }
}

impl<F: FileSystem> FilePersist<F> {
    /// A file at `path` on the file system `fs` (a simulated disk in tests).
    pub fn with_fs(path: impl Into<PathBuf>, fs: F) -> FilePersist<F> {
        FilePersist {
            path: path.into(),
            fs,
        }
    }

    /// The file's path.
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
