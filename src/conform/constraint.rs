//! Input constraints a harness declares in its handshake (PROTOCOL P-12):
//! origins an implementation refuses *by design* — ids it cannot carry
//! (NUL in an environment variable), ids it rejects (WhatsApp identities
//! it cannot canonicalise), platforms it has no channel for — and trace
//! features it has no counterpart for (watch patterns, a restart that
//! processes survive), each with a reason.
//!
//! Why: a generated trace whose threads the implementation cannot open is
//! skipped, and a skipped trace checks nothing. So the generator respects
//! the constraints (it draws other threads instead), stored traces that
//! break one are skipped without being sent, and the report lists every
//! constraint as an observation: what was *not* checked, never a pass.

use serde::{Deserialize, Serialize};

use crate::model::trace::{well_formed_ops, RawOrigin, Trace, TraceOp};

/// Longest character-set spec, and most constraints, a handshake may hold.
pub const MAX_SET_BYTES: usize = 256;
/// Most constraints a handshake may hold.
pub const MAX_CONSTRAINTS: usize = 32;

/// An origin field a constraint restricts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Field {
    /// The platform token.
    Platform,
    /// The chat type.
    ChatType,
    /// The chat id.
    ChatId,
    /// The thread id.
    ThreadId,
    /// The user id.
    UserId,
    /// The user name.
    UserName,
}

impl Field {
    fn get(self, o: &RawOrigin) -> Option<&str> {
        match self {
            Field::Platform => Some(&o.platform),
            Field::ChatType => Some(&o.chat_type),
            Field::ChatId => Some(&o.chat_id),
            Field::ThreadId => o.thread_id.as_deref(),
            Field::UserId => o.user_id.as_deref(),
            Field::UserName => o.user_name.as_deref(),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Field::Platform => "platform",
            Field::ChatType => "chat_type",
            Field::ChatId => "chat_id",
            Field::ThreadId => "thread_id",
            Field::UserId => "user_id",
            Field::UserName => "user_name",
        }
    }
}

/// A trace feature an implementation may have no counterpart for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Feature {
    /// `spawn` with watch patterns.
    Watch,
    /// `kill` (a process killed from outside).
    Kill,
    /// `restart` (any).
    Restart,
    /// `restart` with `survive: true` (processes outlive the gateway).
    RestartSurvive,
    /// `adapter` with `up: false` (the platform failing).
    Adapter,
    /// `shutdown`.
    Shutdown,
    /// `reset` (a new conversation on the same thread).
    Reset,
    /// `read` (an agent reading a process's output).
    Read,
}

impl Feature {
    fn name(self) -> &'static str {
        match self {
            Feature::Watch => "watch",
            Feature::Kill => "kill",
            Feature::Restart => "restart",
            Feature::RestartSurvive => "restart_survive",
            Feature::Adapter => "adapter",
            Feature::Shutdown => "shutdown",
            Feature::Reset => "reset",
            Feature::Read => "read",
        }
    }
}

/// One declared constraint, of one of two kinds.
///
/// On origins: in origins of the listed platforms and chat types (empty:
/// all), the listed fields, when present, contain only characters of
/// `allow` (if given) and none of `forbid` (if given), and are one of
/// `one_of` (if given). Character sets are written like a regex bracket
/// body without the brackets: `A-Za-z0-9.-` (a `-` first or last is
/// literal).
///
/// On traces: `ops` lists trace features the implementation has no
/// counterpart for; generated traces leave them out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Constraint {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    /// The origin fields restricted.
    pub fields: Vec<Field>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    /// Only on these platforms (all when empty).
    pub platforms: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    /// Only for these chat types (all when empty).
    pub chat_types: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Every character of the value is in this set.
    pub allow: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// No character of the value is in this set.
    pub forbid: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    /// The value is one of these.
    pub one_of: Vec<String>,
    /// The value is a decimal integer in canonical form: `0`, or an
    /// optional `-` then 1 to 19 digits without a leading zero (Telegram
    /// chat and topic ids, Discord snowflakes: numbers, printed).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub integer: bool,
    /// At most this many characters (Telegram topic ids are 32-bit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_len: Option<usize>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    /// Trace features the implementation has no counterpart for.
    pub ops: Vec<Feature>,
    /// Why the implementation refuses these inputs (shown in reports).
    pub reason: String,
}

