//! Laws for an implementation's *own* session-key dialect, checked from
//! outside over the protocol (spec KEY-L1..L3, PROTOCOL P-10).
//!
//! The vectors pin procroute's two dialects byte for byte; a gateway with
//! its own key grammar (OpenClaw, …) cannot be held to those bytes, but it
//! can be held to what routing needs from any key: distinct threads get
//! distinct keys (KEY-L1), a parse never names a thread the key was not
//! built from (KEY-L2), and parsing is total (KEY-L3). Each law is one case
//! per *family* of generated origins, so a report and a known-failures list
//! name a handful of stable ids; a failing case shows its simplest
//! counterexample (the one with the fewest id bytes).

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{json, Value};

use super::protocol::{Command, RunReply};
use super::runner::Harness;
use super::Outcome;
use crate::check::gen::{self, Rng};
use crate::origin::{Origin, RawOrigin};

/// Operations a harness lists to have its dialect checked.
pub const BUILD: &str = "dialect_build";
pub const PARSE: &str = "dialect_parse";

#[derive(Debug, Clone, Copy)]
pub struct DialectRun {
    pub seed: u64,
    /// Generated origins per family.
    pub cases: usize,
}

/// The four fields that name a thread (what a notification is sent to).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Route {
    pub platform: String,
    pub chat_type: String,
    pub chat_id: String,
    pub thread_id: Option<String>,
}

impl Route {
    pub fn of(o: &RawOrigin) -> Route {
        Route {
            platform: o.platform.clone(),
            chat_type: o.chat_type.clone(),
            chat_id: o.chat_id.clone(),
            thread_id: o.thread_id.clone(),
        }
    }

    fn from_json(v: &Value) -> Option<Route> {
        Some(Route {
            platform: v.get("platform")?.as_str()?.to_owned(),
            chat_type: v.get("chat_type")?.as_str()?.to_owned(),
            chat_id: v.get("chat_id")?.as_str()?.to_owned(),
            thread_id: v
                .get("thread_id")
                .and_then(Value::as_str)
                .map(str::to_owned),
        })
    }
}

/// A family of origin pairs that must get distinct keys (KEY-L1): a base
/// origin and a variant with a different route.
#[derive(Debug, Clone, Copy)]
pub enum Family {
    /// The chat id with its ASCII letter case flipped (Slack `C0123ABC`,
    /// Matrix `!AbC:srv`, base64 Signal group ids are case-sensitive).
    ChatCase,
    /// The thread id with its ASCII letter case flipped.
    ThreadCase,
    /// The chat id with surrounding whitespace.
    Whitespace,
    /// The same ids under another chat type (group vs channel vs thread).
    ChatType,
    /// A thread moved into the chat id with the dialect's separator: chat
    /// `X` thread `Y` vs chat `X:thread:Y` / `X:Y` with no thread.
    ColonJoin,
    /// A thread id vs the same value as the user of a thread-less origin in
    /// the same group (hermes' `group:-100:42`: topic 42 or user 42?).
    ThreadUser,
    /// Independent generated origins: any two routes sharing a key.
    Generated,
}

impl Family {
    pub const ALL: [Family; 7] = [
        Family::ChatCase,
        Family::ThreadCase,
        Family::Whitespace,
        Family::ChatType,
        Family::ColonJoin,
        Family::ThreadUser,
        Family::Generated,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Family::ChatCase => "chat-case",
            Family::ThreadCase => "thread-case",
            Family::Whitespace => "whitespace",
            Family::ChatType => "chat-type",
            Family::ColonJoin => "colon-join",
            Family::ThreadUser => "thread-user",
            Family::Generated => "generated",
        }
    }

    /// The variants of `base` in this family (valid origins only).
    fn variants(self, base: &RawOrigin, rng: &mut Rng) -> Vec<RawOrigin> {
        let flip = |s: &str| -> String {
            s.chars()
                .map(|c| {
                    if c.is_ascii_lowercase() {
                        c.to_ascii_uppercase()
                    } else {
                        c.to_ascii_lowercase()
                    }
                })
                .collect()
        };
        let mut out = Vec::new();
        match self {
            Family::ChatCase => {
                let mut v = base.clone();
                v.chat_id = flip(&base.chat_id);
                out.push(v);
            }
            Family::ThreadCase => {
                if let Some(t) = &base.thread_id {
                    let mut v = base.clone();
                    v.thread_id = Some(flip(t));
                    out.push(v);
                }
            }
            Family::Whitespace => {
                for pad in [" ", "\t", "\u{a0}"] {
                    let mut v = base.clone();
                    v.chat_id = format!("{}{pad}", base.chat_id);
                    out.push(v);
                }
            }
            Family::ChatType => {
                for t in ["dm", "group", "channel", "thread"] {
                    let mut v = base.clone();
                    v.chat_type = t.to_owned();
                    out.push(v);
                }
            }
            Family::ColonJoin => {
                if let Some(t) = &base.thread_id {
                    for sep in [":thread:", ":"] {
                        let mut v = base.clone();
                        v.chat_id = format!("{}{sep}{t}", base.chat_id);
                        v.thread_id = None;
                        out.push(v);
                    }
                }
            }
            Family::ThreadUser => {
                if let (Some(t), false) = (&base.thread_id, base.chat_type == "dm") {
                    let mut v = base.clone();
                    v.thread_id = None;
                    v.user_id = Some(t.clone());
                    out.push(v);
                }
            }
            Family::Generated => {
                for _ in 0..3 {
                    out.push(RawOrigin::from(gen::origin(rng)));
                }
            }
        }
        out.retain(|v| Origin::try_from(v.clone()).is_ok() && Route::of(v) != Route::of(base));
        out
    }
}

