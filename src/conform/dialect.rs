//! Laws for an implementation's *own* session-key dialect, checked from
//! outside over the protocol (spec KEY-L1..L4, PROTOCOL P-10).
//!
//! The vectors pin procroute's two dialects byte for byte; a gateway with
//! its own key grammar (OpenClaw, …) cannot be held to those bytes, but it
//! can be held to what routing needs from any key: distinct threads get
//! distinct keys (KEY-L1), a parse never names a thread the key was not
//! built from (KEY-L2), parsing is total (KEY-L3), and a malformed key is
//! refused rather than guessed at (KEY-L4). Each law is one case
//! per *family* of generated origins, so a report and a known-failures list
//! name a handful of stable ids; a failing case shows its simplest
//! counterexample (the one with the fewest id bytes).

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{json, Value};

use super::protocol::{Command, RunReply};
use super::runner::Harness;
use super::Outcome;
use crate::gen::{self, Rng};

use crate::conform::trace::{from_origin, to_origin, RawOrigin};

/// Operations a harness lists to have its dialect checked.
pub const BUILD: &str = "dialect_build";
/// The operation that parses a key in the implementation's own dialect.
pub const PARSE: &str = "dialect_parse";

#[derive(Debug, Clone, Copy)]
/// How much generated work the dialect laws do (KEY-L1..L4).
pub struct DialectRun {
    /// The seed every generated origin derives from.
    pub seed: u64,
    /// Generated origins per family.
    pub cases: usize,
    /// Harness processes the laws' parts run on (at least one); the
    /// outcomes do not depend on it.
    pub jobs: usize,
}

/// The four fields that name a thread (what a notification is sent to).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub struct Route {
    /// The platform.
    pub platform: String,
    /// The chat type.
    pub chat_type: String,
    /// The chat's id.
    pub chat_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    /// The thread, if any.
    pub thread_id: Option<String>,
}

impl Route {
    /// The route an origin names.
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
    /// The dialect's own separators and marker words (learned from keys
    /// it builds: `:`, `thread`, `direct`, `agent`, …) put into every id
    /// position, thread ids included, next to platform-native id shapes.
    Markers,
    /// Independent generated origins: any two routes sharing a key.
    Generated,
}

impl Family {
    /// Every family, in report order.
    pub const ALL: [Family; 8] = [
        Family::ChatCase,
        Family::ThreadCase,
        Family::Whitespace,
        Family::ChatType,
        Family::ColonJoin,
        Family::ThreadUser,
        Family::Markers,
        Family::Generated,
    ];

    /// Its name in case ids (`chat-case`, …).
    pub fn name(self) -> &'static str {
        match self {
            Family::ChatCase => "chat-case",
            Family::ThreadCase => "thread-case",
            Family::Whitespace => "whitespace",
            Family::ChatType => "chat-type",
            Family::ColonJoin => "colon-join",
            Family::ThreadUser => "thread-user",
            Family::Markers => "markers",
            Family::Generated => "generated",
        }
    }

    /// The variants of `base` in this family (valid origins only).
    fn variants(self, base: &RawOrigin, rng: &mut Rng, grammar: &Grammar) -> Vec<RawOrigin> {
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
            Family::Markers => {
                // A platform-native id of any platform (Matrix `!r:srv`,
                // Teams `19:x@thread.v2`, Slack `1700000000.1`, …) stands
                // next to the marker, in the chat or the thread position.
                let native = (*rng.pick(gen::REAL_IDS)).to_owned();
                let thread = base.thread_id.clone().unwrap_or_else(|| native.clone());
                for _ in 0..3 {
                    let words = &grammar.words;
                    let Some(w) = (!words.is_empty()).then(|| &words[rng.below(words.len())])
                    else {
                        break;
                    };
                    let sep = rng.pick(&grammar.separators).clone();
                    let shapes = [
                        (format!("{}{sep}{w}{sep}{thread}", base.chat_id), None),
                        (base.chat_id.clone(), Some(w.clone())),
                        (base.chat_id.clone(), Some(format!("{w}{sep}{thread}"))),
                        (base.chat_id.clone(), Some(format!("{thread}{sep}{w}"))),
                        (w.clone(), base.thread_id.clone()),
                        (format!("{w}{sep}{}", base.chat_id), Some(thread.clone())),
                        (native.clone(), Some(format!("{w}{sep}{native}"))),
                        (format!("{native}{sep}{w}"), Some(native.clone())),
                    ];
                    let (chat, t) = shapes[rng.below(shapes.len())].clone();
                    let mut v = base.clone();
                    v.chat_id = chat;
                    v.thread_id = t;
                    out.push(v);
                }
            }
            Family::Generated => {
                for _ in 0..3 {
                    out.push(from_origin(gen::origin(rng)));
                }
            }
        }
        out.retain(|v| to_origin(v).is_ok() && Route::of(v) != Route::of(base));
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

