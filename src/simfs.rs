//! A simulated disk for crash-consistency tests (spec STORE-4): every
//! write, fsync and rename is an operation that can be the crash point, and
//! a crash keeps only what a POSIX file system guarantees.
//!
//! The model, deliberately pessimistic:
//! - file contents written but not fsynced may be lost, kept, *torn*
//!   (any prefix survives; of an append, any prefix of what was appended)
//!   or torn with *garbage* after the cut (pages allocated, never
//!   written);
//! - directory changes (create, rename) not covered by a directory fsync may
//!   be lost, but in order: a random prefix of them survives (journaled
//!   metadata);
//! - once fsynced, contents and entries survive.
//!
//! [`SimFs`] is a cheap handle (`Rc`); the clones one test hands to several
//! [`procroute::driver::files::FilePersist`]s share one disk.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::gen::Rng;
use procroute::driver::files::FileSystem;

#[derive(Debug, Clone, Default)]
struct Inode {
    durable: Vec<u8>,
    volatile: Vec<u8>,
}

#[derive(Debug, Clone)]
enum DirOp {
    Link(PathBuf, usize),
    Rename(PathBuf, PathBuf),
}

#[derive(Debug, Default)]
struct Disk {
    inodes: Vec<Inode>,
    /// Entries as the running system sees them.
    live: BTreeMap<PathBuf, usize>,
    /// Entries as of the last directory fsync.
    durable: BTreeMap<PathBuf, usize>,
    /// Directory changes since the last directory fsync, in order.
    pending: Vec<DirOp>,
    ops: usize,
    crash_at: Option<usize>,
    crashed: bool,
    /// Test hook: fsync returns Ok but makes nothing durable (a lying disk),
    /// to show the crash property catches a broken durability protocol.
    lying_fsync: bool,
}

/// A shared handle to one simulated disk.
#[derive(Debug, Clone, Default)]
pub struct SimFs(Rc<RefCell<Disk>>);

fn crash_error() -> io::Error {
    io::Error::other("simulated crash: the disk is gone")
}

impl SimFs {
    /// An empty disk that keeps every write, until [`SimFs::crash_after`]
    /// sets a crash point.
    pub fn new() -> SimFs {
        SimFs::default()
    }

    /// A disk whose fsyncs are no-ops that report success.
    pub fn lying() -> SimFs {
        let fs = SimFs::default();
        fs.0.borrow_mut().lying_fsync = true;
        fs
    }

    /// Mutating operations performed so far (the crash-point counter).
    pub fn ops(&self) -> usize {
        self.0.borrow().ops
    }

    /// The `n`-th mutating operation from now on (0 = the next one) fails,
    /// and so does everything after it, until [`SimFs::crash`].
    pub fn crash_after(&self, n: usize) {
        let mut d = self.0.borrow_mut();
        d.crash_at = Some(d.ops.saturating_add(n));
    }

    /// Whether the disk has crashed (every later call fails).
    pub fn has_crashed(&self) -> bool {
        self.0.borrow().crashed
    }

    /// The machine restarts: only what a crash may keep survives, chosen by
    /// `rng`; then the disk works again.
    pub fn crash(&self, rng: &mut Rng) {
        let mut d = self.0.borrow_mut();
        let keep = rng.below(d.pending.len() + 1);
        let mut entries = d.durable.clone();
        for op in d.pending.iter().take(keep) {
            match op {
                DirOp::Link(p, ino) => {
                    entries.insert(p.clone(), *ino);
                }
                DirOp::Rename(from, to) => {
                    if let Some(ino) = entries.remove(from) {
                        entries.insert(to.clone(), ino);
                    }
                }
            }
        }
        for inode in &mut d.inodes {
            if inode.volatile != inode.durable {
                // What was fsynced survives: an append tears only what it
                // appended.
                let base = if inode.volatile.starts_with(&inode.durable) {
                    inode.durable.len()
                } else {
                    0
                };
                let len = inode.volatile.len();
                let cut = base + rng.below(len - base + 1);
                inode.durable =
                    match rng.below(4) {
                        0 => inode.durable.clone(),
                        1 => inode.volatile.clone(),
                        2 => inode.volatile[..cut].to_vec(),
                        _ => {
                            let mut torn = inode.volatile[..cut].to_vec();
                            let garbage = rng.below(len - cut + 1);
                            let zeros = rng.chance(50);
                            torn.extend((0..garbage).map(|_| {
                                if zeros {
                                    0
                                } else {
                                    rng.below(256) as u8
                                }
                            }));
                            torn
                        }
                    };
            }
            inode.volatile = inode.durable.clone();
        }
        d.live = entries.clone();
        d.durable = entries;
        d.pending.clear();
        d.crash_at = None;
        d.crashed = false;
    }

