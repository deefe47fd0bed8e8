//! The runner's side of the protocol: spawn a harness, hand it cases, judge
//! its answers. It never hangs (per-request timeout), restarts a harness
//! that crashes, and turns garbage or oversized lines into errored cases
//! that quote the offending bytes.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command as Proc, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::Duration;

use serde_json::{json, Value};

use super::protocol::{Command, RunReply, Started, MAX_LINE_BYTES, PROTOCOL_VERSION};
use super::vectors::{self, Vector};
use super::{Counterexample, Outcome};

/// How a request failed on the harness's side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// No answer in time.
    Timeout(Duration),
    /// The process died or closed its output.
    Crashed(String),
    /// A line that is not a protocol reply (quoted, bounded).
    Garbage(String),
    /// A well-formed line that breaks the protocol schema (`--validate`).
    Invalid(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Timeout(d) => write!(f, "harness gave no answer within {} ms", d.as_millis()),
            Failure::Crashed(why) => write!(f, "harness crashed: {why}"),
            Failure::Garbage(bytes) => write!(
                f,
                "harness sent a line that is not a protocol reply: {bytes}"
            ),
            Failure::Invalid(why) => write!(f, "reply violates the protocol schema: {why}"),
        }
    }
}

/// Quotes at most 200 bytes of a bad line, escaped, for a report.
fn quote(bytes: &[u8]) -> String {
    let shown: String = bytes
        .iter()
        .take(200)
        .flat_map(|b| std::ascii::escape_default(*b))
        .map(char::from)
        .collect();
    if bytes.len() > 200 {
        format!("\"{shown}\"… ({} bytes)", bytes.len())
    } else {
        format!("\"{shown}\"")
    }
}

/// A harness process speaking spec/PROTOCOL.md on its stdin and stdout.
pub struct Harness {
    program: String,
    args: Vec<String>,
    child: Child,
    stdin: ChildStdin,
    rx: Receiver<Result<Vec<u8>, String>>,
    /// How many times it was restarted after a failure.
    pub restarts: u32,
    /// Validate every message against the protocol schema (`--validate`).
    pub schema: Option<std::sync::Arc<super::schema::Schema>>,
}