/// How one id differs from another, as a failure class: the id cut short,
/// its case folded, white space trimmed, or otherwise rewritten.
fn id_change(orig: &str, got: &str) -> &'static str {
    if orig.trim() == got.trim() {
        "trimmed"
    } else if orig.to_lowercase() == got.to_lowercase() {
        "case-folded"
    } else if got.len() < orig.len() && orig.starts_with(got) {
        "truncated"
    } else {
        "rewritten"
    }
}

/// KEY-L2's failure classes: how the route a dialect parsed out of a key
/// differs from the origin the key was built from. Each class is its own
/// case (`dialect/<policy>/KEY-L2/<class>`), so a known failure of one class never
/// hides a new class.
pub fn l2_class(o: &RawOrigin, r: &Route) -> String {
    if r.platform != o.platform {
        return "platform-changed".into();
    }
    if r.chat_type != o.chat_type {
        return "chat-type-changed".into();
    }
    match (&o.thread_id, &r.thread_id) {
        (Some(t), None) => {
            return if r.chat_id.ends_with(t.as_str()) && r.chat_id.len() > o.chat_id.len() {
                "thread-joined-into-chat".into()
            } else {
                "thread-lost".into()
            };
        }
        (None, Some(t)) => {
            let (chat, t) = (o.chat_id.to_lowercase(), t.to_lowercase());
            return if chat.ends_with(&t) && o.chat_id.len() > r.chat_id.len() {
                "chat-split-into-thread".into()
            } else if o.user_id.as_deref() == r.thread_id.as_deref() {
                "user-read-as-thread".into()
            } else {
                "thread-invented".into()
            };
        }
        _ => {}
    }
    if r.chat_id != o.chat_id {
        return format!("chat-id-{}", id_change(&o.chat_id, &r.chat_id));
    }
    match (&o.thread_id, &r.thread_id) {
        (Some(a), Some(b)) if a != b => format!("thread-id-{}", id_change(a, b)),
        _ => "other".into(),
    }
}

/// KEY-L1's failure classes: what tells two routes that share a key
/// apart (`dialect/<policy>/KEY-L1/<family>/<class>`).
pub fn l1_class(a: &RawOrigin, b: &RawOrigin) -> String {
    let same = |x: &str, y: &str| x == y;
    let kind = |x: &str, y: &str| -> &'static str {
        if x.to_lowercase() == y.to_lowercase() {
            "case"
        } else if x.trim() == y.trim() {
            "whitespace"
        } else if x.len() != y.len() && (x.starts_with(y) || y.starts_with(x)) {
            "prefix"
        } else {
            "other"
        }
    };
    if a.platform != b.platform {
        return "platform".into();
    }
    let chat = same(&a.chat_id, &b.chat_id);
    let thread = a.thread_id == b.thread_id;
    let ty = a.chat_type == b.chat_type;
    match (ty, chat, thread) {
        (false, true, true) => "chat-type".into(),
        (true, false, true) => format!("chat-id-{}", kind(&a.chat_id, &b.chat_id)),
        (true, true, false) => match (&a.thread_id, &b.thread_id) {
            (Some(x), Some(y)) => format!("thread-id-{}", kind(x, y)),
            _ => {
                let (with, without) = if a.thread_id.is_some() {
                    (a, b)
                } else {
                    (b, a)
                };
                if without.user_id == with.thread_id {
                    "thread-vs-user".into()
                } else {
                    "thread-vs-none".into()
                }
            }
        },
        (true, false, false) => {
            let (with, without) = if a.thread_id.is_some() {
                (a, b)
            } else {
                (b, a)
            };
            match &with.thread_id {
                Some(t) if without.thread_id.is_none() && without.chat_id.ends_with(t.as_str()) => {
                    "separator-in-id".into()
                }
                _ => "chat-and-thread".into(),
            }
        }
        _ => "several-fields".into(),
    }
}

