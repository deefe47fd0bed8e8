//! Journal framing (STORE-7): an append-only file of
//! checksummed frames, grouped into committed batches, and the one reader
//! that tells a torn tail (a crash during the last, not yet acknowledged
//! append) from damage (acknowledged records that no longer read back).
//!
//! Pure: bytes in, records out; the journal backend
//! (`driver::journal`) writes what a journaling gateway's records
//! (`delta`) hold. The reader's behaviour on torn, truncated and hostile
//! files is pinned down by `tests/journal.rs`.
//!
//! Layout: the 8-byte [`MAGIC`], then frames, each
//! `len: u32 LE | crc: u32 LE | body (len bytes)`, where `crc` is the CRC-32
//! (IEEE, `crc32fast`) of the length's four bytes and the body, so a
//! damaged length is caught like a damaged body. A body is a record
//! (`R` then the payload) or a commit (`C`, the batch number as u64 LE and
//! the batch's record count as u32 LE). A group commit appends its records
//! and one commit frame in one write, then fsyncs ([`batch`]).
//!
//! Reading ([`scan`]) takes whole batches: records count only once the
//! commit frame that closes their batch is read and agrees with them. At
//! the first frame that is cut short or fails its checksum:
//! - if no valid commit of a later batch starts anywhere after it,
//!   everything from the end of the last committed batch is a torn tail
//!   ([`Tail::Torn`]): what a crash during an append leaves (unsynced pages
//!   land in any order, so even the batch's own commit may be there),
//!   never acknowledged because its fsync never returned;
//! - if a commit of a later batch follows, that batch was acknowledged
//!   after the damaged one was, so the damage is to acknowledged data:
//!   [`FileProblem::Corrupt`], naming both offsets; the file is left as it
//!   is for a human.

use crate::persist::FileProblem;

/// The first bytes of every journal file (format and version).
pub const MAGIC: &[u8; 8] = b"PRJRNL01";

/// Largest frame body, in bytes: a length field beyond it is damage or a
/// torn write, never a frame (bounded memory on a hostile file).
pub const MAX_FRAME_BYTES: usize = 256 * 1024 * 1024;

/// Bytes of a frame's header (length and checksum).
pub const HEADER_BYTES: usize = 8;

const RECORD: u8 = b'R';
const COMMIT: u8 = b'C';
const COMMIT_BYTES: usize = 1 + 8 + 4;

/// The checksum of a frame: CRC-32 of its length field and its body.
fn checksum(len: [u8; 4], body: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&len);
    h.update(body);
    h.finalize()
}

/// A frame's head: its length and checksum, then its kind byte (the
/// body's first byte); the rest of the body follows it.
fn frame_head(kind: u8, rest: &[&[u8]]) -> [u8; HEADER_BYTES + 1] {
    let body_len = 1 + rest.iter().map(|r| r.len()).sum::<usize>();
    assert!(
        body_len <= MAX_FRAME_BYTES,
        "journal frame of {body_len} bytes exceeds MAX_FRAME_BYTES"
    );
    let len = (body_len as u32).to_le_bytes();
    let mut h = crc32fast::Hasher::new();
    h.update(&len);
    h.update(&[kind]);
    for r in rest {
        h.update(r);
    }
    let mut head = [0; HEADER_BYTES + 1];
    head[..4].copy_from_slice(&len);
    head[4..8].copy_from_slice(&h.finalize().to_le_bytes());
    head[8] = kind;
    head
}

fn push_frame(out: &mut Vec<u8>, kind: u8, rest: &[&[u8]]) {
    out.extend_from_slice(&frame_head(kind, rest));
    for r in rest {
        out.extend_from_slice(r);
    }
}

/// The commit frame closing batch `number` of `count` records.
fn push_commit(out: &mut Vec<u8>, number: u64, count: usize) {
    let count = u32::try_from(count).expect("fewer than 2^32 records in a batch");
    push_frame(out, COMMIT, &[&number.to_le_bytes(), &count.to_le_bytes()]);
}

/// A new journal's bytes: the header alone.
pub fn header() -> Vec<u8> {
    MAGIC.to_vec()
}

/// The bytes of one group commit: every payload as a record frame, then
/// the commit frame of batch `number` (batches are numbered from 0, one
/// more each time). Panics only on a payload longer than
/// [`MAX_FRAME_BYTES`] - 1, which no writer may build.
pub fn batch(number: u64, payloads: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(
        payloads
            .iter()
            .map(|p| HEADER_BYTES + 1 + p.len())
            .sum::<usize>()
            + HEADER_BYTES
            + COMMIT_BYTES,
    );
    for p in payloads {
        push_frame(&mut out, RECORD, &[p]);
    }
    push_commit(&mut out, number, payloads.len());
    out
}

