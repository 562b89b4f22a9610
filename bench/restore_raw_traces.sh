#!/bin/bash
# Restores the raw profiler traces removed from the working tree (bench/results/RAW_TRACES.md says
# why) from commit 674995629b5c5024de2e69369dae237473ae14b4 of this repository's history. Run from the repository root.
set -e
C=674995629b5c5024de2e69369dae237473ae14b4
grep -E '^\| [0-9]+ \| ' bench/results/RAW_TRACES.md | awk -F'|' '{gsub(/ /,"",$3); print $3}' | while read -r p; do
  mkdir -p "$(dirname "$p")"
  git show "$C:$p" > "$p"
done
echo "restored $(grep -cE '^\| [0-9]+ \| ' bench/results/RAW_TRACES.md) files from $C"
