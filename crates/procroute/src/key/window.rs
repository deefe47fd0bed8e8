//! The head parser's fast tier: a key's first [`WINDOW`] bytes in four
//! 16-byte vector compares (through `wide`: each `:` a bit, each token a
//! bit range — no per-byte branch). An optimisation of the byte loops and
//! the reference in `head.rs`, never a second definition.

use super::*;

/// How many leading bytes of a key `in_window` classifies at once: the
/// whole of most keys (`agent:main:telegram:group:-1001234567890:42` is
/// 43), one bit per byte in a `u64`.
pub const WINDOW: usize = 64;
/// How many of its 16-byte lanes may hold the namespace and platform: the
/// first two (`agent:coder:mattermost:` is 23 bytes).
pub const HEAD_LANES: usize = 2;
// A head in those lanes cannot break the length limits of its tokens, so
// the window need not test them.
const _: () = assert!(16 * HEAD_LANES - 8 <= MAX_PLATFORM_BYTES);
const _: () = assert!(16 * HEAD_LANES - 8 <= MAX_PROFILE_BYTES);

/// The chat-type tokens by length, as little-endian words (KEY-6): each
/// length has at most one, so a token is recognised by one comparison.
pub(crate) const CHAT_TYPE_BY_LEN: [(u64, Option<ChatType>); 8] = {
    const fn word(s: &[u8]) -> u64 {
        let mut w = 0u64;
        let mut i = 0;
        while i < s.len() {
            w |= (s[i] as u64) << (8 * i);
            i += 1;
        }
        w
    }
    [
        (0, None),
        (0, None),
        (word(b"dm"), Some(ChatType::Dm)),
        (0, None),
        (0, None),
        (word(b"group"), Some(ChatType::Group)),
        (word(b"thread"), Some(ChatType::Thread)),
        (word(b"channel"), Some(ChatType::Channel)),
    ]
};

/// Where the parts of a head found by [`window_ends`] end: byte offsets
/// into the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ends {
    /// The `:` after the namespace (the namespace is `6..ns_end`).
    pub ns_end: usize,
    /// The `:` after the platform.
    pub plat_end: usize,
    /// The `:` after the chat type, or the key's length when no tail follows.
    pub ct_end: usize,
    pub chat_type: ChatType,
    /// A `:` lies in the tail within the window.
    pub tail_colon: bool,
}

