//! The bodies of the fuzz targets, as plain functions so that `cargo test`
//! replays every stored crash input through exactly the same code
//! (`tests/fuzz_regressions.rs`). Each panics on a property violation.

use procroute::key::internals;
use procroute::key::{canonical, hermes, KeyFields, Policy, Profile};
use procroute::origin::Origin;

/// `fuzz_targets/key_parse.rs`: arbitrary bytes (KEY-1, KEY-C6, KEY-H3).
pub fn key_parse(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    assert_eq!(
        internals::fast_head(&text),
        internals::parse_head_checked(&text).ok(),
        "the fast head parser disagrees with the checked one"
    );
    if let Ok(head) = internals::parse_head_checked(&text) {
        let window = internals::window_scan(&text);
        if window_takes(&text, &head) {
            assert_eq!(
                window.map(|s| s.head),
                Some(head),
                "the 64-byte window falls back on a head it should take"
            );
        }
        // The hermes parse's inline path answers its whole domain.
        let tail = head.tail.map(|t| t.text);
        let inline_domain = window_takes(&text, &head)
            && !(head.platform == internals::WHATSAPP
                && head.chat_type == procroute::origin::ChatType::Dm)
            && tail.is_some_and(|t| {
                t.contains(':') || (!t.is_empty() && t.len() <= procroute::origin::MAX_ID_BYTES)
            });
        assert_eq!(
            internals::hermes_parse_view_inline(&text).is_some(),
            inline_domain,
            "the hermes parse's inline path does not answer exactly its domain"
        );
        let scanned = internals::parse_scan(&text).expect("the checked parser accepted it");
        assert_eq!(
            scanned.tail_has_colon(&text),
            head.tail.is_some_and(|t| t.text.contains(':')),
            "the scan's tail-colon answer is wrong"
        );
    }
    if let Ok(fields) = canonical::parse(&text) {
        let rebuilt = canonical::build_fields(&fields);
        assert_eq!(rebuilt, text, "KEY-C6: build(parse(k)) != k");
        assert_eq!(
            canonical::parse(&rebuilt).as_ref(),
            Ok(&fields),
            "KEY-C6: parse is not stable"
        );
    }
    assert_eq!(
        hermes::parse_view(&text),
        internals::hermes_parse_view_general(&text),
        "the hermes parse's inline path disagrees with its general path"
    );
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

/// Whether the key parser's window must take `head` (a head of `key` the
/// checked parser accepted): the key has 16 bytes or more, the namespace
/// and the platform end within the first `HEAD_LANES` lanes, and the chat
/// type ends in the window. Stated from the checked head's parts, not from
/// the window's masks, so that [`key_parse`] can hold the window to it: a
/// window that fell back more often than this would cost time, not
/// correctness, and nothing else would notice. (Here, with the other test
/// oracles, rather than in `key`: mutation testing of the core measures the
/// tests against the code, not the tests against themselves.)
fn window_takes(key: &str, head: &internals::Head<'_>) -> bool {
    use internals::{HEAD_LANES, WINDOW};
    let plat_end = 6 + head.namespace.len() + 1 + head.platform.len();
    let ct_end = plat_end + 1 + head.chat_type.as_str().len();
    key.len() >= 16
        && plat_end < 16 * HEAD_LANES
        && (ct_end < WINDOW || (head.tail.is_none() && ct_end == WINDOW))
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

/// `fuzz_targets/decode_store.rs`, `decode_checkpoint.rs`,
/// `decode_delivery.rs`: arbitrary bytes as a persisted file (STORE-5). A
/// decoder returns a typed problem or a value; a value re-encodes to bytes
/// that decode to the same value (nothing is silently changed).
pub fn decode_file(which: procroute::gateway::FileKind, data: &[u8]) {
    use procroute::gateway::FileKind;
    match which {
        FileKind::Store => {
            let max = procroute::store::DEFAULT_MAX_LANES;
            if let Ok(s) = procroute::store::SessionStore::decode(data, max) {
                let again = procroute::store::SessionStore::decode(&s.encode(), max);
                assert_eq!(again.as_ref(), Ok(&s), "store: decode(encode(s)) != s");
            }
        }
        FileKind::Checkpoint => {
            let limits = procroute::registry::Limits::default();
            let decoded = procroute::registry::Registry::restore(
                data,
                limits.clone(),
                0,
                &procroute::registry::RecordedLog::empty(),
                |_, _| true,
            );
            if let Ok((reg, lost)) = decoded {
                assert!(lost.is_empty(), "checkpoint: every run alive, yet lost");
                let bytes = reg.encode();
                let (again, _) = procroute::registry::Registry::restore(
                    &bytes,
                    limits,
                    0,
                    &procroute::registry::RecordedLog::empty(),
                    |_, _| true,
                )
                .expect("checkpoint: its own encoding decodes");
                assert_eq!(again.encode(), bytes, "checkpoint: encoding not stable");
            }
        }
        FileKind::Delivery => {
            let limits = procroute::delivery::DeliveryLimits::default();
            if let Ok(d) = procroute::delivery::DeliveryEngine::decode(data, limits.clone()) {
                let again = procroute::delivery::DeliveryEngine::decode(&d.encode(), limits);
                assert_eq!(again.as_ref(), Ok(&d), "delivery: decode(encode(d)) != d");
            }
        }
    }
}

/// A structure-aware trace for `fuzz_targets/trace_vs_model.rs`: the
/// fuzzer's bytes decoded straight into the protocol's trace language
/// (`TraceOp`; there is no second op type), made well-formed (no spawn of a
/// process id that is still running) and given the quiescence suffix:
/// 1 to 4 threads, 6 process ids, at most 64 operations, a unique token on
/// every output line.
#[cfg(feature = "arbitrary")]
#[derive(Debug, Clone)]
pub struct FuzzTrace {
    /// The decoded trace, quiescence suffix included.
    pub trace: crate::conform::trace::Trace,
}

#[cfg(feature = "arbitrary")]
impl<'a> arbitrary::Arbitrary<'a> for FuzzTrace {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<FuzzTrace> {
        use crate::conform::trace::{from_origin, quiescence, well_formed_ops, Trace, TraceOp};
        let n = u.int_in_range(1..=4usize)?;
        let threads = (0..n)
            .map(|_| Origin::arbitrary(u).map(from_origin))
            .collect::<arbitrary::Result<Vec<_>>>()?;
        let mut ops = Vec::new();
        let mut token = 0u32;
        while ops.len() < 64 && !u.is_empty() {
            let thread = u.choose_index(n)?;
            let process = format!("p{}", u.int_in_range(1..=6u8)?);
            ops.push(match u.int_in_range(0..=11u8)? {
                0 => TraceOp::Message { thread },
                1 => TraceOp::TurnStart { thread },
                2 => TraceOp::TurnEnd { thread },
                3 => TraceOp::Reset { thread },
                4 => TraceOp::Spawn {
                    thread,
                    process,
                    watch: if bool::arbitrary(u)? {
                        vec!["MATCH".into()]
                    } else {
                        vec![]
                    },
                    notify: bool::arbitrary(u)?,
                },
                5 => {
                    let hit = bool::arbitrary(u)?;
                    let mut text = String::new();
                    for _ in 0..=u.int_in_range(0..=3u8)? {
                        token += 1;
                        text.push_str(&format!(
                            "tok{token}of{process}{}\n",
                            if hit { " MATCH" } else { "" }
                        ));
                    }
                    TraceOp::Output { process, text }
                }
                6 => TraceOp::Exit {
                    process,
                    code: i32::from(u.int_in_range(0..=3u8)?),
                },
                7 => TraceOp::Kill { process },
                8 => TraceOp::Advance {
                    ms: u64::from(u16::arbitrary(u)?) * 100,
                },
                9 => TraceOp::Adapter {
                    up: bool::arbitrary(u)?,
                },
                10 => TraceOp::Restart {
                    survive: bool::arbitrary(u)?,
                },
                _ => TraceOp::Shutdown,
            });
        }
        let mut ops = well_formed_ops(ops);
        ops.extend(quiescence(n));
        Ok(FuzzTrace {
            trace: Trace { threads, ops },
        })
    }
}

/// `fuzz_targets/trace_vs_model.rs`: the built-in gateway runs the trace
/// and the one judge (`crate::model::judge`) holds it to the oracle; any violation or
/// execution error panics with the rendered timeline.
pub fn trace_vs_model(trace: &crate::conform::trace::Trace) {
    if let Err(why) = trace_vs_model_with(trace, procroute::gateway::Config::default()) {
        panic!("{why}");
    }
}

/// [`trace_vs_model`] under a gateway configuration (tests switch on a
/// historical fault to show the target catches it).
pub fn trace_vs_model_with(
    trace: &crate::conform::trace::Trace,
    config: procroute::gateway::Config,
) -> Result<(), String> {
    use crate::conform::{render, trace};
    let result =
        trace::execute_with(trace, config).map_err(|e| format!("execution failed: {e}"))?;
    let v = crate::model::judge::judge(trace, &result);
    if v.is_empty() {
        Ok(())
    } else {
        Err(format!("{v:?}\n{}", render::timeline_text(trace, &result)))
    }
}
