//! The load driver (issue: 100,000 concurrent processes, 1,000,000 events,
//! 10,000 threads): a deterministic workload fed to the sans-IO gateway in
//! group-commit batches ([`Gateway::handle_batch`]), with an adapter that
//! fails a fixed share of sends. Used by `examples/load.rs` (the measured
//! run, figures in BENCHMARKS.md) and `tests/load.rs` (a short version that
//! checks the bounds and the accounting in CI).
//!
//! Every promised completion is accounted for at the end: delivered, or
//! dead-lettered with a reason. The driver checks it and reports the peaks
//! of every bounded structure next to its limit.
//!
//! The durable state goes where a real driver sends it, on an in-memory
//! disk ([`MemFs`], so the figures are the gateway's and the backend's
//! cost, not this machine's disk): whole files by atomic replace
//! ([`Durability::Snapshots`], `FilePersist`) or group commits to the
//! journal backend with its compactions ([`Durability::Journal`],
//! `JournalFiles`). The time reported ([`Report::seconds`]) is spent in
//! the gateway and the backend; the driver's own work is in
//! [`Report::wall_seconds`] only. When every process runs (the peak),
//! recovery from that durable state is timed once, aside.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::gen::Rng;
use procroute::delivery::NotificationId;
use procroute::delta::Durability;
use procroute::driver::files::{FilePersist, FileSystem};
use procroute::driver::journal::{JournalFiles, JournalLimits};
use procroute::gateway::{Config, FileKind, Gateway, Input, Output};
use procroute::origin::{ChatType, Origin};
use procroute::persist::Persist;
use procroute::registry::{Completion, RunId};

/// An in-memory file system that keeps every byte and counts fsyncs: the
/// load run's disk. Never crashes (the simulated crashing disk is
/// [`crate::simfs::SimFs`]).
///
/// A file is a list of the chunks written to it, so appending never
/// copies what is already there (a growing buffer of hundreds of MiB would
/// measure the allocator, not the journal).
#[derive(Debug, Clone, Default)]
pub struct MemFs {
    files: std::rc::Rc<std::cell::RefCell<HashMap<PathBuf, Vec<Vec<u8>>>>>,
    fsyncs: std::rc::Rc<std::cell::Cell<u64>>,
}

impl MemFs {
    /// fsyncs of files and directories so far.
    pub fn fsyncs(&self) -> u64 {
        self.fsyncs.get()
    }
}

impl FileSystem for MemFs {
    fn len(&self, path: &Path) -> std::io::Result<Option<u64>> {
        Ok(self
            .files
            .borrow()
            .get(path)
            .map(|f| f.iter().map(|c| c.len() as u64).sum()))
    }
    fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        self.files
            .borrow()
            .get(path)
            .map(|f| f.concat())
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))
    }
    fn write(&mut self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        self.files
            .borrow_mut()
            .insert(path.to_path_buf(), vec![bytes.to_vec()]);
        Ok(())
    }
    fn write_parts(&mut self, path: &Path, parts: &[&[u8]]) -> std::io::Result<()> {
        self.files.borrow_mut().insert(
            path.to_path_buf(),
            parts.iter().map(|p| p.to_vec()).collect(),
        );
        Ok(())
    }
    fn append(&mut self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        self.files
            .borrow_mut()
            .entry(path.to_path_buf())
            .or_default()
            .push(bytes.to_vec());
        Ok(())
    }
    fn sync_file(&mut self, _: &Path) -> std::io::Result<()> {
        self.fsyncs.set(self.fsyncs.get() + 1);
        Ok(())
    }
    fn rename(&mut self, from: &Path, to: &Path) -> std::io::Result<()> {
        let mut f = self.files.borrow_mut();
        let bytes = f
            .remove(from)
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))?;
        f.insert(to.to_path_buf(), bytes);
        Ok(())
    }
    fn sync_dir(&mut self, _: &Path) -> std::io::Result<()> {
        self.fsyncs.set(self.fsyncs.get() + 1);
        Ok(())
    }
}