impl Harness {
    /// Starts `program args` with piped stdin and stdout (stderr inherited).
    pub fn spawn(program: &str, args: &[String]) -> Result<Harness, String> {
        let mut child = Proc::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start harness {program}: {e}"))?;
        let stdin = child.stdin.take().ok_or("no stdin pipe")?;
        let stdout = child.stdout.take().ok_or("no stdout pipe")?;
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            let mut r = BufReader::new(stdout);
            loop {
                let mut line = Vec::new();
                let mut limited = (&mut r).take(MAX_LINE_BYTES as u64 + 1);
                match limited.read_until(b'\n', &mut line) {
                    Ok(0) => {
                        let _ = tx.send(Err("end of output".into()));
                        return;
                    }
                    Ok(_) => {
                        if line.len() > MAX_LINE_BYTES {
                            // Skip the rest of the oversized line.
                            let mut rest = Vec::new();
                            let _ = r.read_until(b'\n', &mut rest);
                        }
                        if tx.send(Ok(line)).is_err() {
                            return;
                        }
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e.to_string()));
                        return;
                    }
                }
            }
        });
        Ok(Harness {
            program: program.to_owned(),
            args: args.to_vec(),
            child,
            stdin,
            rx,
            restarts: 0,
            schema: None,
        })
    }

    /// Sends a command and reads its reply (validated under `--validate`).
    pub fn request(&mut self, cmd: &Command, timeout: Duration) -> Result<Value, Failure> {
        let reply = self.request_raw(cmd, timeout)?;
        if let Some(schema) = &self.schema {
            let sent = serde_json::to_value(cmd).unwrap_or(Value::Null);
            schema
                .validate("command", &sent)
                .map_err(|e| Failure::Invalid(format!("(our own command!) {e}")))?;
            let def = match cmd {
                Command::Start { .. } => "started",
                _ => "run_reply",
            };
            schema.validate(def, &reply).map_err(Failure::Invalid)?;
        }
        Ok(reply)
    }

    fn request_raw(&mut self, cmd: &Command, timeout: Duration) -> Result<Value, Failure> {
        let line = serde_json::to_string(cmd).map_err(|e| Failure::Crashed(e.to_string()))?;
        let bytes = self.exchange(&line, timeout)?;
        serde_json::from_slice::<Value>(&bytes)
            .ok()
            .filter(Value::is_object)
            .ok_or_else(|| Failure::Garbage(quote(&bytes)))
    }

    /// Sends one line, returns the next non-blank line of the answer.
    fn exchange(&mut self, line: &str, timeout: Duration) -> Result<Vec<u8>, Failure> {
        writeln!(self.stdin, "{line}")
            .and_then(|()| self.stdin.flush())
            .map_err(|e| Failure::Crashed(format!("writing to it: {e}")))?;
        loop {
            match self.rx.recv_timeout(timeout) {
                Ok(Ok(bytes)) => {
                    if bytes.len() > MAX_LINE_BYTES {
                        return Err(Failure::Garbage(format!(
                            "oversized line (over {MAX_LINE_BYTES} bytes) {}",
                            quote(&bytes)
                        )));
                    }
                    if bytes.iter().all(|b| b.is_ascii_whitespace()) {
                        continue;
                    }
                    return Ok(bytes);
                }
                Ok(Err(why)) => return Err(Failure::Crashed(why)),
                Err(RecvTimeoutError::Timeout) => return Err(Failure::Timeout(timeout)),
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(Failure::Crashed("output closed".into()))
                }
            }
        }
    }

    /// The handshake: `start`, and the checked `started` reply.
    pub fn start(&mut self, timeout: Duration) -> Result<Started, String> {
        let v = self
            .request(
                &Command::Start {
                    version: PROTOCOL_VERSION,
                },
                timeout,
            )
            .map_err(|e| e.to_string())?;
        let started: Started =
            serde_json::from_value(v.clone()).map_err(|e| format!("bad start reply {v}: {e}"))?;
        started
            .validate()
            .map_err(|e| format!("bad start reply: {e}"))?;
        Ok(started)
    }

    /// Kills the process, starts a new one and handshakes again.
    pub fn restart(&mut self, timeout: Duration) -> Result<Started, String> {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let restarts = self.restarts + 1;
        let schema = self.schema.take();
        *self = Harness::spawn(&self.program.clone(), &self.args.clone())?;
        self.restarts = restarts;
        self.schema = schema;
        self.start(timeout)
    }

    /// Asks the harness to stop; kills it if it has not after half a second.
    pub fn stop(mut self) {
        let _ = writeln!(self.stdin, "{}", json!({"cmd": "stop"}));
        let _ = self.stdin.flush();
        for _ in 0..50 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The case as sent: the vector without id, rules, note and expectation.
fn wire_case(v: &Vector) -> Value {
    let mut c = serde_json::to_value(&v.case).unwrap_or(Value::Null);
    if let Some(o) = c.as_object_mut() {
        o.remove("expect");
    }
    c
}

/// Runs vectors through a harness; returns the handshake and one outcome
/// per vector.
pub fn run_vectors(
    program: &str,
    args: &[String],
    vectors: &[Vector],
    timeout: Duration,
    validate: bool,
) -> Result<(Started, Vec<Outcome>, u32), String> {
    let mut h = Harness::spawn(program, args)?;
    if validate {
        h.schema = Some(std::sync::Arc::new(super::schema::Schema::protocol()));
    }
    let mut started = h.start(timeout)?;
    let mut out = Vec::with_capacity(vectors.len());
    for (seq, v) in vectors.iter().enumerate() {
        let rules: Vec<&str> = v.rules.iter().map(String::as_str).collect();
        let op = v.case.operation();
        if !started.operations.iter().any(|o| o == op) {
            let why = started
                .unsupported
                .get(op)
                .cloned()
                .unwrap_or_else(|| format!("operation {op} not supported"));
            out.push(Outcome::skip(v.id.clone(), &rules, why));
            continue;
        }
        let cmd = Command::Run {
            seq: seq as u64,
            case: wire_case(v),
        };
        let outcome = match h.request(&cmd, timeout) {
            Ok(reply) => match serde_json::from_value::<RunReply>(reply.clone()) {
                Err(e) => Outcome::errored(v.id.clone(), &rules, format!("bad reply {reply}: {e}")),
                Ok(r) if r.seq != seq as u64 => Outcome::errored(
                    v.id.clone(),
                    &rules,
                    format!("reply for seq {} to request {seq}", r.seq),
                ),
                Ok(RunReply {
                    skipped: Some(why), ..
                }) => Outcome::skip(v.id.clone(), &rules, why),
                Ok(RunReply {
                    errored: Some(why), ..
                }) => Outcome::errored(v.id.clone(), &rules, why),
                Ok(RunReply {
                    result: Some(obs), ..
                }) => Outcome::check(v.id.clone(), &rules, vectors::judge(&v.case, &obs).err()),
                Ok(_) => Outcome::errored(v.id.clone(), &rules, format!("empty reply {reply}")),
            },
            Err(f) => {
                let o = Outcome::errored(v.id.clone(), &rules, f.to_string());
                if !matches!(f, Failure::Garbage(_) | Failure::Invalid(_)) {
                    started = h.restart(timeout)?;
                }
                o
            }
        };
        out.push(outcome);
    }
    let restarts = h.restarts;
    h.stop();
    Ok((started, out, restarts))
}

/// What the generated-trace phase does.
#[derive(Debug, Clone)]
pub struct TraceRun {
    /// The seed every generated trace derives from.
    pub seed: u64,
    /// How many traces to generate.
    pub cases: usize,
    /// The longest generated trace, in steps before quiescence.
    pub max_steps: usize,
    /// Where shrunk counterexamples are written as JSON.
    pub save_dir: Option<std::path::PathBuf>,
    /// At most this many harness runs to shrink one failing trace.
    pub max_shrink_runs: usize,
    /// At most this many failing traces are shrunk per broken rule (each
    /// costs up to `max_shrink_runs` harness runs); later failures of that
    /// rule are reported as found, with their original length.
    pub max_shrunk: usize,
    /// Write the first failing trace's timeline here as SVG.
    pub svg: Option<std::path::PathBuf>,
    /// Validate every message against the protocol schema.
    pub validate: bool,
    /// Known failures (ids or globs): judged as usual but not shrunk, so a
    /// harness with a long known-failures list stays fast in CI; their
    /// counterexamples live in the implementation's FINDINGS.md.
    pub known: Vec<String>,
    /// Every judged rule must be exercised by at least this percentage of
    /// the generated traces, or the run fails (`coverage/<rule>` cases).
    pub min_coverage: f64,
    /// Run the stored traces (`spec/vectors/traces/`) before the generated
    /// ones.
    pub stored: bool,
    /// Harness processes that run the generated traces in parallel (their
    /// first run; shrinking uses one). Results do not depend on it.
    pub jobs: usize,
    /// Ignore the harness's generation profile (P-13): every generated
    /// trace as the generator draws it.
    pub unsteered: bool,
}

/// The rules a trace case is judged on; a case cites the ones its trace
/// exercises (from the model's view).
const TRACE_RULES: &[&str] = crate::model::judge::JUDGED;

/// The judged rules a trace exercises (from the model's view, [`exercised`](crate::model::judge::exercised)),
/// in the judge's order: what a trace case cites.
pub(crate) fn cited_rules(
    exercised: &std::collections::BTreeSet<&'static str>,
) -> Vec<&'static str> {
    TRACE_RULES
        .iter()
        .copied()
        .filter(|r| exercised.contains(r))
        .collect()
}