/// [`batch`] without a copy of its payloads: the parts of its bytes in
/// file order — each record frame's head (kept in `heads`), its payload as
/// it is, then the commit frame (in `heads` too). Joined, they are
/// `batch(number, payloads)`. A compaction writes its base this way,
/// images of tens of MiB where they are.
pub fn batch_parts<'a>(
    number: u64,
    payloads: &[&'a [u8]],
    heads: &'a mut Vec<u8>,
) -> Vec<&'a [u8]> {
    let head = HEADER_BYTES + 1;
    heads.clear();
    for p in payloads {
        heads.extend_from_slice(&frame_head(RECORD, &[p]));
    }
    push_commit(heads, number, payloads.len());
    let heads: &'a [u8] = heads;
    let mut parts = Vec::with_capacity(2 * payloads.len() + 1);
    for (i, p) in payloads.iter().enumerate() {
        parts.push(&heads[i * head..(i + 1) * head]);
        parts.push(*p);
    }
    parts.push(&heads[payloads.len() * head..]);
    parts
}

/// One group commit built in place: each record is encoded straight into
/// the batch's buffer (no copy per record), then [`BatchWriter::finish`]
/// adds the commit frame. The bytes are exactly [`batch`]'s.
#[derive(Debug, Default)]
pub struct BatchWriter {
    buf: Vec<u8>,
    count: u32,
}

impl BatchWriter {
    /// An empty batch.
    pub fn new() -> BatchWriter {
        BatchWriter::default()
    }

    /// Adds one record whose payload `write` appends to the buffer it is
    /// given. A payload of [`MAX_FRAME_BYTES`] bytes or more is taken back
    /// and refused with its length.
    pub fn record<E>(
        &mut self,
        write: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
    ) -> Result<Result<(), usize>, E> {
        let start = self.buf.len();
        self.buf.extend_from_slice(&[0; HEADER_BYTES]);
        self.buf.push(RECORD);
        write(&mut self.buf)?;
        let body_len = self.buf.len() - start - HEADER_BYTES;
        if body_len > MAX_FRAME_BYTES {
            self.buf.truncate(start);
            return Ok(Err(body_len - 1));
        }
        let len = (body_len as u32).to_le_bytes();
        let crc = checksum(len, &self.buf[start + HEADER_BYTES..]);
        self.buf[start..start + 4].copy_from_slice(&len);
        self.buf[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
        self.count += 1;
        Ok(Ok(()))
    }

    /// Records added so far.
    pub fn len(&self) -> u32 {
        self.count
    }

    /// Whether no record was added.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The batch's bytes, closed by the commit frame of batch `number`.
    pub fn finish(mut self, number: u64) -> Vec<u8> {
        self.commit(number);
        self.buf
    }

    /// Closes the batch with the commit frame of batch `number` and lends
    /// its bytes; [`BatchWriter::clear`] then starts the next one in the
    /// same buffer (a writer that appends every group commit reuses it
    /// instead of growing a fresh one each time).
    pub fn commit(&mut self, number: u64) -> &[u8] {
        push_commit(&mut self.buf, number, self.count as usize);
        &self.buf
    }

    /// Empties the batch, keeping its buffer up to [`KEPT_BUFFER_BYTES`]
    /// (a rare huge batch does not pin its memory).
    pub fn clear(&mut self) {
        self.buf.clear();
        self.buf.shrink_to(KEPT_BUFFER_BYTES);
        self.count = 0;
    }
}

/// The buffer a [`BatchWriter`] keeps between batches, at most.
pub const KEPT_BUFFER_BYTES: usize = 4 << 20;

/// How a journal ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tail {
    /// The last batch is committed and nothing follows it.
    Clean,
    /// From byte `at` on, an uncommitted or torn batch that no valid commit
    /// follows: a crash during an append. A writer truncates the file to
    /// `at` before appending again.
    Torn {
        /// Where the torn part starts (the length of the valid prefix).
        at: usize,
        /// What ends the valid prefix.
        why: &'static str,
    },
}

/// What [`scan`] read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scan<'a> {
    /// The payloads of every committed batch, in order.
    pub records: Vec<&'a [u8]>,
    /// Committed batches.
    pub batches: u64,
    /// Bytes of the file that hold the header and the committed batches.
    pub valid_len: usize,
    /// How the file ends.
    pub tail: Tail,
}