/// Where a load run's durable state goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Storage {
    /// Whole-file snapshots by atomic replace (`FilePersist` on [`MemFs`]).
    Snapshots,
    /// The journal backend (`JournalFiles` on [`MemFs`]).
    Journal,
    /// The SQLite backend (feature `sqlite`), on a real file in
    /// `/dev/shm` (memory, like [`MemFs`]; its fsyncs cost nothing).
    #[cfg(feature = "sqlite")]
    Sqlite,
    /// A journaling gateway whose records are dropped: the floor, what
    /// the gateway costs without any durability.
    Discard,
}

impl Storage {
    /// The gateway's durability for this storage.
    pub fn durability(self) -> Durability {
        match self {
            Storage::Snapshots => Durability::Snapshots,
            _ => Durability::Journal,
        }
    }
}

/// Where the load run's durable state goes.
enum Backend {
    Snapshots([FilePersist<MemFs>; 3]),
    Journal(Box<JournalFiles<MemFs>>),
    #[cfg(feature = "sqlite")]
    Sqlite(Box<procroute::driver::sqlite::SqliteJournal>, PathBuf),
    Discard,
}

impl Backend {
    /// Carries out one of the batch's outputs, if it is about persistence.
    fn write(&mut self, o: &Output, r: &mut Report) {
        match (o, self) {
            (Output::Persist { file, bytes }, Backend::Snapshots(files)) => {
                r.persisted_bytes += bytes.len() as u64;
                let i = match file {
                    FileKind::Store => 0,
                    FileKind::Checkpoint => 1,
                    FileKind::Delivery => 2,
                };
                files[i].store(bytes).expect("in-memory disk");
            }
            (Output::Append { records }, Backend::Journal(j)) => {
                j.append(records).expect("in-memory journal");
            }
            #[cfg(feature = "sqlite")]
            (Output::Append { records }, Backend::Sqlite(j, _)) => {
                j.append(records).expect("SQLite journal");
            }
            _ => {}
        }
    }

    /// Compacts a journal that has grown.
    fn maintain(&mut self, g: &mut Gateway) {
        match self {
            Backend::Journal(j) if j.wants_compaction() => {
                j.compact(g.compact()).expect("in-memory journal")
            }
            #[cfg(feature = "sqlite")]
            Backend::Sqlite(j, _) if j.wants_compaction() => {
                j.compact(g.compact()).expect("SQLite journal")
            }
            _ => {}
        }
    }

    /// The journal's own figures into `r`; a SQLite database is removed.
    fn account(self, r: &mut Report) {
        let stats = match &self {
            Backend::Journal(j) => Some(j.stats()),
            #[cfg(feature = "sqlite")]
            Backend::Sqlite(j, _) => Some(j.stats()),
            _ => None,
        };
        if let Some(s) = stats {
            r.persisted_bytes = s.appended_bytes + s.compacted_bytes;
            r.compactions = s.compactions;
        }
        #[cfg(feature = "sqlite")]
        if let Backend::Sqlite(j, path) = self {
            r.fsyncs = j.stats().fsyncs;
            drop(j);
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
            }
        }
    }

    fn new(storage: Storage, fs: &MemFs, config: &Config) -> Backend {
        match storage {
            Storage::Snapshots => Backend::Snapshots(
                ["store.json", "checkpoint.json", "delivery.json"]
                    .map(|f| FilePersist::with_fs(Path::new("/gw").join(f), fs.clone())),
            ),
            Storage::Journal => Backend::Journal(Box::new(
                JournalFiles::open(
                    "/gw",
                    fs.clone(),
                    JournalLimits::default(),
                    &config.limits,
                    &config.delivery,
                )
                .expect("an empty in-memory journal opens")
                .0,
            )),
            #[cfg(feature = "sqlite")]
            Storage::Sqlite => {
                let dir = if Path::new("/dev/shm").is_dir() {
                    PathBuf::from("/dev/shm")
                } else {
                    std::env::temp_dir()
                };
                let path = dir.join(format!("procroute-load-{}.db", std::process::id()));
                for suffix in ["", "-wal", "-shm"] {
                    let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
                }
                let (j, _) = procroute::driver::sqlite::SqliteJournal::open(
                    &path,
                    JournalLimits::default(),
                    &config.limits,
                    &config.delivery,
                )
                .expect("a new SQLite database opens");
                Backend::Sqlite(Box::new(j), path)
            }
            Storage::Discard => Backend::Discard,
        }
    }
}

