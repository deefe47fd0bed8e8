//! Test-only fault switch (feature `faults`): reintroduces, one at a time,
//! the historical routing bugs so the property suite can prove it catches
//! each of them (`tests/faults.rs`). Release builds never enable the
//! feature, and without it [`active`] is a constant `false` that the
//! optimiser removes.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fault {
    /// The seed's bug: route to the thread whose turn is active now.
    ForegroundRouting,
    /// On a store miss, take the thread from the 6th part of the hermes
    /// key, even for group lanes (where it may be a user id).
    GroupThreadFromKeyOnMiss,
    /// Deduplicate completions by process id alone, not by run.
    CompletionDedupByProcessId,
    /// Write the checkpoint before the new process (and its routing) is in it.
    CheckpointBeforeRouting,
    /// Deliver only when some turn ends, never on idle ticks.
    DeliveryOnlyAtTurnEnd,
    /// An adapter failure drops the notification.
    AdapterFailureDrops,
}

impl Fault {
    pub const ALL: [Fault; 6] = [
        Fault::ForegroundRouting,
        Fault::GroupThreadFromKeyOnMiss,
        Fault::CompletionDedupByProcessId,
        Fault::CheckpointBeforeRouting,
        Fault::DeliveryOnlyAtTurnEnd,
        Fault::AdapterFailureDrops,
    ];
}

/// Whether `fault` is switched on in `config`.
#[inline]
pub fn active(config: &crate::gateway::Config, fault: Fault) -> bool {
    #[cfg(feature = "faults")]
    {
        config.fault == Some(fault)
    }
    #[cfg(not(feature = "faults"))]
    {
        let _ = (config, fault);
        false
    }
}
