//! The JSON-lines harness protocol, version 1 (spec/PROTOCOL.md).
//!
//! One JSON object per line on the harness's stdin and stdout; stderr is
//! the harness's own. The runner sends `start`, then `run` per case, then
//! `stop`. The harness only observes; the runner judges.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use serde_json::Value;

/// The protocol's version (spec/PROTOCOL.md); `start` must name it.
pub const PROTOCOL_VERSION: u64 = 1;
/// Longest line either side may send.
pub const MAX_LINE_BYTES: usize = 1 << 20;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "cmd", rename_all = "snake_case", deny_unknown_fields)]
/// What the runner sends a harness, one JSON line each (P-2).
pub enum Command {
    /// The handshake.
    Start {
        /// The protocol version the runner speaks.
        version: u64,
    },
    /// `case` is a vector object without its `id` and `rules` (an `op`
    /// plus its inputs); the `expect` part is never sent.
    Run {
        /// One case.
        seq: u64,
        /// Echoed in the reply.
        case: Value,
    },
    /// The run is over: the harness exits.
    Stop,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
/// Who a harness is, from its handshake.
pub struct Implementation {
    /// Its name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// Its language.
    pub language: String,
    /// Its home page (an `http(s)` URL), shown in every report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub homepage: Option<String>,
    /// Where its source is (an `http(s)` URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Its issue tracker (an `http(s)` URL), where findings are reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issues: Option<String>,
}

/// The longest link a handshake may carry.
pub const MAX_LINK: usize = 500;

impl Implementation {
    /// Who, with nothing but the three required fields.
    pub fn named(name: &str, version: &str, language: &str) -> Implementation {
        Implementation {
            name: name.into(),
            version: version.into(),
            language: language.into(),
            homepage: None,
            source: None,
            issues: None,
        }
    }

    /// The links it declared, `(what, url)`, in a fixed order.
    pub fn links(&self) -> Vec<(&'static str, &str)> {
        [
            ("homepage", &self.homepage),
            ("source", &self.source),
            ("issues", &self.issues),
        ]
        .into_iter()
        .filter_map(|(what, url)| url.as_deref().map(|u| (what, u)))
        .collect()
    }