/// How good a counterexample is for a report, smaller first: ids that look
/// like real platform ids (printable ASCII, no inner whitespace) beat exotic
/// ones, then fewer bytes. A trailing pad is what the whitespace family adds,
/// so it does not count against an id.
fn plainness(o: &RawOrigin) -> (usize, usize) {
    let exotic = |s: &str| {
        let core = s.trim_end();
        core.is_empty() || core.chars().any(|c| !c.is_ascii_graphic())
    };
    let ids = std::iter::once(&o.chat_id).chain(o.thread_id.as_ref());
    let (mut odd, mut bytes) = (0, 0);
    for id in ids {
        odd += usize::from(exotic(id));
        bytes += id.len();
    }
    (odd, bytes)
}

fn score(a: &RawOrigin, b: &RawOrigin) -> (usize, usize) {
    let (x, y) = (plainness(a), plainness(b));
    (x.0 + y.0, x.1 + y.1)
}

struct Client<'a> {
    h: &'a mut Harness,
    seq: u64,
    timeout: Duration,
    /// Keys already built, by the origin's JSON.
    keys: HashMap<String, String>,
}

impl Client<'_> {
    fn ask(&mut self, case: Value) -> Result<Value, String> {
        self.seq += 1;
        let cmd = Command::Run {
            seq: self.seq,
            case,
        };
        let reply = self.h.request(&cmd, self.timeout).map_err(|f| {
            let _ = self.h.restart(self.timeout);
            f.to_string()
        })?;
        let r: RunReply =
            serde_json::from_value(reply.clone()).map_err(|e| format!("bad reply {reply}: {e}"))?;
        if let Some(e) = r.errored {
            return Err(format!("errored: {e}"));
        }
        if let Some(s) = r.skipped {
            return Err(format!("skipped: {s}"));
        }
        r.result.ok_or_else(|| format!("empty reply {reply}"))
    }

    /// The dialect's key for an origin; `Err` when the harness failed. A
    /// typed rejection of the origin is `Ok(None)`.
    fn build(&mut self, o: &RawOrigin) -> Result<Option<String>, String> {
        let memo = serde_json::to_string(o).unwrap_or_default();
        if let Some(k) = self.keys.get(&memo) {
            return Ok(Some(k.clone()));
        }
        let got = self.ask(json!({"op": BUILD, "origin": o}))?;
        if got.get("error").is_some() {
            return Ok(None);
        }
        let key = got
            .get("key")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("no key in {got}"))?
            .to_owned();
        self.keys.insert(memo, key.clone());
        Ok(Some(key))
    }

    /// The route the dialect reads out of a key (`None`: it declines).
    fn parse(&mut self, key: &str) -> Result<Option<Route>, String> {
        let got = self.ask(json!({"op": PARSE, "key": key}))?;
        if got.get("error").is_some() {
            return Ok(None);
        }
        match got.get("route") {
            Some(Value::Null) | None => Ok(None),
            Some(r) => Route::from_json(r)
                .map(Some)
                .ok_or_else(|| format!("route without platform/chat_type/chat_id: {r}")),
        }
    }
}

/// Runs KEY-L1 (one case per family), KEY-L2 and KEY-L3 through a harness
/// that lists `dialect_build` and `dialect_parse`.
pub fn run(
    h: &mut Harness,
    cfg: DialectRun,
    timeout: Duration,
    wants: impl Fn(&str) -> bool,
) -> Vec<Outcome> {
    let mut c = Client {
        h,
        seq: 2_000_000,
        timeout,
        keys: HashMap::new(),
    };
    let mut out = Vec::new();
    for family in Family::ALL {
        let id = format!("dialect/KEY-L1/{}", family.name());
        if wants(&id) {
            out.push(injective(&mut c, cfg, family, &id));
        }
    }
    if wants("dialect/KEY-L2/roundtrip") {
        out.push(faithful(&mut c, cfg));
    }
    if wants("dialect/KEY-L3/total") {
        out.push(total(&mut c, cfg));
    }
    out
}

