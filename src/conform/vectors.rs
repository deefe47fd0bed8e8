//! Spec vectors: data with stable ids, the rules they exercise, and one
//! data-driven check that every consumer (cargo test, `procroute conform`)
//! shares.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Outcome;
use procroute::key::{canonical, hermes, KeyFields, Policy};
use procroute::origin::{Origin, RawOrigin};

/// `spec/vectors/keys.json`, compiled in so the binary is self-contained.
pub const KEYS_JSON: &str = include_str!("../../spec/vectors/keys.json");

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
/// A vector file (`spec/vectors/keys.json`).
pub struct KeyVectors {
    /// The suite's name.
    pub suite: String,
    /// The suite's version (S-3).
    pub suite_version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// What the file is, in words.
    pub note: Option<String>,
    /// The vectors, each with a stable id.
    pub vectors: Vec<Vector>,
}

#[derive(Debug, thiserror::Error)]
/// Why a vector file cannot be used.
pub enum VectorFileError {
    #[error("vector file {file}: {source}")]
    /// It is not valid JSON of the vector format.
    Json {
        /// The file.
        file: String,
        /// The parser's error.
        source: serde_json::Error,
    },
    #[error("vector file {file}: id {id:?} appears {count} times (ids must be unique)")]
    /// Two vectors share an id.
    DuplicateId {
        /// The file.
        file: String,
        /// The id.
        id: String,
        /// How many vectors carry it.
        count: usize,
    },
    #[error("vector file {file}: vector {id:?} cites no rule")]
    /// A vector cites no rule (S-4).
    NoRule {
        /// The file.
        file: String,
        /// The vector's id.
        id: String,
    },
}

impl KeyVectors {
    /// The compiled-in vector file, checked.
    pub fn builtin() -> Result<KeyVectors, VectorFileError> {
        KeyVectors::parse("spec/vectors/keys.json", KEYS_JSON)
    }