struct Client<'a> {
    h: &'a mut Harness,
    seq: u64,
    timeout: Duration,
    /// Keys already built, by the origin's JSON.
    keys: HashMap<String, String>,
    /// Sent as `policy` with every case (`None`: the dialect's default).
    policy: Option<Value>,
}

impl<'a> Client<'a> {
    fn new(h: &'a mut Harness, seq: u64, timeout: Duration, policy: &Option<Value>) -> Self {
        Client {
            h,
            seq,
            timeout,
            keys: HashMap::new(),
            policy: policy.clone(),
        }
    }

    fn ask(&mut self, mut case: Value) -> Result<Value, String> {
        self.seq += 1;
        if let (Some(p), Some(obj)) = (&self.policy, case.as_object_mut()) {
            obj.insert("policy".into(), p.clone());
        }
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
        Ok(self.parse_full(key)?.map(|(r, _)| r))
    }

    /// [`Client::parse`], with the user id the reply names, if any (what
    /// a rebuild of the key needs where the dialect keys users, KEY-L4).
    fn parse_full(&mut self, key: &str) -> Result<Option<(Route, Option<String>)>, String> {
        let got = self.ask(json!({"op": PARSE, "key": key}))?;
        if got.get("error").is_some() {
            return Ok(None);
        }
        match got.get("route") {
            Some(Value::Null) | None => Ok(None),
            Some(r) => {
                let user = r.get("user_id").and_then(Value::as_str).map(str::to_owned);
                Route::from_json(r)
                    .map(|route| Some((route, user)))
                    .ok_or_else(|| format!("route without platform/chat_type/chat_id: {r}"))
            }
        }
    }

    /// The key the dialect builds for what a parse answered.
    fn rebuild(&mut self, r: &Route, user: &Option<String>) -> Result<Option<String>, String> {
        let o = RawOrigin {
            platform: r.platform.clone(),
            chat_type: r.chat_type.clone(),
            chat_id: r.chat_id.clone(),
            thread_id: r.thread_id.clone(),
            user_id: user.clone(),
            user_name: None,
        };
        if to_origin(&o).is_err() {
            return Ok(None);
        }
        self.build(&o)
    }
}

/// Runs KEY-L1 (one case per family), KEY-L2, KEY-L3 and KEY-L4 through
/// the harnesses (the same implementation, one process each) that list
/// `dialect_build` and `dialect_parse`, once per policy; a policy's cases
/// are named `dialect/<policy>/KEY-…`. The laws' parts run in parallel, one
/// harness each at a time, and are put together in a fixed order, so the
/// outcomes do not depend on the number of harnesses.
pub fn run(
    harnesses: &mut [Harness],
    cfg: DialectRun,
    timeout: Duration,
    policies: &[(String, Option<Value>)],
    wants: impl Fn(&str) -> bool + Sync,
) -> Vec<Outcome> {
    let mut out = Vec::new();
    for (name, policy) in policies {
        out.extend(run_policy(
            harnesses,
            cfg,
            timeout,
            policy,
            &format!("dialect/{name}"),
            &wants,
        ));
    }
    out
}

/// One independent part of a policy's laws, run on one harness.
enum Part {
    Family(Family),
    Faithful,
    Rejecting,
    Total,
}

/// What a [`Part`] found: its outcomes and, for the KEY-L2 checks it made
/// on the way, its [`L2`].
struct Found {
    outcomes: Vec<Outcome>,
    l2: L2,
    /// The faithful part could not finish.
    failed: Option<String>,
}