#[derive(Debug, Clone, Copy)]
/// The load run's shape (`examples/load.rs`).
pub struct Workload {
    /// Processes started.
    pub processes: usize,
    /// At most this many run at once (a new one starts when the oldest
    /// ends); `processes` or more: all of them at once.
    pub concurrent: usize,
    /// Process events (output chunks and ends) in all.
    pub events: usize,
    /// Threads (distinct origins) the processes start from.
    pub threads: usize,
    /// Inputs per group commit.
    pub batch: usize,
    /// One send in this many fails (the adapter is flaky), 0 = never.
    pub fail_one_in: usize,
    /// Seed of the generated workload.
    pub seed: u64,
    /// Where the durable state goes.
    pub storage: Storage,
}

#[derive(Debug, Clone, Default)]
/// What a load run measured.
pub struct Report {
    /// Inputs handed to the gateway.
    pub inputs: u64,
    /// Process events among them.
    pub events: u64,
    /// Group commits.
    pub batches: u64,
    /// Bytes written to the disk (snapshot files; or journal appends,
    /// bases and fresh journals).
    pub persisted_bytes: u64,
    /// fsyncs of files and directories.
    pub fsyncs: u64,
    /// Group commits that persisted something (a file written, records
    /// appended): the others had nothing durable to change.
    pub durable_commits: u64,
    /// Journal compactions.
    pub compactions: u64,
    /// Seconds to recover from the durable state when every process ran
    /// (reading it, rebuilding the gateway), and how many processes then
    /// ran.
    pub recovery: Option<(f64, usize)>,
    /// Notifications offered to the adapter.
    pub sends: u64,
    /// Sends that succeeded.
    pub delivered: u64,
    /// Sends that failed (and were retried).
    pub failed_sends: u64,
    /// Completions owed (notify-on-exit processes that ended).
    pub completions_promised: u64,
    /// Completions delivered.
    pub completions_delivered: u64,
    /// Completions dead-lettered.
    pub completions_dead: u64,
    /// Watch matches delivered.
    pub watch_delivered: u64,
    /// Most processes running at once.
    pub peak_running: usize,
    /// Most notifications queued at once.
    pub peak_queued: usize,
    /// Dead letters in all.
    pub dead_letters: u64,
    /// Seconds spent in the gateway and the backend: handling the
    /// batches, writing their durable state, compacting. The driver's own
    /// work (making the inputs, reading the outputs, its bookkeeping) and
    /// the recovery timed aside are left out.
    pub seconds: f64,
    /// Wall time of the whole run (the driver's work included, the
    /// recovery timed aside left out), in seconds.
    pub wall_seconds: f64,
    /// `(what, limit, peak)` for every bounded structure.
    pub bounds: Vec<(&'static str, usize, usize)>,
    /// Promised completions neither delivered nor dead-lettered (must be 0).
    pub unaccounted: u64,
    /// Notifications still queued when the drain gave up after
    /// [`MAX_DRAIN_TICKS`] (must be 0).
    pub undrained: usize,
}

/// Ticks the final drain waits for the delivery queue to empty. Every
/// queued notification is delivered or dead-lettered after at most
/// `max_attempts` sends (DELIVER-4), each retry due within minutes; ten
/// thousand 61-second ticks (a week of virtual time) is far more than that
/// needs. A queue still holding notifications then is a bug, and the run
/// reports it (`undrained`) instead of spinning forever.
pub const MAX_DRAIN_TICKS: u32 = 10_000;

fn origin(i: usize) -> Origin {
    const PLATFORMS: [&str; 5] = ["telegram", "slack", "discord", "matrix", "signal"];
    let p = PLATFORMS[i % PLATFORMS.len()];
    let (chat_type, chat, thread) = match p {
        "telegram" => (
            ChatType::Group,
            format!("-100{}", 1_000_000 + i),
            Some(format!("{}", i % 97)),
        ),
        "slack" => (
            ChatType::Channel,
            format!("C{i:08X}"),
            Some(format!("17000{i}.000100")),
        ),
        "discord" => (
            ChatType::Thread,
            format!("{}", 900_000_000_000u64 + i as u64),
            None,
        ),
        "matrix" => (ChatType::Group, format!("!room{i}:matrix.org"), None),
        _ => (ChatType::Dm, format!("+1555{i:07}"), None),
    };
    let mut o = Origin::new(p, chat_type, &chat).expect("origin");
    if let Some(t) = thread {
        o = o.with_thread(&t).expect("thread");
    }
    o.with_user(&format!("u{}", i % 5000)).expect("user")
}

/// A set of run ids, as bits indexed by id.
#[derive(Default)]
struct RunSet(Vec<u64>);

impl RunSet {
    /// Adds `run`; whether it was new.
    fn insert(&mut self, run: RunId) -> bool {
        let (word, bit) = ((run.0 / 64) as usize, run.0 % 64);
        if word >= self.0.len() {
            self.0.resize(word + 1, 0);
        }
        let new = self.0[word] & (1 << bit) == 0;
        self.0[word] |= 1 << bit;
        new
    }