/// How many generated traces exercised each judged rule (from the model's
/// view of the trace, not from what the implementation did).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Coverage {
    /// How many traces were generated.
    pub traces: usize,
    /// Per judged rule, how many of them exercised it.
    pub by_rule: std::collections::BTreeMap<String, usize>,
    /// How many of them passed (the clean share a regression can turn
    /// into a new failure; known failures do not count).
    #[serde(default)]
    pub passed: usize,
    /// Per judged rule, how many passing traces exercised it: the rules
    /// a regression can be seen on outside the known failures.
    #[serde(default)]
    pub passed_by_rule: std::collections::BTreeMap<String, usize>,
    /// The generation profile the traces were drawn under (P-13), one
    /// line per steer; empty when none was declared or `--unsteered`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steered: Vec<String>,
    /// Under a profile, per judged rule, how many of the same seeds'
    /// traces generated without it exercise the rule (the floor's check
    /// tells a shortfall the profile causes from one it does not).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub unsteered_by_rule: std::collections::BTreeMap<String, usize>,
    /// Judged rules the handshake's declarations take out of play (PROC-11
    /// without a declared read policy, P-15): not counted, not floored.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_judged: Vec<String>,
}

impl Coverage {
    /// The judged rules in play under the handshake's declarations, in the
    /// judge's order.
    pub fn judged(&self) -> impl Iterator<Item = &'static str> + '_ {
        TRACE_RULES
            .iter()
            .copied()
            .filter(|r| !self.not_judged.iter().any(|n| n == r))
    }

    /// Rules exercised by fewer than `percent` % of the traces.
    pub fn below(&self, percent: f64) -> Vec<(String, usize)> {
        self.judged()
            .map(|r| (r.to_string(), self.by_rule.get(r).copied().unwrap_or(0)))
            .filter(|(_, n)| (*n as f64) < percent / 100.0 * self.traces as f64)
            .collect()
    }
}

/// Why a trace case produced no result.
pub(crate) enum NoResult {
    /// The harness declared this trace unexpressible (P-6), with its reason.
    Skipped(String),
    /// A protocol failure or an errored reply.
    Errored(String),
}

pub(crate) fn run_trace_case(
    h: &mut Harness,
    seq: u64,
    trace: &super::trace::Trace,
    timeout: Duration,
) -> Result<super::trace::TraceResult, NoResult> {
    use NoResult::Errored;
    if h.schema.is_none() {
        // The common case, typed end to end: no JSON trees in between.
        let line = serde_json::to_string(&TraceRunOut {
            cmd: "run",
            seq,
            case: TraceCaseOut { op: "trace", trace },
        })
        .map_err(|e| Errored(e.to_string()))?;
        let bytes = h
            .exchange(&line, timeout)
            .map_err(|f| Errored(f.to_string()))?;
        if let Ok(TraceReplyIn {
            seq: got,
            result: Some(TraceResultIn { trace }),
            skipped: None,
            errored: None,
        }) = serde_json::from_slice(&bytes)
        {
            if got == seq {
                return Ok(trace);
            }
        }
        // Anything else: the general path below names what is wrong.
        let reply = serde_json::from_slice::<Value>(&bytes)
            .ok()
            .filter(Value::is_object)
            .ok_or_else(|| Errored(Failure::Garbage(quote(&bytes)).to_string()))?;
        return trace_reply(seq, reply);
    }
    let cmd = Command::Run {
        seq,
        case: json!({"op": "trace", "trace": trace}),
    };
    let reply = h
        .request(&cmd, timeout)
        .map_err(|f| Errored(f.to_string()))?;
    trace_reply(seq, reply)
}

/// Runs `traces` on the harnesses in parallel, each worker taking the next
/// unclaimed trace; results in the order of `traces`, so they do not
/// depend on the number of workers. A harness that errs is restarted; one
/// that cannot be restarted leaves its later traces to the others.
pub(crate) fn run_many(
    harnesses: &mut [Harness],
    traces: &[&super::trace::Trace],
    timeout: Duration,
    seq: &std::sync::atomic::AtomicU64,
) -> Vec<Result<super::trace::TraceResult, NoResult>> {
    par_cases(
        harnesses,
        traces,
        timeout,
        seq,
        |h, n, trace| run_trace_case(h, n, trace, timeout),
        |r| matches!(r, Err(NoResult::Errored(_))),
        || Err(NoResult::Errored(NO_HARNESS_LEFT.into())),
    )
}

const NO_HARNESS_LEFT: &str =
    "no harness left to run it (every worker's harness failed to restart)";