fn injective(c: &mut Client<'_>, cfg: DialectRun, family: Family, id: &str) -> Outcome {
    let mut rng = Rng::new(cfg.seed ^ 0xD1A1 ^ family as u64);
    // key -> the first origin that built it
    let mut owner: HashMap<String, RawOrigin> = HashMap::new();
    let mut worst: Option<((usize, usize), RawOrigin, RawOrigin, String)> = None;
    let mut checked = 0usize;
    for _ in 0..cfg.cases {
        let base = RawOrigin::from(gen::origin(&mut rng));
        let variants = family.variants(&base, &mut rng);
        for o in std::iter::once(base.clone()).chain(variants) {
            let key = match c.build(&o) {
                Ok(Some(k)) => k,
                Ok(None) => continue,
                Err(e) => return Outcome::errored(id, &["KEY-L1"], e),
            };
            checked += 1;
            match owner.get(&key) {
                Some(first) if Route::of(first) != Route::of(&o) => {
                    let size = score(first, &o);
                    if worst.as_ref().map_or(true, |w| size < w.0) {
                        worst = Some((size, first.clone(), o.clone(), key.clone()));
                    }
                }
                Some(_) => {}
                None => {
                    owner.insert(key, o);
                }
            }
        }
    }
    let failure = worst.map(|(_, a, b, key)| {
        format!(
            "two threads share one key {key:?}: {:?} and {:?} ({checked} origins checked); \
             a store keyed by it merges their sessions",
            Route::of(&a),
            Route::of(&b)
        )
    });
    Outcome::check(id, &["KEY-L1"], failure)
}

fn faithful(c: &mut Client<'_>, cfg: DialectRun) -> Outcome {
    const ID: &str = "dialect/KEY-L2/roundtrip";
    let mut rng = Rng::new(cfg.seed ^ 0xD1A2);
    let mut worst: Option<((usize, usize), String)> = None;
    let mut declined = 0usize;
    let mut checked = 0usize;
    for _ in 0..cfg.cases {
        let o = RawOrigin::from(gen::origin(&mut rng));
        let key = match c.build(&o) {
            Ok(Some(k)) => k,
            Ok(None) => continue,
            Err(e) => return Outcome::errored(ID, &["KEY-L2"], e),
        };
        checked += 1;
        match c.parse(&key) {
            Err(e) => return Outcome::errored(ID, &["KEY-L2"], e),
            Ok(None) => declined += 1,
            Ok(Some(r)) if r != Route::of(&o) => {
                let size = plainness(&o);
                if worst.as_ref().map_or(true, |w| size < w.0) {
                    worst = Some((
                        size,
                        format!("key {key:?} of {:?} parses to {r:?}", Route::of(&o)),
                    ));
                }
            }
            Ok(Some(_)) => {}
        }
    }
    let failure = worst.map(|(_, d)| {
        format!("{d} ({checked} keys parsed, {declined} declined): a wrong route, not a refusal")
    });
    Outcome::check(ID, &["KEY-L2"], failure)
}

fn total(c: &mut Client<'_>, cfg: DialectRun) -> Outcome {
    const ID: &str = "dialect/KEY-L3/total";
    let mut rng = Rng::new(cfg.seed ^ 0xD1A3);
    for _ in 0..cfg.cases {
        let key = gen::key_like(&mut rng);
        if let Err(e) = c.parse(&key) {
            return Outcome::check(
                ID,
                &["KEY-L3"],
                Some(format!("parse of {key:?} did not answer: {e}")),
            );
        }
    }
    Outcome::pass(ID, &["KEY-L3"])
}

/// Spawns the harness and runs the dialect laws if it lists both
/// operations; otherwise one skipped case with the harness's reason.
pub fn run_over(
    program: &str,
    args: &[String],
    cfg: DialectRun,
    timeout: Duration,
    validate: bool,
    wants: impl Fn(&str) -> bool,
) -> Result<Vec<Outcome>, String> {
    let mut h = Harness::spawn(program, args)?;
    if validate {
        h.schema = Some(std::sync::Arc::new(super::schema::Schema::protocol()));
    }
    let started = h.start(timeout)?;
    let missing: Vec<&str> = [BUILD, PARSE]
        .into_iter()
        .filter(|op| !started.operations.iter().any(|o| o == op))
        .collect();
    let out = if missing.is_empty() {
        run(&mut h, cfg, timeout, wants)
    } else {
        let why = missing
            .iter()
            .find_map(|op| started.unsupported.get(*op).cloned())
            .unwrap_or_else(|| format!("operation {} not supported", missing.join(", ")));
        if wants("dialect/*") {
            vec![Outcome::skip(
                "dialect/*",
                &["KEY-L1", "KEY-L2", "KEY-L3"],
                why,
            )]
        } else {
            Vec::new()
        }
    };
    h.stop();
    Ok(out)
}