fn run_policy(
    harnesses: &mut [Harness],
    cfg: DialectRun,
    timeout: Duration,
    policy: &Option<Value>,
    pre: &str,
    wants: &(impl Fn(&str) -> bool + Sync),
) -> Vec<Outcome> {
    let Some(first) = harnesses.first_mut() else {
        return Vec::new();
    };
    let grammar = match learn_grammar(&mut Client::new(first, 2_000_000, timeout, policy), cfg) {
        Ok(g) => g,
        Err(e) => {
            return vec![Outcome::errored(
                format!("{pre}/KEY-L1/markers"),
                &["KEY-L1"],
                e,
            )]
        }
    };
    let mut parts = Vec::new();
    for family in Family::ALL {
        let id = format!("{pre}/KEY-L1/{}", family.name());
        if wants(&id) || wants(&format!("{id}/x")) {
            parts.push(Part::Family(family));
        }
    }
    let roundtrip = format!("{pre}/KEY-L2/roundtrip");
    let wants_l2 = wants(&roundtrip) || wants(&format!("{pre}/KEY-L2/x"));
    if wants_l2 {
        parts.push(Part::Faithful);
    }
    if wants(&format!("{pre}/KEY-L4/rejects")) || wants(&format!("{pre}/KEY-L4/x")) {
        parts.push(Part::Rejecting);
    }
    let total_id = format!("{pre}/KEY-L3/total");
    if wants(&total_id) {
        parts.push(Part::Total);
    }
    let seq = std::sync::atomic::AtomicU64::new(0);
    let found = super::runner::par_cases(
        harnesses,
        &parts,
        timeout,
        &seq,
        |h, n, part| {
            // Requests of different parts never share a number.
            let mut c = Client::new(h, 3_000_000 + n * 1_000_000, timeout, policy);
            let mut l2 = L2::default();
            let mut found = Found {
                outcomes: Vec::new(),
                l2: L2::default(),
                failed: None,
            };
            match part {
                Part::Family(family) => {
                    let id = format!("{pre}/KEY-L1/{}", family.name());
                    found.outcomes = injective(&mut c, cfg, *family, &id, &mut l2, &grammar);
                }
                Part::Faithful => found.failed = faithful(&mut c, cfg, &mut l2).err(),
                Part::Rejecting => found.outcomes = rejecting(&mut c, cfg, pre),
                Part::Total => found.outcomes = vec![total(&mut c, cfg, total_id.clone())],
            }
            found.l2 = l2;
            found
        },
        // A part restarts its harness itself where a request fails.
        |_| false,
        || Found {
            outcomes: Vec::new(),
            l2: L2::default(),
            failed: Some("no harness left to run it".into()),
        },
    );
    // Put together in the order of the sequential run: the families (their
    // KEY-L2 checks merged in family order), KEY-L2, KEY-L4, KEY-L3.
    let mut out = Vec::new();
    let mut l2 = L2::default();
    for (part, found) in parts.iter().zip(found) {
        match part {
            Part::Family(_) => {
                out.extend(found.outcomes);
                l2.merge(found.l2);
            }
            Part::Faithful => {
                l2.merge(found.l2);
                match found.failed {
                    None => out.extend(std::mem::take(&mut l2).outcomes(pre)),
                    Some(e) => out.push(Outcome::errored(roundtrip.clone(), &["KEY-L2"], e)),
                }
            }
            Part::Rejecting | Part::Total => out.extend(found.outcomes),
        }
    }
    out
}

/// KEY-L1 over one family: one case per failure class seen
/// (`dialect/<policy>/KEY-L1/<family>/<class>`), each with its plainest
/// counterexample, or one passing case `dialect/<policy>/KEY-L1/<family>`. Every
/// origin built here is also checked against KEY-L2 (`l2`).
fn injective(
    c: &mut Client<'_>,
    cfg: DialectRun,
    family: Family,
    id: &str,
    l2: &mut L2,
    grammar: &Grammar,
) -> Vec<Outcome> {
    let mut rng = Rng::new(cfg.seed ^ 0xD1A1 ^ family as u64);
    // key -> the first origin that built it
    let mut owner: HashMap<String, RawOrigin> = HashMap::new();
    let mut worst: std::collections::BTreeMap<
        String,
        ((usize, usize), RawOrigin, RawOrigin, String),
    > = Default::default();
    let mut checked = 0usize;
    for _ in 0..cfg.cases {
        let base = from_origin(gen::origin(&mut rng));
        let variants = family.variants(&base, &mut rng, grammar);
        for o in std::iter::once(base.clone()).chain(variants) {
            let key = match c.build(&o) {
                Ok(Some(k)) => k,
                Ok(None) => continue,
                Err(e) => return vec![Outcome::errored(id, &["KEY-L1"], e)],
            };
            checked += 1;
            l2.check(c, &o, &key);
            match owner.get(&key) {
                Some(first) if Route::of(first) != Route::of(&o) => {
                    let size = score(first, &o);
                    let class = l1_class(first, &o);
                    if worst.get(&class).map_or(true, |w| size < w.0) {
                        worst.insert(class, (size, first.clone(), o.clone(), key.clone()));
                    }
                }
                Some(_) => {}
                None => {
                    owner.insert(key, o);
                }
            }
        }
    }
    if worst.is_empty() {
        return vec![Outcome::pass(id, &["KEY-L1"])];
    }
    worst
        .into_iter()
        .map(|(class, (_, a, b, key))| {
            Outcome::check(
                format!("{id}/{class}"),
                &["KEY-L1"],
                Some(format!(
                    "two threads share one key {}: {} and {} ({checked} origins checked); \
                     a store keyed by it merges their sessions",
                    js(&key),
                    js(&Route::of(&a)),
                    js(&Route::of(&b))
                )),
            )
        })
        .collect()
}