/// The parallel core of [`run_many`]: `work` runs item `i` on a worker's
/// harness with a fresh request number; an `errored` result restarts that
/// harness (a worker whose harness cannot restart stops, leaving its later
/// items to the others); an item no worker reached gets `missing()`.
/// Results are in the order of `items`, whatever the number of workers.
pub(crate) fn par_cases<T: Sync, R: Send>(
    harnesses: &mut [Harness],
    items: &[T],
    timeout: Duration,
    seq: &std::sync::atomic::AtomicU64,
    work: impl Fn(&mut Harness, u64, &T) -> R + Sync,
    errored: impl Fn(&R) -> bool + Sync,
    missing: impl Fn() -> R,
) -> Vec<R> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<R>>> = items.iter().map(|_| Mutex::new(None)).collect();
    thread::scope(|s| {
        for h in harnesses.iter_mut() {
            let (next, slots, work, errored) = (&next, &slots, &work, &errored);
            s.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(i) else { return };
                let n = seq.fetch_add(1, Ordering::Relaxed);
                let r = work(h, n, item);
                let failed = errored(&r);
                if let Ok(mut slot) = slots[i].lock() {
                    *slot = Some(r);
                }
                if failed && h.restart(timeout).is_err() {
                    return;
                }
            });
        }
    });
    slots
        .into_iter()
        .map(|m| m.into_inner().ok().flatten().unwrap_or_else(&missing))
        .collect()
}

/// Spawns `n` harness processes at once (so their start-ups overlap, which
/// matters for interpreters that take 150 ms to boot), then handshakes
/// each; all get the same schema check.
pub(crate) fn spawn_all(
    program: &str,
    args: &[String],
    n: usize,
    validate: bool,
) -> Result<Vec<Harness>, String> {
    let schema = validate.then(|| std::sync::Arc::new(super::schema::Schema::protocol()));
    let mut all = Vec::with_capacity(n.max(1));
    for _ in 0..n.max(1) {
        let mut h = Harness::spawn(program, args)?;
        h.schema = schema.clone();
        all.push(h);
    }
    Ok(all)
}

/// A generated trace's first run, done by a worker.
struct FirstRun {
    /// `None` when no worker reached the case.
    trace: Option<super::trace::Trace>,
    exercised: std::collections::BTreeSet<&'static str>,
    result: Result<super::trace::TraceResult, NoResult>,
    violations: Vec<crate::model::judge::Violation>,
}

/// A `run` command for a trace, serialised straight from the trace.
#[derive(serde::Serialize)]
struct TraceRunOut<'a> {
    cmd: &'static str,
    seq: u64,
    case: TraceCaseOut<'a>,
}

#[derive(serde::Serialize)]
struct TraceCaseOut<'a> {
    op: &'static str,
    trace: &'a super::trace::Trace,
}

/// The well-formed answer to a trace, read straight into its types.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TraceReplyIn {
    seq: u64,
    result: Option<TraceResultIn>,
    skipped: Option<String>,
    errored: Option<String>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TraceResultIn {
    trace: super::trace::TraceResult,
}

fn trace_reply(seq: u64, reply: Value) -> Result<super::trace::TraceResult, NoResult> {
    use NoResult::Errored;
    let r: RunReply = serde_json::from_value(reply.clone())
        .map_err(|e| Errored(format!("bad reply {reply}: {e}")))?;
    if r.seq != seq {
        return Err(Errored(format!("reply for seq {} to request {seq}", r.seq)));
    }
    if let Some(e) = r.errored {
        return Err(Errored(format!("errored: {e}")));
    }
    if let Some(why) = r.skipped {
        return Err(NoResult::Skipped(why));
    }
    let result = r
        .result
        .and_then(|v| v.get("trace").cloned())
        .ok_or_else(|| Errored(format!("no trace result in {reply}")))?;
    serde_json::from_value(result).map_err(|e| Errored(format!("bad trace result: {e}")))
}

/// A failing generated trace (shrunk or as found) as a trace file (the
/// format of `spec/vectors/traces/`, so `procroute replay` and any harness
/// can run it), with its headline violation.
fn trace_file(
    cfg: &TraceRun,
    id: &str,
    started: &Started,
    v: &crate::model::judge::Violation,
    trace: &super::trace::Trace,
    shrunk_from: Option<(&str, usize)>,
) -> super::trace::TraceFile {
    use super::trace::file::{Expect, Found, ShrunkFrom, TraceFile, Verdict};
    let shrunk = shrunk_from.is_some();
    TraceFile {
        suite_version: crate::SUITE_VERSION.to_owned(),
        id: if shrunk {
            format!("{id}/shrunk")
        } else {
            id.to_owned()
        },
        rules: crate::model::judge::exercised(trace)
            .into_iter()
            .map(str::to_owned)
            .collect(),
        note: format!(
            "Generated case {id} (seed {}), {} by procroute conform.",
            cfg.seed,
            if shrunk { "shrunk" } else { "as generated" }
        ),
        found: Some(Found {
            implementation: format!(
                "{} {}",
                started.implementation.name, started.implementation.version
            ),
            rule: v.rule.clone(),
            violation: v.detail.clone(),
            shrunk_from: shrunk_from.map(|(id, steps)| ShrunkFrom {
                id: id.to_owned(),
                steps,
            }),
        }),
        trace: trace.clone(),
        expect: Expect {
            verdict: Verdict::Pass,
            deliveries: None,
            dead_letters: None,
        },
    }
}

/// Writes a failing trace file under `--save DIR`: `gen-<seed>-<n>.json`
/// for the shrunk trace, `…-original.json` for the trace as generated;
/// returns the path written.
fn save(cfg: &TraceRun, n: usize, f: &super::trace::TraceFile) -> Option<std::path::PathBuf> {
    let dir = cfg.save_dir.as_ref()?;
    let shrunk = f.found.as_ref().is_some_and(|x| x.shrunk_from.is_some());
    let name = format!(
        "gen-{}-{n}{}.json",
        cfg.seed,
        if shrunk { "" } else { "-original" }
    );
    let path = dir.join(name);
    std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(&path, f.to_json()))
        .ok()
        .map(|()| path)
}