impl Constraint {
    /// What is refused, for a report: `user_id in whatsapp group, channel
    /// origins: only [A-Za-z0-9.-]`.
    pub fn describe(&self) -> String {
        if !self.ops.is_empty() {
            let ops: Vec<&str> = self.ops.iter().map(|f| f.name()).collect();
            return format!("trace features {}", ops.join(", "));
        }
        let fields: Vec<&str> = self.fields.iter().map(|f| f.name()).collect();
        let mut s = fields.join(", ");
        if !self.platforms.is_empty() || !self.chat_types.is_empty() {
            s.push_str(" in ");
            s.push_str(&self.platforms.join("/"));
            if !self.platforms.is_empty() && !self.chat_types.is_empty() {
                s.push(' ');
            }
            s.push_str(&self.chat_types.join("/"));
            s.push_str(" origins");
        }
        if let Some(a) = &self.allow {
            s.push_str(&format!(": only [{}]", a.escape_debug()));
        }
        if let Some(f) = &self.forbid {
            s.push_str(&format!(": never [{}]", f.escape_debug()));
        }
        if !self.one_of.is_empty() {
            s.push_str(&format!(": one of {}", self.one_of.join(", ")));
        }
        if self.integer {
            s.push_str(": an integer");
        }
        if let Some(m) = self.max_len {
            s.push_str(&format!(": at most {m} characters"));
        }
        s
    }
}

/// A parsed character set: inclusive ranges.
#[derive(Debug, Clone, PartialEq)]
struct CharSet(Vec<(char, char)>);

impl CharSet {
    fn parse(spec: &str) -> Result<CharSet, String> {
        if spec.len() > MAX_SET_BYTES {
            return Err(format!(
                "character set of {} bytes (limit {MAX_SET_BYTES})",
                spec.len()
            ));
        }
        let chars: Vec<char> = spec.chars().collect();
        let mut ranges = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            if i + 2 < chars.len() && chars[i + 1] == '-' {
                let (lo, hi) = (chars[i], chars[i + 2]);
                if lo > hi {
                    return Err(format!(
                        "character set {spec:?}: range {lo}-{hi} is reversed"
                    ));
                }
                ranges.push((lo, hi));
                i += 3;
            } else {
                ranges.push((chars[i], chars[i]));
                i += 1;
            }
        }
        if ranges.is_empty() {
            return Err("empty character set".into());
        }
        Ok(CharSet(ranges))
    }

    fn contains(&self, c: char) -> bool {
        self.0.iter().any(|&(lo, hi)| lo <= c && c <= hi)
    }

    /// The `n`-th allowed character, cycling (for repairs).
    fn nth(&self, n: u32) -> char {
        let total: u32 = self
            .0
            .iter()
            .map(|&(lo, hi)| u32::from(hi) - u32::from(lo) + 1)
            .sum();
        let mut k = n % total.max(1);
        for &(lo, hi) in &self.0 {
            let size = u32::from(hi) - u32::from(lo) + 1;
            if k < size {
                return char::from_u32(u32::from(lo) + k).unwrap_or(lo);
            }
            k -= size;
        }
        self.0[0].0
    }
}

/// Constraints checked for sense once, at the handshake.
#[derive(Debug, Clone, Default)]
pub struct Constraints {
    declared: Vec<(Constraint, Option<CharSet>, Option<CharSet>)>,
}

impl Constraints {
    /// Validates a handshake's constraints; the error names the bad one.
    pub fn new(declared: &[Constraint]) -> Result<Constraints, String> {
        if declared.len() > MAX_CONSTRAINTS {
            return Err(format!(
                "{} constraints declared (limit {MAX_CONSTRAINTS})",
                declared.len()
            ));
        }
        let mut out = Vec::new();
        for (i, c) in declared.iter().enumerate() {
            let bad = |what: String| format!("constraint {i} ({:?}): {what}", c.reason);
            if c.ops.is_empty() {
                if c.fields.is_empty() {
                    return Err(bad("names no field".into()));
                }
                if c.allow.is_none()
                    && c.forbid.is_none()
                    && c.one_of.is_empty()
                    && !c.integer
                    && c.max_len.is_none()
                {
                    return Err(bad(
                        "has neither allow, forbid, one_of, integer nor max_len".into(),
                    ));
                }
            } else if !c.fields.is_empty() {
                return Err(bad("names both ops and fields: declare them apart".into()));
            }
            if c.reason.trim().is_empty() {
                return Err(bad("gives no reason".into()));
            }
            let allow = c
                .allow
                .as_deref()
                .map(CharSet::parse)
                .transpose()
                .map_err(bad)?;
            let forbid = c
                .forbid
                .as_deref()
                .map(CharSet::parse)
                .transpose()
                .map_err(bad)?;
            out.push((c.clone(), allow, forbid));
        }
        Ok(Constraints { declared: out })
    }

