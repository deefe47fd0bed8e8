//! The journal backend (STORE-7): a journaling gateway's records
//! ([`crate::gateway::Output::Append`]) appended to one file, one group
//! commit per append (one write, one fsync), compacted now and then into a
//! base by atomic replace. The file format is [`crate::journal`]'s; what a
//! record means is [`crate::delta`]'s.
//!
//! Two files in a directory, each starting with a generation record:
//! - `base`: one batch, the generation record and the three whole file
//!   images (store, checkpoint, delivery log: each file's own versioned
//!   envelope, as a snapshot would hold it); replaced atomically (temp file,
//!   fsync, rename, fsync of the directory), never appended to;
//! - `journal`: batch 0 is the generation alone; every later batch is one
//!   group commit.
//!
//! Compaction from generation `g`: write the new base (`g + 1`), then a
//! new journal holding only `g + 1`. A crash between the two leaves a base
//! newer than the journal: every record of that journal is in the base,
//! so the journal is stale and skipped. A journal newer than its base
//! cannot happen and is refused.
//!
//! Opening reads the base, applies the journal's committed batches, and
//! returns the three file images for [`crate::gateway::Gateway::recover`].
//! A torn tail (a crash during an append, never acknowledged) is cut off
//! by atomic replace before anything is appended after it. Damage to
//! acknowledged batches, a base that does not read, or a record that does
//! not fit the state is a typed error naming the file, and nothing is
//! written: the files stay as they were, for a human.

use std::path::{Path, PathBuf};

use super::backend::{mismatch, Backend};
use super::files::{FileSystem, RealFs};
use crate::delivery::DeliveryLimits;
use crate::delta::{Durability, Image, Record};
use crate::gateway::Output;
use crate::journal::{self, Tail};
use crate::persist::FileKind;
use crate::persist::{FileProblem, PersistError, MAX_FILE_BYTES};
use crate::registry::Limits;

/// When to compact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JournalLimits {
    /// Compact once the journal is larger than this many bytes…
    pub compact_min_bytes: u64,
    /// …and larger than this many times the base: compaction then costs at
    /// most a constant share of what was appended.
    pub compact_base_ratio: u64,
}

impl Default for JournalLimits {
    fn default() -> JournalLimits {
        JournalLimits {
            compact_min_bytes: 64 * 1024 * 1024,
            compact_base_ratio: 2,
        }
    }
}

/// What the backend did, for monitoring and the load figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JournalStats {
    /// Group commits appended (each one write and one fsync).
    pub commits: u64,
    /// Bytes appended to the journal.
    pub appended_bytes: u64,
    /// fsyncs of files and of the directory, compactions included.
    pub fsyncs: u64,
    /// Compactions.
    pub compactions: u64,
    /// Bytes written by compactions (bases and fresh journals).
    pub compacted_bytes: u64,
}

/// What opening found, besides the images.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opened {
    /// The three file images: store, checkpoint, delivery log.
    pub files: [Vec<u8>; 3],
    /// Records applied from the journal.
    pub records: usize,
    /// Why the journal's tail was cut off, if it was torn.
    pub torn: Option<&'static str>,
    /// The journal was older than the base (a compaction crashed between
    /// its two steps) and was skipped.
    pub stale: bool,
}

/// The journal backend over a [`FileSystem`] (the real one, or the
/// simulated crashing disk in the crash-point tests).
#[derive(Debug)]
pub struct JournalFiles<F: FileSystem = RealFs> {
    dir: PathBuf,
    fs: F,
    generation: u64,
    next_batch: u64,
    journal_bytes: u64,
    base_bytes: u64,
    limits: JournalLimits,
    stats: JournalStats,
    /// The group commit being built, its buffer reused from one to the
    /// next.
    batch: journal::BatchWriter,
    /// What opening it again needs ([`Backend::load`]).
    reopen: (Limits, DeliveryLimits),
}

