#!/usr/bin/env python3
"""ci-failures.py — prints, last in the CI log, every test that did not pass (name, result,
return code, command) with the tail of its output, read from Meson's testlog.json of each build
directory given. CI's record keeps only the end of what .ci/run prints, so a failure in the first
suite was invisible behind the sanitizer suite's output; this puts it where it is read.
Usage: scripts/ci-failures.py [--names] BUILD_DIR|TESTLOG.json ...; exits 0 (it only reports).
--names prints only the names of the tests that did not pass, space-separated (for a rerun)."""
import json
import os
import sys

TAIL_LINES = 40
args = sys.argv[1:]
names_only = bool(args) and args[0] == "--names"
if names_only:
    args = args[1:]
for build in args:
    path = build if build.endswith(".json") else os.path.join(build, "meson-logs", "testlog.json")
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            rows = [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError) as e:
        print(f"ci-failures: cannot read {path}: {e}")
        continue
    bad = [r for r in rows if r.get("result") not in ("OK", "SKIP", "EXPECTEDFAIL")]
    if names_only:
        # meson test takes "suite:name"-less names; a name holds no blank
        print(" ".join(r.get("name", "").split(" / ")[-1] for r in bad))
        continue
    print(f"ci-failures: {build}: {len(rows)} tests, {len(bad)} not passed")
    for r in bad:
        print(f"--- {r.get('name')}: {r.get('result')} (return code {r.get('returncode')}, "
              f"{r.get('duration', 0):.1f} s)")
        print("command:", " ".join(r.get("command") or []))
        out = ((r.get("stdout") or "") + (r.get("stderr") or "")).splitlines()
        for line in out[-TAIL_LINES:]:
            print("  |", line[:300])