    /// Whether nothing was declared.
    pub fn is_empty(&self) -> bool {
        self.declared.is_empty()
    }

    /// The first constraint `o` breaks, as a sentence naming the field,
    /// the character and the implementation's reason.
    pub fn broken_by(&self, o: &RawOrigin) -> Option<String> {
        for (c, allow, forbid) in &self.declared {
            if !applies(c, o) {
                continue;
            }
            for &f in &c.fields {
                let Some(v) = f.get(o) else { continue };
                if !c.one_of.is_empty() && !c.one_of.iter().any(|x| x == v) {
                    return Some(format!(
                        "{} {v:?} is not one of {}, which the implementation refuses: {}",
                        f.name(),
                        c.one_of.join(", "),
                        c.reason
                    ));
                }
                if let Some(max) = c.max_len.filter(|m| v.chars().count() > *m) {
                    return Some(format!(
                        "{} {v:?} is longer than {max} characters, which the implementation refuses: {}",
                        f.name(),
                        c.reason
                    ));
                }
                if c.integer && !is_integer(v) {
                    return Some(format!(
                        "{} {v:?} is not an integer, which the implementation refuses: {}",
                        f.name(),
                        c.reason
                    ));
                }
                let odd = v.chars().find(|&ch| {
                    allow.as_ref().is_some_and(|a| !a.contains(ch))
                        || forbid.as_ref().is_some_and(|x| x.contains(ch))
                });
                if let Some(ch) = odd {
                    return Some(format!(
                        "{} {v:?} has {ch:?}, which the implementation refuses: {}",
                        f.name(),
                        c.reason
                    ));
                }
            }
        }
        None
    }

    /// `o` with every refused character replaced by an allowed one (the
    /// same input character always maps to the same output character, so
    /// ids that differed only there may become equal; the generator uses
    /// this only after drawing fresh origins failed).
    pub fn repair(&self, o: &RawOrigin) -> RawOrigin {
        let mut o = o.clone();
        for (c, allow, forbid) in &self.declared {
            if !applies(c, &o) {
                continue;
            }
            for &f in &c.fields {
                let slot = match f {
                    Field::Platform => Some(&mut o.platform),
                    Field::ChatType => Some(&mut o.chat_type),
                    Field::ChatId => Some(&mut o.chat_id),
                    Field::ThreadId => o.thread_id.as_mut(),
                    Field::UserId => o.user_id.as_mut(),
                    Field::UserName => o.user_name.as_mut(),
                };
                let Some(v) = slot else { continue };
                if let Some(first) = c.one_of.first() {
                    if !c.one_of.contains(v) {
                        *v = first.clone();
                    }
                }
                if let Some(max) = c.max_len {
                    *v = v.chars().take(max.max(1)).collect();
                }
                if c.integer && !is_integer(v) {
                    // Keep the id's identity as far as digits can: one
                    // digit per character.
                    let digits: String = v
                        .chars()
                        .take(18)
                        .map(|ch| char::from(b'0' + (u32::from(ch) % 10) as u8))
                        .collect();
                    *v = format!("1{digits}");
                }
                *v = v
                    .chars()
                    .map(|ch| {
                        let ok = allow.as_ref().map_or(true, |a| a.contains(ch))
                            && !forbid.as_ref().is_some_and(|x| x.contains(ch));
                        if ok {
                            return ch;
                        }
                        match allow {
                            Some(a) => a.nth(u32::from(ch)),
                            None => 'x',
                        }
                    })
                    .collect();
            }
        }
        o
    }
}

impl Constraints {
    /// The declared constraint that refuses `op`, if any: its reason.
    pub fn refuses_op(&self, op: &TraceOp) -> Option<&str> {
        let features: &[Feature] = match op {
            TraceOp::Spawn { watch, .. } if !watch.is_empty() => &[Feature::Watch],
            TraceOp::Kill { .. } => &[Feature::Kill],
            TraceOp::Restart { survive: true } => &[Feature::Restart, Feature::RestartSurvive],
            TraceOp::Restart { survive: false } => &[Feature::Restart],
            // `up: true` is a no-op where the adapter never fails (the
            // quiescence suffix starts with it).
            TraceOp::Adapter { up: false } => &[Feature::Adapter],
            TraceOp::Shutdown => &[Feature::Shutdown],
            TraceOp::Reset { .. } => &[Feature::Reset],
            TraceOp::Read { .. } => &[Feature::Read],
            _ => &[],
        };
        features.iter().find_map(|f| self.refuses(*f))
    }

    /// The reason of the declared constraint that refuses `feature`.
    fn refuses(&self, feature: Feature) -> Option<&str> {
        self.declared
            .iter()
            .find(|(c, _, _)| c.ops.contains(&feature))
            .map(|(c, _, _)| c.reason.as_str())
    }