    fn step(&self) -> io::Result<std::cell::RefMut<'_, Disk>> {
        let mut d = self.0.borrow_mut();
        if d.crashed || d.crash_at.is_some_and(|at| d.ops >= at) {
            d.crashed = true;
            return Err(crash_error());
        }
        d.ops += 1;
        Ok(d)
    }
}

impl FileSystem for SimFs {
    fn len(&self, path: &Path) -> io::Result<Option<u64>> {
        let d = self.0.borrow();
        Ok(d.live.get(path).map(|&i| d.inodes[i].volatile.len() as u64))
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        let d = self.0.borrow();
        d.live
            .get(path)
            .map(|&i| d.inodes[i].volatile.clone())
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
    }

    fn write(&mut self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        let mut d = self.step()?;
        match d.live.get(path).copied() {
            Some(i) => d.inodes[i].volatile = bytes.to_vec(),
            None => {
                let i = d.inodes.len();
                d.inodes.push(Inode {
                    durable: Vec::new(),
                    volatile: bytes.to_vec(),
                });
                d.live.insert(path.to_path_buf(), i);
                d.pending.push(DirOp::Link(path.to_path_buf(), i));
            }
        }
        Ok(())
    }

    fn append(&mut self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        let mut d = self.step()?;
        match d.live.get(path).copied() {
            Some(i) => d.inodes[i].volatile.extend_from_slice(bytes),
            None => {
                let i = d.inodes.len();
                d.inodes.push(Inode {
                    durable: Vec::new(),
                    volatile: bytes.to_vec(),
                });
                d.live.insert(path.to_path_buf(), i);
                d.pending.push(DirOp::Link(path.to_path_buf(), i));
            }
        }
        Ok(())
    }

    fn sync_file(&mut self, path: &Path) -> io::Result<()> {
        let mut d = self.step()?;
        let i = *d
            .live
            .get(path)
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
        if !d.lying_fsync {
            d.inodes[i].durable = d.inodes[i].volatile.clone();
        }
        Ok(())
    }

    fn rename(&mut self, from: &Path, to: &Path) -> io::Result<()> {
        let mut d = self.step()?;
        let i = d
            .live
            .remove(from)
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
        d.live.insert(to.to_path_buf(), i);
        d.pending
            .push(DirOp::Rename(from.to_path_buf(), to.to_path_buf()));
        Ok(())
    }

    fn sync_dir(&mut self, _dir: &Path) -> io::Result<()> {
        let mut d = self.step()?;
        if !d.lying_fsync {
            d.durable = d.live.clone();
            d.pending.clear();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use procroute::driver::files::FilePersist;
    use procroute::persist::Persist;

    /// At every crash point of one replace, under many crash images, the
    /// file reads back as the old bytes or the new ones (STORE-4).
    #[test]
    fn store_4_atomic_replace_survives_every_crash_point() {
        for point in 0..4 {
            for seed in 0..200 {
                let fs = SimFs::new();
                let mut f = FilePersist::with_fs("/d/store.json", fs.clone());
                f.store(b"old contents").expect("first write");
                fs.crash_after(point);
                assert!(f.store(b"new contents, longer").is_err());
                fs.crash(&mut Rng::new(seed));
                let got = f.load().expect("loads");
                assert!(
                    got.as_deref() == Some(b"old contents".as_slice())
                        || got.as_deref() == Some(b"new contents, longer".as_slice()),
                    "point {point} seed {seed}: {got:?}"
                );
            }
        }
    }

    #[test]
    fn a_lying_fsync_is_caught_by_the_same_check() {
        let mut torn = 0;
        for seed in 0..200 {
            let fs = SimFs::lying();
            let mut f = FilePersist::with_fs("/d/store.json", fs.clone());
            f.store(b"old contents").expect("first write");
            f.store(b"new contents, longer").expect("second write");
            fs.crash(&mut Rng::new(seed));
            let got = f.load().expect("loads");
            if got.as_deref() != Some(b"old contents".as_slice())
                && got.as_deref() != Some(b"new contents, longer".as_slice())
            {
                torn += 1;
            }
        }
        assert!(torn > 0, "a disk that never syncs must tear or lose files");
    }
}