/// The ops of a trace before its quiescence suffix.
pub fn body_len(trace: &super::trace::Trace) -> usize {
    trace
        .ops
        .len()
        .saturating_sub(super::trace::quiescence(trace.threads.len()).len())
}

/// A failure's detail: every violation as `RULE: reason` (the first is the
/// headline), then the timeline.
pub fn failure_detail(
    violations: &[crate::model::judge::Violation],
    trace: &super::trace::Trace,
    result: &super::trace::TraceResult,
    note: &str,
) -> String {
    let mut d = String::new();
    for (i, v) in violations.iter().enumerate() {
        if i == 8 {
            d.push_str(&format!(
                "… and {} more violation(s)\n",
                violations.len() - 8
            ));
            break;
        }
        d.push_str(&format!("{}: {}\n", v.rule, v.detail));
    }
    d.push_str(&crate::model::judge::quotes(violations));
    if !note.is_empty() {
        d.push_str(note);
        d.push('\n');
    }
    d.push_str(&super::render::timeline_text(trace, result));
    d
}

/// Runs the stored traces (`spec/vectors/traces/`, compiled in) through
/// the harnesses, in parallel like the generated ones (results in file
/// order whatever the number of workers): each is a case with its stable
/// id, judged by the one judge.
fn run_stored(
    workers: &mut [Harness],
    impl_arg: &str,
    seq: &std::sync::atomic::AtomicU64,
    timeout: Duration,
    (limits, declared): (
        &super::constraint::Constraints,
        &crate::model::judge::Declared,
    ),
    wants: &impl Fn(&str) -> bool,
    out: &mut Vec<Outcome>,
) -> Result<(), String> {
    let files: Vec<_> = super::trace::file::stored()?
        .into_iter()
        .filter(|f| wants(&f.id))
        .collect();
    // An input the implementation refuses by design: not sent (P-12).
    let refusals: Vec<Option<String>> = files.iter().map(|f| limits.refusal(&f.trace)).collect();
    let sent: Vec<&super::trace::Trace> = files
        .iter()
        .zip(&refusals)
        .filter(|(_, why)| why.is_none())
        .map(|(f, _)| &f.trace)
        .collect();
    let mut results = run_many(workers, &sent, timeout, seq).into_iter();
    for (f, refusal) in files.into_iter().zip(refusals) {
        let rules: Vec<&str> = f.rules.iter().map(String::as_str).collect();
        if let Some(why) = refusal {
            out.push(Outcome::skip(f.id, &rules, why));
            continue;
        }
        let Some(run) = results.next() else {
            return Err("a stored trace was not run".into());
        };
        match run {
            Ok(result) => {
                let v = crate::model::judge::judge_declared(&f.trace, &result, declared);
                if v.is_empty() {
                    out.push(Outcome::pass(f.id, &rules));
                } else {
                    let name = f.id.trim_start_matches("trace/");
                    let note = format!(
                        "stored trace spec/vectors/traces/{name}.json; replay: procroute replay spec/vectors/traces/{name}.json{impl_arg}"
                    );
                    let detail = failure_detail(&v, &f.trace, &result, &note);
                    let broken: Vec<&str> = v.iter().map(|v| v.rule.as_str()).collect();
                    let mut o = Outcome::check(f.id.clone(), &broken, Some(detail));
                    o.violations = crate::model::judge::signatures(&f.trace, &v);
                    o.counterexample = Some(Box::new(Counterexample { file: f, result }));
                    out.push(o);
                }
            }
            Err(NoResult::Skipped(why)) => out.push(Outcome::skip(f.id, &rules, why)),
            // The worker's harness was restarted (`run_many`).
            Err(NoResult::Errored(e)) => out.push(Outcome::errored(f.id, &rules, e)),
        }
    }
    Ok(())
}

/// Generated traces through a harness, judged against the model; every
/// failing trace is shrunk by re-running candidates through the harness.
pub fn run_traces(
    program: &str,
    args: &[String],
    cfg: &TraceRun,
    timeout: Duration,
    wants: impl Fn(&str) -> bool,
) -> Result<Vec<Outcome>, String> {
    run_traces_covered(program, args, cfg, timeout, wants).map(|(o, _)| o)
}

/// [`run_traces`], with the coverage of the generated traces.
///
/// Its phases: the first handshake fixes the session (`TraceSession`);
/// the stored traces run; every wanted case is generated, run and judged
/// in parallel on the workers (`first_runs`); then the cases are read in
/// case order and reported, failures shrunk on one harness
/// (`TraceSession::report`), so nothing reported depends on the number
/// of workers.
pub fn run_traces_covered(
    program: &str,
    args: &[String],
    cfg: &TraceRun,
    timeout: Duration,
    wants: impl Fn(&str) -> bool,
) -> Result<(Vec<Outcome>, Coverage), String> {
    let mut coverage = Coverage::default();
    let mut out = Vec::new();
    // Every worker's harness is spawned before the first handshake, so
    // their start-ups overlap; the first one also runs the stored traces
    // and does the shrinking.
    let jobs = if cfg.cases > 1 { cfg.jobs.max(1) } else { 1 };
    let mut workers = spawn_all(program, args, jobs, cfg.validate)?;
    let Some(session) = TraceSession::start(
        &mut workers,
        (program, args),
        cfg,
        timeout,
        &mut coverage,
        &mut out,
    )?
    else {
        return Ok((out, coverage));
    };
    let parallel_seq = std::sync::atomic::AtomicU64::new(1_000_001);
    if cfg.stored {
        run_stored(
            &mut workers,
            &session.impl_arg,
            &parallel_seq,
            timeout,
            (&session.limits, &session.declared),
            &wants,
            &mut out,
        )?;
    }
    let wanted: Vec<(usize, String)> = (0..cfg.cases)
        .map(|n| (n, format!("gen/{}/{n}", cfg.seed)))
        .filter(|(_, id)| wants(id))
        .collect();
    let runs = first_runs(&session, &mut workers, &wanted, &parallel_seq);
    let mut seq = parallel_seq.into_inner();
    let mut workers = workers.into_iter();
    let mut h = workers.next().ok_or("no harness")?;
    workers.for_each(Harness::stop);
    let progress = {
        use std::io::IsTerminal;
        std::io::stderr().is_terminal() && cfg.cases >= 200
    };
    let mut tally = Tally::default();
    for ((n, id), first) in wanted.into_iter().zip(runs) {
        if progress && n % 50 == 0 {
            eprint!("\rtraces {n}/{} ", cfg.cases);
        }
        let case = Case { n, id, first };
        let o = session.report(case, (&mut h, &mut seq), &mut tally, &mut coverage);
        out.extend(o);
    }
    if progress {
        eprint!("\r{:30}\r", "");
    }
    h.stop();
    Ok((out, coverage))
}

