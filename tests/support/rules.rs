#![allow(dead_code, unused_imports)]
//! Helpers and imports shared by the per-chapter rule tests
//! (`tests/rules_*.rs`).

#[path = "scratch.rs"]
mod scratch;
pub use scratch::Scratch;

pub use procroute::delivery::{
    DeliveryEngine, DeliveryLimits, Enqueued, Notification, NotificationId,
};
pub use procroute::driver::files::FilePersist;
pub use procroute::gateway::{Config, FileKind, Gateway, Input, Output};
pub use procroute::persist::{FileProblem, Persist, PersistError};
pub use procroute::registry::{Completion, EventKind, Limits, Registry, RunId, SpawnRequest};
pub use procroute::router::{self, Destination, DropReason, RouteSource};
pub use procroute::store::{Lane, SessionStore, StoreError};
pub use procroute::{ChatType, Origin, Policy};

pub fn topic(thread: &str, user: &str) -> Origin {
    Origin::new("telegram", ChatType::Group, "-100")
        .and_then(|o| o.with_thread(thread))
        .and_then(|o| o.with_user(user))
        .expect("valid")
}

pub fn req(origin: &Origin, id: &str, watch: &[&str], notify: bool) -> SpawnRequest {
    SpawnRequest {
        process_id: id.to_owned(),
        origin: origin.clone(),
        lane: Lane::of(origin, &Policy::default()),
        command: format!("run {id}"),
        watch_patterns: watch.iter().map(|s| (*s).to_owned()).collect(),
        notify_on_exit: notify,
    }
}

/// A notify-on-exit spawn from `origin` (the command is irrelevant here).
pub fn spawn(origin: Origin, process_id: String, watch_patterns: Vec<String>) -> Input {
    Input::Spawn {
        origin,
        process_id,
        command: "job".into(),
        watch_patterns,
        notify_on_exit: true,
    }
}

pub fn sends(out: &[Output]) -> Vec<&Notification> {
    out.iter()
        .filter_map(|o| match o {
            Output::Send(n) => Some(n),
            _ => None,
        })
        .collect()
}

pub fn run_of(out: &[Output]) -> RunId {
    out.iter()
        .find_map(|o| match o {
            Output::Spawned { run, .. } => Some(*run),
            _ => None,
        })
        .expect("spawned")
}

/// `store.json` in a fresh folder, removed with the returned guard.
pub fn temp(name: &str) -> (Scratch, std::path::PathBuf) {
    let dir = Scratch::new(&format!("rules-{name}"));
    let path = dir.join("store.json");
    (dir, path)
}

pub fn note(run: u64, seq: u32, dest: &Origin) -> Notification {
    Notification {
        id: NotificationId::Process {
            run: RunId(run),
            seq,
        },
        kind: procroute::delivery::NoticeKind::WatchMatch,
        destination: Destination::of(dest),
        text: format!("n{run}.{seq}"),
    }
}

/// The excerpt a naive reading of PROC-3 gives: the longest run of whole
/// leading lines (at most `max_lines`) whose joined text fits
/// `max_chars`; if not even the first fits, its first `max_chars` chars.
pub fn naive_excerpt(lines: &[&str], max_lines: usize, max_chars: usize) -> String {
    let lines = &lines[..lines.len().min(max_lines)];
    for k in (1..=lines.len()).rev() {
        let joined = lines[..k].join("\n");
        if joined.chars().count() <= max_chars {
            return joined;
        }
    }
    lines
        .first()
        .map(|l| l.chars().take(max_chars).collect())
        .unwrap_or_default()
}