    fn contains(&self, run: &RunId) -> bool {
        let (word, bit) = ((run.0 / 64) as usize, run.0 % 64);
        self.0.get(word).is_some_and(|w| w & (1 << bit) != 0)
    }
}

/// Runs the workload; returns the figures.
///
/// Each round fills a batch of inputs (`Load::fill`), commits it — the
/// gateway's batch, then what makes it safe, durably — (`Load::commit`),
/// carries out the adapter's part of its outputs (`Load::answer`) and
/// samples the peaks (`Load::sample`), until every process has run and
/// the queues have drained.
pub fn run(w: Workload) -> Report {
    let started = Instant::now();
    let mut load = Load::new(w);
    loop {
        load.fill();
        if load.pending.is_empty() && !load.drain_tick() {
            break;
        }
        let out = load.commit();
        load.now += 10;
        // Every spawn of the batch was answered (run id or rejection).
        load.unacked_spawns = 0;
        load.answer(out);
        load.sample();
    }
    load.finish(started)
}

/// A load run in progress: the gateway, its backend, the workload's
/// driver state and the figures so far.
struct Load {
    w: Workload,
    rng: Rng,
    config: Config,
    g: Gateway,
    fs: MemFs,
    backend: Backend,
    r: Report,
    /// Time left out of the run's (the recovery, timed alone).
    excluded: std::time::Duration,
    now: u64,
    threads: Vec<Origin>,
    pending: Vec<Input>,
    /// Running runs, oldest first: outputs pick one at random, exits take
    /// the oldest.
    live: std::collections::VecDeque<RunId>,
    unacked_spawns: usize,
    concurrent: usize,
    outputs_total: usize,
    outputs: usize,
    /// The driver's own bookkeeping, indexed by run id (issued from 1 up,
    /// one per spawn): a set of 100,000 runs would put the driver's cache
    /// misses into the gateway's figure.
    finished: RunSet,
    spawned: usize,
    seen_completion: RunSet,
    send_count: u64,
    drain_ticks: u32,
}

impl Load {
    fn new(w: Workload) -> Load {
        let config = Config {
            durability: w.storage.durability(),
            ..Config::default()
        };
        let fs = MemFs::default();
        let backend = Backend::new(w.storage, &fs, &config);
        let threads: Vec<Origin> = (0..w.threads.max(1)).map(origin).collect();
        let pending = threads
            .iter()
            .map(|o| Input::Message { origin: o.clone() })
            .collect();
        Load {
            rng: Rng::new(w.seed),
            g: Gateway::new(config.clone()),
            config,
            fs,
            backend,
            r: Report::default(),
            excluded: std::time::Duration::ZERO,
            now: 0,
            threads,
            pending,
            live: Default::default(),
            unacked_spawns: 0,
            concurrent: w.concurrent.clamp(1, w.processes.max(1)),
            outputs_total: w.events.saturating_sub(w.processes),
            outputs: 0,
            finished: RunSet::default(),
            spawned: 0,
            seen_completion: RunSet::default(),
            send_count: 0,
            drain_ticks: 0,
            w,
        }
    }