/// What the first handshake fixed for a whole run of generated traces.
struct TraceSession<'a> {
    cfg: &'a TraceRun,
    timeout: Duration,
    started: Started,
    limits: super::constraint::Constraints,
    declared: crate::model::judge::Declared,
    profile: super::trace::steer::Profile,
    /// What a reader types to replay a saved trace against this harness.
    impl_arg: String,
}

/// One generated case, as the workers left it.
struct Case {
    n: usize,
    id: String,
    first: FirstRun,
}

/// What reporting remembers from one case to the next.
#[derive(Default)]
struct Tally {
    wrote_svg: bool,
    /// Failures shrunk so far, per rule (`--max-shrunk`).
    shrunk: std::collections::BTreeMap<String, usize>,
    /// Rules whose first known failure carries its trace.
    known_drawn: std::collections::BTreeSet<String>,
}

impl<'a> TraceSession<'a> {
    /// Starts every worker (the first's handshake decides the session);
    /// `None` when the harness refuses traces altogether (its skip is in
    /// `out`, the workers stopped).
    fn start(
        workers: &mut Vec<Harness>,
        (program, args): (&str, &[String]),
        cfg: &'a TraceRun,
        timeout: Duration,
        coverage: &mut Coverage,
        out: &mut Vec<Outcome>,
    ) -> Result<Option<TraceSession<'a>>, String> {
        let h = workers.first_mut().ok_or("no harness")?;
        let started = h.start(timeout)?;
        let limits = started.validate()?;
        let declared = started.declared();
        if declared.read_acknowledges == crate::model::oracle::ReadAck::Never {
            coverage.not_judged.push("PROC-11".into());
        }
        let profile = if cfg.unsteered {
            super::trace::steer::Profile::default()
        } else {
            coverage.steered = started.steer.iter().map(|s| s.describe()).collect();
            started.profile()?
        };
        if let Some(why) = started.trace_refusal() {
            out.push(Outcome::skip(
                format!("gen/{}/*", cfg.seed),
                TRACE_RULES,
                why,
            ));
            std::mem::take(workers).into_iter().for_each(Harness::stop);
            return Ok(None);
        }
        for e in workers.iter_mut().skip(1) {
            e.start(timeout)?;
        }
        let impl_arg = match (program, args) {
            ("sh", [c, cmd, ..]) if c == "-c" => {
                format!(" --impl '{}'", cmd.replace('\'', "'\\''"))
            }
            _ => String::new(),
        };
        Ok(Some(TraceSession {
            cfg,
            timeout,
            started,
            limits,
            declared,
            profile,
            impl_arg,
        }))
    }

    fn judge(
        &self,
        t: &super::trace::Trace,
        r: &super::trace::TraceResult,
    ) -> Vec<crate::model::judge::Violation> {
        crate::model::judge::judge_declared(t, r, &self.declared)
    }

    fn seed(&self, n: usize) -> u64 {
        self.cfg.seed.wrapping_mul(1_000_003).wrapping_add(n as u64)
    }

    fn generate(&self, n: usize) -> super::trace::Trace {
        let seed = self.seed(n);
        super::trace::generate_steered(
            seed,
            self.cfg.max_steps,
            &self.limits,
            &self.profile.draw(seed),
        )
    }

    fn exercised(&self, t: &super::trace::Trace) -> std::collections::BTreeSet<&'static str> {
        crate::model::judge::exercised_with(t, self.declared.read_acknowledges)
    }

    /// One case's outcome: passed, skipped, errored, or failed — known,
    /// left unshrunk, or shrunk on `h`. Counts its coverage.
    fn report(
        &self,
        case: Case,
        (h, seq): (&mut Harness, &mut u64),
        tally: &mut Tally,
        coverage: &mut Coverage,
    ) -> Option<Outcome> {
        let Case { n, id, first } = case;
        let FirstRun {
            trace,
            exercised,
            result,
            violations,
        } = first;
        // A case no worker reached is regenerated here, only to report it.
        let (trace, exercised) = match trace {
            Some(t) => (t, exercised),
            None => {
                let t = self.generate(n);
                let e = self.exercised(&t);
                (t, e)
            }
        };
        self.count(n, &exercised, coverage);
        let cited = cited_rules(&exercised);
        let result = match result {
            Ok(r) => r,
            Err(NoResult::Skipped(why)) => return Some(Outcome::skip(id, &cited, why)),
            // The worker restarted its harness already.
            Err(NoResult::Errored(e)) => return Some(Outcome::errored(id, &cited, e)),
        };
        if violations.is_empty() {
            coverage.passed += 1;
            for r in &exercised {
                *coverage.passed_by_rule.entry((*r).to_owned()).or_default() += 1;
            }
            return Some(Outcome::pass(id, &cited));
        }
        let failed = Failed {
            n,
            id,
            trace,
            result,
            violations,
        };
        if self
            .cfg
            .known
            .iter()
            .any(|p| super::select::glob(p, &failed.id))
        {
            return Some(self.known(failed, tally));
        }
        let count = tally
            .shrunk
            .entry(failed.violations[0].rule.clone())
            .or_insert(0);
        if *count >= self.cfg.max_shrunk {
            let count = *count;
            return Some(self.unshrunk(failed, count));
        }
        *count += 1;
        Some(self.shrunk(failed, (h, seq), tally))
    }

    /// Coverage of one generated case (and of its unsteered twin).
    fn count(
        &self,
        n: usize,
        exercised: &std::collections::BTreeSet<&'static str>,
        coverage: &mut Coverage,
    ) {
        coverage.traces += 1;
        for r in exercised {
            *coverage.by_rule.entry((*r).to_owned()).or_default() += 1;
        }
        if !self.profile.is_empty() {
            // What the same seed reaches without the profile: a rule the
            // profile alone keeps under the floor is then told apart from
            // one the generator never reaches (model's view, no harness).
            let plain =
                super::trace::generate_within(self.seed(n), self.cfg.max_steps, &self.limits);
            for r in self.exercised(&plain) {
                *coverage.unsteered_by_rule.entry(r.to_owned()).or_default() += 1;
            }
        }
    }

    /// A failure the run was told to expect (`--known`): saved, pinned to
    /// every violation (`select::check_pins`), not shrunk.
    fn known(&self, f: Failed, tally: &mut Tally) -> Outcome {
        let first = &f.violations[0];
        let file = trace_file(self.cfg, &f.id, &self.started, first, &f.trace, None);
        let path = save(self.cfg, f.n, &file);
        let mut note = "known failure: not shrunk".to_owned();
        if let Some(path) = path {
            note.push_str(&format!("; saved {}", path.display()));
        }
        let detail = failure_detail(&f.violations, &f.trace, &f.result, &note);
        let mut o = Outcome::check(f.id.clone(), &[first.rule.as_str()], Some(detail));
        o.violations = crate::model::judge::signatures(&f.trace, &f.violations);
        // The first known failure of each rule carries its trace as
        // generated, so a report can draw one example per rule without
        // carrying hundreds.
        if tally.known_drawn.insert(first.rule.clone()) {
            o.counterexample = Some(Box::new(Counterexample {
                file,
                result: f.result,
            }));
        }
        o
    }

    /// A failure past `--max-shrunk` of its rule: saved as generated.
    fn unshrunk(&self, f: Failed, count: usize) -> Outcome {
        let first = &f.violations[0];
        let mut note = format!(
            "not shrunk: {count} failures of {} were; replay with --only {}",
            first.rule, f.id
        );
        let file = trace_file(self.cfg, &f.id, &self.started, first, &f.trace, None);
        if let Some(path) = save(self.cfg, f.n, &file) {
            note.push_str(&format!("; saved {}", path.display()));
        }
        let detail = failure_detail(&f.violations, &f.trace, &f.result, &note);
        let mut o = Outcome::check(f.id.clone(), &[first.rule.as_str()], Some(detail));
        o.violations = crate::model::judge::signatures(&f.trace, &f.violations);
        o
    }

    /// A failure shrunk on `h` to a trace that still breaks its first
    /// rule; headline, violations, timeline and saved file describe the
    /// shrunk trace, the original is named by id and length.
    fn shrunk(&self, f: Failed, (h, seq): (&mut Harness, &mut u64), tally: &mut Tally) -> Outcome {
        let first = f.violations[0].clone();
        let suffix = super::trace::quiescence(f.trace.threads.len()).len();
        let (small, runs) =
            super::trace::shrink(&f.trace, suffix, self.cfg.max_shrink_runs, |cand| {
                *seq += 1;
                run_trace_case(h, *seq, cand, self.timeout)
                    .map(|r| self.judge(cand, &r).iter().any(|v| v.rule == first.rule))
                    .unwrap_or(false)
            });
        *seq += 1;
        let small_result = run_trace_case(h, *seq, &small, self.timeout).unwrap_or_default();
        let mut small_v = self.judge(&small, &small_result);
        if let Some(i) = small_v.iter().position(|v| v.rule == first.rule) {
            let head = small_v.remove(i);
            small_v.insert(0, head);
        } else {
            small_v.insert(0, first.clone());
        }
        let original = body_len(&f.trace);
        let mut note = format!(
            "shrunk from {original} to {} step(s) in {runs} harness run(s) (the original: {}, {original} steps before quiescence)",
            body_len(&small),
            f.id
        );
        if let Some(svg) = self.cfg.svg.as_ref().filter(|_| !tally.wrote_svg) {
            let picture = super::render::timeline_svg(&small, &small_result);
            if std::fs::write(svg, picture).is_ok() {
                tally.wrote_svg = true;
                note.push_str(&format!("; timeline {}", svg.display()));
            }
        }
        save(
            self.cfg,
            f.n,
            &trace_file(self.cfg, &f.id, &self.started, &first, &f.trace, None),
        );
        let file = trace_file(
            self.cfg,
            &f.id,
            &self.started,
            &small_v[0],
            &small,
            Some((&f.id, original)),
        );
        if let Some(path) = save(self.cfg, f.n, &file) {
            note.push_str(&format!(
                "; saved {} (replay: procroute replay {}{})",
                path.display(),
                path.display(),
                self.impl_arg
            ));
        }
        let detail = failure_detail(&small_v, &small, &small_result, &note);
        let mut o = Outcome::check(f.id.clone(), &[first.rule.as_str()], Some(detail));
        o.violations = crate::model::judge::signatures(&f.trace, &f.violations);
        o.counterexample = Some(Box::new(Counterexample {
            file,
            result: small_result,
        }));
        o
    }
}

