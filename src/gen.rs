//! Deterministic generators of the id shapes real platforms use, and worse.
//!
//! One seed reproduces a whole run (TIGER_STYLE: deterministic simulation).
//! The same shapes feed the conformance laws, the hermes differential corpus
//! and — through `tests/support` — the proptest and quickcheck strategies.

use procroute::key::{Policy, Profile};
use procroute::origin::{ChatType, Field, Id, Origin, Platform, UserName, MAX_ID_BYTES};

/// splitmix64: tiny, fast, good enough for test generation, no dependency.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed` (the same seed, the same sequence).
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        debug_assert!(n > 0);
        (self.next_u64() % n as u64) as usize
    }

    /// True with probability `percent` %.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }

    /// One of `items`, uniformly (`items` non-empty).
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Real id shapes from `shared/domain/platform-ids.md`.
pub const REAL_IDS: &[&str] = &[
    "-1001234567890",
    "123456789",
    "42",
    "1",
    "1476968053597274124",
    "C0123ABC",
    "D0456",
    "U77ABC",
    "1700000000.123456",
    "1700000000.000100",
    "!abc:matrix.org",
    "!a:srv:8448",
    "!room:[::1]",
    "$event:matrix.org",
    "$Ab+c/d=",
    "$Ab-c_d",
    "@alice:matrix.org",
    "60123456789@s.whatsapp.net",
    "60123456789:47@s.whatsapp.net",
    "120363000000@g.us",
    "a-b@g.us",
    "+15551234567",
    "group:QUJD+/x=",
    "2f1c0a3e-7d7b-4a8e-9a53-0f0e2b8a1c11",
    "spaces/AAAAb1c",
    "spaces/X/threads/Y",
    "users/123",
    "oc_84a3f",
    "omt_19d2",
    "ou_7c1e",
    "19:abc@thread.v2",
    "29:xyz",
    "k3j4h5g6f7d8s9a0q1w2e3r4t5",
    "007",
    "+0",
    "-0",
];

/// Characters that break naive keys, on purpose.
pub const NASTY_PIECES: &[&str] = &[
    ":", "::", "%", "%3A", "%25", "/", "+", "=", "$", "!", "@", " ", "\t", "\n", "~", "İ", "ß",
    "K", "Σ", "é", "e\u{301}", "日本", "🦀", "\u{0}", "\u{7f}", "\u{1c}", "\u{a0}", "agent",
    "main", "dm", "group", "thread", "-", ".", "0", "A", "a", "Z",
];

/// One id: a real shape, a nasty composition, or a mix (never empty).
pub fn id_string(rng: &mut Rng) -> String {
    let mut s = match rng.below(10) {
        0..=3 => (*rng.pick(REAL_IDS)).to_owned(),
        4..=7 => {
            let n = 1 + rng.below(5);
            (0..n).map(|_| *rng.pick(NASTY_PIECES)).collect()
        }
        8 => format!("{}{}", rng.pick(REAL_IDS), rng.pick(NASTY_PIECES)),
        _ => {
            // Long ids, up to the limit.
            let piece = *rng.pick(NASTY_PIECES);
            let n = 1 + rng.below(MAX_ID_BYTES / piece.len().max(1));
            piece.repeat(n)
        }
    };
    while s.len() > MAX_ID_BYTES {
        s.pop();
    }
    if s.is_empty() {
        s.push(':');
    }
    s
}

/// A generated id for `field`: real platform shapes and nasty ones.
pub fn id(rng: &mut Rng, field: Field) -> Id {
    Id::new(field, id_string(rng)).expect("generator yields valid ids")
}

/// The platforms generated origins use.
pub const PLATFORMS: &[&str] = &[
    "telegram",
    "discord",
    "slack",
    "matrix",
    "whatsapp",
    "signal",
    "mattermost",
    "feishu",
];

/// A generated origin: any platform and chat type, nasty ids.
pub fn origin(rng: &mut Rng) -> Origin {
    let platform = Platform::new(*rng.pick(PLATFORMS)).expect("valid platform");
    let chat_type = *rng.pick(&ChatType::ALL);
    let chat_id = id(rng, Field::ChatId);
    // Reuse the chat id as thread or user id sometimes: the "topic id equal
    // to a user id" and Discord "thread:222:222" shapes.
    let thread_id = match rng.below(4) {
        0 => None,
        1 => Some(Id::new(Field::ThreadId, chat_id.as_str()).expect("valid")),
        _ => Some(id(rng, Field::ThreadId)),
    };
    let user_id = match rng.below(4) {
        0 => None,
        1 => thread_id.clone(),
        _ => Some(id(rng, Field::UserId)),
    };
    let user_name = rng
        .chance(30)
        .then(|| UserName::new("Émiliyan :)").expect("valid"));
    Origin::from_parts(platform, chat_type, chat_id, thread_id, user_id, user_name)
}

/// A generated keying policy.
pub fn policy(rng: &mut Rng) -> Policy {
    let p = Policy::new(rng.chance(50), rng.chance(50));
    match rng.below(4) {
        0 => p.with_profile(Profile::new("coder").expect("valid")),
        1 => p.with_profile(Profile::new("a-b_1").expect("valid")),
        _ => p,
    }
}

/// Arbitrary text for parser totality: keys that look almost right.
pub fn key_like(rng: &mut Rng) -> String {
    const HEADS: &[&str] = &[
        "agent:main:telegram:group:",
        "agent:main:whatsapp:dm:",
        "agent:coder:slack:thread:",
        "agent:main:discord:dm",
        "agent:",
        "agent",
        "",
        "AGENT:main:x:dm:",
        "agent:main:Telegram:dm:",
        "agent:main:matrix:chan:",
    ];
    let mut s = (*rng.pick(HEADS)).to_owned();
    for _ in 0..rng.below(6) {
        let piece: &&str = rng.pick(NASTY_PIECES);
        s.push_str(piece);
        if rng.chance(40) {
            s.push(':');
        }
        if rng.chance(20) {
            s.push_str("%7e~");
        }
    }
    s
}
