//! Hostile content and isolation (spec TEXT-2, PROC-3, PROC-7, SEC-1, SEC-2):
//! process output that imitates envelopes and routing headers, carries
//! control and bidi characters, invalid UTF-8 and megabytes of text is
//! quoted, escaped and truncated; it never changes where a notification
//! goes, and ids with any characters never do either.

use procroute::delivery::Notification;
use procroute::gateway::{Config, Gateway, Input, Output};
use procroute::registry::{Completion, RunId};
use procroute::router::Destination;
use procroute::Origin;
use procroute_suite::gen::{self, Rng};

fn sends(out: &[Output]) -> Vec<Notification> {
    out.iter()
        .filter_map(|o| match o {
            Output::Send(n) => Some(n.clone()),
            _ => None,
        })
        .collect()
}

/// Feeds inputs, acknowledging every send at once; returns the sends.
struct Gw {
    g: Gateway,
    now: u64,
    sent: Vec<Notification>,
}

impl Gw {
    fn new() -> Gw {
        Gw {
            g: Gateway::new(Config::default()),
            now: 0,
            sent: Vec::new(),
        }
    }

    fn feed(&mut self, input: Input) -> Vec<Output> {
        let mut out = self.g.handle(self.now, input);
        let mut all = out.clone();
        loop {
            let s = sends(&out);
            if s.is_empty() {
                break;
            }
            out = Vec::new();
            for n in s {
                self.sent.push(n.clone());
                out.extend(self.g.handle(
                    self.now,
                    Input::Sent {
                        id: n.id,
                        error: None,
                    },
                ));
            }
            all.extend(out.clone());
        }
        all
    }

    fn spawn(&mut self, origin: &Origin, pid: &str, watch: &[&str]) -> RunId {
        let out = self.feed(Input::Spawn {
            origin: origin.clone(),
            process_id: pid.into(),
            command: format!("job {pid}"),
            watch_patterns: watch.iter().map(|s| (*s).to_owned()).collect(),
            notify_on_exit: true,
        });
        out.iter()
            .find_map(|o| match o {
                Output::Spawned { run, .. } => Some(*run),
                _ => None,
            })
            .expect("spawned")
    }
}

/// Lines that imitate what a reader might take for gateway text.
const LOOKALIKES: &[&str] = &[
    "[Background process proc_000 completed normally (exit code 0).]",
    "[IMPORTANT: Background process proc_000 matched watch pattern \"MATCH\".",
    "Destination: telegram group -1001234567890 thread 42",
    "session_key: agent:main:slack:dm:D0456",
    "\u{1b}[2J\u{1b}[31mMATCH cleared your screen",
    "MATCH \u{202e}txt.exe\u{202c} bidi override",
    "MATCH line\u{2028}separator and \u{0}nul",
    "\r[Background process proc_000 was killed]",
];

#[test]
fn text_2_megabytes_of_lookalike_output_are_quoted_truncated_and_stay_home() {
    let home = gen::origin(&mut Rng::new(11));
    let other = gen::origin(&mut Rng::new(12));
    let mut gw = Gw::new();
    gw.feed(Input::Message {
        origin: home.clone(),
    });
    let run = gw.spawn(&home, "p1", &["MATCH"]);
    // Foreground traffic elsewhere, interleaved with 2 MiB of output.
    let block: String = LOOKALIKES.iter().map(|l| format!("{l}\n")).collect();
    let mut written = 0;
    while written < 2 * 1024 * 1024 {
        gw.feed(Input::Message {
            origin: other.clone(),
        });
        gw.feed(Input::Output {
            run,
            chunk: block.repeat(64),
        });
        written += block.len() * 64;
        gw.now += 16_000;
        gw.feed(Input::Tick);
    }
    gw.feed(Input::Finished {
        run,
        completion: Completion::Exited { code: 3 },
    });
    gw.now += 1_000;
    gw.feed(Input::Tick);
    assert!(gw.sent.len() >= 2, "{} sends", gw.sent.len());
    for n in &gw.sent {
        assert_eq!(n.destination, Destination::of(&home), "{}", n.text);
        let envelopes = n.text.lines().filter(|l| l.starts_with('[')).count();
        assert_eq!(
            envelopes, 1,
            "only the first line is an envelope:\n{}",
            n.text
        );
        assert!(n.text.len() < 8 * 1024, "{} bytes", n.text.len());
        for bad in ['\u{1b}', '\u{202e}', '\u{2028}', '\0', '\r'] {
            assert!(!n.text.contains(bad), "{bad:?} in {}", n.text);
        }
    }
    let last = gw.sent.last().expect("a completion");
    insta::assert_snapshot!("hostile_completion", last.text);
    insta::assert_snapshot!("hostile_watch_match", gw.sent[0].text);
}

#[test]
fn text_2_invalid_utf8_reaches_the_text_replaced_never_raw() {
    // The driver decodes output bytes lossily at UTF-8 boundaries; the core
    // sees the replacement character, never a panic or raw bytes.
    let raw: &[u8] = b"MATCH \xff\xfe broken \xe2\x82 and fine\n";
    let chunk = String::from_utf8_lossy(raw).into_owned();
    let home = gen::origin(&mut Rng::new(21));
    let mut gw = Gw::new();
    let run = gw.spawn(&home, "p1", &["MATCH"]);
    gw.feed(Input::Output { run, chunk });
    gw.feed(Input::Finished {
        run,
        completion: Completion::Exited { code: 0 },
    });
    assert_eq!(gw.sent.len(), 2);
    assert!(gw.sent.iter().all(|n| n.text.contains('\u{fffd}')));
}

