"""procroute: the conformance suite's Python side (procroute.harness)."""