/// The head, when all of it lies in the first [`WINDOW`] bytes, as offsets.
/// Four 16-byte lanes are classified with vector compares; from then on
/// each `:` is a bit, each token a bit range, and validating a token is one
/// mask test — no loop whose exit the CPU could mispredict. `None` means
/// "not sure": the caller takes the byte loops.
#[inline(always)]
pub(crate) fn window_ends(bytes: &[u8]) -> Option<Ends> {
    let len = bytes.len();
    if !(16..=MAX_KEY_BYTES).contains(&len) {
        return None;
    }
    // Per 16-byte lane: the `:` bytes, the namespace bytes `[a-z0-9_-]`
    // and the `-` bytes, as bit masks (platform bytes are namespace bytes
    // other than `-`), each bit at its byte's offset in the key. A lane past
    // the end of a short key is read as the key's last 16 bytes: it re-reads
    // bytes an earlier lane classified, and sets exactly the bits they set
    // (`|` is idempotent), so there is no copy, no shift back and no branch.
    let (mut colon, mut ns_ok, mut dash) = (0u64, 0u64, 0u64);
    let splat = u8x16::splat;
    let in_range = |v: u8x16, lo: u8, hi: u8| v.max(splat(lo)).min(splat(hi)).cmp_eq(v);
    // Lane `k`, read from `from`: `16 * k`, or less when that would run
    // past the end.
    let lane = |k: usize| {
        let from = (16 * k).min(len - 16);
        let mut a = [0u8; 16];
        a.copy_from_slice(&bytes[from..from + 16]);
        (u8x16::new(a), from)
    };
    // `from + 16 <= WINDOW`: every bit lands inside the `u64`.
    let bits = |m: u8x16, from: usize| u64::from(m.move_mask() as u16) << from;
    for k in 0..WINDOW / 16 {
        let (v, from) = lane(k);
        colon |= bits(v.cmp_eq(splat(b':')), from);
    }
    for k in 0..HEAD_LANES {
        let (v, from) = lane(k);
        let is_dash = v.cmp_eq(splat(b'-'));
        let token =
            in_range(v, b'a', b'z') | in_range(v, b'0', b'9') | v.cmp_eq(splat(b'_')) | is_dash;
        ns_ok |= bits(token, from);
        dash |= bits(is_dash, from);
    }
    // The eight bytes from `from` (`from + 8 <= len`), little-endian.
    let word = |from: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&bytes[from..from + 8]);
        u64::from_le_bytes(w)
    };
    // The `:` after "agent" is bit 5; the next three end the namespace,
    // the platform and the chat type; a fourth lies in the tail.
    let after_prefix = colon & !0x3f;
    let ns_end = after_prefix.trailing_zeros() as usize;
    let rest = after_prefix & after_prefix.wrapping_sub(1);
    let plat_end = rest.trailing_zeros() as usize;
    if plat_end >= 16 * HEAD_LANES {
        return None;
    }
    let rest = rest & rest.wrapping_sub(1);
    let ct_colon = rest.trailing_zeros() as usize;
    let tail_colon = rest & rest.wrapping_sub(1) != 0;
    // The namespace and the platform are bits `6..plat_end`: each a
    // namespace byte, except the `:` between them (bit `ns_end`), and no
    // `-` from that `:` on (platform bytes are namespace bytes but `-`).
    let ns_colon = after_prefix & after_prefix.wrapping_neg();
    let head_span = (1u64 << plat_end) - (1u64 << 6);
    let plat_start = ns_end + 1;
    // Non-short-circuit `&`: one branch for the whole head. An empty token
    // needs no test of its own: its first byte is the next `:`, which is
    // in no first-byte class.
    let first = word(0);
    let head_ok = (first & 0xffff_ffff_ffff == u64::from_le_bytes(*b"agent:\0\0"))
        & ((ns_ok | ns_colon) & head_span == head_span)
        & ((dash & head_span) >> ns_end == 0)
        & (HEAD_CLASS[(first >> 48) as u8 as usize] & NS_FIRST != 0)
        & (HEAD_CLASS[usize::from(bytes[plat_start])] & PLATFORM_FIRST != 0);
    // The chat type ends at the third `:` or, with no tail, at the end.
    let ct_start = plat_end + 1;
    let ct_end = if ct_colon < WINDOW {
        ct_colon
    } else if bytes.len() <= WINDOW {
        bytes.len()
    } else {
        return None;
    };
    let ct_len = ct_end - ct_start;
    let (pattern, chat_type) = *CHAT_TYPE_BY_LEN.get(ct_len)?;
    // The eight bytes that end where the chat type ends, shifted down so
    // that only the chat type's bytes remain: no mask, no read past the
    // key. `ct_end >= 8`: "agent:", a namespace byte, `:` and a platform
    // byte come first. A shift of 64 (length 0) wraps to 0; that row is
    // `None` anyway.
    debug_assert!(ct_end >= 8);
    let ct_word = word(ct_end - 8).wrapping_shr((64 - 8 * ct_len) as u32);
    let chat_type = chat_type.filter(|_| head_ok & (ct_word == pattern))?;
    Some(Ends {
        ns_end,
        plat_end,
        ct_end,
        chat_type,
        tail_colon,
    })
}

/// [`window_ends`] as a [`Scanned`] head.
#[inline(always)]
pub(crate) fn in_window(key: &str) -> Option<Scanned<'_>> {
    let e = window_ends(key.as_bytes())?;
    let tail = (e.ct_end < key.len()).then(|| Segment {
        text: &key[e.ct_end + 1..],
        start: e.ct_end + 1,
    });
    Some(Scanned {
        head: Head {
            namespace: &key[6..e.ns_end],
            platform: &key[e.ns_end + 1..e.plat_end],
            chat_type: e.chat_type,
            tail,
        },
        tail_colon: e.tail_colon,
        scan_from: key.len().min(WINDOW),
    })
}

/// `in_window`, for the fuzz target's check that it takes every head it
/// must (`fuzzing::window_takes`).
#[cfg(feature = "internals")]
pub fn window_scan(key: &str) -> Option<Scanned<'_>> {
    in_window(key)
}
