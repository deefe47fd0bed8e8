//! Key laws (spec KEY-1, KEY-5, KEY-C4..KEY-C6, KEY-H3..KEY-H5) under
//! proptest and quickcheck, with shrinking generators from `support`.

mod support;

use proptest::prelude::*;
use quickcheck::quickcheck;

use procroute::key::{canonical, hermes, KeyFields};
use procroute_suite::conform::laws::hermes_contradiction;
use support::{QcOrigin, QcPolicy};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// KEY-C4: parse ∘ build recovers exactly the keyed fields.
    #[test]
    fn canonical_round_trip(o in support::origin(), p in support::policy()) {
        let key = canonical::build(&o, &p);
        prop_assert_eq!(canonical::parse(&key), Ok(KeyFields::of(&o, &p)));
    }

    /// KEY-C5: different keyed fields → different canonical keys.
    #[test]
    fn canonical_injective(a in support::origin(), b in support::origin(), p in support::policy()) {
        let (fa, fb) = (KeyFields::of(&a, &p), KeyFields::of(&b, &p));
        let (ka, kb) = (canonical::build(&a, &p), canonical::build(&b, &p));
        prop_assert_eq!(fa == fb, ka == kb, "{:?} / {:?}", ka, kb);
    }

    /// KEY-C6: parse ∘ build ∘ parse = parse, and build ∘ parse = id, on any
    /// text that parses.
    #[test]
    fn canonical_parse_is_stable(s in "(agent:(main|x):(telegram|matrix):(dm|group):)?[:%~a-c0-9A-F\\PC]{0,24}") {
        if let Ok(f) = canonical::parse(&s) {
            let rebuilt = canonical::build_fields(&f);
            prop_assert_eq!(&rebuilt, &s);
            prop_assert_eq!(canonical::parse(&rebuilt), Ok(f));
        }
    }

    /// KEY-1: both parsers are total on arbitrary strings.
    #[test]
    fn parsers_total_on_strings(s in any::<String>()) {
        let _ = canonical::parse(&s);
        let _ = hermes::parse(&s);
    }

    /// KEY-1: ... and on arbitrary bytes (lossily decoded, as a driver must).
    #[test]
    fn parsers_total_on_bytes(b in proptest::collection::vec(any::<u8>(), 0..96)) {
        let s = String::from_utf8_lossy(&b);
        let _ = canonical::parse(&s);
        let _ = hermes::parse(&s);
    }

    /// KEY-H5: the hermes parse never contradicts the origin that built it.
    #[test]
    fn hermes_parse_never_contradicts(o in support::origin(), p in support::policy()) {
        if let Ok(key) = hermes::build(&o, &p) {
            prop_assert_eq!(hermes_contradiction(&o, &p, &key), None);
        } else {
            // KEY-H2: only WhatsApp ids make hermes raise.
            prop_assert!(o.platform().is_whatsapp());
        }
    }

    /// KEY-5: ids without escaped characters appear in the canonical key
    /// byte for byte (no case folding, no normalisation).
    #[test]
    fn canonical_keeps_plain_ids_verbatim(o in support::origin(), p in support::policy()) {
        let key = canonical::build(&o, &p);
        let chat = o.chat_id().as_str();
        if !chat.contains([':', '%', '~']) && !chat.chars().any(|c| c.is_ascii_control()) {
            prop_assert!(key.contains(chat), "{:?} lost {:?}", key, chat);
        }
    }
}

