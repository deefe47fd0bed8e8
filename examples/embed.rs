//! Embedding procroute's sans-IO [`Gateway`] in a chat gateway's own event
//! loop, with its own chat adapter, its own processes and its own files:
//!
//!     cargo run --example embed
//!
//! The story is the bug procroute exists for. In one Telegram forum group,
//! the agent of topic 7 starts a build in the background ("tell me when it
//! says BUILD OK, and when it exits"); then a user in topic 9 starts a long
//! turn, so topic 9 is the *active* thread while the build runs. Both
//! notifications must land in topic 7, the thread that started the build,
//! and the chat's first send fails, so one of them is retried. The example
//! prints the chat as each thread sees it, and exits non-zero if a
//! notification reached the wrong thread or never arrived.
//!
//! What the gateway does, the loop below does for it: it feeds inputs with
//! the time ([`Gateway::handle`]), then carries out the outputs in order
//! ([`Gateway::carry_out`]): appends each `Append` to the journal (one
//! group commit, one fsync) before anything it makes safe, starts the
//! process of each `Spawned`, offers each `Send` to the chat and reports
//! the answer back; between inputs it compacts the journal when it has
//! grown. It starts the way it would after a crash: it opens the journal
//! and recovers the gateway from what it holds ([`Gateway::recover`]; here
//! an empty directory, so nothing).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread;
use std::time::{Duration, Instant};

use procroute::delivery::Notification;
use procroute::delta::Durability;
use procroute::driver::files::RealFs;
use procroute::driver::journal::{JournalFiles, JournalLimits};
use procroute::gateway::{Config, Effect, Gateway, Input, Output};
use procroute::registry::{Completion, RunId};
use procroute::{ChatType, Origin};

/// The chat platform: posts go into per-thread transcripts. Its first
/// send fails, as a platform's sometimes do.
struct Chat {
    threads: BTreeMap<String, Vec<String>>,
    sends: u32,
}

impl Chat {
    fn thread_name(n: &Notification) -> String {
        let d = &n.destination;
        match &d.thread_id {
            Some(t) => format!(
                "{} {} topic {}",
                d.platform.as_str(),
                d.chat_id.as_str(),
                t.as_str()
            ),
            None => format!("{} {}", d.platform.as_str(), d.chat_id.as_str()),
        }
    }

    /// Posts `n`; must be idempotent on `n.id` (a crash between a send and
    /// its acknowledgement offers it again).
    fn send(&mut self, n: &Notification) -> Result<(), String> {
        self.sends += 1;
        if self.sends == 1 {
            return Err("HTTP 502 from the Bot API (the first send always fails here)".into());
        }
        self.threads
            .entry(Self::thread_name(n))
            .or_default()
            .push(n.text.clone());
        Ok(())
    }
}

/// What the gateway's process threads report.
enum FromProcess {
    Output(RunId, String),
    Finished(RunId, Completion),
}

/// Starts `sh -c command` for `run`; a thread reads its output line by
/// line and reports its end.
fn start_process(run: RunId, command: &str, tx: Sender<FromProcess>) -> std::io::Result<()> {
    let mut child = Command::new("sh")
        .args(["-c", command])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| std::io::Error::other("no stdout"))?;
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(FromProcess::Output(run, format!("{line}\n")));
        }
        let completion = match child.wait() {
            Ok(status) => match status.code() {
                Some(code) => Completion::Exited { code },
                None => Completion::Killed,
            },
            Err(e) => Completion::FailedToStart {
                reason: e.to_string(),
            },
        };
        let _ = tx.send(FromProcess::Finished(run, completion));
    });
    Ok(())
}

/// The gateway and everything around it.
struct Embedding {
    gateway: Gateway,
    chat: Chat,
    journal: JournalFiles<RealFs>,
    clock: Instant,
    tx: Sender<FromProcess>,
}

impl Embedding {
    fn now_ms(&self) -> u64 {
        self.clock.elapsed().as_millis() as u64
    }

    /// One input, and everything it leads to, in the order the gateway gave.
    fn input(&mut self, input: Input) -> Vec<Output> {
        let now = self.now_ms();
        let outputs = self.gateway.handle(now, input);
        self.carry_out(now, outputs)
    }