    /// Parses and checks the file-level invariants (unique ids, rules cited).
    pub fn parse(file: &str, text: &str) -> Result<KeyVectors, VectorFileError> {
        let v: KeyVectors = serde_json::from_str(text).map_err(|source| VectorFileError::Json {
            file: file.to_owned(),
            source,
        })?;
        let mut ids: Vec<&str> = v.vectors.iter().map(|x| x.id.as_str()).collect();
        ids.sort_unstable();
        for w in ids.windows(2) {
            if w[0] == w[1] {
                let count = ids.iter().filter(|i| **i == w[0]).count();
                return Err(VectorFileError::DuplicateId {
                    file: file.to_owned(),
                    id: w[0].to_owned(),
                    count,
                });
            }
        }
        if let Some(x) = v.vectors.iter().find(|x| x.rules.is_empty()) {
            return Err(VectorFileError::NoRule {
                file: file.to_owned(),
                id: x.id.clone(),
            });
        }
        Ok(v)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
/// One key vector: a stable id, the rules it checks, a case.
pub struct Vector {
    /// Stable id, `<group>/<name>`. Never reused for a different case.
    pub id: String,
    /// The rule ids it checks.
    pub rules: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// What it is about, in words.
    pub note: Option<String>,
    #[serde(flatten)]
    /// The operation, its inputs and what is expected.
    pub case: Case,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
/// What a vector asks an implementation to do, and what it must answer.
pub enum Case {
    /// Build a hermes-agent 0.19.0 key.
    HermesBuild {
        /// The origin.
        origin: RawOrigin,
        #[serde(default)]
        /// The keying policy (default: hermes-agent's).
        policy: Policy,
        /// The expected key or error.
        expect: Expect,
    },
    /// Build a canonical key.
    CanonicalBuild {
        /// The origin.
        origin: RawOrigin,
        #[serde(default)]
        /// The keying policy (default: hermes-agent's).
        policy: Policy,
        /// The expected key or error.
        expect: Expect,
    },
    /// Parse a canonical key: `expect.fields` or `expect.error`.
    CanonicalParse {
        /// The key.
        key: String,
        /// The expected fields or error.
        expect: Expect,
    },
    /// Parse a hermes key: `expect.parsed` or `expect.error`.
    HermesParse {
        /// The key.
        key: String,
        /// The expected determination or error.
        expect: Expect,
    },
    /// Validate an origin given as raw JSON: `expect.error` (or `expect.ok`).
    Origin {
        /// The origin, as JSON that may be invalid.
        origin: Value,
        /// The expected error (or `ok`).
        expect: Expect,
    },
}

/// Exactly one of the fields is set.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The key a build must produce.
    pub key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The fields a canonical parse must produce.
    pub fields: Option<KeyFields>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// What a hermes parse must determine.
    pub parsed: Option<hermes::HermesParsed>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The origin is valid.
    pub ok: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The error expected.
    pub error: Option<ErrorSpec>,
}

/// An expected error: its `kind`, and optionally the byte `position`, the
/// key `part` or the origin `field` it names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorSpec {
    /// The error's kind (`too_long`, `bad_escape`, …).
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The byte offset a key error must name.
    pub position: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The key part a key error must name.
    pub part: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The origin field an origin error must name.
    pub field: Option<String>,
}

fn matches_error(spec: &ErrorSpec, actual: &Value, position: Option<usize>) -> Result<(), String> {
    let field = |name: &str| actual.get(name).and_then(Value::as_str).map(str::to_owned);
    let mismatch = |what: &str, want: &dyn std::fmt::Debug, got: &dyn std::fmt::Debug| {
        Err(format!(
            "error {what}: expected {want:?}, got {got:?} (error {actual})"
        ))
    };
    if field("kind").as_deref() != Some(spec.kind.as_str()) {
        return mismatch("kind", &spec.kind, &field("kind"));
    }
    if spec.position.is_some() && spec.position != position {
        return mismatch("position", &spec.position, &position);
    }
    if spec.part.is_some() && spec.part != field("part") {
        return mismatch("part", &spec.part, &field("part"));
    }
    if spec.field.is_some() && spec.field != field("field") {
        return mismatch("field", &spec.field, &field("field"));
    }
    Ok(())
}

fn to_value<T: Serialize>(t: &T) -> Value {
    serde_json::to_value(t).unwrap_or(Value::Null)
}

/// Runs one vector against the built-in dialects.
pub fn run(v: &Vector) -> Outcome {
    let rules: Vec<&str> = v.rules.iter().map(String::as_str).collect();
    Outcome::check(v.id.clone(), &rules, check(&v.case).err())
}

fn origin_of(raw: &RawOrigin) -> Result<Origin, String> {
    Origin::try_from(raw.clone()).map_err(|e| format!("vector origin is invalid: {e}"))
}

fn expect_key(expect: &Expect, got: Result<String, Value>) -> Result<(), String> {
    match (got, &expect.key, &expect.error) {
        (Ok(key), Some(want), None) if &key == want => Ok(()),
        (Ok(key), Some(want), None) => Err(format!("expected key {want:?}, got {key:?}")),
        (Err(e), None, Some(spec)) => matches_error(spec, &e, None),
        (Ok(key), None, Some(spec)) => {
            Err(format!("expected error {}, got key {key:?}", spec.kind))
        }
        (Err(e), Some(want), None) => Err(format!("expected key {want:?}, got error {e}")),
        _ => Err("vector must set exactly one of expect.key, expect.error".to_owned()),
    }
}

fn check(case: &Case) -> Result<(), String> {
    match case {
        Case::HermesBuild {
            origin,
            policy,
            expect,
        } => {
            let o = origin_of(origin)?;
            expect_key(expect, hermes::build(&o, policy).map_err(|e| to_value(&e)))
        }
        Case::CanonicalBuild {
            origin,
            policy,
            expect,
        } => {
            let o = origin_of(origin)?;
            let key = canonical::build(&o, policy);
            expect_key(expect, Ok(key.clone()))?;
            // Every built key must parse back to its keyed fields (KEY-C4).
            match canonical::parse(&key) {
                Ok(f) if f == KeyFields::of(&o, policy) => Ok(()),
                Ok(f) => Err(format!(
                    "built key {key:?} parses to different fields {f:?}"
                )),
                Err(e) => Err(format!("built key {key:?} does not parse: {e}")),
            }
        }
        Case::CanonicalParse { key, expect } => match (canonical::parse(key), expect) {
            (
                Ok(f),
                Expect {
                    fields: Some(want),
                    error: None,
                    ..
                },
            ) => {
                if &f != want {
                    return Err(format!("expected fields {want:?}, got {f:?}"));
                }
                let rebuilt = canonical::build_fields(&f);
                if &rebuilt != key {
                    return Err(format!("rebuilding gives {rebuilt:?}, not the key"));
                }
                Ok(())
            }
            (
                Err(e),
                Expect {
                    fields: None,
                    error: Some(spec),
                    ..
                },
            ) => matches_error(spec, &to_value(&e.kind), Some(e.position)),
            (Ok(f), _) => Err(format!("expected an error, got fields {f:?}")),
            (Err(e), _) => Err(format!("expected fields, got error {e}")),
        },
        Case::HermesParse { key, expect } => match (hermes::parse(key), expect) {
            (
                Ok(p),
                Expect {
                    parsed: Some(want),
                    error: None,
                    ..
                },
            ) if &p == want => Ok(()),
            (
                Err(e),
                Expect {
                    parsed: None,
                    error: Some(spec),
                    ..
                },
            ) => matches_error(spec, &to_value(&e.kind), Some(e.position)),
            (Ok(p), _) => Err(format!("got {}", to_value(&p))),
            (Err(e), _) => Err(format!("got error {e}")),
        },
        Case::Origin { origin, expect } => {
            let got = serde_json::from_value::<RawOrigin>(origin.clone())
                .map_err(|e| serde_json::json!({"kind": "malformed", "detail": e.to_string()}))
                .and_then(|raw| Origin::try_from(raw).map_err(|e| to_value(&e)));
            match (got, expect) {
                (
                    Ok(o),
                    Expect {
                        ok: Some(true),
                        error: None,
                        ..
                    },
                ) => {
                    // serde round trip (ORIGIN-6).
                    let back: Origin = serde_json::from_value(to_value(&o))
                        .map_err(|e| format!("round trip failed: {e}"))?;
                    if back == o {
                        Ok(())
                    } else {
                        Err(format!("round trip changed {o:?} into {back:?}"))
                    }
                }
                (
                    Err(e),
                    Expect {
                        error: Some(spec), ..
                    },
                ) => matches_error(spec, &e, None),
                (Ok(o), _) => Err(format!("expected an error, got {o:?}")),
                (Err(e), _) => Err(format!("expected a valid origin, got error {e}")),
            }
        }
    }
}

/// What an implementation answers for a case, in the shape of [`Expect`]:
/// `{"key": …}`, `{"fields": …}`, `{"parsed": …}`, `{"ok": true}` or
/// `{"error": {"kind": …, "position"?: …, "part"?: …, "field"?: …}}`.
/// This is the built-in implementation's answer (the protocol's `run`).
pub fn observe(case: &Case) -> Value {
    use serde_json::json;
    let err = |e: Value| json!({ "error": e });
    match case {
        Case::HermesBuild { origin, policy, .. } => match Origin::try_from(origin.clone()) {
            Err(e) => err(json!({"kind": "invalid_origin", "detail": e.to_string()})),
            Ok(o) => match hermes::build(&o, policy) {
                Ok(key) => json!({ "key": key }),
                Err(e) => err(to_value(&e)),
            },
        },
        Case::CanonicalBuild { origin, policy, .. } => match Origin::try_from(origin.clone()) {
            Err(e) => err(json!({"kind": "invalid_origin", "detail": e.to_string()})),
            Ok(o) => json!({ "key": canonical::build(&o, policy) }),
        },
        Case::CanonicalParse { key, .. } => match canonical::parse(key) {
            Ok(f) => json!({ "fields": f }),
            Err(e) => {
                let mut v = to_value(&e.kind);
                v["position"] = json!(e.position);
                err(v)
            }
        },
        Case::HermesParse { key, .. } => match hermes::parse(key) {
            Ok(p) => json!({ "parsed": p }),
            Err(e) => {
                let mut v = to_value(&e.kind);
                v["position"] = json!(e.position);
                err(v)
            }
        },
        Case::Origin { origin, .. } => {
            match serde_json::from_value::<RawOrigin>(origin.clone())
                .map_err(|e| json!({"kind": "malformed", "detail": e.to_string()}))
                .and_then(|raw| Origin::try_from(raw).map_err(|e| to_value(&e)))
            {
                Ok(_) => json!({ "ok": true }),
                Err(e) => err(e),
            }
        }
    }
}

fn expect_of(case: &Case) -> &Expect {
    match case {
        Case::HermesBuild { expect, .. }
        | Case::CanonicalBuild { expect, .. }
        | Case::CanonicalParse { expect, .. }
        | Case::HermesParse { expect, .. }
        | Case::Origin { expect, .. } => expect,
    }
}

/// Judges an implementation's observation against the vector's expectation
/// (the runner's side of the protocol). The reference is consulted only to
/// check canonicity of parsed fields (KEY-C6).
pub fn judge(case: &Case, obs: &Value) -> Result<(), String> {
    let expect = expect_of(case);
    let got_error = obs.get("error");
    if let Some(spec) = &expect.error {
        let Some(e) = got_error else {
            return Err(format!("expected error {}, got {obs}", spec.kind));
        };
        let position = e
            .get("position")
            .and_then(Value::as_u64)
            .map(|p| p as usize);
        return matches_error(spec, e, position);
    }
    if let Some(e) = got_error {
        return Err(format!("expected a value, got error {e}"));
    }
    if let Some(want) = &expect.key {
        return match obs.get("key").and_then(Value::as_str) {
            Some(k) if k == want => Ok(()),
            other => Err(format!("expected key {want:?}, got {other:?}")),
        };
    }
    if let Some(want) = &expect.fields {
        let got: KeyFields = obs
            .get("fields")
            .cloned()
            .ok_or_else(|| "no `fields` in the answer".to_owned())
            .and_then(|f| {
                serde_json::from_value(f).map_err(|e| {
                    format!(
                        "`fields` is not the shape PROTOCOL P-3 gives for canonical_parse ({e})"
                    )
                })
            })
            .map_err(|e| format!("{e}: {obs}"))?;
        if &got != want {
            return Err(format!("expected fields {want:?}, got {got:?}"));
        }
        if let Case::CanonicalParse { key, .. } = case {
            let rebuilt = canonical::build_fields(&got);
            if &rebuilt != key {
                return Err(format!("rebuilding gives {rebuilt:?}, not the key"));
            }
        }
        return Ok(());
    }
    if let Some(want) = &expect.parsed {
        let parsed = obs
            .get("parsed")
            .cloned()
            .ok_or_else(|| format!("no `parsed` in {obs}"))?;
        // Say what is wrong with the shape (PROTOCOL P-3): an implementer
        // must not have to guess it from a bare "no".
        let got: hermes::HermesParsed = serde_json::from_value(parsed).map_err(|e| {
            format!("`parsed` is not the shape PROTOCOL P-3 gives for hermes_parse ({e}): {obs}")
        })?;
        return if &got == want {
            Ok(())
        } else {
            Err(format!("got {}", to_value(&got)))
        };
    }
    if expect.ok == Some(true) {
        return match obs.get("ok") {
            Some(Value::Bool(true)) => Ok(()),
            _ => Err(format!("expected a valid origin, got {obs}")),
        };
    }
    Err("vector has no expectation".to_owned())
}

impl Case {
    /// The protocol operation name of this case.
    pub fn operation(&self) -> &'static str {
        match self {
            Case::HermesBuild { .. } => "hermes_build",
            Case::CanonicalBuild { .. } => "canonical_build",
            Case::CanonicalParse { .. } => "canonical_parse",
            Case::HermesParse { .. } => "hermes_parse",
            Case::Origin { .. } => "origin",
        }
    }
}
