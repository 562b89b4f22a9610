#!/bin/bash
# rows.sh — Meta's three Llama 3 405B rows (tests/data/published_llama3_meta.csv) through
# `plan estimate`, each with the knobs the paper states and the band over the unstated TP
# overlap, with (after) and without (before: the distributed optimizer, the expression main had)
# --shard-grads; and the brief's command. Run from the repository root after building build/.
set -u
P="env PLAN_DATA_DIR=data build/cli/plan estimate --model 405b --system h100 --framework megatron"
row() { # name gpus cp seq gbs published extra...
  local name=$1 g=$2 cp=$3 seq=$4 gbs=$5 pub=$6; shift 6
  for tpo in "" "--tp-comm-overlap"; do
    out=$($P --gpus $g --tp 8 --pp 16 --cp $cp --vpp 8 --mbs 1 --gbs $gbs --seq $seq \
          --pp-first-layers 7 --pp-last-layers 7 "$@" $tpo --format json)
    echo "$out" | python3 -c "
import json,sys
j=json.load(sys.stdin); g=$g; tps=j['tokens_per_s']/g; t=j['time']; m=j['memory']
print('%-32s %-44s %6.1f vs %5.1f  %+6.1f%%  MFU %4.1f%%  %5.1f GiB %s | step %.2f compute %.2f tp %.2f pp %.2f dp %.2f bubble %.2f' % (
 '$name', ' '.join('$* $tpo'.split()), tps, $pub, 100*(tps/$pub-1), 100*j['mfu'], m['total_bytes']/2**30,
 'fits' if j['fits'] else 'OOM ', t['step_s'], t['compute_s'], t['tp_s'], t['pp_s'], t['dp_s'], t['bubble_s']))"
  done
}
S="--overlap-grad-reduce --overlap-param-gather"
echo "== brief's command (no overlap flags, distributed optimizer)"
row 8k-8192gpu 8192 1 8192 2048 163.0
row 8k-16384gpu 16384 1 8192 2048 151.6
echo "== before: stated knobs as main expresses them (distributed optimizer, DP overlaps)"
row 8k-8192gpu 8192 1 8192 2048 163.0 $S
row 8k-16384gpu 16384 1 8192 2048 151.6 $S
row 128k-16384gpu 16384 16 131072 128 66.9 $S
echo "== after: --shard-grads (Megatron-FSDP optim_grads, ZeRO-2)"
row 8k-8192gpu 8192 1 8192 2048 163.0 $S --shard-grads
row 8k-16384gpu 16384 1 8192 2048 151.6 $S --shard-grads
row 128k-16384gpu 16384 16 131072 128 66.9 $S --shard-grads
