//! The built-in harness: procroute itself behind the protocol
//! (`procroute harness`). `procroute conform` without `--impl` talks to it
//! through the very same pipes a foreign harness would use.

use std::io::{self, BufRead, Write};

use serde_json::{json, Value};

use super::protocol::{
    Command, Implementation, RunReply, Started, MAX_LINE_BYTES, OPERATIONS, PROTOCOL_VERSION,
};
use super::vectors::{self, Case};

/// Serves the protocol until `stop` or end of input.
pub fn serve(input: impl BufRead, output: impl Write) -> io::Result<()> {
    serve_with(input, output, procroute::gateway::Config::default())
}

/// [`serve`] with a gateway configuration for trace cases.
pub fn serve_with(
    input: impl BufRead,
    mut output: impl Write,
    config: procroute::gateway::Config,
) -> io::Result<()> {
    for line in input.lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let reply = if line.len() > MAX_LINE_BYTES {
            json!({"errored": format!("line of {} bytes exceeds {MAX_LINE_BYTES}", line.len())})
        } else {
            if let Ok(run) = serde_json::from_str::<TraceRunIn>(&line) {
                // The common case, typed end to end; anything else takes
                // the general path, which also names what is wrong.
                let reply = match super::trace::execute_with(&run.case.trace, config.clone()) {
                    Ok(r) => serde_json::to_string(&TraceReplyOut {
                        seq: run.seq,
                        result: TraceResultOut { trace: &r },
                    }),
                    Err(e) => serde_json::to_string(&RunReply::errored(run.seq, e)),
                }
                .unwrap_or_else(|e| json!({"errored": e.to_string()}).to_string());
                writeln!(output, "{reply}")?;
                output.flush()?;
                continue;
            }
            match serde_json::from_str::<Command>(&line) {
                Err(e) => json!({"errored": format!("not a protocol command: {e}")}),
                Ok(Command::Stop) => return Ok(()),
                Ok(Command::Start { version }) if version != PROTOCOL_VERSION => {
                    json!({"errored": format!("protocol version {version} is not supported (only {PROTOCOL_VERSION})")})
                }
                Ok(Command::Start { .. }) => serde_json::to_value(Started {
                    protocol: PROTOCOL_VERSION,
                    implementation: Implementation::named(
                        "procroute",
                        env!("CARGO_PKG_VERSION"),
                        "rust",
                    ),
                    operations: OPERATIONS.iter().map(|s| (*s).to_owned()).collect(),
                    unsupported: Default::default(),
                    limits: Some(json!({
                        "registry": procroute::registry::Limits::default(),
                        "delivery": procroute::delivery::DeliveryLimits::default(),
                    })),
                    policies: builtin_policies(),
                    constraints: Vec::new(),
                    steer: Vec::new(),
                    tick_ms: None,
                    read_acknowledges: Default::default(),
                })
                .unwrap_or(Value::Null),
                Ok(Command::Run { seq, case }) => {
                    serde_json::to_value(run(seq, case, &config)).unwrap_or(Value::Null)
                }
            }
        };
        writeln!(output, "{reply}")?;
        output.flush()?;
    }
    Ok(())
}

/// `{"cmd":"run","seq":…,"case":{"op":"trace","trace":…}}`, read straight
/// into its types.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TraceRunIn {
    #[allow(dead_code)]
    cmd: RunTag,
    seq: u64,
    case: TraceCaseIn,
}

#[derive(serde::Deserialize)]
enum RunTag {
    #[serde(rename = "run")]
    Run,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TraceCaseIn {
    #[allow(dead_code)]
    op: TraceTag,
    trace: super::trace::Trace,
}

#[derive(serde::Deserialize)]
enum TraceTag {
    #[serde(rename = "trace")]
    Trace,
}

#[derive(serde::Serialize)]
struct TraceReplyOut<'a> {
    seq: u64,
    result: TraceResultOut<'a>,
}