/// A value as JSON (the protocol's vocabulary) for a report.
fn js<T: serde::Serialize + ?Sized>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// KEY-L2's findings so far, by failure class.
#[derive(Default)]
struct L2 {
    worst: std::collections::BTreeMap<String, ((usize, usize), String)>,
    checked: usize,
    declined: usize,
    /// The parse failed to answer (KEY-L3's business): KEY-L2 stops there.
    errored: Option<String>,
}

impl L2 {
    /// Adds what a later part found, as if its checks had been made here
    /// after this part's: the first of equally plain failures stays, and
    /// after a parse that did not answer nothing more is checked.
    fn merge(&mut self, later: L2) {
        if self.errored.is_some() {
            return;
        }
        self.checked += later.checked;
        self.declined += later.declined;
        for (class, w) in later.worst {
            if self.worst.get(&class).map_or(true, |mine| w.0 < mine.0) {
                self.worst.insert(class, w);
            }
        }
        self.errored = later.errored;
    }

    fn check(&mut self, c: &mut Client<'_>, o: &RawOrigin, key: &str) {
        if self.errored.is_some() {
            return;
        }
        let parsed = match c.parse(key) {
            Ok(p) => p,
            Err(e) => {
                self.errored = Some(format!("parse of {} did not answer: {e}", js(key)));
                return;
            }
        };
        self.checked += 1;
        match parsed {
            None => self.declined += 1,
            Some(r) if r != Route::of(o) => {
                let size = plainness(o);
                let class = l2_class(o, &r);
                if self.worst.get(&class).map_or(true, |w| size < w.0) {
                    self.worst.insert(
                        class,
                        (
                            size,
                            format!(
                                "key {} of {} parses to {}",
                                js(key),
                                js(&Route::of(o)),
                                js(&r)
                            ),
                        ),
                    );
                }
            }
            Some(_) => {}
        }
    }

    /// One case per failure class, or one passing `<pre>/KEY-L2/roundtrip`.
    fn outcomes(self, pre: &str) -> Vec<Outcome> {
        let roundtrip = format!("{pre}/KEY-L2/roundtrip");
        if let Some(e) = self.errored {
            return vec![Outcome::errored(roundtrip, &["KEY-L2"], e)];
        }
        if self.worst.is_empty() {
            return vec![Outcome::pass(roundtrip, &["KEY-L2"])];
        }
        let (checked, declined) = (self.checked, self.declined);
        self.worst
            .into_iter()
            .map(|(class, (_, d))| {
                Outcome::check(
                    format!("{pre}/KEY-L2/{class}"),
                    &["KEY-L2"],
                    Some(format!(
                        "{d} ({checked} keys parsed, {declined} declined): a wrong route, not a refusal"
                    )),
                )
            })
            .collect()
    }
}

/// KEY-L2 over independent generated origins (the families' origins are
/// checked as they are built).
fn faithful(c: &mut Client<'_>, cfg: DialectRun, l2: &mut L2) -> Result<(), String> {
    let mut rng = Rng::new(cfg.seed ^ 0xD1A2);
    for _ in 0..cfg.cases {
        let o = from_origin(gen::origin(&mut rng));
        if let Some(key) = c.build(&o)? {
            l2.check(c, &o, &key);
        }
    }
    Ok(())
}

/// What the dialect's keys are made of besides ids: its marker words
/// (`agent`, `main`, `direct`, `thread`, …, at most 12, most frequent
/// first) and its separators (`:`, …, at most 3), learned from the keys
/// it builds for generated origins (what is left of a key once the
/// origin's ids are cut out).
#[derive(Debug, Clone, Default)]
struct Grammar {
    words: Vec<String>,
    separators: Vec<String>,
}

