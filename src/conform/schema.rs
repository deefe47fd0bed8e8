//! `--validate`: every protocol message checked against
//! `spec/schema/protocol-v1.json`. A small validator for exactly the JSON
//! Schema subset that file uses (`type`, `enum`, `required`, `properties`,
//! `additionalProperties: false`, `items`, `oneOf`, local `$ref`), so the
//! suite needs no schema engine; `tests/protocol_schema.rs` checks that the
//! file uses nothing else.

use serde_json::Value;

/// `spec/schema/protocol-v1.json`, compiled in.
pub const PROTOCOL_SCHEMA: &str = include_str!("../../spec/schema/protocol-v1.json");

/// A JSON Schema (the subset [`KEYWORDS`] names) that validates protocol
/// messages (`--validate`).
pub struct Schema {
    root: Value,
}

/// Keywords the validator understands.
pub const KEYWORDS: [&str; 12] = [
    "$schema",
    "$id",
    "title",
    "$defs",
    "$ref",
    "type",
    "enum",
    "required",
    "properties",
    "additionalProperties",
    "items",
    "oneOf",
];

impl Schema {
    /// The protocol's schema.
    pub fn protocol() -> Schema {
        Schema {
            root: serde_json::from_str(PROTOCOL_SCHEMA).expect("the schema file is valid JSON"),
        }
    }

    /// A schema from its text (the same keyword subset).
    pub fn from_json(text: &str) -> Result<Schema, String> {
        let root =
            serde_json::from_str(text).map_err(|e| format!("the schema is not JSON: {e}"))?;
        Ok(Schema { root })
    }

    /// Validates `v` against `$defs/<def>`; the error names the JSON path.
    pub fn validate(&self, def: &str, v: &Value) -> Result<(), String> {
        let s = self
            .root
            .pointer(&format!("/$defs/{def}"))
            .ok_or_else(|| format!("schema has no definition {def}"))?;
        self.check(s, v, "$")
    }

    fn check(&self, s: &Value, v: &Value, path: &str) -> Result<(), String> {
        if let Some(r) = s.get("$ref").and_then(Value::as_str) {
            let target = r
                .strip_prefix('#')
                .and_then(|p| self.root.pointer(p))
                .ok_or_else(|| format!("unresolvable $ref {r}"))?;
            return self.check(target, v, path);
        }
        if let Some(alts) = s.get("oneOf").and_then(Value::as_array) {
            let ok = alts
                .iter()
                .filter(|a| self.check(a, v, path).is_ok())
                .count();
            return if ok == 1 {
                Ok(())
            } else {
                Err(format!(
                    "{path}: matches {ok} of the {} allowed shapes, must match one",
                    alts.len()
                ))
            };
        }
        if let Some(t) = s.get("type") {
            let types: Vec<&str> = match t {
                Value::String(x) => vec![x.as_str()],
                Value::Array(xs) => xs.iter().filter_map(Value::as_str).collect(),
                _ => vec![],
            };
            let is = |ty: &str| match ty {
                "object" => v.is_object(),
                "array" => v.is_array(),
                "string" => v.is_string(),
                "integer" => v.is_u64() || v.is_i64(),
                "number" => v.is_number(),
                "boolean" => v.is_boolean(),
                "null" => v.is_null(),
                _ => false,
            };
            if !types.iter().any(|ty| is(ty)) {
                return Err(format!("{path}: expected {}, got {v}", types.join(" or ")));
            }
        }
        if let Some(allowed) = s.get("enum").and_then(Value::as_array) {
            if !allowed.contains(v) {
                return Err(format!(
                    "{path}: {v} is not one of {}",
                    Value::Array(allowed.clone())
                ));
            }
        }
        if let Some(obj) = v.as_object() {
            if let Some(req) = s.get("required").and_then(Value::as_array) {
                for k in req.iter().filter_map(Value::as_str) {
                    if !obj.contains_key(k) {
                        return Err(format!("{path}: missing required field {k:?}"));
                    }
                }
            }
            let props = s.get("properties").and_then(Value::as_object);
            for (k, val) in obj {
                match props.and_then(|p| p.get(k)) {
                    Some(ps) => self.check(ps, val, &format!("{path}.{k}"))?,
                    None if s.get("additionalProperties") == Some(&Value::Bool(false)) => {
                        return Err(format!("{path}: unexpected field {k:?}"));
                    }
                    None => {}
                }
            }
        }
        if let (Some(items), Some(arr)) = (s.get("items"), v.as_array()) {
            for (i, x) in arr.iter().enumerate() {
                self.check(items, x, &format!("{path}[{i}]"))?;
            }
        }
        Ok(())
    }
}