#[derive(serde::Serialize)]
struct TraceResultOut<'a> {
    trace: &'a super::trace::TraceResult,
}

fn run(seq: u64, mut case: Value, config: &procroute::gateway::Config) -> RunReply {
    if case.get("op").and_then(Value::as_str) == Some("trace") {
        let answer = case
            .get("trace")
            .cloned()
            .ok_or_else(|| "trace case without a trace".to_owned())
            .and_then(|t| {
                serde_json::from_value::<super::trace::Trace>(t).map_err(|e| e.to_string())
            })
            .and_then(|t| super::trace::execute_with(&t, config.clone()));
        return match answer {
            Ok(r) => RunReply::result(seq, json!({ "trace": r })),
            Err(e) => RunReply::errored(seq, e),
        };
    }
    match case.get("op").and_then(Value::as_str) {
        Some(super::dialect::BUILD) => return dialect_build(seq, &case),
        Some(super::dialect::PARSE) => return dialect_parse(seq, &case),
        _ => {}
    }
    // The runner never sends expectations; add an empty one so the case
    // deserialises with the vector types.
    if let Some(obj) = case.as_object_mut() {
        obj.entry("expect").or_insert(json!({}));
    }
    match serde_json::from_value::<Case>(case) {
        Ok(c) => RunReply::result(seq, vectors::observe(&c)),
        Err(e) => RunReply::errored(seq, format!("case not understood: {e}")),
    }
}

/// The policies the built-in harness declares for the dialect laws: the
/// default, each switch flipped, and a profile namespace.
fn builtin_policies() -> std::collections::BTreeMap<String, Value> {
    [
        ("default", json!({})),
        ("shared-groups", json!({"group_sessions_per_user": false})),
        (
            "per-user-threads",
            json!({"thread_sessions_per_user": true}),
        ),
        ("profile-coder", json!({"profile": "coder"})),
    ]
    .into_iter()
    .map(|(n, p)| (n.to_owned(), p))
    .collect()
}

/// KEY-L1..L4 cases: procroute's own dialect is the canonical one, under
/// the policy the case names (`policy`, P-10; absent: the default).
fn dialect_build(seq: u64, case: &Value) -> RunReply {
    use procroute::origin::{Origin, RawOrigin};
    let policy = match case.get("policy") {
        None => procroute::key::Policy::default(),
        Some(p) => match serde_json::from_value::<procroute::key::Policy>(p.clone()) {
            Ok(p) => p,
            Err(e) => return RunReply::errored(seq, format!("bad policy {p}: {e}")),
        },
    };
    let origin = case
        .get("origin")
        .cloned()
        .ok_or_else(|| "dialect_build without an origin".to_owned())
        .and_then(|o| serde_json::from_value::<RawOrigin>(o).map_err(|e| e.to_string()));
    match origin {
        Err(e) => RunReply::errored(seq, e),
        Ok(raw) => match Origin::try_from(raw) {
            Ok(o) => RunReply::result(
                seq,
                json!({"key": procroute::key::canonical::build(&o, &policy)}),
            ),
            Err(e) => RunReply::result(seq, json!({ "error": e })),
        },
    }
}

fn dialect_parse(seq: u64, case: &Value) -> RunReply {
    let Some(key) = case.get("key").and_then(Value::as_str) else {
        return RunReply::errored(seq, "dialect_parse without a key".into());
    };
    match procroute::key::canonical::parse(key) {
        Ok(f) => {
            let mut route = json!({
                "platform": f.platform.as_str(),
                "chat_type": f.chat_type.as_str(),
                "chat_id": f.chat_id.as_str(),
            });
            if let Some(t) = &f.thread_id {
                route["thread_id"] = json!(t.as_str());
            }
            if let Some(u) = &f.user_id {
                route["user_id"] = json!(u.as_str());
            }
            RunReply::result(seq, json!({ "route": route }))
        }
        Err(e) => RunReply::result(seq, json!({ "error": e.kind })),
    }
}
