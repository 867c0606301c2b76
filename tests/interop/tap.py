# SPDX-License-Identifier: Apache-2.0
"""TAP for the interop suites: check() prints one "ok N - text" or
"not ok N - text" (with the detail as "#" lines), done() the plan and exits
1 when a check failed."""
import sys

_n = 0
_failed = 0


def check(cond, text, detail=None):
    global _n, _failed
    _n += 1
    if cond:
        print(f"ok {_n} - {text}", flush=True)
    else:
        _failed += 1
        print(f"not ok {_n} - {text}", flush=True)
        if detail is not None:
            for line in str(detail).splitlines():
                print(f"#   {line}", flush=True)


def done():
    print(f"1..{_n}", flush=True)
    sys.exit(1 if _failed else 0)
