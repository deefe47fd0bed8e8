//! Structure-aware origins and policies: the canonical round trip and the
//! hermes parse consistency (spec KEY-C4, KEY-H5).
#![no_main]

use libfuzzer_sys::fuzz_target;
use procroute::Origin;

fuzz_target!(|input: (Origin, bool, bool, bool)| {
    let (origin, group, thread, profile) = input;
    procroute_suite::fuzzing::key_roundtrip(&origin, group, thread, profile);
});
