//! Arbitrary bytes as a persisted checkpoint file: a typed problem or a value that
//! re-encodes faithfully, never a panic (spec STORE-5, STORE-6).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    procroute_suite::fuzzing::decode_file(procroute::gateway::FileKind::Checkpoint, data);
});
