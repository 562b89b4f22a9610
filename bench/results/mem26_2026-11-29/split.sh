#!/bin/bash
# split.sh OUTFILE — issue 14's split of every multi-GPU fidelity row's memory error into the
# caching allocator's part and the part outside it (bench/realruns/mgpu_memory_split.py), over the
# folders of every multi-GPU table of bench/results/session24_2026-11-29/tables.sh (dirs.txt:
# table name, then its folders). Run from the repository root after building build/; no GPU.
set -u
T=$(mktemp -d)
while read name dirs; do
  python3 bench/realruns/mgpu_fidelity.py $dirs --format json > $T/$name.json
done < bench/results/mem26_2026-11-29/dirs.txt
python3 bench/realruns/mgpu_memory_split.py $(for f in $T/*.json; do n=$(basename $f .json); echo $n=$f; done) > $1
rm -rf $T