    /// Fills the batch: a spawn while fewer than `concurrent` run, else
    /// output while the outputs keep pace with the spawns (every run gets
    /// the same share, whatever the concurrency), else the oldest run
    /// exits.
    fn fill(&mut self) {
        let w = self.w;
        while self.pending.len() < w.batch {
            if self.spawned < w.processes && self.live.len() + self.unacked_spawns < self.concurrent
            {
                self.spawn();
            } else if !self.live.is_empty()
                && self.outputs < self.outputs_total
                && self.outputs * w.processes.max(1) < self.outputs_total * self.spawned
            {
                self.output();
            } else if let Some(run) = self.live.pop_front() {
                self.finished.insert(run);
                self.pending.push(Input::Finished {
                    run,
                    completion: Completion::Exited {
                        code: (run.0 % 3) as i32,
                    },
                });
                self.r.completions_promised += 1;
                self.r.events += 1;
            } else {
                break;
            }
        }
    }

    fn spawn(&mut self) {
        let spawned = self.spawned;
        let home = &self.threads[spawned % self.threads.len()];
        self.pending.push(Input::Spawn {
            origin: home.clone(),
            process_id: format!("job{spawned}"),
            command: format!("make -j4 target{spawned}"),
            watch_patterns: if spawned % 2 == 0 {
                vec!["ERROR".into()]
            } else {
                vec![]
            },
            notify_on_exit: true,
        });
        self.spawned += 1;
        self.unacked_spawns += 1;
    }

    fn output(&mut self) {
        let run = self.live[self.rng.below(self.live.len())];
        let hit = self.rng.chance(5);
        self.pending.push(Input::Output {
            run,
            chunk: format!(
                "[{}] compiling unit {}{}\n",
                self.r.events,
                self.rng.below(1000),
                if hit {
                    " ERROR: undefined reference"
                } else {
                    ""
                }
            ),
        });
        self.outputs += 1;
        self.r.events += 1;
    }

    /// Quiescence: lets retries come due until nothing is queued; `false`
    /// when the run is over.
    fn drain_tick(&mut self) -> bool {
        if self.g.delivery().queued() == 0 || self.drain_ticks == MAX_DRAIN_TICKS {
            return false;
        }
        self.drain_ticks += 1;
        self.now += 61_000;
        self.pending.push(Input::Tick);
        true
    }

    /// One group commit: the gateway's batch, then what makes it safe,
    /// durable before anything else; compaction when the journal has grown.
    fn commit(&mut self) -> Vec<Output> {
        let inputs = std::mem::take(&mut self.pending);
        let r = &mut self.r;
        r.inputs += inputs.len() as u64;
        r.batches += 1;
        let busy = Instant::now();
        let out = self.g.handle_batch(self.now, inputs);
        if out.iter().any(|o| match o {
            Output::Persist { .. } => true,
            Output::Append { records } => !records.is_empty(),
            _ => false,
        }) {
            r.durable_commits += 1;
        }
        for o in &out {
            self.backend.write(o, r);
        }
        self.backend.maintain(&mut self.g);
        self.r.seconds += busy.elapsed().as_secs_f64();
        out
    }

    /// The adapter's part: spawned runs go live, sends are answered
    /// (one in `fail_one_in` fails) and counted.
    fn answer(&mut self, out: Vec<Output>) {
        for o in out {
            match o {
                Output::Spawned { run, .. } => self.live.push_back(run),
                Output::Send(n) => self.send(&n),
                _ => {}
            }
        }
    }

    fn send(&mut self, n: &procroute::delivery::Notification) {
        let r = &mut self.r;
        r.sends += 1;
        self.send_count += 1;
        let fail = self.w.fail_one_in > 0 && self.send_count % self.w.fail_one_in as u64 == 0;
        if fail {
            r.failed_sends += 1;
        } else {
            r.delivered += 1;
            if n.text.contains("matched watch pattern") {
                r.watch_delivered += 1;
            }
            if let NotificationId::Process { run, .. } = n.id {
                if self.finished.contains(&run)
                    && !n.text.contains("matched watch pattern")
                    && !n.text.contains("watch patterns disabled")
                    && self.seen_completion.insert(run)
                {
                    r.completions_delivered += 1;
                }
            }
        }
        self.pending.push(Input::Sent {
            id: n.id,
            error: fail.then(|| "adapter: 503".to_owned()),
        });
    }