quickcheck! {
    /// KEY-C4 again, with quickcheck's shrinking through valid constructors.
    fn qc_round_trip(o: QcOrigin, p: QcPolicy) -> bool {
        canonical::parse(&canonical::build(&o.0, &p.0)) == Ok(KeyFields::of(&o.0, &p.0))
    }

    /// KEY-C5: canonical keys are injective in the keyed fields.
    fn qc_injective(a: QcOrigin, b: QcOrigin, p: QcPolicy) -> bool {
        let same_fields = KeyFields::of(&a.0, &p.0) == KeyFields::of(&b.0, &p.0);
        same_fields == (canonical::build(&a.0, &p.0) == canonical::build(&b.0, &p.0))
    }

    /// KEY-H5 with quickcheck.
    fn qc_hermes_consistent(o: QcOrigin, p: QcPolicy) -> bool {
        match hermes::build(&o.0, &p.0) {
            Ok(key) => hermes_contradiction(&o.0, &p.0, &key).is_none(),
            Err(_) => o.0.platform().is_whatsapp(),
        }
    }

    /// KEY-4: the policy only ever removes the user from a key, never
    /// changes chat or thread.
    fn qc_policy_only_touches_user(o: QcOrigin, p: QcPolicy) -> bool {
        let f = KeyFields::of(&o.0, &p.0);
        &f.chat_id == o.0.chat_id()
            && f.thread_id.as_ref() == o.0.thread_id()
            && (f.user_id.is_none() || f.user_id.as_ref() == o.0.user_id())
    }
}

/// The law checker must be able to fail: a parse that claims a wrong chat
/// id is reported.
#[test]
fn contradiction_checker_can_fail() {
    let o = procroute::Origin::new("matrix", procroute::ChatType::Group, "!abc:matrix.org")
        .expect("valid");
    let p = procroute::Policy::default();
    // What hermes' own positional parser would claim: chat "!abc".
    let wrong = "agent:main:matrix:group:!abc";
    assert!(hermes_contradiction(&o, &p, wrong).is_some());
    let right = hermes::build(&o, &p).expect("builds");
    assert_eq!(hermes_contradiction(&o, &p, &right), None);
}

