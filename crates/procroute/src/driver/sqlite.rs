//! The SQLite backend (feature `sqlite`): the journal's records and base
//! in three tables of a SQLite database, for gateways that keep their
//! state in SQLite (as hermes-agent keeps `state.db`); the tables are
//! prefixed `procroute_` so they can share that database.
//!
//! Same contract as [`super::journal::JournalFiles`]: one transaction per
//! group commit (WAL mode, `synchronous = FULL`: durable when `append`
//! returns), compaction replaces the base and deletes the records in one
//! transaction, and opening rebuilds the three file images for
//! [`crate::gateway::Gateway::recover`]. SQLite's own journal makes torn
//! writes its problem; a record that does not decode or does not fit the
//! state, a base that does not read, or a database that is not one is a
//! typed error naming the database, and nothing is written.
//!
//! Schema (format version 1, in `procroute_meta`):
//! - `procroute_base(file TEXT PRIMARY KEY, bytes BLOB)`: the three images,
//!   `store`, `checkpoint`, `delivery` (each file's own envelope);
//! - `procroute_records(seq INTEGER PRIMARY KEY, body BLOB)`: records
//!   appended since the base, in order (a record's journal payload, JSON).

use std::path::{Path, PathBuf};

use rusqlite::{params, Connection, OptionalExtension};

use super::backend::{mismatch, Backend};
use super::journal::{JournalLimits, JournalStats, Opened};
use crate::delivery::DeliveryLimits;
use crate::delta::{Durability, Image, Record};
use crate::gateway::Output;
use crate::persist::FileKind;
use crate::persist::{FileProblem, PersistError};
use crate::registry::Limits;

const FORMAT_VERSION: i64 = 1;

const FILES: [(FileKind, &str); 3] = [
    (FileKind::Store, "store"),
    (FileKind::Checkpoint, "checkpoint"),
    (FileKind::Delivery, "delivery"),
];

/// The SQLite backend.
#[derive(Debug)]
pub struct SqliteJournal {
    path: PathBuf,
    conn: Connection,
    limits: JournalLimits,
    stats: JournalStats,
    records_bytes: u64,
    base_bytes: u64,
    /// What opening it again needs ([`Backend::load`]).
    reopen: (Limits, DeliveryLimits),
}

impl SqliteJournal {
    fn err(path: &Path, e: rusqlite::Error) -> PersistError {
        use rusqlite::ErrorCode;
        let file = path.display().to_string();
        match e.sqlite_error_code() {
            Some(ErrorCode::NotADatabase) | Some(ErrorCode::DatabaseCorrupt) => PersistError::Bad {
                file,
                problem: FileProblem::Corrupt {
                    detail: e.to_string(),
                },
            },
            _ => PersistError::Io {
                file,
                source: std::io::Error::other(e),
            },
        }
    }

    fn bad(&self, detail: String) -> PersistError {
        PersistError::Bad {
            file: self.path.display().to_string(),
            problem: FileProblem::Corrupt { detail },
        }
    }

    /// What the backend did so far (`fsyncs`: one WAL sync per commit).
    pub fn stats(&self) -> JournalStats {
        self.stats
    }