/// A generated case that failed, as first run.
struct Failed {
    n: usize,
    id: String,
    trace: super::trace::Trace,
    result: super::trace::TraceResult,
    violations: Vec<crate::model::judge::Violation>,
}

/// Generation, first run and judging of every wanted case, in parallel on
/// the workers; in case order.
fn first_runs(
    s: &TraceSession<'_>,
    workers: &mut [Harness],
    wanted: &[(usize, String)],
    seq: &std::sync::atomic::AtomicU64,
) -> Vec<FirstRun> {
    par_cases(
        workers,
        wanted,
        s.timeout,
        seq,
        |h, n_seq, (n, _)| {
            let trace = s.generate(*n);
            let exercised = s.exercised(&trace);
            let result = run_trace_case(h, n_seq, &trace, s.timeout);
            let violations = match &result {
                Ok(r) => s.judge(&trace, r),
                Err(_) => Vec::new(),
            };
            FirstRun {
                trace: Some(trace),
                exercised,
                result,
                violations,
            }
        },
        |r| matches!(r.result, Err(NoResult::Errored(_))),
        || FirstRun {
            trace: None,
            exercised: Default::default(),
            result: Err(NoResult::Errored(NO_HARNESS_LEFT.into())),
            violations: Vec::new(),
        },
    )
}