    /// The first refusal of `trace`: a thread or an op, as a sentence.
    pub fn refusal(&self, trace: &Trace) -> Option<String> {
        if let Some(why) = trace.threads.iter().enumerate().find_map(|(i, o)| {
            self.broken_by(o)
                .map(|why| format!("thread {i} breaks a declared constraint: {why}"))
        }) {
            return Some(why);
        }
        trace.ops.iter().enumerate().find_map(|(i, op)| {
            self.refuses_op(op)
                .map(|why| format!("step {i} uses a refused trace feature: {why}"))
        })
    }

    /// `ops` without the refused features: watch patterns are taken off
    /// a spawn (its notify flag stays), any other refused op is left out,
    /// then [`well_formed_ops`] keeps the rest consistent.
    pub fn strip_ops(&self, ops: Vec<TraceOp>) -> Vec<TraceOp> {
        if !self.declared.iter().any(|(c, _, _)| !c.ops.is_empty()) {
            return ops;
        }
        let kept = ops
            .into_iter()
            .filter_map(|op| match op {
                TraceOp::Spawn {
                    thread,
                    process,
                    watch,
                    notify,
                } if !watch.is_empty() && self.refuses(Feature::Watch).is_some() => {
                    Some(TraceOp::Spawn {
                        thread,
                        process,
                        watch: Vec::new(),
                        notify,
                    })
                }
                op if self.refuses_op(&op).is_some() => None,
                op => Some(op),
            })
            .collect();
        well_formed_ops(kept)
    }
}

/// A decimal integer in canonical form, as a platform's number prints:
/// `0`, or an optional `-` then 1 to 19 digits without a leading zero.
fn is_integer(v: &str) -> bool {
    if v == "0" {
        return true;
    }
    let digits = v.strip_prefix('-').unwrap_or(v);
    !digits.is_empty()
        && digits.len() <= 19
        && !digits.starts_with('0')
        && digits.bytes().all(|b| b.is_ascii_digit())
}

