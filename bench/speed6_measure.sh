#!/bin/sh
# speed6_measure.sh OUT_DIR N LABEL=BUILD_DIR... — the speed6 round's figures (issues 13 and
# 21), speed5_measure.sh generalised to several builds (before, after, after with LTO). Each
# BUILD_DIR is a release build directory holding cli/plan and bench/planner_speed. Interleaved
# (every build once per round), N rounds:
#   - wall seconds of `plan --model deepseek-v3 --gpus 16384` and `plan --model 405b --gpus
#     16384` with every core (and those runs' sys seconds and minor page faults), and their
#     CPU (user) seconds with PLAN_THREADS=1;
#   - `planner_speed 3` (in-process searches, every core), its whole table each round;
#   - wall and CPU (user + sys) seconds of `plan report -o guide.html` (the guide: 85 searches),
#     max(2, N/2) rounds.
# Raw figures go to OUT_DIR/raw.txt (one line a run: label, what, seconds), the planner_speed
# tables to OUT_DIR/planner_speed_LABEL.txt, the machine's load to OUT_DIR/load.txt; a summary
# (min and median of each) is printed and written to OUT_DIR/summary.txt.
out=$1 n=$2
shift 2
mkdir -p "$out"
out=$(realpath "$out")
export PLAN_DATA_DIR=$(realpath "${PLAN_DATA_DIR:-data}")
raw=$out/raw.txt
: >"$raw"
{ date -u; nproc; uptime; } >"$out/load.txt"
for b in "$@"; do : >"$out/planner_speed_${b%%=*}.txt"; done
wall() { # wall LABEL WHAT BINARY ARGS...: one timed run, all cores (its sys seconds and
          # minor page faults too)
    label=$1 what=$2 bin=$3; shift 3
    s=$(/usr/bin/time -f "%e %S %R" "$bin" "$@" 2>&1 >/dev/null | tail -1)
    set -- $s
    echo "$label $what-wall $1" >>"$raw"
    echo "$label $what-sys $2" >>"$raw"
    echo "$label $what-minflt $3" >>"$raw"
}
cpu1() { # cpu1 LABEL WHAT BINARY ARGS...: one timed run, one thread, its user seconds
    label=$1 what=$2 bin=$3; shift 3
    s=$(PLAN_THREADS=1 /usr/bin/time -f "%e %U" "$bin" "$@" 2>&1 >/dev/null | tail -1)
    echo "$label $what-cpu1 ${s#* }" >>"$raw"
}
tmp=$(mktemp -d)
for i in $(seq "$n"); do
    for b in "$@"; do
        label=${b%%=*} d=$(realpath "${b#*=}")
        wall "$label" dsv3 "$d/cli/plan" --model deepseek-v3 --gpus 16384
        cpu1 "$label" dsv3 "$d/cli/plan" --model deepseek-v3 --gpus 16384
        wall "$label" 405b "$d/cli/plan" --model 405b --gpus 16384
        cpu1 "$label" 405b "$d/cli/plan" --model 405b --gpus 16384
        echo "# round $i $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)" \
            >>"$out/planner_speed_$label.txt"
        "$d/bench/planner_speed" 3 >>"$out/planner_speed_$label.txt" 2>&1
    done
done
r=$((n / 2)); [ "$r" -lt 2 ] && r=2
for i in $(seq "$r"); do
    for b in "$@"; do
        label=${b%%=*} d=$(realpath "${b#*=}")
        mkdir -p "$tmp/$label"
        (cd "$tmp/$label" && /usr/bin/time -f "%e %U %S" "$d/cli/plan" report -o guide.html \
            2>"$tmp/t" >/dev/null
         set -- $(tail -1 "$tmp/t")
         echo "$label report-wall $1" >>"$raw"
         echo "$label report-cpu $(echo "$2 + $3" | bc)" >>"$raw")
    done
done
rm -rf "$tmp"
uptime >>"$out/load.txt"
# min and median of each (label, what); planner_speed: median over rounds of each row's median_s
awk '{k=$1" "$2; v[k]=v[k]" "$3} END {for (k in v) {n=split(v[k], a, " ");
     for (i=1;i<=n;i++) for (j=i+1;j<=n;j++) if (a[j]<a[i]) {t=a[i];a[i]=a[j];a[j]=t}
     printf "%-24s n=%d min %.3f median %.3f\n", k, n, a[1], a[int((n+1)/2)]}}' "$raw" |
    sort >"$out/summary.txt"
for b in "$@"; do
    label=${b%%=*}
    awk -v side="$label" '/^[a-z0-9]/ && $1 != "model" {k=$1"@"$2; v[k]=v[k]" "$7}
         END {for (k in v) {n=split(v[k], a, " ");
         for (i=1;i<=n;i++) for (j=i+1;j<=n;j++) if (a[j]<a[i]) {t=a[i];a[i]=a[j];a[j]=t}
         printf "%s planner_speed %-18s rounds=%d median-of-median_s %.4f min %.4f\n", side, k, n,
                a[int((n+1)/2)], a[1]}}' "$out/planner_speed_$label.txt" | sort >>"$out/summary.txt"
done
cat "$out/summary.txt"