/// What `procroute replay` found: the harness's report of one trace file
/// and the one judge's verdict on it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Replay {
    /// The suite version of this build.
    pub suite_version: String,
    /// The trace file's id.
    pub id: String,
    /// Who answered.
    pub implementation: super::protocol::Implementation,
    /// `pass`, `fail`, or `skipped` (the harness cannot run traces).
    pub verdict: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    /// Why it was skipped, if it was.
    pub skipped: Option<String>,
    /// The judge's findings, tagged with rule ids.
    pub violations: Vec<crate::model::judge::Violation>,
    /// Where the report differs from the observations the file lists
    /// (informative: the verdict is the judge's).
    pub differences: Vec<String>,
    /// What the harness reported.
    pub result: super::trace::TraceResult,
}

/// Replays one trace file through a fresh harness process ([`Replayer`]
/// for several through one).
pub fn replay(
    program: &str,
    args: &[String],
    file: &super::trace::TraceFile,
    timeout: Duration,
    validate: bool,
) -> Result<Replay, String> {
    Replayer::new(program, args, timeout, validate).replay(file)
}

/// Replays trace files one after another through one harness process,
/// handshaken once: a harness whose start-up is costly (a real gateway
/// loading its modules) starts once for all of them, as `conform` runs
/// every trace case of a worker through one process. A harness that
/// errors is stopped, and the next file gets a new one (P-4).
pub struct Replayer {
    program: String,
    args: Vec<String>,
    timeout: Duration,
    validate: bool,
    live: Option<(Harness, Started)>,
    seq: u64,
}

impl Replayer {
    /// A replayer that starts its harness at the first file.
    pub fn new(program: &str, args: &[String], timeout: Duration, validate: bool) -> Replayer {
        Replayer {
            program: program.to_owned(),
            args: args.to_vec(),
            timeout,
            validate,
            live: None,
            seq: 0,
        }
    }

    /// Runs `file` and judges it, under the handshake's declarations.
    pub fn replay(&mut self, file: &super::trace::TraceFile) -> Result<Replay, String> {
        let (mut h, started) = match self.live.take() {
            Some(live) => live,
            None => {
                let mut h = Harness::spawn(&self.program, &self.args)?;
                if self.validate {
                    h.schema = Some(std::sync::Arc::new(super::schema::Schema::protocol()));
                }
                let started = h.start(self.timeout)?;
                (h, started)
            }
        };
        let mut r = Replay {
            suite_version: crate::SUITE_VERSION.to_owned(),
            id: file.id.clone(),
            implementation: started.implementation.clone(),
            verdict: "skipped".into(),
            skipped: None,
            violations: Vec::new(),
            differences: Vec::new(),
            result: Default::default(),
        };
        if let Some(why) = started.trace_refusal() {
            r.skipped = Some(why);
            self.live = Some((h, started));
            return Ok(r);
        }
        self.seq += 1;
        let outcome = run_trace_case(&mut h, self.seq, &file.trace, self.timeout);
        match outcome {
            Ok(result) => {
                r.violations =
                    crate::model::judge::judge_declared(&file.trace, &result, &started.declared());
                r.differences = file.expect.differences(&result);
                r.verdict = if r.violations.is_empty() {
                    "pass"
                } else {
                    "fail"
                }
                .into();
                r.result = result;
            }
            Err(NoResult::Skipped(why)) => r.skipped = Some(why),
            Err(NoResult::Errored(e)) => {
                h.stop();
                return Err(format!("the harness errored: {e}"));
            }
        }
        self.live = Some((h, started));
        Ok(r)
    }
}

impl Drop for Replayer {
    fn drop(&mut self) {
        if let Some((h, _)) = self.live.take() {
            h.stop();
        }
    }
}

/// Where `conform` and `replay` save traces unless told otherwise: a
/// folder of the system's temporary directory, never the working one.
pub fn default_save_dir(what: &str) -> std::path::PathBuf {
    std::env::temp_dir().join("procroute").join(what)
}
