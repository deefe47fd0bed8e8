//! Generation profiles (PROTOCOL P-13): the input shapes that trigger an
//! implementation's already-known findings, each with the share of
//! generated traces allowed to contain it.
//!
//! Why: against a gateway with known findings, most random traces hit the
//! same few of them early (a spawn with both watch patterns and notify,
//! a shutdown), so a regression on a path those traces also cross lands
//! inside a case that fails anyway. A profile keeps each shape to its
//! share: the other traces are generated without it and can pass, so a
//! new violation there is a new failure. Nothing is hidden: every shape
//! still appears in its share of the traces, the report prints the
//! profile and the share of passing traces, and `--unsteered` runs the
//! generator as it is without a profile.

use serde::{Deserialize, Serialize};

use super::collide::{collision, Collision};
use crate::gen::Rng;
use crate::model::trace::RawOrigin;

/// Most steers a handshake may declare.
pub const MAX_STEERS: usize = 16;

/// An input shape the generator can leave out of a trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Shape {
    /// A spawn with both watch patterns and a completion request (left
    /// out: the spawn keeps one of the two).
    WatchWithNotify,
    /// A spawn with watch patterns and no completion request (left out:
    /// the spawn asks for a completion instead).
    WatchOnly,
    /// An id with white space at either end (left out: no such thread).
    PaddedIds,
    /// A thread id of one thread equal to the user id of another in the
    /// same chat (topic 42 and user 42).
    ThreadUserIds,
    /// Output lines with control or format characters (tab, ESC, `\r`,
    /// bidirectional overrides, U+2028).
    ControlOutput,
    /// A `shutdown`.
    Shutdown,
    /// The adapter going down (`adapter` with `up: false`).
    AdapterDown,
    /// A `restart` (any).
    Restart,
    /// A `read` of a process's output.
    Read,
    /// A `turn_start`: a turn running across the operations that follow
    /// it, until its `turn_end` (left out: a `message`, a whole turn in
    /// one step, instead).
    Turns,
    /// An output line that may match a watch pattern with no `message`
    /// right after it (left out: a foreground message in a random thread
    /// follows it, so an implementation that drains watch matches at the
    /// end of any turn gets that turn).
    UndrainedMatch,
    /// Two threads whose ids, joined by `:` (or by `:thread:`), are the
    /// same text split at another boundary: chat `a:b` thread `c` vs chat
    /// `a` thread `b:c` (lane twins, `Collision::Separator`/`Marker`).
    SeparatorIds,
    /// Two WhatsApp dm threads whose ids one canonical form merges
    /// (`N@s.whatsapp.net`, `N:47@s.whatsapp.net`, `+N`, `N`).
    CanonicalIds,
}

impl Shape {
    /// The stable name (as in the handshake).
    pub fn name(self) -> &'static str {
        match self {
            Shape::WatchWithNotify => "watch_with_notify",
            Shape::WatchOnly => "watch_only",
            Shape::PaddedIds => "padded_ids",
            Shape::ThreadUserIds => "thread_user_ids",
            Shape::ControlOutput => "control_output",
            Shape::Shutdown => "shutdown",
            Shape::AdapterDown => "adapter_down",
            Shape::Restart => "restart",
            Shape::Read => "read",
            Shape::Turns => "turns",
            Shape::UndrainedMatch => "undrained_match",
            Shape::SeparatorIds => "separator_ids",
            Shape::CanonicalIds => "canonical_ids",
        }
    }
}

/// One declared steer: `shape` appears in at most `share` % of the
/// generated traces (each trace draws it independently).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Steer {
    /// The input shape.
    pub shape: Shape,
    /// Percentage of generated traces that may contain it (0 to 100).
    pub share: u8,
    /// The known finding the shape triggers (shown in reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finding: Option<String>,
    /// Why the shape is steered (shown in reports).
    pub reason: String,
}

impl Steer {
    /// One line for a report: `spawn watch_with_notify in 10 % of traces
    /// (H-WATCH-DROPPED): reason`.
    pub fn describe(&self) -> String {
        let finding = self
            .finding
            .as_deref()
            .map_or(String::new(), |f| format!(" ({f})"));
        format!(
            "{} in at most {} % of generated traces{finding} — {}",
            self.shape.name(),
            self.share,
            self.reason
        )
    }
}

/// A handshake's steers, checked once.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Profile {
    steers: Vec<Steer>,
}

impl Profile {
    /// Checks the declared steers: at most [`MAX_STEERS`], shares of at
    /// most 100, each shape once, each with a reason. The error names the
    /// bad one.
    pub fn new(steers: &[Steer]) -> Result<Profile, String> {
        if steers.len() > MAX_STEERS {
            return Err(format!(
                "{} steers declared (limit {MAX_STEERS})",
                steers.len()
            ));
        }
        for (i, s) in steers.iter().enumerate() {
            let bad = |what: &str| format!("steer {i} ({}): {what}", s.shape.name());
            if s.share > 100 {
                return Err(bad(&format!("share {} is over 100", s.share)));
            }
            if s.reason.trim().is_empty() {
                return Err(bad("gives no reason"));
            }
            if steers[..i].iter().any(|t| t.shape == s.shape) {
                return Err(bad("is declared twice"));
            }
        }
        Ok(Profile {
            steers: steers.to_vec(),
        })
    }

