//! Structure-aware traces through the built-in gateway, judged by the
//! reference model (spec INV-1..5, INV-7). A crash input is a trace that
//! breaks an invariant: keep it under regressions/trace_vs_model/.
#![no_main]

use libfuzzer_sys::fuzz_target;
use procroute::fuzzing::FuzzTrace;

fuzz_target!(|input: FuzzTrace| {
    if let Some(trace) = input.to_trace() {
        procroute::fuzzing::trace_vs_model(&trace);
    }
});
