//! The router's bug bank, as the command line sees it (`--fault NAME`,
//! `procroute harness --list-faults`).
//!
//! The router crate carries no test switches. Its bank of realistic bugs is
//! a patch, `tests/bug-bank/router.patch`, that `tests/bug-bank/copy.sh`
//! applies to a copy of the workspace (as the real gateways' mutant banks
//! are applied to copies of their packages). In that copy this module
//! names the bank's faults and switches them on; in this build the bank is
//! empty and every name is refused with the way to get one.

use procroute::gateway::Config;

/// The bank's faults, `(name, rule it breaks first)`, in bank order. Empty
/// outside the bank copy.
pub fn faults() -> Vec<(String, &'static str)> {
    Vec::new()
}

/// The built-in router's configuration with the fault `name` switched on.
///
/// # Errors
///
/// Outside the bank copy every name: this build has no bug bank.
pub fn config(name: &str) -> Result<Config, String> {
    Err(format!(
        "--fault {name}: this build has no bug bank (the router has no test \
         switches; tests/bug-bank/copy.sh DIR makes a copy of the workspace \
         with the bank patched in, then build there with --features faults)"
    ))
}
