//! Arbitrary bytes into both key parsers: no panic, and whatever parses is
//! stable (spec KEY-1, KEY-C6, KEY-H3).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    procroute_suite::fuzzing::key_parse(data);
});
