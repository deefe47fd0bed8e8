//! DRIVER-1 end to end: real `sh -c` processes started from three threads
//! on two platforms while foreground messages keep arriving elsewhere;
//! every notification lands in the thread that started its process.

use std::time::Duration;

use procroute::delivery::Notification;
use procroute::driver::files::FilePersist;
use procroute::driver::{Adapter, Files, Runtime};
use procroute::gateway::{Config, Input};
use procroute::router::Destination;
use procroute::{ChatType, Origin};

#[derive(Default)]
struct Recorder {
    sent: Vec<Notification>,
}

impl Adapter for Recorder {
    fn send(&mut self, n: &Notification) -> Result<(), String> {
        self.sent.push(n.clone());
        Ok(())
    }
}

fn topic(chat: &str, thread: &str, user: &str) -> Origin {
    Origin::new("telegram", ChatType::Group, chat)
        .and_then(|o| o.with_thread(thread))
        .and_then(|o| o.with_user(user))
        .expect("valid origin")
}

#[test]
fn real_processes_notify_their_own_threads() {
    let dir = std::env::temp_dir().join(format!("procroute-e2e-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let files = Files {
        store: Box::new(FilePersist::new(dir.join("store.json"))),
        checkpoint: Box::new(FilePersist::new(dir.join("processes.json"))),
        delivery: Box::new(FilePersist::new(dir.join("delivery.json"))),
    };
    let mut rt = Runtime::new(Config::default(), Recorder::default(), files);

    let a = topic("-1001234567890", "42", "alice");
    let b = topic("-1001234567890", "43", "bob");
    let c = Origin::new("slack", ChatType::Group, "C0123ABC")
        .and_then(|o| o.with_thread("1700000000.123456"))
        .and_then(|o| o.with_user("U77"))
        .expect("valid");
    let foreground = Origin::new("slack", ChatType::Dm, "D0456").expect("valid");

    for o in [&a, &b, &c] {
        rt.input(Input::Message { origin: o.clone() });
    }
    let ra = rt
        .spawn_shell(
            a.clone(),
            "proc_a",
            "echo starting; sleep 0.2; echo SERVER READY; sleep 0.2; exit 0",
            vec!["READY".into()],
            true,
        )
        .expect("spawn a");
    let rb = rt
        .spawn_shell(
            b.clone(),
            "proc_b",
            "printf 'compiling\\nBUILD FAILED\\n'; exit 3",
            vec![],
            true,
        )
        .expect("spawn b");
    let rc = rt
        .spawn_shell(
            c.clone(),
            "proc_c",
            "sleep 0.3; echo tests passed",
            vec![],
            true,
        )
        .expect("spawn c");

    // Foreground traffic in another thread, turns starting and ending there,
    // while the processes run.
    for _ in 0..10 {
        rt.input(Input::TurnStarted {
            origin: foreground.clone(),
        });
        rt.input(Input::Message {
            origin: foreground.clone(),
        });
        rt.pump(Duration::from_millis(40), Duration::from_millis(10));
        rt.input(Input::TurnEnded {
            origin: foreground.clone(),
        });
    }
    assert!(
        rt.run_until_idle(Duration::from_secs(20)),
        "processes did not finish"
    );

    let sent = &rt.adapter().sent;
    let to = |o: &Origin| -> Vec<&Notification> {
        sent.iter()
            .filter(|n| n.destination == Destination::of(o))
            .collect()
    };
    assert!(
        to(&foreground).is_empty(),
        "foreground got {:?}",
        to(&foreground)
    );
    let (na, nb, nc) = (to(&a), to(&b), to(&c));
    assert_eq!(na.len(), 2, "a: watch match + completion: {na:?}");
    assert!(
        na[0].text.contains("matched watch pattern \"READY\"")
            && na[0].text.contains("| SERVER READY")
    );
    assert!(na[1].text.contains("proc_a completed normally"));
    assert_eq!(nb.len(), 1, "{nb:?}");
    assert!(
        nb[0].text.contains("proc_b exited with code 3") && nb[0].text.contains("| BUILD FAILED")
    );
    assert_eq!(nc.len(), 1, "{nc:?}");
    assert!(
        nc[0].text.contains("proc_c completed normally") && nc[0].text.contains("| tests passed")
    );
    // No output of one process in another's thread.
    for n in &na {
        assert!(!n.text.contains("BUILD") && !n.text.contains("tests passed"));
    }
    assert_eq!(sent.len(), 4);
    let _ = (ra, rb, rc);
    assert!(rt.persist_errors.is_empty(), "{:?}", rt.persist_errors);
    assert!(dir.join("processes.json").exists() && dir.join("store.json").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// DRIVER-1: kill reaches the whole process group.
#[test]
fn a_killed_process_reports_to_its_own_thread() {
    let files = Files {
        store: Box::new(procroute::persist::MemoryPersist::default()),
        checkpoint: Box::new(procroute::persist::MemoryPersist::default()),
        delivery: Box::new(procroute::persist::MemoryPersist::default()),
    };
    let mut rt = Runtime::new(Config::default(), Recorder::default(), files);
    let a = topic("-100", "7", "u");
    let run = rt
        .spawn_shell(a.clone(), "proc_kill", "sleep 30", vec![], true)
        .expect("spawn");
    rt.pump(Duration::from_millis(50), Duration::from_millis(10));
    rt.kill(run);
    assert!(rt.run_until_idle(Duration::from_secs(10)));
    let sent = &rt.adapter().sent;
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].destination, Destination::of(&a));
    assert!(
        sent[0].text.contains("proc_kill was killed"),
        "{}",
        sent[0].text
    );
}

/// The runtime on the journal backend: a real process's notification is
/// delivered, and the journal, opened again after the runtime is gone,
/// holds it as delivered (nothing left to send, no run left running).
#[test]
fn a_runtime_on_the_journal_persists_what_it_delivers() {
    use procroute::delta::Durability;
    use procroute::driver::files::RealFs;
    use procroute::driver::journal::{JournalFiles, JournalLimits};
    use procroute::gateway::Gateway;

    let dir = std::env::temp_dir().join(format!("procroute-e2e-journal-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let config = Config {
        durability: Durability::Journal,
        ..Config::default()
    };
    let open = || {
        JournalFiles::open(
            &dir,
            RealFs,
            JournalLimits::default(),
            &config.limits,
            &config.delivery,
        )
        .expect("journal opens")
    };
    let recover = |files: [Vec<u8>; 3]| {
        let [s, c, d] = files;
        Gateway::recover(config.clone(), Some(&s), Some(&c), Some(&d), 0, |_, _| {
            false
        })
        .expect("recovers")
    };
    let (journal, _) = open();
    let mut rt = Runtime::recover(config.clone(), Recorder::default(), journal, |_, _| false)
        .expect("an empty journal recovers");
    let a = topic("-1001234567890", "42", "alice");
    rt.input(Input::Message { origin: a.clone() });
    rt.spawn_shell(a.clone(), "proc_a", "echo done", vec![], true)
        .expect("spawn");
    assert!(rt.run_until_idle(Duration::from_secs(10)), "never idle");
    assert!(rt.persist_errors.is_empty(), "{:?}", rt.persist_errors);
    let sent: Vec<_> = rt.adapter().sent.iter().map(|n| n.id).collect();
    assert_eq!(sent.len(), 1, "{sent:?}");
    drop(rt);

    let (_, opened) = open();
    assert!(opened.records > 0);
    let (g, out) = recover(opened.files);
    assert!(out.is_empty(), "recovery had something to do: {out:?}");
    assert!(
        g.delivery().was_delivered(&sent[0]),
        "the delivery was not durable"
    );
    assert_eq!(g.delivery().queued(), 0);
    assert_eq!(g.registry().running_count(), 0);

    // A compaction on the real disk (the base written in parts around
    // the images) opens again as exactly the compacted images.
    let mut g = g;
    let images = g.compact();
    let (mut journal, _) = open();
    journal.compact(images.clone()).expect("compacts");
    let (_, reopened) = open();
    assert!(reopened.files == images, "the base does not read back");
    let _ = std::fs::remove_dir_all(&dir);
}