/// Heads near the edge of validity: each token drawn from valid,
/// almost-valid and boundary-length spellings, then an optional tail.
fn heads() -> impl Strategy<Value = String> {
    let prefix = prop_oneof![
        8 => Just("agent"),
        1 => Just("agen"),
        1 => Just("Agent"),
        1 => Just("agentx"),
        1 => Just(""),
    ];
    let ns = prop_oneof![
        Just("main".to_owned()),
        Just("mainx".to_owned()),
        Just("Main".to_owned()),
        Just("".to_owned()),
        "[a-z0-9][a-z0-9_-]{0,6}",
        "[a-z0-9_A-Z-]{1,4}",
        "[a-z0-9][a-z0-9_\\-A-Z.\u{e9}]{0,15}",
        Just("a".repeat(procroute::key::MAX_PROFILE_BYTES)),
        Just("a".repeat(procroute::key::MAX_PROFILE_BYTES + 1)),
    ];
    let platform = prop_oneof![
        Just("telegram".to_owned()),
        Just("".to_owned()),
        "[a-z][a-z0-9_]{0,8}",
        "[a-z0-9_A-Z-]{1,4}",
        "[a-z][a-z0-9_\\-A-Z.\u{e9}]{0,15}",
        Just("p".repeat(procroute::origin::MAX_PLATFORM_BYTES)),
        Just("p".repeat(procroute::origin::MAX_PLATFORM_BYTES + 1)),
    ];
    let chat_type = prop_oneof![
        Just("dm"),
        Just("group"),
        Just("channel"),
        Just("thread"),
        Just("d"),
        Just("dmx"),
        Just("groups"),
        Just("Thread"),
        Just("chanxel"),
        Just("threax"),
        Just("grouq"),
        Just(""),
    ];
    // Mostly whole heads with a tail, so that keys are long enough for
    // the window of the fast head parser (16 bytes or more) as often as not.
    let tail = proptest::option::weighted(0.8, "[a-z:%~ \u{e9}]{0,30}");
    let cut = prop_oneof![1 => 0usize..4, 4 => Just(4usize)];
    (prefix, ns, platform, chat_type, tail, cut).prop_map(
        |(prefix, ns, platform, chat_type, tail, cut)| {
            let mut parts = vec![prefix.to_owned(), ns, platform, chat_type.to_owned()];
            parts.truncate(cut.clamp(1, 4));
            let mut key = parts.join(":");
            if let (Some(tail), true) = (tail, cut >= 4) {
                key.push(':');
                key.push_str(&tail);
            }
            key
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    /// KEY-6: the fast head parser is exact — it accepts precisely the
    /// heads the checked parser accepts, with the same parts, so the fast
    /// path can neither accept a bad key nor fall back on a good one
    /// (asserted inside `fuzzing::key_parse`, with the other parse laws).
    #[test]
    fn fast_head_agrees_with_the_checked_path(key in heads()) {
        procroute_suite::fuzzing::key_parse(key.as_bytes());
    }

    /// The same, aimed at the first two 16-byte lanes where both tokens
    /// are classified at once: short tokens of nearly valid bytes.
    #[test]
    fn fast_head_agrees_in_the_window(
        ns in "[a-z0-9_\\-A-Z.:\u{e9}]{0,9}",
        platform in "[a-z0-9_\\-A-Z.:\u{e9}]{0,12}",
        chat_type in "(dm|group|channel|thread|grp)",
        tail in "[a-z0-9:]{8,20}",
    ) {
        let key = format!("agent:{ns}:{platform}:{chat_type}:{tail}");
        procroute_suite::fuzzing::key_parse(key.as_bytes());
    }

    /// Tails that cross the 64-byte window's end with or without a `:`,
    /// on either side of it: the scan's answer to "does the tail split?"
    /// is checked against the tail itself.
    #[test]
    fn scan_agrees_across_the_window_end(
        ns in "(main|coder|[a-z0-9]{1,30})",
        platform in "(telegram|slack|[a-z]{1,20})",
        chat_type in "(dm|group|channel|thread)",
        tail in "[a-z0-9\u{e9}]{0,70}(:[a-z0-9]{0,8}){0,2}[a-z0-9]{0,40}",
    ) {
        let key = format!("agent:{ns}:{platform}:{chat_type}:{tail}");
        procroute_suite::fuzzing::key_parse(key.as_bytes());
    }

    #[test]
    fn fast_head_agrees_on_any_text(key in ".{0,40}") {
        procroute_suite::fuzzing::key_parse(key.as_bytes());
    }
}

/// `Determined::known` gives the value exactly when the key determines it
/// (KEY-H3), for each of the three states a hermes parse can report.
#[test]
fn determined_known_is_the_value_only_when_known() {
    let one = hermes::parse_view("agent:main:telegram:group:-100").expect("parses");
    assert_eq!(one.chat_id.known(), Some(&"-100"));
    assert_eq!(one.thread_id.known(), None, "absent");
    let split = hermes::parse_view("agent:main:telegram:group:-100:42").expect("parses");
    assert_eq!(split.chat_id.known(), None, "unknown: the tail splits");
}

/// KEY-H4 at the chat id's length limit, with the head in the key parser's
/// window and with a head too long for it (a 40-byte profile: the general
/// path): a tail of exactly `MAX_ID_BYTES` is the known chat id, one byte
/// more is an error naming the chat id, and both paths of the parse agree
/// on every one of these keys (`fuzzing::key_parse` asserts it).
#[test]
fn hermes_parse_chat_id_at_and_past_its_limit() {
    let max = procroute::origin::MAX_ID_BYTES;
    let long_profile = "p".repeat(40);
    for profile in ["main", long_profile.as_str()] {
        for chat in ["c".repeat(max), "é".repeat(max / 2)] {
            let key = format!("agent:{profile}:telegram:group:{chat}");
            let v = hermes::parse_view(&key).expect("at the limit");
            assert_eq!(v.chat_id.known(), Some(&chat.as_str()), "{profile}");
            let over = format!("{key}x");
            let err = hermes::parse_view(&over).expect_err("past the limit");
            assert!(err.to_string().contains("chat id"), "{profile}: {err}");
            procroute_suite::fuzzing::key_parse(key.as_bytes());
            procroute_suite::fuzzing::key_parse(over.as_bytes());
        }
    }
}

/// The mirror of hermes-agent's own positional parser (used by reports to
/// show what hermes would route to) answers as hermes-agent 0.19.0's
/// `gateway/run.py::_parse_session_key` does; expectations taken from
/// that function run on these keys.
#[test]
fn hermes_own_parse_mirrors_hermes_positional_parser() {
    let own = |k: &str| {
        hermes::hermes_own_parse(k).map(|p| (p.platform, p.chat_type, p.chat_id, p.thread_id))
    };
    let s = |v: &str| v.to_owned();
    assert_eq!(
        own("agent:main:telegram:group:-100:42"),
        Some((s("telegram"), s("group"), s("-100"), None))
    );
    assert_eq!(
        own("agent:main:telegram:dm:7:42"),
        Some((s("telegram"), s("dm"), s("7"), Some(s("42"))))
    );
    assert_eq!(
        own("agent:main:slack:thread:C1:t1:u"),
        Some((s("slack"), s("thread"), s("C1"), Some(s("t1"))))
    );
    assert_eq!(
        own("agent:main:matrix:group:!r:srv"),
        Some((s("matrix"), s("group"), s("!r"), None))
    );
    assert_eq!(
        own("agent:main:telegram:dm:7"),
        Some((s("telegram"), s("dm"), s("7"), None)),
        "five parts: no sixth to take"
    );
    for none in [
        "agent:coder:telegram:dm:7",
        "agent:main:telegram:dm",
        "agent:main:telegram",
        "agent:main",
        "session:main:telegram:dm:1",
        "Agent:main:x:dm:1",
    ] {
        assert_eq!(own(none), None, "{none}");
    }
}

/// KEY-2, KEY-3: a profile becomes the key's namespace in both dialects;
/// `main` and `default` mean the default namespace, and so does no profile.
#[test]
fn key_2_a_profile_is_the_namespace_and_main_or_default_mean_none() {
    use procroute::{ChatType, Origin, Policy, Profile};
    let o = Origin::new("telegram", ChatType::Dm, "7").expect("valid");
    let with = |name: &str| Policy::default().with_profile(Profile::new(name).expect("valid"));
    let coder = with("coder");
    assert_eq!(coder.profile().map(Profile::as_str), Some("coder"));
    assert_eq!(coder.namespace(), "coder");
    assert_eq!(
        hermes::build(&o, &coder).expect("builds"),
        "agent:coder:telegram:dm:7"
    );
    assert!(canonical::build(&o, &coder).starts_with("agent:coder:telegram:dm:"));
    for default in ["main", "default"] {
        let p = with(default);
        assert_eq!(p.profile(), None, "{default}");
        assert_eq!(p, Policy::default(), "{default}");
        assert_eq!(
            hermes::build(&o, &p).expect("builds"),
            "agent:main:telegram:dm:7"
        );
    }
    assert_eq!(Policy::default().profile(), None);
    // The wire form: an absent knob takes hermes-agent's default (KEY-3).
    let wire = |j: &str| serde_json::from_str::<Policy>(j).expect("a policy");
    assert_eq!(wire("{}"), Policy::default());
    assert_eq!(wire(r#"{"profile":"default"}"#), Policy::default());
    assert_eq!(wire(r#"{"profile":"coder"}"#), coder);
    let p = Profile::new("coder").expect("valid");
    assert_eq!(format!("{p:?}"), "\"coder\"");
    assert_eq!(String::from(p), "coder");
}

/// KEY-1, KEY-6: a valid key of exactly `MAX_KEY_BYTES` parses on every
/// path (window, byte loops, checked); one byte more is an error on every
/// path, naming the length. Both through the fuzz body's cross-checks.
#[test]
fn keys_at_and_past_the_length_limit() {
    let max = procroute::key::MAX_KEY_BYTES;
    for head in [
        "agent:main:telegram:group:",
        &format!("agent:{}:telegram:group:", "n".repeat(40)),
    ] {
        let at = format!(
            "{head}{}",
            "c:".repeat(max).get(..max - head.len()).expect("ascii")
        );
        assert_eq!(at.len(), max);
        procroute_suite::fuzzing::key_parse(at.as_bytes());
        assert!(hermes::parse(&at).is_ok(), "at the limit");
        let over = format!("{at}c");
        procroute_suite::fuzzing::key_parse(over.as_bytes());
        let err = hermes::parse(&over)
            .expect_err("past the limit")
            .to_string();
        assert!(err.contains(&(max + 1).to_string()), "{err}");
        assert!(canonical::parse(&over).is_err());
    }
}
