//! Key laws, checked on generated origins (deterministic from a seed).
//!
//! The same laws run under proptest/quickcheck in `tests/key_laws.rs` with
//! shrinking; here they run without a test framework so that
//! `procroute conform` can report them rule by rule.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};

use super::{Config, Outcome};
use crate::gen::{self, Rng};
use procroute::key::{canonical, hermes, Determined, KeyFields, Policy};
use procroute::origin::{Field, Id, Origin};

/// Why a hermes parse contradicts the origin that built the key, if it does
/// (KEY-H5). Shared by the conformance laws and the tests.
pub fn hermes_contradiction(origin: &Origin, policy: &Policy, key: &str) -> Option<String> {
    let parsed = match hermes::parse(key) {
        Ok(p) => p,
        Err(e) => return Some(format!("hermes key {key:?} does not parse: {e}")),
    };
    let keyed = KeyFields::of(origin, policy);
    if parsed.namespace != keyed.namespace
        || &parsed.platform != origin.platform()
        || parsed.chat_type != origin.chat_type()
    {
        return Some(format!("head of {key:?} parsed as {parsed:?}"));
    }
    let known_ok = |d: &Determined, actual: Option<&Id>, what: &str| -> Option<String> {
        match d {
            Determined::Known(v) if Some(v) != actual => Some(format!(
                "{what} parsed as {v:?}, origin has {actual:?} (key {key:?})"
            )),
            Determined::Absent if actual.is_some() => Some(format!(
                "{what} parsed as absent, origin keys {actual:?} (key {key:?})"
            )),
            _ => None,
        }
    };
    known_ok(&parsed.chat_id, Some(origin.chat_id()), "chat_id")
        .or_else(|| known_ok(&parsed.thread_id, origin.thread_id(), "thread_id"))
        .or_else(|| known_ok(&parsed.user_id, keyed.user_id.as_ref(), "user_id"))
}

fn describe(origin: &Origin, policy: &Policy) -> String {
    format!(
        "origin {} policy {}",
        serde_json::to_string(origin).unwrap_or_default(),
        serde_json::to_string(policy).unwrap_or_default()
    )
}

/// Every key law (KEY-C4, KEY-C5, KEY-H5, …) on `config.cases` generated
/// origins and policies each, in-process on the built-in dialects.
pub fn run(config: Config) -> Vec<Outcome> {
    let mut rng = Rng::new(config.seed);
    let mut out = Vec::with_capacity(config.cases * 6);
    let mut seen: HashMap<String, KeyFields> = HashMap::new();

    for n in 0..config.cases {
        let origin = gen::origin(&mut rng);
        let policy = gen::policy(&mut rng);
        let fields = KeyFields::of(&origin, &policy);
        let key = canonical::build(&origin, &policy);

        // KEY-C4: parse ∘ build recovers exactly the keyed fields.
        let parsed = canonical::parse(&key);
        out.push(Outcome::check(
            format!("law/KEY-C4/{n}"),
            &["KEY-C4", "KEY-5"],
            match &parsed {
                Ok(f) if *f == fields => None,
                Ok(f) => Some(format!(
                    "{}: parsed back as {f:?}",
                    describe(&origin, &policy)
                )),
                Err(e) => Some(format!("{}: key {key:?}: {e}", describe(&origin, &policy))),
            },
        ));

        // KEY-C5: different keyed fields never share a key. Check against
        // every key seen so far and against an adversarial neighbour that
        // moves the text after a `:` of the chat id into the thread.
        let collision = match seen.get(&key) {
            Some(other) if *other != fields => {
                Some(format!("{key:?} built from {other:?} and {fields:?}"))
            }
            _ => None,
        };
        let neighbour = split_neighbour(&origin).and_then(|o2| {
            let f2 = KeyFields::of(&o2, &policy);
            let k2 = canonical::build(&o2, &policy);
            (f2 != fields && k2 == key).then(|| format!("{key:?} also built from {f2:?}"))
        });
        out.push(Outcome::check(
            format!("law/KEY-C5/{n}"),
            &["KEY-C5"],
            collision.or(neighbour),
        ));
        seen.insert(key.clone(), fields.clone());

        // KEY-H5: the hermes parse never contradicts the origin.
        let h = hermes::build(&origin, &policy);
        out.push(Outcome::check(
            format!("law/KEY-H5/{n}"),
            &["KEY-H5"],
            match &h {
                Ok(hkey) => hermes_contradiction(&origin, &policy, hkey)
                    .map(|d| format!("{}: {d}", describe(&origin, &policy))),
                // Only WhatsApp ids can make hermes raise (KEY-H2).
                Err(e) if origin.platform().is_whatsapp() => {
                    let _ = e;
                    None
                }
                Err(e) => Some(format!("{}: {e}", describe(&origin, &policy))),
            },
        ));

        // KEY-1 / KEY-C6: parsers are total on near-keys; a canonical key
        // that parses rebuilds to itself and re-parses to the same fields.
        let text = if n % 2 == 0 {
            gen::key_like(&mut rng)
        } else {
            random_text(&mut rng)
        };
        let total = catch_unwind(AssertUnwindSafe(|| {
            let _ = hermes::parse(&text);
            canonical::parse(&text)
        }));
        out.push(Outcome::check(
            format!("law/KEY-1/{n}"),
            &["KEY-1"],
            match &total {
                Ok(_) => None,
                Err(_) => Some(format!("parser panicked on {text:?}")),
            },
        ));
        if let Ok(Ok(f)) = total {
            let rebuilt = canonical::build_fields(&f);
            let again = canonical::parse(&rebuilt);
            out.push(Outcome::check(
                format!("law/KEY-C6/{n}"),
                &["KEY-C6"],
                (rebuilt != text || again.as_ref() != Ok(&f))
                    .then(|| format!("{text:?} rebuilt as {rebuilt:?}, re-parsed {again:?}")),
            ));
        }
    }
    out
}

/// The same origin with `chat = "a:b"` turned into `chat = "a", thread = "b"`.
fn split_neighbour(origin: &Origin) -> Option<Origin> {
    let chat = origin.chat_id().as_str();
    let (a, b) = chat.split_once(':')?;
    let a = Id::new(Field::ChatId, a).ok()?;
    let b = Id::new(Field::ThreadId, b).ok()?;
    Some(Origin::from_parts(
        origin.platform().clone(),
        origin.chat_type(),
        a,
        Some(b),
        origin.user_id().cloned(),
        None,
    ))
}

fn random_text(rng: &mut Rng) -> String {
    let len = rng.below(64);
    let bytes: Vec<u8> = (0..len)
        .map(|_| match rng.below(4) {
            0 => b':',
            1 => b'%',
            _ => (rng.next_u64() & 0xFF) as u8,
        })
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}