fn problem(path: &Path, problem: FileProblem) -> PersistError {
    PersistError::Bad {
        file: path.display().to_string(),
        problem,
    }
}

fn corrupt(path: &Path, detail: String) -> PersistError {
    problem(path, FileProblem::Corrupt { detail })
}

impl<F: FileSystem> JournalFiles<F> {
    /// The base's path.
    pub fn base_path(&self) -> PathBuf {
        self.dir.join("base")
    }

    /// The journal's path.
    pub fn journal_path(&self) -> PathBuf {
        self.dir.join("journal")
    }

    /// What the backend did so far.
    pub fn stats(&self) -> JournalStats {
        self.stats
    }

    /// The journal's length, in bytes.
    pub fn journal_bytes(&self) -> u64 {
        self.journal_bytes
    }

    fn io(&self, path: &Path, source: std::io::Error) -> PersistError {
        PersistError::Io {
            file: path.display().to_string(),
            source,
        }
    }

    fn read(&self, path: &Path) -> Result<Option<Vec<u8>>, PersistError> {
        let len = match self.fs.len(path).map_err(|e| self.io(path, e))? {
            None => return Ok(None),
            Some(len) => len,
        };
        if len > MAX_FILE_BYTES {
            return Err(problem(
                path,
                FileProblem::TooLarge {
                    len,
                    max: MAX_FILE_BYTES,
                },
            ));
        }
        self.fs.read(path).map(Some).map_err(|e| self.io(path, e))
    }

    /// Opens the journal in `dir` (missing files: nothing persisted yet)
    /// and rebuilds the three file images. Refuses damaged or foreign files
    /// with a typed error and writes nothing then.
    pub fn open(
        dir: impl Into<PathBuf>,
        fs: F,
        limits: JournalLimits,
        registry: &Limits,
        delivery: &DeliveryLimits,
    ) -> Result<(JournalFiles<F>, Opened), PersistError> {
        let mut j = JournalFiles {
            dir: dir.into(),
            fs,
            generation: 0,
            next_batch: 0,
            journal_bytes: 0,
            base_bytes: 0,
            limits,
            stats: JournalStats::default(),
            batch: journal::BatchWriter::new(),
            reopen: (registry.clone(), delivery.clone()),
        };
        let mut image = Image::empty(registry, delivery);
        let base_path = j.base_path();
        if let Some(bytes) = j.read(&base_path)? {
            let scan = journal::scan(&bytes).map_err(|p| problem(&base_path, p))?;
            if scan.tail != Tail::Clean || scan.batches != 1 {
                return Err(corrupt(
                    &base_path,
                    "a base is one committed batch, written by atomic replace".into(),
                ));
            }
            if scan.records.len() != 1 + FILES.len() {
                return Err(corrupt(
                    &base_path,
                    format!(
                        "{} records; a base holds its generation and the three file images",
                        scan.records.len()
                    ),
                ));
            }
            let mut records = scan.records.into_iter();
            j.generation = generation_of(records.next(), &base_path)?;
            for (of, bytes) in FILES.into_iter().zip(records) {
                image.set_file(of, bytes).map_err(|p| {
                    corrupt(&base_path, format!("its image of the {of:?} file: {p}"))
                })?;
            }
            j.base_bytes = bytes.len() as u64;
        }
        let journal_path = j.journal_path();
        let mut opened = Opened {
            files: [Vec::new(), Vec::new(), Vec::new()],
            records: 0,
            torn: None,
            stale: false,
        };
        // What the journal file should be rewritten to before appending,
        // and its next batch's number; `None` when it can be appended to as it is.
        let mut rewrite: Option<(Vec<u8>, u64)> = None;
        match j.read(&journal_path)? {
            None => rewrite = Some((fresh(j.generation), 1)),
            Some(bytes) => {
                let scan = journal::scan(&bytes).map_err(|p| problem(&journal_path, p))?;
                let mut records = scan.records.iter();
                let current = match records.next() {
                    // Not even its generation was committed: a crash while
                    // the journal was being created.
                    None => false,
                    Some(first) => {
                        let g = generation_of(Some(first), &journal_path)?;
                        if g > j.generation {
                            return Err(corrupt(
                                &journal_path,
                                format!(
                                    "journal of generation {g} is newer than its base (generation {})",
                                    j.generation
                                ),
                            ));
                        }
                        opened.stale = g < j.generation;
                        g == j.generation
                    }
                };
                if current {
                    for (i, r) in records.enumerate() {
                        let r = Record::decode(r).map_err(|p| problem(&journal_path, p))?;
                        if matches!(r, Record::Generation { .. }) {
                            return Err(corrupt(
                                &journal_path,
                                format!("record {}: a second generation record", i + 1),
                            ));
                        }
                        image.apply(r).map_err(|(of, p)| {
                            corrupt(
                                &journal_path,
                                format!("record {} does not fit the {of:?} file: {p}", i + 1),
                            )
                        })?;
                        opened.records += 1;
                    }
                    j.next_batch = scan.batches;
                    j.journal_bytes = scan.valid_len as u64;
                    if let Tail::Torn { at, why } = scan.tail {
                        // Cut the torn tail off before appending after it.
                        opened.torn = Some(why);
                        rewrite = Some((bytes[..at].to_vec(), scan.batches));
                    }
                } else {
                    if let Tail::Torn { why, .. } = scan.tail {
                        opened.torn = Some(why);
                    }
                    rewrite = Some((fresh(j.generation), 1));
                }
            }
        }
        if let Some((bytes, next_batch)) = rewrite {
            j.replace(&journal_path, &[&bytes])?;
            j.next_batch = next_batch;
            j.journal_bytes = bytes.len() as u64;
        }
        opened.files = image.files();
        Ok((j, opened))
    }

