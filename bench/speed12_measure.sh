#!/bin/sh
# speed12_measure.sh OUT_DIR N LABEL=BUILD_DIR... — the speed12 round's wall times (issues 13
# and 21). Each BUILD_DIR is a release build holding cli/plan and bench/planner_speed.
# Interleaved (every build once per round), N rounds: wall seconds (both cores) of `plan
# --model M --gpus 16384` for 405b and deepseek-v3, the default search (--precision auto) and
# --precision bf16, and their CPU (user) seconds on one thread (PLAN_THREADS=1); `planner_speed 3` once per round; then
# max(2, N/2) rounds of `plan report -o guide.html` (wall, and user + sys). Raw lines (label,
# what, seconds) to OUT_DIR/raw.txt, planner_speed's tables to OUT_DIR/planner_speed_LABEL.txt,
# the load to OUT_DIR/load.txt; min and median of each to OUT_DIR/summary.txt.
# EXTRA_PRECISIONS (default bf16): the --precision values timed beside the default search
# (bench/speed11_measure.sh runs this with any).
out=$1 n=$2
shift 2
mkdir -p "$out"
out=$(realpath "$out")
export PLAN_DATA_DIR=$(realpath "${PLAN_DATA_DIR:-data}")
raw=$out/raw.txt
: >"$raw"
{ date -u; nproc; uptime; } >"$out/load.txt"
for b in "$@"; do : >"$out/planner_speed_${b%%=*}.txt"; done
run() { # run LABEL WHAT BINARY ARGS...: wall on all cores, then user seconds on one thread
    label=$1 what=$2 bin=$3; shift 3
    s=$(/usr/bin/time -f "%e" "$bin" "$@" 2>&1 >/dev/null | tail -1)
    echo "$label $what-wall $s" >>"$raw"
    s=$(PLAN_THREADS=1 /usr/bin/time -f "%U" "$bin" "$@" 2>&1 >/dev/null | tail -1)
    echo "$label $what-cpu1 $s" >>"$raw"
}
for i in $(seq "$n"); do
    for b in "$@"; do
        label=${b%%=*} d=$(realpath "${b#*=}")
        run "$label" 405b "$d/cli/plan" --model 405b --gpus 16384
        run "$label" dsv3 "$d/cli/plan" --model deepseek-v3 --gpus 16384
        for p in ${EXTRA_PRECISIONS:-bf16}; do
            run "$label" "405b-$p" "$d/cli/plan" --model 405b --gpus 16384 --precision "$p"
            run "$label" "dsv3-$p" "$d/cli/plan" --model deepseek-v3 --gpus 16384 --precision "$p"
        done
        echo "# round $i $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)" \
            >>"$out/planner_speed_$label.txt"
        "$d/bench/planner_speed" 3 >>"$out/planner_speed_$label.txt" 2>&1
    done
    echo "# round $i done $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)" >>"$out/load.txt"
done
tmp=$(mktemp -d)
r=$((n / 2)); [ "$r" -lt 2 ] && r=2
for i in $(seq "$r"); do
    for b in "$@"; do
        label=${b%%=*} d=$(realpath "${b#*=}")
        (cd "$tmp" && /usr/bin/time -f "%e %U %S" "$d/cli/plan" report -o guide.html \
            2>"$tmp/t" >/dev/null
         set -- $(tail -1 "$tmp/t")
         echo "$label report-wall $1" >>"$raw"
         echo "$label report-cpu $(echo "$2 + $3" | bc)" >>"$raw")
    done
done
rm -rf "$tmp"
uptime >>"$out/load.txt"
awk '{k=$1" "$2; v[k]=v[k]" "$3} END {for (k in v) {n=split(v[k], a, " ");
     for (i=1;i<=n;i++) for (j=i+1;j<=n;j++) if (a[j]<a[i]) {t=a[i];a[i]=a[j];a[j]=t}
     printf "%-24s n=%d min %.3f median %.3f\n", k, n, a[1], a[int((n+1)/2)]}}' "$raw" |
    sort >"$out/summary.txt"
cat "$out/summary.txt"