    /// Every declared link is an `http(s)` URL of at most [`MAX_LINK`]
    /// bytes, without spaces or control characters.
    pub fn check_links(&self) -> Result<(), String> {
        for (what, url) in self.links() {
            let scheme = url.starts_with("https://") || url.starts_with("http://");
            if !scheme
                || url.len() > MAX_LINK
                || url.chars().any(|c| c.is_whitespace() || c.is_control())
            {
                return Err(format!(
                    "implementation.{what} {:?} is not an http(s) URL of at most {MAX_LINK} bytes without spaces",
                    url.chars().take(80).collect::<String>()
                ));
            }
        }
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
/// A harness's answer to `start`: who it is and what it can do.
pub struct Started {
    /// The protocol version it speaks.
    pub protocol: u64,
    /// Who it is.
    pub implementation: Implementation,
    /// Operations the implementation supports; others are reported skipped.
    pub operations: Vec<String>,
    /// Why an unsupported operation cannot be expressed, by operation.
    #[serde(default)]
    pub unsupported: BTreeMap<String, String>,
    /// The implementation's limits (rate limits, queue bounds, …), free
    /// form, shown in reports so a difference in settings is visible.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<Value>,
    /// Key-dialect policies the dialect laws run under, by stable name
    /// (P-10): each object is sent as `policy` with every dialect case.
    /// None declared: one run under the dialect's default, named `default`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub policies: BTreeMap<String, Value>,
    /// Inputs the implementation refuses by design (P-12): generation
    /// respects them and the report lists them as observations.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub constraints: Vec<super::constraint::Constraint>,
    /// The generation profile (P-13): input shapes that trigger known
    /// findings, each kept to a share of the generated traces.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steer: Vec<super::trace::steer::Steer>,
    /// The delivery tick (P-14, DELIVER-1's tick interval) in ms of the
    /// trace clock: the implementation sends notifications on a timer of
    /// this period rather than during the operation they became sendable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tick_ms: Option<u64>,
    /// The read policy of SPEC D-1 (P-15): `never` (the default, PROC-10)
    /// or `own_thread_after_delivery` (PROC-11).
    #[serde(default, skip_serializing_if = "is_never")]
    pub read_acknowledges: crate::model::oracle::ReadAck,
}

fn is_never(a: &crate::model::oracle::ReadAck) -> bool {
    *a == crate::model::oracle::ReadAck::Never
}

/// Most policies a handshake may declare, and the longest name.
pub const MAX_POLICIES: usize = 16;
/// Longest policy name.
pub const MAX_POLICY_NAME: usize = 40;

impl Started {
    /// Why the harness cannot run traces, if it does not list the
    /// `trace` operation (its own reason, or a default one).
    pub fn trace_refusal(&self) -> Option<String> {
        if self.operations.iter().any(|o| o == "trace") {
            return None;
        }
        Some(
            self.unsupported
                .get("trace")
                .cloned()
                .unwrap_or_else(|| "operation trace not supported".into()),
        )
    }

    /// Checks what the runner relies on: policy names that are id segments
    /// (`[a-z0-9-]+`, so case ids stay stable and globbable), policy
    /// values that are objects, and constraints that make sense.
    pub fn validate(&self) -> Result<super::constraint::Constraints, String> {
        self.implementation.check_links()?;
        if self.policies.len() > MAX_POLICIES {
            return Err(format!(
                "{} policies declared (limit {MAX_POLICIES})",
                self.policies.len()
            ));
        }
        for (name, policy) in &self.policies {
            let ok = !name.is_empty()
                && name.len() <= MAX_POLICY_NAME
                && name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
            if !ok {
                return Err(format!(
                    "policy name {name:?}: use 1 to {MAX_POLICY_NAME} of a-z, 0-9 and -"
                ));
            }
            if !policy.is_object() {
                return Err(format!("policy {name:?} is {policy}, not an object"));
            }
        }
        self.profile()?;
        let max = crate::model::judge::MAX_TICK_MS;
        if let Some(t) = self.tick_ms.filter(|t| *t > max) {
            return Err(format!("tick_ms {t} is over {max} (P-14)"));
        }
        super::constraint::Constraints::new(&self.constraints)
    }

    /// The declared delivery tick in ms (P-14); 0 when none.
    pub fn tick(&self) -> u64 {
        self.tick_ms.unwrap_or(0)
    }

    /// What the judge must know of the handshake: the delivery tick
    /// (P-14) and the read policy (P-15).
    pub fn declared(&self) -> crate::model::judge::Declared {
        crate::model::judge::Declared {
            tick_ms: self.tick(),
            read_acknowledges: self.read_acknowledges,
        }
    }

    /// The declared generation profile (P-13), checked.
    pub fn profile(&self) -> Result<super::trace::steer::Profile, String> {
        super::trace::steer::Profile::new(&self.steer)
    }

    /// The policies the dialect laws run under, in name order; `None` as
    /// the policy value: send none (the dialect's default).
    pub fn dialect_policies(&self) -> Vec<(String, Option<Value>)> {
        if self.policies.is_empty() {
            return vec![("default".to_owned(), None)];
        }
        self.policies
            .iter()
            .map(|(n, p)| (n.clone(), Some(p.clone())))
            .collect()
    }
}

/// The answer to `run`: exactly one of `result`, `skipped`, `errored`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunReply {
    /// The `seq` of the `run` it answers.
    pub seq: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The observations, when the case ran.
    pub result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Why the implementation cannot express the case.
    pub skipped: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Why the case could not run (a failure).
    pub errored: Option<String>,
}

impl RunReply {
    /// A reply with a result.
    pub fn result(seq: u64, result: Value) -> RunReply {
        RunReply {
            seq,
            result: Some(result),
            skipped: None,
            errored: None,
        }
    }

    /// An errored reply.
    pub fn errored(seq: u64, context: String) -> RunReply {
        RunReply {
            seq,
            result: None,
            skipped: None,
            errored: Some(context),
        }
    }
}

/// The operations of protocol version 1.
pub const OPERATIONS: [&str; 8] = [
    "hermes_build",
    "canonical_build",
    "canonical_parse",
    "hermes_parse",
    "origin",
    "trace",
    "dialect_build",
    "dialect_parse",
];