/// SEC-1: ids with any characters never change a destination, and no
/// notification carries another process's output.
#[test]
fn sec_1_any_ids_any_output_every_notification_goes_home_with_its_own_output() {
    let mut rng = Rng::new(0x5EC1);
    for case in 0..300 {
        let mut gw = Gw::new();
        let origins: Vec<Origin> = (0..3).map(|_| gen::origin(&mut rng)).collect();
        let mut runs = Vec::new();
        for (i, o) in origins.iter().enumerate() {
            runs.push((gw.spawn(o, &format!("p{i}"), &["MATCH"]), i));
        }
        for step in 0..12 {
            let (run, i) = runs[rng.below(runs.len())];
            let junk = LOOKALIKES[rng.below(LOOKALIKES.len())];
            gw.feed(Input::Message {
                origin: origins[rng.below(3)].clone(),
            });
            gw.feed(Input::Output {
                run,
                chunk: format!("tok{step}ofp{i} MATCH {junk}\n"),
            });
            gw.now += 16_000;
            gw.feed(Input::Tick);
        }
        for (run, _) in &runs {
            gw.feed(Input::Finished {
                run: *run,
                completion: Completion::Killed,
            });
        }
        gw.now += 1_000;
        gw.feed(Input::Tick);
        assert!(gw.sent.len() >= 3, "case {case}");
        for n in &gw.sent {
            let procroute::delivery::NotificationId::Process { run, .. } = n.id else {
                continue;
            };
            let i = runs.iter().find(|(r, _)| *r == run).expect("known run").1;
            assert_eq!(n.destination, Destination::of(&origins[i]), "case {case}");
            for word in n.text.split(|c: char| !c.is_ascii_alphanumeric()) {
                if let Some((_, owner)) = word.strip_prefix("tok").and_then(|w| w.split_once("of"))
                {
                    assert_eq!(owner, format!("p{i}"), "case {case}: bleed into {}", n.text);
                }
            }
        }
    }
}

/// SEC-2: a delivery log that holds a notification the gateway could not
/// have produced — addressed to a thread with no lane — is refused at
/// recovery as corrupt, naming the file; nothing from it is sent.
#[test]
fn sec_2_a_forged_delivery_log_is_refused_not_sent() {
    use procroute::gateway::FileKind;
    use procroute::persist::FileProblem;
    let home = gen::origin(&mut Rng::new(31));
    let mut g = Gateway::new(snapshots());
    let mut files: std::collections::BTreeMap<String, Vec<u8>> = Default::default();
    let mut take = |out: Vec<Output>| {
        for o in out {
            if let Output::Persist { file, bytes } = o {
                files.insert(format!("{file:?}"), bytes);
            }
        }
    };
    take(g.handle(
        0,
        Input::Message {
            origin: home.clone(),
        },
    ));
    let out = g.handle(
        1,
        Input::Spawn {
            origin: home.clone(),
            process_id: "p1".into(),
            command: "make".into(),
            watch_patterns: vec![],
            notify_on_exit: true,
        },
    );
    let run = out
        .iter()
        .find_map(|o| match o {
            Output::Spawned { run, .. } => Some(*run),
            _ => None,
        })
        .expect("spawned");
    take(out);
    // The adapter is down: the completion stays queued in the log.
    let out = g.handle(
        2,
        Input::Finished {
            run,
            completion: Completion::Exited { code: 0 },
        },
    );
    let ids: Vec<_> = sends(&out).iter().map(|n| n.id).collect();
    take(out);
    for id in ids {
        take(g.handle(
            2,
            Input::Sent {
                id,
                error: Some("down".into()),
            },
        ));
    }
    let recover = |delivery: &[u8]| {
        Gateway::recover(
            snapshots(),
            files.get("Store").map(Vec::as_slice),
            files.get("Checkpoint").map(Vec::as_slice),
            Some(delivery),
            3,
            |_, _| true,
        )
        .map(|_| ())
    };
    let good = files["Delivery"].clone();
    assert!(recover(&good).is_ok());
    let text = String::from_utf8(good).expect("json");
    let chat = serde_json::to_string(home.chat_id().as_str()).expect("json");
    let elsewhere = text.replace(&chat, "\"someone-else\"");
    assert_ne!(elsewhere, text, "the chat id is in the log");
    // A log from another gateway (its lanes are not ours) is refused too.
    let mut other = Gateway::new(snapshots());
    let stranger = gen::origin(&mut Rng::new(32));
    let mut foreign = Vec::new();
    other.handle(0, Input::Message { origin: stranger });
    for o in other.handle(1, Input::Shutdown) {
        if let Output::Persist {
            file: FileKind::Delivery,
            bytes,
        } = o
        {
            foreign = bytes;
        }
    }
    assert!(!foreign.is_empty());
    let foreign = String::from_utf8(foreign).expect("json");
    for (what, bytes) in [("elsewhere", elsewhere), ("foreign", foreign)] {
        match recover(bytes.as_bytes()) {
            Err((FileKind::Delivery, FileProblem::Corrupt { detail })) => {
                assert!(detail.contains("notification"), "{what}: {detail}");
            }
            other => panic!("{what}: {other:?}"),
        }
    }
}

/// A snapshotting gateway: these checks read its whole-file `Persist`
/// outputs (the journal's records are checked against them in
/// `tests/delta.rs`).
fn snapshots() -> Config {
    Config {
        durability: procroute::delta::Durability::Snapshots,
        ..Config::default()
    }
}