fn applies(c: &Constraint, o: &RawOrigin) -> bool {
    (c.platforms.is_empty() || c.platforms.contains(&o.platform))
        && (c.chat_types.is_empty() || c.chat_types.contains(&o.chat_type))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(platform: &str, chat_type: &str, chat: &str, user: Option<&str>) -> RawOrigin {
        RawOrigin {
            platform: platform.into(),
            chat_type: chat_type.into(),
            chat_id: chat.into(),
            thread_id: None,
            user_id: user.map(str::to_owned),
            user_name: None,
        }
    }

    fn whatsapp_users() -> Constraint {
        Constraint {
            fields: vec![Field::UserId],
            platforms: vec!["whatsapp".into()],
            chat_types: vec!["group".into()],
            allow: Some("A-Za-z0-9.-".into()),
            forbid: None,
            one_of: vec![],
            integer: false,
            max_len: None,
            ops: vec![],
            reason: "canonicalised".into(),
        }
    }

    #[test]
    fn a_constraint_binds_only_its_platform_chat_type_and_fields() {
        let c = Constraints::new(&[whatsapp_users()]).unwrap();
        let bad = origin("whatsapp", "group", "g_1", Some("a_b"));
        let why = c.broken_by(&bad).unwrap();
        assert!(why.contains("user_id \"a_b\" has '_'"), "{why}");
        assert!(why.contains("canonicalised"), "{why}");
        assert_eq!(
            c.broken_by(&origin("whatsapp", "dm", "g", Some("a_b"))),
            None
        );
        assert_eq!(
            c.broken_by(&origin("slack", "group", "g", Some("a_b"))),
            None
        );
        assert_eq!(c.broken_by(&origin("whatsapp", "group", "g_1", None)), None);
        let fixed = c.repair(&bad);
        assert_eq!(c.broken_by(&fixed), None);
        assert_eq!(fixed.chat_id, "g_1", "other fields untouched");
        assert_eq!(fixed.user_id.as_deref().map(str::len), Some(3));
    }

    #[test]
    fn forbid_sets_and_ranges_parse() {
        let nul = Constraint {
            fields: vec![Field::ChatId, Field::UserName],
            platforms: vec![],
            chat_types: vec![],
            allow: None,
            forbid: Some("\u{0}".into()),
            one_of: vec![],
            integer: false,
            max_len: None,
            ops: vec![],
            reason: "environment variables cannot hold NUL".into(),
        };
        let c = Constraints::new(&[nul]).unwrap();
        let mut o = origin("slack", "group", "C\u{0}1", None);
        assert!(c.broken_by(&o).is_some());
        o = c.repair(&o);
        assert_eq!(o.chat_id, "Cx1");
        assert_eq!(c.broken_by(&o), None);
        let set = CharSet::parse("a-c-").unwrap();
        assert!(set.contains('b') && set.contains('-') && !set.contains('d'));
    }

    fn refusing(ops: Vec<Feature>) -> Constraints {
        Constraints::new(&[Constraint {
            fields: vec![],
            platforms: vec![],
            chat_types: vec![],
            allow: None,
            forbid: None,
            one_of: vec![],
            integer: false,
            max_len: None,
            ops,
            reason: "no counterpart".into(),
        }])
        .unwrap()
    }

    /// Refused trace features are left out of generated ops: watch
    /// patterns come off a spawn (notify stays), refused ops go, and an
    /// adapter coming up (the quiescence suffix) is never refused.
    #[test]
    fn refused_features_are_stripped_from_ops() {
        let c = refusing(vec![
            Feature::Watch,
            Feature::RestartSurvive,
            Feature::Adapter,
        ]);
        let spawn = |watch: &[&str]| TraceOp::Spawn {
            thread: 0,
            process: "p".into(),
            watch: watch.iter().map(|w| (*w).to_owned()).collect(),
            notify: true,
        };
        let ops = vec![
            spawn(&["ERR"]),
            TraceOp::Restart { survive: true },
            TraceOp::Restart { survive: false },
            TraceOp::Adapter { up: false },
            TraceOp::Adapter { up: true },
        ];
        assert!(c.refuses_op(&ops[0]).is_some());
        assert!(
            c.refuses_op(&ops[2]).is_none(),
            "a plain restart is allowed"
        );
        assert_eq!(
            c.strip_ops(ops),
            vec![
                spawn(&[]),
                TraceOp::Restart { survive: false },
                TraceOp::Adapter { up: true },
            ]
        );
        let t = Trace {
            threads: vec![origin("telegram", "dm", "1", None)],
            ops: vec![TraceOp::Restart { survive: true }],
        };
        assert!(c.refusal(&t).unwrap().contains("step 0"));
    }

    #[test]
    fn one_of_binds_platforms_and_chat_types() {
        let c = Constraints::new(&[Constraint {
            fields: vec![Field::Platform],
            platforms: vec![],
            chat_types: vec![],
            allow: None,
            forbid: None,
            one_of: vec!["telegram".into()],
            integer: false,
            max_len: None,
            ops: vec![],
            reason: "only a fake Telegram Bot API".into(),
        }])
        .unwrap();
        let o = origin("slack", "group", "C1", None);
        assert!(c.broken_by(&o).unwrap().contains("not one of telegram"));
        assert_eq!(c.repair(&o).platform, "telegram");
        assert_eq!(c.broken_by(&origin("telegram", "group", "C1", None)), None);
    }

    #[test]
    fn integer_ids() {
        let c = Constraints::new(&[Constraint {
            fields: vec![Field::ChatId],
            platforms: vec![],
            chat_types: vec![],
            allow: None,
            forbid: None,
            one_of: vec![],
            integer: true,
            max_len: Some(10),
            ops: vec![],
            reason: "Telegram chat ids are integers".into(),
        }])
        .unwrap();
        for ok in ["-100123456", "42", "0"] {
            assert_eq!(
                c.broken_by(&origin("telegram", "group", ok, None)),
                None,
                "{ok}"
            );
        }
        for bad in [
            "4-",
            "-",
            "",
            "1.5",
            "12345678901234567890",
            "-1001234567890",
        ] {
            let o = origin("telegram", "group", bad, None);
            assert!(c.broken_by(&o).is_some(), "{bad:?}");
            assert_eq!(c.broken_by(&c.repair(&o)), None, "{bad:?} repaired");
        }
    }

    #[test]
    fn nonsense_is_refused_with_a_reason() {
        let mut c = whatsapp_users();
        c.allow = Some("z-a".into());
        let e = Constraints::new(&[c.clone()]).unwrap_err();
        assert!(e.contains("reversed") && e.contains("constraint 0"), "{e}");
        c.allow = None;
        assert!(Constraints::new(&[c.clone()])
            .unwrap_err()
            .contains("neither"));
        c.allow = Some("a".into());
        c.fields.clear();
        assert!(Constraints::new(&[c.clone()])
            .unwrap_err()
            .contains("no field"));
        c.fields = vec![Field::ChatId];
        c.reason = " ".into();
        assert!(Constraints::new(&[c]).unwrap_err().contains("no reason"));
    }
}
