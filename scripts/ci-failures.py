#!/usr/bin/env python3
"""ci-failures.py — prints, last in the CI log, every test that did not pass (name, result,
return code, command) with the tail of its output, read from Meson's testlog.json of each build
directory given. CI's record keeps only the end of what .ci/run prints, so a failure in the first
suite was invisible behind the sanitizer suite's output; this puts it where it is read.
Usage: scripts/ci-failures.py BUILD_DIR [BUILD_DIR ...]; exits 0 (it only reports)."""
import json
import os
import sys

TAIL_LINES = 40
for build in sys.argv[1:]:
    path = os.path.join(build, "meson-logs", "testlog.json")
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            rows = [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError) as e:
        print(f"ci-failures: cannot read {path}: {e}")
        continue
    bad = [r for r in rows if r.get("result") not in ("OK", "SKIP", "EXPECTEDFAIL")]
    print(f"ci-failures: {build}: {len(rows)} tests, {len(bad)} not passed")
    for r in bad:
        print(f"--- {r.get('name')}: {r.get('result')} (return code {r.get('returncode')}, "
              f"{r.get('duration', 0):.1f} s)")
        print("command:", " ".join(r.get("command") or []))
        out = ((r.get("stdout") or "") + (r.get("stderr") or "")).splitlines()
        for line in out[-TAIL_LINES:]:
            print("  |", line[:300])
