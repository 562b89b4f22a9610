#!/bin/bash
# The second device call of helper smallrows (2026-11-27): host_probe.py (chunk_cat host time by
# unit size, gc inside a host-bound step). From the lent machine's repository root:
#   C=.carry/smallrows bash .carry/smallrows/bench/realruns/smallrows_run2.sh
set -u
export NCCL_NVLS_ENABLE=0
R=$C/bench/realruns
mkdir -p bench/realruns
cp -r $R/. bench/realruns/
W=$(mktemp -d)
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; lscpu | grep "Model name"; date -u; } > $W/machine.txt 2>&1
timeout 150 python3 bench/realruns/host_probe.py --out $W > $W/probe.log 2>&1
echo "host_probe rc $?" >> $W/probe.log
tar czf $OUT/smallrows2.tgz -C $W .
grep -v Warning $W/probe.log | cut -c1-400 | tail -12