    /// Writes `parts`, one after the other, as `path` by atomic replace.
    fn replace(&mut self, path: &Path, parts: &[&[u8]]) -> Result<(), PersistError> {
        let mut tmp = path.to_path_buf().into_os_string();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        let dir = self.dir.clone();
        let fs = &mut self.fs;
        let mut write = || -> std::io::Result<()> {
            fs.write_parts(&tmp, parts)?;
            fs.sync_file(&tmp)?;
            fs.rename(&tmp, path)?;
            fs.sync_dir(&dir)
        };
        let r = write().map_err(|e| self.io(path, e));
        self.stats.fsyncs += 2;
        self.stats.compacted_bytes += parts.iter().map(|p| p.len() as u64).sum::<u64>();
        r
    }

    /// Appends one group commit: every record, then its commit, in one
    /// write, then one fsync. Returns when the records are durable. An
    /// empty batch writes nothing.
    pub fn append(&mut self, records: &[Record]) -> Result<(), PersistError> {
        if records.is_empty() {
            return Ok(());
        }
        let path = self.journal_path();
        self.batch.clear();
        for r in records {
            let added = self
                .batch
                .record(|out| serde_json::to_writer(out, r))
                .expect("in-memory JSON encoding cannot fail");
            if let Err(len) = added {
                return Err(problem(
                    &path,
                    FileProblem::TooLarge {
                        len: len as u64,
                        max: journal::MAX_FRAME_BYTES as u64 - 1,
                    },
                ));
            }
        }
        let bytes = self.batch.commit(self.next_batch);
        let added = bytes.len() as u64;
        let len = self.journal_bytes + added;
        if len > MAX_FILE_BYTES {
            // Bounded: the driver compacts before this (wants_compaction).
            return Err(problem(
                &path,
                FileProblem::TooLarge {
                    len,
                    max: MAX_FILE_BYTES,
                },
            ));
        }
        if let Err(e) = self
            .fs
            .append(&path, bytes)
            .and_then(|()| self.fs.sync_file(&path))
        {
            return Err(self.io(&path, e));
        }
        self.next_batch += 1;
        self.journal_bytes = len;
        self.stats.commits += 1;
        self.stats.fsyncs += 1;
        self.stats.appended_bytes += added;
        Ok(())
    }