    /// Whether no steer is declared.
    pub fn is_empty(&self) -> bool {
        self.steers.is_empty()
    }

    /// The shapes the trace of `seed` leaves out: each steer is drawn
    /// from a stream of its own, so a profile changes which shapes a
    /// trace has, not the rest of what the seed draws.
    pub fn draw(&self, seed: u64) -> Steering {
        let mut rng = Rng::new(seed ^ 0x57EE_12D0_A11C_E5E7);
        let mut avoid = Vec::new();
        for s in &self.steers {
            if !rng.chance(u64::from(s.share)) {
                avoid.push(s.shape);
            }
        }
        Steering { avoid }
    }
}

/// The shapes one generated trace leaves out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Steering {
    avoid: Vec<Shape>,
}

impl Steering {
    /// Leaves out exactly `shapes` (tests, and readers of one trace).
    pub fn avoiding(shapes: &[Shape]) -> Steering {
        Steering {
            avoid: shapes.to_vec(),
        }
    }

    /// Whether the trace leaves `shape` out.
    pub fn avoids(&self, shape: Shape) -> bool {
        self.avoid.contains(&shape)
    }

    /// Whether `o`, as one more thread beside `others`, has a shape the
    /// trace leaves out (padded ids, a thread id equal to a user id of
    /// the same chat, ids that collide with another thread's at a
    /// separator or in a canonical form).
    pub fn refuses_thread(&self, o: &RawOrigin, others: &[RawOrigin]) -> bool {
        if self.avoids(Shape::PaddedIds) && padded(o) {
            return true;
        }
        if self.avoids(Shape::ThreadUserIds)
            && others.iter().any(|x| {
                x.platform == o.platform
                    && x.chat_id == o.chat_id
                    && ((x.thread_id.is_some() && x.thread_id == o.user_id)
                        || (o.thread_id.is_some() && o.thread_id == x.user_id))
            })
        {
            return true;
        }
        others.iter().any(|x| match collision(x, o) {
            Some(Collision::Separator | Collision::Marker) => self.avoids(Shape::SeparatorIds),
            Some(Collision::Canonical) => self.avoids(Shape::CanonicalIds),
            _ => false,
        })
    }
}

/// Whether an id of `o` has white space at either end.
fn padded(o: &RawOrigin) -> bool {
    let p = |s: &str| s.trim() != s;
    p(&o.chat_id) || o.thread_id.as_deref().is_some_and(p) || o.user_id.as_deref().is_some_and(p)
}

/// The profile shape (P-13) that leaves a lane collision out (none for
/// case: no known finding of a harness we run is about case alone).
pub fn shape_of(c: Collision) -> Option<Shape> {
    match c {
        Collision::Whitespace => Some(Shape::PaddedIds),
        Collision::ThreadUser => Some(Shape::ThreadUserIds),
        Collision::Canonical => Some(Shape::CanonicalIds),
        Collision::Marker | Collision::Separator => Some(Shape::SeparatorIds),
        Collision::Case => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steer(shape: Shape, share: u8) -> Steer {
        Steer {
            shape,
            share,
            finding: None,
            reason: "known".into(),
        }
    }

    #[test]
    fn a_profile_refuses_nonsense_naming_the_steer() {
        let e = Profile::new(&[steer(Shape::Shutdown, 101)]).unwrap_err();
        assert!(
            e.contains("steer 0 (shutdown)") && e.contains("over 100"),
            "{e}"
        );
        let twice = [steer(Shape::Read, 5), steer(Shape::Read, 6)];
        assert!(Profile::new(&twice).unwrap_err().contains("twice"));
        let mut s = steer(Shape::Restart, 5);
        s.reason = " ".into();
        assert!(Profile::new(&[s]).unwrap_err().contains("no reason"));
        let many: Vec<Steer> = (0..=MAX_STEERS).map(|_| steer(Shape::Read, 1)).collect();
        assert!(Profile::new(&many).unwrap_err().contains("limit"));
    }

    #[test]
    fn shares_are_kept_per_shape() {
        let p = Profile::new(&[steer(Shape::Shutdown, 0), steer(Shape::Restart, 30)]).unwrap();
        let n = 2_000;
        let kept = (0..n)
            .filter(|s| !p.draw(*s).avoids(Shape::Restart))
            .count();
        assert!((450..750).contains(&kept), "restart kept in {kept} of {n}");
        assert!((0..n).all(|s| p.draw(s).avoids(Shape::Shutdown)));
        assert!((0..n).all(|s| !p.draw(s).avoids(Shape::Read)));
    }
}
