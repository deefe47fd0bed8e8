//! The bodies of the fuzz targets, as plain functions so that `cargo test`
//! replays every stored crash input through exactly the same code
//! (`tests/fuzz_regressions.rs`). Each panics on a property violation.

use crate::key::{canonical, hermes, KeyFields, Policy, Profile};
use crate::origin::Origin;

/// `fuzz_targets/key_parse.rs`: arbitrary bytes (KEY-1, KEY-C6, KEY-H3).
pub fn key_parse(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Ok(fields) = canonical::parse(&text) {
        let rebuilt = canonical::build_fields(&fields);
        assert_eq!(rebuilt, text, "KEY-C6: build(parse(k)) != k");
        assert_eq!(
            canonical::parse(&rebuilt).as_ref(),
            Ok(&fields),
            "KEY-C6: parse is not stable"
        );
    }
    if let Ok(parsed) = hermes::parse(&text) {
        // A known chat id is the whole tail: it must occur in the key.
        if let Some(chat) = parsed.chat_id.known() {
            assert!(
                text.ends_with(chat.as_str()),
                "KEY-H4: known chat not the tail"
            );
        }
    }
}

/// `fuzz_targets/key_roundtrip.rs`: structured origins (KEY-C4, KEY-H5).
pub fn key_roundtrip(origin: &Origin, group: bool, thread: bool, profile: bool) {
    let mut policy = Policy::new(group, thread);
    if profile {
        policy = policy.with_profile(Profile::new("coder").expect("valid profile"));
    }
    let key = canonical::build(origin, &policy);
    assert_eq!(
        canonical::parse(&key),
        Ok(KeyFields::of(origin, &policy)),
        "KEY-C4: round trip of {key:?}"
    );
    match hermes::build(origin, &policy) {
        Ok(hkey) => {
            if let Some(why) = crate::conform::laws::hermes_contradiction(origin, &policy, &hkey) {
                panic!("KEY-H5: {why}");
            }
        }
        Err(_) => assert!(
            origin.platform().is_whatsapp(),
            "KEY-H2: non-WhatsApp build error"
        ),
    }
}
