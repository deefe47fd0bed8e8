//! A fresh folder under the system's temporary directory that is removed when
//! the guard drops, so test runs do not pile files up on the machine (a sqlite
//! run writes about 170 MB; CI once ran out of disk on what earlier runs left).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

pub struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    /// `procroute-<what>-<pid>-<n>`: unique per process and per call, emptied first.
    pub fn new(what: &str) -> Scratch {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("procroute-{what}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create the scratch folder");
        Scratch { dir }
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // Kept when the test failed, to look at; removed otherwise.
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}