fn learn_grammar(c: &mut Client<'_>, cfg: DialectRun) -> Result<Grammar, String> {
    let mut rng = Rng::new(cfg.seed ^ 0xD1A5);
    let mut words: HashMap<String, usize> = HashMap::new();
    let mut seps: HashMap<char, usize> = HashMap::new();
    for _ in 0..40 {
        let o = from_origin(gen::origin(&mut rng));
        let Some(key) = c.build(&o)? else { continue };
        let ids: Vec<&str> = [Some(&o.chat_id), o.thread_id.as_ref(), o.user_id.as_ref()]
            .into_iter()
            .flatten()
            .map(String::as_str)
            .collect();
        for w in key.split(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_' || ch == '-')) {
            let word = !w.is_empty() && w.chars().any(|ch| ch.is_ascii_alphabetic());
            if word && !ids.iter().any(|id| id.contains(w)) {
                *words.entry(w.to_owned()).or_default() += 1;
            }
        }
        // Separators: punctuation of the key outside every id occurrence.
        let mut rest = key.clone();
        for id in ids.iter().filter(|id| id.len() > 1) {
            rest = rest.replace(id, "\u{0}");
        }
        for ch in rest.chars() {
            if ch.is_ascii_punctuation() && !ids.iter().any(|id| id.len() == 1 && id.contains(ch)) {
                *seps.entry(ch).or_default() += 1;
            }
        }
    }
    let mut words: Vec<(usize, String)> = words.into_iter().map(|(w, n)| (n, w)).collect();
    words.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let mut seps: Vec<(usize, char)> = seps.into_iter().map(|(c, n)| (n, c)).collect();
    seps.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let mut separators: Vec<String> = seps
        .into_iter()
        .take(3)
        .map(|(_, c)| c.to_string())
        .collect();
    if separators.is_empty() {
        separators.push(":".into());
    }
    Ok(Grammar {
        words: words.into_iter().take(12).map(|(_, w)| w).collect(),
        separators,
    })
}

/// The malformed keys KEY-L4 derives from a key the dialect built, by
/// class: cut short, a separator added or doubled, the last segment
/// dropped, the case changed, white space appended, the prefix changed.
fn malformed(key: &str, rng: &mut Rng) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    let cuts: Vec<usize> = key
        .char_indices()
        .map(|(i, _)| i)
        .filter(|i| *i > 0)
        .collect();
    if !cuts.is_empty() {
        out.push(("truncated", key[..cuts[rng.below(cuts.len())]].to_owned()));
    }
    out.push(("separator-appended", format!("{key}:")));
    if let Some(i) = key.rfind(':') {
        out.push(("separator-doubled", format!("{}:{}", &key[..i], &key[i..])));
        out.push(("segment-dropped", key[..i].to_owned()));
    }
    out.push(("case-changed", key.to_uppercase()));
    out.push(("space-appended", format!("{key} ")));
    if let Some(rest) = key.strip_prefix("agent:") {
        out.push(("prefix-changed", format!("agents:{rest}")));
    }
    out.retain(|(_, m)| m != key);
    out
}

