//! Real OS processes: `sh -c`, stdout and stderr merged, one reader thread
//! per process that reports output chunks and then the exit, in order.

use std::collections::HashMap;
use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::thread;

use super::ProcMsg;
use crate::registry::{Completion, RunId};

/// Read size per chunk.
const CHUNK_BYTES: usize = 8192;

type Shared = (Arc<Mutex<Child>>, Arc<Mutex<bool>>);

#[derive(Default)]
/// The running child processes, each read by its own thread.
pub struct Processes {
    children: HashMap<RunId, Shared>,
}

impl Processes {
    /// Starts `command` under `sh -c` as `run`; its output and end go to `tx`.
    pub fn start(&mut self, run: RunId, command: &str, tx: Sender<ProcMsg>) -> Result<(), String> {
        use std::os::unix::process::CommandExt;
        let mut child = Command::new("sh")
            .process_group(0) // so kill() reaches the whole job
            .arg("-c")
            .arg(format!("exec 2>&1\n{command}"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("sh: {e}"))?;
        let mut stdout = child.stdout.take().ok_or("no stdout pipe")?;
        let child = Arc::new(Mutex::new(child));
        let killed = Arc::new(Mutex::new(false));
        self.children.insert(run, (child.clone(), killed.clone()));
        thread::spawn(move || {
            let mut buf = vec![0u8; CHUNK_BYTES];
            let mut carry: Vec<u8> = Vec::new();
            loop {
                match stdout.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        carry.extend_from_slice(&buf[..n]);
                        // Keep an incomplete UTF-8 sequence for the next read.
                        let valid = match std::str::from_utf8(&carry) {
                            Ok(_) => carry.len(),
                            Err(e) if e.error_len().is_none() => e.valid_up_to(),
                            Err(_) => carry.len(),
                        };
                        let text = String::from_utf8_lossy(&carry[..valid]).into_owned();
                        carry.drain(..valid);
                        if !text.is_empty() && tx.send(ProcMsg::Output(run, text)).is_err() {
                            return;
                        }
                    }
                }
            }
            if !carry.is_empty() {
                let _ = tx.send(ProcMsg::Output(
                    run,
                    String::from_utf8_lossy(&carry).into_owned(),
                ));
            }
            // Poll rather than block in wait() with the lock held, so kill()
            // can always take the lock.
            let status = loop {
                match child.lock().map(|mut c| c.try_wait()) {
                    Ok(Ok(Some(s))) => break Ok(Ok(s)),
                    Ok(Ok(None)) => thread::sleep(std::time::Duration::from_millis(5)),
                    Ok(Err(e)) => break Ok(Err(e)),
                    Err(_) => break Err(()),
                }
            };
            let was_killed = killed.lock().map(|k| *k).unwrap_or(false);
            let completion = match status {
                _ if was_killed => Completion::Killed,
                Ok(Ok(s)) => match s.code() {
                    Some(code) => Completion::Exited { code },
                    None => {
                        use std::os::unix::process::ExitStatusExt;
                        Completion::Signaled {
                            signal: s.signal().unwrap_or(0),
                        }
                    }
                },
                _ => Completion::Lost,
            };
            let _ = tx.send(ProcMsg::Finished(run, completion));
        });
        Ok(())
    }

    /// Kills the run's process group.
    pub fn kill(&mut self, run: RunId) {
        if let Some((child, killed)) = self.children.get(&run) {
            if let Ok(mut k) = killed.lock() {
                *k = true;
            }
            if let Ok(mut c) = child.lock() {
                // The whole process group: `sh -c` forks its commands, and a
                // surviving grandchild would hold the output pipe open.
                let _ = Command::new("kill")
                    .args(["-s", "KILL", "--"])
                    .arg(format!("-{}", c.id()))
                    .stderr(Stdio::null())
                    .status();
                let _ = c.kill();
            }
        }
    }

    /// Forgets a run that ended.
    pub fn forget(&mut self, run: RunId) {
        self.children.remove(&run);
    }

    /// Whether no process is tracked.
    pub fn is_empty(&self) -> bool {
        self.children.is_empty()
    }
}