    /// Carries out outputs in order, then compacts the journal if it has
    /// grown (between inputs, never in the middle of one).
    fn carry_out(&mut self, now: u64, outputs: Vec<Output>) -> Vec<Output> {
        let (chat, journal, tx) = (&mut self.chat, &mut self.journal, &self.tx);
        let done = self
            .gateway
            .carry_out(now, outputs, |o| match o {
                Output::Append { records } => match journal.append(records) {
                    Ok(()) => Effect::Done,
                    // Without its state on disk the gateway must not go on
                    // to send what that state promises.
                    Err(e) => {
                        eprintln!("cannot persist: {e}");
                        Effect::Halt
                    }
                },
                Output::Persist { .. } => unreachable!("a journaling gateway appends"),
                Output::Spawned { .. } => Effect::Done,
                Output::Send(n) => Effect::Sent(chat.send(n).err()),
                Output::Dropped { run, reason, .. } => {
                    eprintln!("run {run:?}: not routed: {reason}");
                    Effect::Done
                }
                Output::Rejected { reason } => {
                    eprintln!("input rejected: {reason}");
                    Effect::Done
                }
            })
            .into_iter()
            .inspect(|o| {
                if let Output::Spawned { run, .. } = o {
                    // The command is the caller's; here it is the one spawned.
                    let command = self
                        .gateway
                        .registry()
                        .running()
                        .find(|(r, _)| r == run)
                        .map(|(_, req)| req.command.clone())
                        .unwrap_or_default();
                    if let Err(e) = start_process(*run, &command, tx.clone()) {
                        let _ = tx.send(FromProcess::Finished(
                            *run,
                            Completion::FailedToStart {
                                reason: e.to_string(),
                            },
                        ));
                    }
                }
            })
            .collect();
        if self.journal.wants_compaction() {
            if let Err(e) = self.journal.compact(self.gateway.compact()) {
                eprintln!("cannot compact: {e}");
            }
        }
        done
    }

    /// A user writes in the thread and the agent's turn starts there.
    fn user_turn(&mut self, origin: &Origin) {
        self.input(Input::Message {
            origin: origin.clone(),
        });
        self.input(Input::TurnStarted {
            origin: origin.clone(),
        });
    }

    /// Feeds process reports and ticks (the gateway's timer) until `until`.
    fn pump(&mut self, rx: &Receiver<FromProcess>, until: Instant) {
        while Instant::now() < until {
            let wait = until
                .saturating_duration_since(Instant::now())
                .min(Duration::from_millis(100));
            match rx.recv_timeout(wait) {
                Ok(FromProcess::Output(run, chunk)) => {
                    self.input(Input::Output { run, chunk });
                }
                Ok(FromProcess::Finished(run, completion)) => {
                    self.input(Input::Finished { run, completion });
                }
                Err(RecvTimeoutError::Timeout) => {
                    self.input(Input::Tick);
                }
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("procroute-embed-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let (tx, rx) = mpsc::channel();
    let mut config = Config {
        durability: Durability::Journal,
        ..Config::default()
    };
    // Retry a failed send after 200 ms instead of hermes-agent's 1 s.
    config.delivery.backoff_base_ms = 200;
    // Start as after a crash: open the journal, rebuild the gateway from
    // it (every process it names is gone: this is a new machine).
    let (journal, opened) = JournalFiles::open(
        &dir,
        RealFs,
        JournalLimits::default(),
        &config.limits,
        &config.delivery,
    )?;
    let [store, checkpoint, delivery] = opened.files;
    let (gateway, recovered) = Gateway::recover(
        config,
        Some(&store),
        Some(&checkpoint),
        Some(&delivery),
        0,
        |_, _| false,
    )
    .map_err(|(file, problem)| format!("{file:?}: {problem}"))?;
    let mut g = Embedding {
        gateway,
        chat: Chat {
            threads: BTreeMap::new(),
            sends: 0,
        },
        journal,
        clock: Instant::now(),
        tx,
    };
    g.carry_out(0, recovered);
    let group = "-1001234567890";
    let topic =
        |t: &str| Origin::new("telegram", ChatType::Thread, group).and_then(|o| o.with_thread(t));
    let (topic7, topic9) = (topic("7")?, topic("9")?);

    // Topic 7: the agent starts a build in the background.
    g.user_turn(&topic7);
    g.input(Input::Spawn {
        origin: topic7.clone(),
        process_id: "proc_build".into(),
        command: "echo compiling; sleep 0.3; echo 'BUILD OK'; sleep 0.3; echo done".into(),
        watch_patterns: vec!["BUILD OK".into()],
        notify_on_exit: true,
    });
    g.input(Input::TurnEnded {
        origin: topic7.clone(),
    });
    // Topic 9: another user's long turn makes it the active thread.
    g.user_turn(&topic9);
    g.pump(&rx, Instant::now() + Duration::from_millis(2_500));
    g.input(Input::TurnEnded {
        origin: topic9.clone(),
    });
    g.pump(&rx, Instant::now() + Duration::from_millis(300));

    for (thread, posts) in &g.chat.threads {
        println!("── {thread}");
        for p in posts {
            println!("   {}", p.replace('\n', "\n   "));
        }
    }
    println!(
        "{} sends ({} failed and retried), {} dead letters",
        g.chat.sends,
        g.chat.sends as usize - g.chat.threads.values().map(Vec::len).sum::<usize>(),
        g.gateway.delivery().dead_total()
    );
    let _ = std::fs::remove_dir_all(&dir);
    let home = format!("telegram {group} topic 7");
    let posted: Vec<&String> = g.chat.threads.values().flatten().collect();
    let at_home = g.chat.threads.get(&home).map_or(0, Vec::len);
    if at_home != 2 || posted.len() != 2 {
        return Err(format!(
            "expected the watch match and the completion in {home}, got {:?}",
            g.chat.threads
        )
        .into());
    }
    println!("both notifications reached topic 7, the thread that started the build");
    Ok(())
}
