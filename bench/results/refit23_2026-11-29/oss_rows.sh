#!/bin/bash
# oss_rows.sh [PLAN] — the GPT-OSS rows of the real-run tables that moved (hfeager21, ho21b, ho22b),
# with the plan binary given (default build/cli/plan). Run from the repository root.
P=${1:-build/cli/plan}
for f in bench/results/hfeager21_2026-11-29/measured/results.jsonl bench/results/ho21_2026-11-29/b/results.jsonl \
         bench/results/ho22_2026-11-29/second/results.jsonl; do
  echo "== $f"
  python3 bench/realruns/fidelity.py --plan $P $f 2>/dev/null | grep -i -E "oss|^step"
done