/// A whole frame with a valid checksum starting at `at`: its body and
/// where the next frame starts; else why not.
fn frame_at(bytes: &[u8], at: usize) -> Result<(&[u8], usize), &'static str> {
    let rest = &bytes[at..];
    if rest.len() < HEADER_BYTES {
        return Err("a frame header cut short");
    }
    let len_bytes = [rest[0], rest[1], rest[2], rest[3]];
    let len = u32::from_le_bytes(len_bytes) as usize;
    if len == 0 || len > MAX_FRAME_BYTES {
        return Err("a frame length out of range");
    }
    let Some(body) = rest.get(HEADER_BYTES..HEADER_BYTES + len) else {
        return Err("a frame cut short");
    };
    let crc = u32::from_le_bytes([rest[4], rest[5], rest[6], rest[7]]);
    if crc != checksum(len_bytes, body) {
        return Err("a frame whose checksum does not match");
    }
    Ok((body, at + HEADER_BYTES + len))
}

/// A commit body's batch number and count.
fn commit_of(body: &[u8]) -> Option<(u64, u32)> {
    if body.len() != COMMIT_BYTES || body[0] != COMMIT {
        return None;
    }
    let number = u64::from_le_bytes(body[1..9].try_into().ok()?);
    let count = u32::from_le_bytes(body[9..13].try_into().ok()?);
    Some((number, count))
}

/// Reads a journal: the records of its committed batches, and how it ends.
/// An empty file, or one holding part of the header, is an empty journal
/// (a crash before the header was on disk). A file that is not a journal,
/// one whose damage is followed by a committed batch, and one whose
/// batches disagree with their commits are refused with the problem named.
pub fn scan(bytes: &[u8]) -> Result<Scan<'_>, FileProblem> {
    let empty = |tail| Scan {
        records: Vec::new(),
        batches: 0,
        valid_len: 0,
        tail,
    };
    if bytes.is_empty() {
        return Ok(empty(Tail::Clean));
    }
    if bytes.len() < MAGIC.len() && MAGIC.starts_with(bytes) {
        return Ok(empty(Tail::Torn {
            at: 0,
            why: "a journal header cut short",
        }));
    }
    if !bytes.starts_with(MAGIC) {
        let found: String = bytes
            .iter()
            .take(MAGIC.len())
            .flat_map(|b| std::ascii::escape_default(*b))
            .map(char::from)
            .collect();
        return Err(FileProblem::WrongFormat {
            found,
            expected: String::from_utf8_lossy(MAGIC).into_owned(),
        });
    }
    let corrupt = |detail: String| FileProblem::Corrupt { detail };
    let mut records: Vec<&[u8]> = Vec::new();
    let mut pending: Vec<&[u8]> = Vec::new();
    let mut batches = 0u64;
    let mut valid_len = MAGIC.len();
    let mut at = MAGIC.len();
    while at < bytes.len() {
        let (body, next) = match frame_at(bytes, at) {
            Ok(f) => f,
            Err(why) => {
                // A commit of a later batch after the damage was
                // acknowledged after it. (The torn batch's own commit may
                // have reached the disk before its records: unsynced pages
                // land in any order, and its fsync never returned.)
                // Only a 13-byte body can be a commit: the search reads
                // 21 bytes per offset at most, linear in the file.
                let later = (at + 1..bytes.len()).find(|&k| {
                    bytes.get(k..k + 4) == Some(&(COMMIT_BYTES as u32).to_le_bytes()[..])
                        && frame_at(bytes, k)
                            .ok()
                            .and_then(|(b, _)| commit_of(b))
                            .is_some_and(|(number, _)| number > batches)
                });
                if let Some(later) = later {
                    return Err(corrupt(format!(
                        "journal frame at byte {at}: {why}, but a committed batch follows (its commit at byte {later}): damage to acknowledged records, not a torn tail"
                    )));
                }
                return Ok(Scan {
                    records,
                    batches,
                    valid_len,
                    tail: Tail::Torn { at: valid_len, why },
                });
            }
        };
        match body[0] {
            RECORD => pending.push(&body[1..]),
            COMMIT => {
                let Some((number, count)) = commit_of(body) else {
                    return Err(corrupt(format!(
                        "journal frame at byte {at}: a commit of {} bytes, expected {COMMIT_BYTES}",
                        body.len()
                    )));
                };
                if number != batches || count as usize != pending.len() {
                    return Err(corrupt(format!(
                        "journal commit at byte {at}: batch {number} of {count} records, but batch {batches} holds {} records",
                        pending.len()
                    )));
                }
                records.append(&mut pending);
                batches += 1;
                valid_len = next;
            }
            kind => {
                return Err(corrupt(format!(
                    "journal frame at byte {at}: unknown kind {}",
                    std::ascii::escape_default(kind)
                )))
            }
        }
        at = next;
    }
    let tail = if valid_len == bytes.len() {
        Tail::Clean
    } else {
        Tail::Torn {
            at: valid_len,
            why: "records without their commit",
        }
    };
    Ok(Scan {
        records,
        batches,
        valid_len,
        tail,
    })
}
