//! Test-only fault switch (feature `faults`): reintroduces, one at a time,
//! a realistic bug — the six historical routing bugs and the bug bank the
//! judge is measured with (`tests/bug_bank.rs`, `.ci/bug-bank`,
//! TESTING.md). Release builds never enable the feature, and without it
//! `Switch::on` is a constant `false` that the optimiser removes.

#[cfg(feature = "faults")]
use serde::{Deserialize, Serialize};

/// Whether the bank's fault `$name` is on in `$switch` (a [`Switch`]).
/// Without the feature this is the constant `false` and names no fault:
/// the hooks' conditions do not exist in a release build (the code they
/// guard is type-checked and then removed as dead).
macro_rules! fault_on {
    ($switch:expr, $name:ident) => {{
        #[cfg(feature = "faults")]
        {
            $switch.on($crate::fault::Fault::$name)
        }
        #[cfg(not(feature = "faults"))]
        {
            let _ = &$switch;
            false
        }
    }};
}
pub(crate) use fault_on;

macro_rules! faults {
    ($( $(#[doc = $doc:literal])* $name:ident => $rule:literal, )*) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        #[cfg(feature = "faults")]
        /// One realistic bug of the bank (feature `faults`), with the rule
        /// it breaks first ([`Fault::rule`]).
        pub enum Fault {
            $( $(#[doc = $doc])* $name, )*
        }

        #[cfg(feature = "faults")]
        impl Fault {
            /// Every fault of the bank, in order.
            pub const ALL: &'static [Fault] = &[$(Fault::$name,)*];

            /// The rule the fault breaks first (the one the judge must name).
            pub fn rule(self) -> &'static str {
                match self { $(Fault::$name => $rule,)* }
            }
        }
    };
}

faults! {
    /// The seed's bug: route to the thread whose turn is active now.
    ForegroundRouting => "INV-6",
    /// On a store miss, take the thread from the 6th part of the hermes
    /// key, even for group lanes (where it may be a user id).
    GroupThreadFromKeyOnMiss => "INV-1",
    /// Deduplicate completions by process id alone, not by run.
    CompletionDedupByProcessId => "PROC-7",
    /// Write the checkpoint before the new process (and its routing) is in it.
    CheckpointBeforeRouting => "PROC-8",
    /// Deliver only when some turn ends, never on idle ticks.
    DeliveryOnlyAtTurnEnd => "INV-8",
    /// An adapter failure drops the notification.
    AdapterFailureDrops => "INV-4",
    /// Every notification is dead-lettered as unroutable.
    DeadLetterEverything => "ROUTE-4",
    /// ROUTE-5 applied to whole origins: a lane shared by two users (a
    /// topic without per-user sessions) is taken for a conflict.
    ConflictWhenUserDiffers => "ROUTE-5",
    /// Notifications are sent into threads whose turn is running.
    DeliverIntoBusyThread => "DELIVER-2",
    /// A match exactly 15 s after the last event is still suppressed.
    CooldownInclusive => "PROC-4",
    /// The cooldown is 14 s instead of 15 s.
    CooldownTooShort => "PROC-4",
    /// Watching is disabled at the 2nd strike.
    StrikeLimitTwo => "PROC-5",
    /// A strike-out does not switch the process to notify-on-exit.
    NoPromotion => "PROC-5",
    /// The breaker admits 16 watch events per window.
    BreakerSixteen => "PROC-6",
    /// The breaker never pauses: a full window just drops the match.
    BreakerNoPause => "PROC-6",
    /// The suppressed count is never shown.
    SuppressedNotShown => "TEXT-4",
    /// A completion jumps the queue, ahead of its run's watch matches.
    CompletionFirst => "INV-5",
    /// A failing head does not block its thread: later ones go past it.
    RetryNotBlocking => "DELIVER-5",
    /// A failed send is retried on the next input, without backoff.
    NoBackoff => "DELIVER-4",
    /// Dead-lettered after 5 failed attempts instead of 6.
    FiveAttempts => "DELIVER-4",
    /// One shutdown notice per lane (two users of a topic get two).
    ShutdownPerLane => "DELIVER-8",
    /// A shutdown notice counts as sent when handed to the adapter.
    ShutdownUnconfirmed => "DELIVER-8",
    /// The shutdown notice quotes the last output the gateway saw.
    ShutdownQuotesOutput => "SEC-1",
    /// The shutdown notice names the chat it goes to.
    ShutdownTextVaries => "TEXT-3",
    /// Recovery forgets the runs whose processes died: no `lost`.
    NoLostCompletion => "PROC-8",
    /// A killed process never notifies.
    KilledSilent => "PROC-7",
    /// Only the first matching line is quoted.
    ExcerptFirstLineOnly => "PROC-3",
    /// The whole chunk is quoted, non-matching lines included.
    ExcerptWholeChunk => "PROC-3",
    /// Control and bidi characters of output are shown raw.
    RawControlChars => "TEXT-2",
    /// The tail keeps the first 2,000 characters, not the last.
    TailFromStart => "PROC-7",
    /// The watch text does not name the pattern.
    PatternNotNamed => "TEXT-1",
    /// Ending a turn re-sends the thread's last notification.
    ResendOnTurnEnd => "INV-3",
    /// One output tail for the whole gateway, not one per run.
    GlobalTail => "INV-2",
    /// Every process notifies on exit, asked or not.
    NotifyAlways => "INV-7",
    /// The delivery log does not persist its queue.
    QueueNotPersisted => "DELIVER-6",
    /// A successful send is not persisted: after a restart it goes again.
    AckNotPersisted => "DELIVER-3",
    /// Ending a turn does not send what waited; the next tick does.
    TurnEndDoesNotFlush => "DELIVER-1",
    /// Idle ticks send nothing; only new events do.
    IdleTickNoFlush => "INV-8",
    /// Lanes fold case: two threads that differ in case share one.
    CaseFoldedLanes => "INV-1",
}

#[cfg(feature = "faults")]
impl Fault {
    /// The six historical routing bugs (the property tests hunt these).
    pub const HISTORICAL: [Fault; 6] = [
        Fault::ForegroundRouting,
        Fault::GroupThreadFromKeyOnMiss,
        Fault::CompletionDedupByProcessId,
        Fault::CheckpointBeforeRouting,
        Fault::DeliveryOnlyAtTurnEnd,
        Fault::AdapterFailureDrops,
    ];

    /// The name `--fault` takes.
    pub fn name(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default()
    }
}

/// Which fault is on, carried by the parts that need to know. Zero-sized
/// and always off without the feature.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Switch(#[cfg(feature = "faults")] Option<Fault>);

impl Switch {
    /// A switch with `fault` on (feature `faults`).
    #[cfg(feature = "faults")]
    pub fn new(fault: Option<Fault>) -> Switch {
        Switch(fault)
    }

    /// Whether `fault` is the one switched on (use `fault_on!`, which
    /// compiles to `false` without the feature).
    #[cfg(feature = "faults")]
    #[inline]
    pub fn on(self, fault: Fault) -> bool {
        self.0 == Some(fault)
    }
}