/// KEY-L4: a parse of a malformed key declines it or answers with fields
/// that rebuild exactly that key — never a silent guess. Judged on the
/// keys whose own parse rebuilds them (the reply carries what the key
/// holds); if none does, the law cannot be judged and the case is skipped
/// with that reason. One case per malformed class that the dialect guesses
/// on (`dialect/<policy>/KEY-L4/<class>`), or one passing `dialect/<policy>/KEY-L4/rejects`.
fn rejecting(c: &mut Client<'_>, cfg: DialectRun, pre: &str) -> Vec<Outcome> {
    let rejects = format!("{pre}/KEY-L4/rejects");
    let mut rng = Rng::new(cfg.seed ^ 0xD1A4);
    let mut worst: std::collections::BTreeMap<&'static str, (usize, String)> = Default::default();
    let (mut judged, mut tried, mut unjudgeable, mut declined) = (0usize, 0usize, 0usize, 0usize);
    let fail = |e: String| vec![Outcome::errored(rejects.clone(), &["KEY-L4"], e)];
    for _ in 0..cfg.cases {
        let o = from_origin(gen::origin(&mut rng));
        let key = match c.build(&o) {
            Ok(Some(k)) => k,
            Ok(None) => continue,
            Err(e) => return fail(e),
        };
        // The precondition: the dialect's answer for its own key rebuilds it.
        let own = match c.parse_full(&key) {
            Ok(Some((r, u))) => c.rebuild(&r, &u),
            Ok(None) => {
                declined += 1;
                continue;
            }
            Err(_) => continue, // KEY-L3's business
        };
        match own {
            Ok(Some(k)) if k == key => judged += 1,
            Ok(_) => {
                unjudgeable += 1;
                continue;
            }
            Err(e) => return fail(e),
        }
        for (class, bad) in malformed(&key, &mut rng) {
            tried += 1;
            let answer = match c.parse_full(&bad) {
                Ok(Some(a)) => a,
                Ok(None) | Err(_) => continue,
            };
            let rebuilt = match c.rebuild(&answer.0, &answer.1) {
                Ok(k) => k,
                Err(e) => return fail(e),
            };
            if rebuilt.as_deref() == Some(bad.as_str()) {
                continue; // a key some origin has: a faithful answer
            }
            if worst.get(class).map_or(true, |w| bad.len() < w.0) {
                let what = match &rebuilt {
                    Some(k) => format!("which rebuilds to {}", js(k)),
                    None => "which no origin has".to_owned(),
                };
                worst.insert(
                    class,
                    (
                        bad.len(),
                        format!(
                            "malformed key {} (from {}) parses to {} {what}",
                            js(&bad),
                            js(&key),
                            js(&answer.0)
                        ),
                    ),
                );
            }
        }
    }
    if judged == 0 {
        let why = if unjudgeable == 0 && declined > 0 {
            format!(
                "the parse declines every key the dialect builds here ({declined} keys): no answer to judge a guess against"
            )
        } else {
            format!(
                "no parse answer rebuilds its own key ({unjudgeable} keys, {declined} declined): the replies carry too little to judge a guess (send user_id in routes, P-10)"
            )
        };
        return vec![Outcome::skip(rejects, &["KEY-L4"], why)];
    }
    if worst.is_empty() {
        return vec![Outcome::pass(rejects, &["KEY-L4"])];
    }
    worst
        .into_iter()
        .map(|(class, (_, d))| {
            Outcome::check(
                format!("{pre}/KEY-L4/{class}"),
                &["KEY-L4"],
                Some(format!(
                    "{d} ({tried} malformed keys from {judged} judged keys): a guess, not a refusal"
                )),
            )
        })
        .collect()
}

fn total(c: &mut Client<'_>, cfg: DialectRun, id: String) -> Outcome {
    let mut rng = Rng::new(cfg.seed ^ 0xD1A3);
    for _ in 0..cfg.cases {
        let key = gen::key_like(&mut rng);
        if let Err(e) = c.parse(&key) {
            return Outcome::check(
                id,
                &["KEY-L3"],
                Some(format!("parse of {key:?} did not answer: {e}")),
            );
        }
    }
    Outcome::pass(id, &["KEY-L3"])
}

/// Spawns the harness and runs the dialect laws if it lists both
/// operations; otherwise one skipped case with the harness's reason.
pub fn run_over(
    program: &str,
    args: &[String],
    cfg: DialectRun,
    timeout: Duration,
    validate: bool,
    wants: impl Fn(&str) -> bool + Sync,
) -> Result<Vec<Outcome>, String> {
    let mut harnesses = super::runner::spawn_all(program, args, cfg.jobs, validate)?;
    let mut started = None;
    for h in &mut harnesses {
        let s = h.start(timeout)?;
        started.get_or_insert(s);
    }
    let started = started.ok_or("no harness")?;
    let missing: Vec<&str> = [BUILD, PARSE]
        .into_iter()
        .filter(|op| !started.operations.iter().any(|o| o == op))
        .collect();
    let out = if missing.is_empty() {
        run(
            &mut harnesses,
            cfg,
            timeout,
            &started.dialect_policies(),
            wants,
        )
    } else {
        let why = missing
            .iter()
            .find_map(|op| started.unsupported.get(*op).cloned())
            .unwrap_or_else(|| format!("operation {} not supported", missing.join(", ")));
        if wants("dialect/*") {
            vec![Outcome::skip(
                "dialect/*",
                &["KEY-L1", "KEY-L2", "KEY-L3", "KEY-L4"],
                why,
            )]
        } else {
            Vec::new()
        }
    };
    harnesses.into_iter().for_each(Harness::stop);
    Ok(out)
}
