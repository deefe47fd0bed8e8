//! The reference model (spec INV-1..INV-7): what each thread should receive.
//!
//! Deliberately naive and independent of the router: threads are plain
//! strings, a process remembers the thread it was spawned from, and a
//! promise is a line in a list. It imports nothing from `router`,
//! `delivery`, `store` or `key` — sharing their logic would make the
//! properties vacuous. Read it in one sitting.

use std::collections::BTreeMap;

pub mod judge;
pub mod oracle;

/// A thread as the model sees it: four plain strings.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Thread {
    pub platform: String,
    pub chat_type: String,
    pub chat: String,
    pub thread: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Run {
    pub home: Thread,
    pub process_id: String,
    pub notify_on_exit: bool,
    pub watches: bool,
    pub finished: bool,
    /// Output tokens this run printed: the only output its notifications
    /// may contain.
    pub tokens: Vec<String>,
}

#[derive(Debug, Clone, Default)]
pub struct Model {
    pub runs: BTreeMap<u64, Run>,
    next_run: u64,
}

impl Model {
    pub fn new() -> Model {
        Model {
            runs: BTreeMap::new(),
            next_run: 1,
        }
    }

    /// A process was spawned from `home`; returns the run id the model
    /// expects (runs are numbered 1, 2, 3, … for the gateway's life).
    pub fn spawn(
        &mut self,
        home: Thread,
        process_id: &str,
        notify_on_exit: bool,
        watches: bool,
    ) -> u64 {
        let run = self.next_run;
        self.next_run += 1;
        self.runs.insert(
            run,
            Run {
                home,
                process_id: process_id.to_owned(),
                notify_on_exit,
                watches,
                finished: false,
                tokens: Vec::new(),
            },
        );
        run
    }

    pub fn output(&mut self, run: u64, token: &str) {
        if let Some(r) = self.runs.get_mut(&run) {
            if !r.finished {
                r.tokens.push(token.to_owned());
            }
        }
    }

    /// The run ended. Returns whether a completion is now promised.
    pub fn finish(&mut self, run: u64) -> bool {
        match self.runs.get_mut(&run) {
            Some(r) if !r.finished => {
                r.finished = true;
                // A watching process may be promoted to notify-on-exit; the
                // model does not predict that, so it only promises what the
                // caller asked for.
                r.notify_on_exit
            }
            _ => false,
        }
    }

    pub fn home(&self, run: u64) -> Option<&Thread> {
        self.runs.get(&run).map(|r| &r.home)
    }

    /// Runs that must produce a completion notification.
    pub fn promised_completions(&self) -> impl Iterator<Item = (u64, &Run)> {
        self.runs
            .iter()
            .filter(|(_, r)| r.finished && r.notify_on_exit)
            .map(|(k, r)| (*k, r))
    }
}
