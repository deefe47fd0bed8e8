//! The JSON-lines harness protocol, version 1 (spec/PROTOCOL.md).
//!
//! One JSON object per line on the harness's stdin and stdout; stderr is
//! the harness's own. The runner sends `start`, then `run` per case, then
//! `stop`. The harness only observes; the runner judges.

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub const PROTOCOL_VERSION: u64 = 1;
/// Longest line either side may send.
pub const MAX_LINE_BYTES: usize = 1 << 20;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "cmd", rename_all = "snake_case", deny_unknown_fields)]
pub enum Command {
    Start {
        version: u64,
    },
    /// `case` is a vector object without its `id` and `rules` (an `op`
    /// plus its inputs); the `expect` part is never sent.
    Run {
        seq: u64,
        case: Value,
    },
    Stop,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Implementation {
    pub name: String,
    pub version: String,
    pub language: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Started {
    pub protocol: u64,
    pub implementation: Implementation,
    /// Operations the implementation supports; others are reported skipped.
    pub operations: Vec<String>,
    /// Why an unsupported operation cannot be expressed, by operation.
    #[serde(default)]
    pub unsupported: std::collections::BTreeMap<String, String>,
    /// The implementation's limits (rate limits, queue bounds, …), free
    /// form, shown in reports so a difference in settings is visible.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<Value>,
}

/// The answer to `run`: exactly one of `result`, `skipped`, `errored`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunReply {
    pub seq: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errored: Option<String>,
}

impl RunReply {
    pub fn result(seq: u64, result: Value) -> RunReply {
        RunReply {
            seq,
            result: Some(result),
            skipped: None,
            errored: None,
        }
    }

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