    /// Peaks, the one recovery timing (when the running set first fills),
    /// and time passing now and then.
    fn sample(&mut self) {
        let running = self.g.registry().running_count();
        self.r.peak_running = self.r.peak_running.max(running);
        if self.r.recovery.is_none() && running == self.concurrent {
            // Timed alone, and left out of the run's time.
            let aside = Instant::now();
            self.r.recovery = Some((
                recover(&self.config, &self.fs, &self.backend, self.now),
                running,
            ));
            self.excluded += aside.elapsed();
        }
        self.r.peak_queued = self.r.peak_queued.max(self.g.delivery().queued());
        if self.r.batches % 64 == 0 {
            // Time passes now and then: cooldowns end, retries come due.
            self.now += 16_000;
            self.pending.push(Input::Tick);
        }
    }

    /// The figures: dead letters and what became of every promised
    /// completion, the backend's own counts, the bounds held.
    fn finish(mut self, started: Instant) -> Report {
        let mut r = std::mem::take(&mut self.r);
        for d in self.g.delivery().dead_letters() {
            r.dead_letters += 1;
            if let NotificationId::Process { run, .. } = d.notification.id {
                if self.finished.contains(&run)
                    && !d.notification.text.contains("matched watch pattern")
                    && self.seen_completion.insert(run)
                {
                    r.completions_dead += 1;
                }
            }
        }
        r.unaccounted = r.completions_promised - r.completions_delivered - r.completions_dead;
        r.fsyncs = self.fs.fsyncs();
        self.backend.account(&mut r);
        r.undrained = self.g.delivery().queued();
        let dl = Config::default().delivery;
        let lim = Config::default().limits;
        r.bounds = vec![
            ("running processes", lim.max_processes, r.peak_running),
            ("queued notifications", dl.queue_max, r.peak_queued),
            (
                "dead letters kept",
                dl.dead_letter_max,
                self.g.delivery().dead_letters().count(),
            ),
        ];
        r.wall_seconds = (started.elapsed() - self.excluded).as_secs_f64();
        r
    }
}

/// Recovery from the durable state on `fs` as it is now (a copy, so the
/// run goes on): read the files (the journal: its base and records),
/// rebuild the gateway, every process alive. Seconds.
fn recover(config: &Config, fs: &MemFs, backend: &Backend, now: u64) -> f64 {
    let copy = MemFs {
        files: std::rc::Rc::new(std::cell::RefCell::new(fs.files.borrow().clone())),
        fsyncs: Default::default(),
    };
    let started = Instant::now();
    let files: [Option<Vec<u8>>; 3] = match backend {
        Backend::Discard => return 0.0,
        #[cfg(feature = "sqlite")]
        Backend::Sqlite(_, path) => {
            // Another connection reads what the first one committed.
            let (_, opened) = procroute::driver::sqlite::SqliteJournal::open(
                path,
                JournalLimits::default(),
                &config.limits,
                &config.delivery,
            )
            .expect("the load run's database opens");
            opened.files.map(Some)
        }
        Backend::Snapshots(_) => ["store.json", "checkpoint.json", "delivery.json"]
            .map(|f| copy.read(&Path::new("/gw").join(f)).ok()),
        Backend::Journal(_) => {
            let (_, opened) = JournalFiles::open(
                "/gw",
                copy,
                JournalLimits::default(),
                &config.limits,
                &config.delivery,
            )
            .expect("the load run's journal opens");
            opened.files.map(Some)
        }
    };
    let [s, c, d] = files;
    let (g, _) = Gateway::recover(
        config.clone(),
        s.as_deref(),
        c.as_deref(),
        d.as_deref(),
        now,
        |_, _| true,
    )
    .expect("the load run's state recovers");
    let seconds = started.elapsed().as_secs_f64();
    drop(g);
    seconds
}

/// Peak resident memory of this process, from `/proc/self/status` (Linux).
pub fn peak_rss_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}