    /// Whether the journal has grown enough to compact
    /// ([`JournalLimits`]).
    pub fn wants_compaction(&self) -> bool {
        self.journal_bytes > self.limits.compact_min_bytes
            && self.journal_bytes
                > self
                    .base_bytes
                    .saturating_mul(self.limits.compact_base_ratio)
    }

    /// Compaction: `files` (from [`crate::gateway::Gateway::compact`]) become
    /// the new base, then the journal starts afresh. Safe to crash at any
    /// step (see the module's documentation).
    pub fn compact(&mut self, files: [Vec<u8>; 3]) -> Result<(), PersistError> {
        let generation = self.generation + 1;
        let g = Record::Generation { number: generation }.encode();
        let mut payloads: Vec<&[u8]> = vec![&g];
        // The images as they are: each file's own versioned envelope.
        payloads.extend(files.iter().map(Vec::as_slice));
        let base_path = self.base_path();
        if let Some(big) = payloads
            .iter()
            .find(|p| p.len() >= journal::MAX_FRAME_BYTES)
        {
            return Err(problem(
                &base_path,
                FileProblem::TooLarge {
                    len: big.len() as u64,
                    max: journal::MAX_FRAME_BYTES as u64 - 1,
                },
            ));
        }
        // The base is the header and one batch of the images, written
        // from where they are (no copy of tens of MiB to frame them).
        let mut heads = Vec::new();
        let mut base: Vec<&[u8]> = vec![journal::MAGIC];
        base.extend(journal::batch_parts(0, &payloads, &mut heads));
        self.replace(&base_path, &base)?;
        self.generation = generation;
        self.base_bytes = base.iter().map(|p| p.len() as u64).sum();
        let fresh = fresh(generation);
        self.replace(&self.journal_path(), &[&fresh])?;
        self.next_batch = 1;
        self.journal_bytes = fresh.len() as u64;
        self.stats.compactions += 1;
        Ok(())
    }
}

/// The journal as one [`Backend`]: records appended, one group commit per
/// output; opened anew from its files by [`Backend::load`].
impl<F: FileSystem + Clone> Backend for JournalFiles<F> {
    fn durability(&self) -> Durability {
        Durability::Journal
    }

    fn load(&mut self) -> Result<[Option<Vec<u8>>; 3], PersistError> {
        let (registry, delivery) = &self.reopen;
        let (j, opened) = JournalFiles::open(
            self.dir.clone(),
            self.fs.clone(),
            self.limits,
            registry,
            delivery,
        )?;
        *self = j;
        Ok(opened.files.map(Some))
    }

    fn write(&mut self, output: &Output) -> Result<(), PersistError> {
        match output {
            Output::Append { records } => self.append(records),
            Output::Persist { .. } => {
                Err(mismatch(&self.journal_path().display().to_string(), output))
            }
            _ => Ok(()),
        }
    }

    fn wants_compaction(&self) -> bool {
        JournalFiles::wants_compaction(self)
    }

    fn compact(&mut self, images: [Vec<u8>; 3]) -> Result<(), PersistError> {
        JournalFiles::compact(self, images)
    }
}

/// A journal of `generation` with nothing appended yet.
fn fresh(generation: u64) -> Vec<u8> {
    let mut bytes = journal::header();
    let g = Record::Generation { number: generation }.encode();
    bytes.extend(journal::batch(0, &[&g]));
    bytes
}

fn generation_of(first: Option<&[u8]>, path: &Path) -> Result<u64, PersistError> {
    match first.map(Record::decode) {
        Some(Ok(Record::Generation { number })) => Ok(number),
        Some(Err(p)) => Err(problem(path, p)),
        _ => Err(corrupt(
            path,
            "the first record is not the file's generation".into(),
        )),
    }
}

/// The base's images, in order.
const FILES: [FileKind; 3] = [FileKind::Store, FileKind::Checkpoint, FileKind::Delivery];