    /// Opens (or creates) the database at `path` and rebuilds the three
    /// file images. A damaged or foreign database is refused with a typed
    /// error; a refused open writes nothing.
    pub fn open(
        path: impl Into<PathBuf>,
        limits: JournalLimits,
        registry: &Limits,
        delivery: &DeliveryLimits,
    ) -> Result<(SqliteJournal, Opened), PersistError> {
        let path = path.into();
        let conn = Connection::open(&path).map_err(|e| Self::err(&path, e))?;
        let mut j = SqliteJournal {
            path,
            conn,
            limits,
            stats: JournalStats::default(),
            records_bytes: 0,
            base_bytes: 0,
            reopen: (registry.clone(), delivery.clone()),
        };
        let p = j.path.clone();
        let e = |e| Self::err(&p, e);
        // Read first: a foreign or newer database is refused untouched.
        let has_meta: bool = j
            .conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'procroute_meta'",
                [],
                |r| r.get::<_, i64>(0),
            )
            .map_err(e)?
            > 0;
        if has_meta {
            let v: Option<i64> = j
                .conn
                .query_row(
                    "SELECT value FROM procroute_meta WHERE key = 'format'",
                    [],
                    |r| r.get(0),
                )
                .optional()
                .map_err(e)?;
            if v != Some(FORMAT_VERSION) {
                return Err(PersistError::Bad {
                    file: j.path.display().to_string(),
                    problem: FileProblem::UnknownVersion {
                        found: v.unwrap_or(0) as u64,
                        supported: FORMAT_VERSION as u64,
                    },
                });
            }
        }
        let mut image = Image::empty(registry, delivery);
        let mut opened = Opened {
            files: [Vec::new(), Vec::new(), Vec::new()],
            records: 0,
            torn: None,
            stale: false,
        };
        if has_meta {
            let mut present = 0;
            for (of, name) in FILES {
                let bytes: Option<Vec<u8>> = j
                    .conn
                    .query_row(
                        "SELECT bytes FROM procroute_base WHERE file = ?1",
                        [name],
                        |r| r.get(0),
                    )
                    .optional()
                    .map_err(e)?;
                if let Some(bytes) = bytes {
                    present += 1;
                    j.base_bytes += bytes.len() as u64;
                    image
                        .set_file(of, &bytes)
                        .map_err(|p| j.bad(format!("its base image of the {of:?} file: {p}")))?;
                }
            }
            if present != 0 && present != FILES.len() {
                return Err(j.bad(format!("{present} of the base's three images")));
            }
            let mut stmt = j
                .conn
                .prepare("SELECT seq, body FROM procroute_records ORDER BY seq")
                .map_err(e)?;
            let mut rows = stmt.query([]).map_err(e)?;
            while let Some(row) = rows.next().map_err(e)? {
                let seq: i64 = row.get(0).map_err(e)?;
                let body: Vec<u8> = row.get(1).map_err(e)?;
                j.records_bytes += body.len() as u64;
                let bad = |detail: String| PersistError::Bad {
                    file: p.display().to_string(),
                    problem: FileProblem::Corrupt {
                        detail: format!("record {seq}: {detail}"),
                    },
                };
                let r = Record::decode(&body).map_err(|pr| bad(pr.to_string()))?;
                if matches!(r, Record::Generation { .. }) {
                    return Err(bad("a generation record among the records".into()));
                }
                image
                    .apply(r)
                    .map_err(|(of, pr)| bad(format!("does not fit the {of:?} file: {pr}")))?;
                opened.records += 1;
            }
        }
        // Now write: the settings and the schema.
        j.conn
            .pragma_update(None, "journal_mode", "WAL")
            .map_err(e)?;
        j.conn
            .pragma_update(None, "synchronous", "FULL")
            .map_err(e)?;
        j.conn
            .execute_batch(
                "BEGIN;
                 CREATE TABLE IF NOT EXISTS procroute_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
                 INSERT OR IGNORE INTO procroute_meta (key, value) VALUES ('format', 1);
                 CREATE TABLE IF NOT EXISTS procroute_base (file TEXT PRIMARY KEY, bytes BLOB NOT NULL);
                 CREATE TABLE IF NOT EXISTS procroute_records (seq INTEGER PRIMARY KEY, body BLOB NOT NULL);
                 COMMIT;",
            )
            .map_err(e)?;
        opened.files = image.files();
        Ok((j, opened))
    }

    /// Appends one group commit as one transaction; returns when it is
    /// durable. An empty batch writes nothing.
    pub fn append(&mut self, records: &[Record]) -> Result<(), PersistError> {
        if records.is_empty() {
            return Ok(());
        }
        let p = self.path.clone();
        let e = |e| Self::err(&p, e);
        let tx = self.conn.transaction().map_err(e)?;
        let mut bytes = 0u64;
        {
            let mut stmt = tx
                .prepare_cached("INSERT INTO procroute_records (body) VALUES (?1)")
                .map_err(e)?;
            let mut body = Vec::new();
            for r in records {
                body.clear();
                serde_json::to_writer(&mut body, r).expect("in-memory JSON encoding cannot fail");
                bytes += body.len() as u64;
                stmt.execute(params![body]).map_err(e)?;
            }
        }
        tx.commit().map_err(e)?;
        self.records_bytes += bytes;
        self.stats.commits += 1;
        self.stats.fsyncs += 1;
        self.stats.appended_bytes += bytes;
        Ok(())
    }

    /// Whether the records have outgrown the base ([`JournalLimits`]).
    pub fn wants_compaction(&self) -> bool {
        self.records_bytes > self.limits.compact_min_bytes
            && self.records_bytes
                > self
                    .base_bytes
                    .saturating_mul(self.limits.compact_base_ratio)
    }

    /// Compaction: `files` (from [`crate::gateway::Gateway::compact`])
    /// replace the base and the records are deleted, in one transaction;
    /// then the WAL is checkpointed and truncated, so it stays bounded.
    pub fn compact(&mut self, files: [Vec<u8>; 3]) -> Result<(), PersistError> {
        let p = self.path.clone();
        let e = |e| Self::err(&p, e);
        let tx = self.conn.transaction().map_err(e)?;
        let mut bytes = 0u64;
        for ((_, name), image) in FILES.iter().zip(&files) {
            tx.execute(
                "INSERT OR REPLACE INTO procroute_base (file, bytes) VALUES (?1, ?2)",
                params![name, image],
            )
            .map_err(e)?;
            bytes += image.len() as u64;
        }
        tx.execute("DELETE FROM procroute_records", []).map_err(e)?;
        tx.commit().map_err(e)?;
        self.conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .map_err(e)?;
        self.base_bytes = bytes;
        self.records_bytes = 0;
        self.stats.compactions += 1;
        self.stats.compacted_bytes += bytes;
        self.stats.fsyncs += 2;
        Ok(())
    }
}

/// SQLite as one [`Backend`]: one transaction per output; opened anew by
/// [`Backend::load`].
impl Backend for SqliteJournal {
    fn durability(&self) -> Durability {
        Durability::Journal
    }

    fn load(&mut self) -> Result<[Option<Vec<u8>>; 3], PersistError> {
        let (registry, delivery) = &self.reopen;
        let (j, opened) = SqliteJournal::open(self.path.clone(), self.limits, registry, delivery)?;
        *self = j;
        Ok(opened.files.map(Some))
    }

    fn write(&mut self, output: &Output) -> Result<(), PersistError> {
        match output {
            Output::Append { records } => self.append(records),
            Output::Persist { .. } => Err(mismatch(&self.path.display().to_string(), output)),
            _ => Ok(()),
        }
    }

    fn wants_compaction(&self) -> bool {
        SqliteJournal::wants_compaction(self)
    }

    fn compact(&mut self, images: [Vec<u8>; 3]) -> Result<(), PersistError> {
        SqliteJournal::compact(self, images)
    }
}
