//! Structure-aware traces through the built-in gateway, judged by the
//! one judge against the oracle (every judged rule). A crash input is a trace that
//! breaks an invariant: keep it under regressions/trace_vs_model/.
#![no_main]

use libfuzzer_sys::fuzz_target;
use procroute_suite::fuzzing::FuzzTrace;

fuzz_target!(|input: FuzzTrace| {
    procroute_suite::fuzzing::trace_vs_model(&input.trace);
});
