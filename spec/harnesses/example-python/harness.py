#!/usr/bin/env python3
"""procroute harness for the template router (spec/PROTOCOL.md, version 1),
written on procroute.harness: the helper owns the JSON-lines loop, the
handshake and errors; this file only says who it is and runs cases.

`pip install procroute` provides the helper; from a checkout it is found in
packaging/python/src. No other dependency than the standard library.
"""
import os
import sys

try:
    from procroute.harness import Harness
except ImportError:  # a checkout, nothing installed
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "..", "..", "packaging", "python", "src"))
    from procroute.harness import Harness

from keys import run_key_case
from router import run_trace


class TemplateRouter(Harness):
    name, version, language = "example-python", "0.1.0", "python"

    def trace(self, trace):
        return run_trace(trace)

    # The key operations: one function of keys.py answers them all.
    hermes_build = canonical_build = canonical_parse = hermes_parse = \
        origin = dialect_build = dialect_parse = staticmethod(run_key_case)


if __name__ == "__main__":
    TemplateRouter().serve()
