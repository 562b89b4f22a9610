#!/bin/sh
# speed5_measure.sh OLD_DIR NEW_DIR OUT_DIR [N] — the speed5 round's before/after figures (issues
# 13 and 21). OLD_DIR and NEW_DIR are release build directories (meson --buildtype=release) of
# the two trees; each holds cli/plan and bench/planner_speed. Interleaved, N rounds (default 5):
#   - wall seconds of `plan --model deepseek-v3 --gpus 16384` and `plan --model 405b --gpus
#     16384` with every core (and those runs' sys seconds and minor page faults), and their
#     CPU (user) seconds with PLAN_THREADS=1;
#   - `planner_speed 3` (in-process searches, every core), its whole table each round;
#   - wall seconds of `plan report -o guide.md` (N/2 rounds, at least 2).
# Raw figures go to OUT_DIR/raw.txt (one line a run: binary, what, seconds), the planner_speed
# tables to OUT_DIR/planner_speed_{old,new}.txt, the machine's load to OUT_DIR/load.txt; a
# summary (min and median of each) is printed and written to OUT_DIR/summary.txt.
old=$(realpath "$1") new=$(realpath "$2") out=$3 n=${4:-5}
mkdir -p "$out"
out=$(realpath "$out")
export PLAN_DATA_DIR=$(realpath "${PLAN_DATA_DIR:-data}")
raw=$out/raw.txt
: >"$raw"
: >"$out/planner_speed_old.txt"
: >"$out/planner_speed_new.txt"
{ date -u; nproc; uptime; } >"$out/load.txt"
wall() { # wall LABEL WHAT BINARY ARGS...: one timed run, all cores (its sys seconds and
          # minor page faults too)
    label=$1 what=$2 b=$3; shift 3
    s=$(/usr/bin/time -f "%e %S %R" "$b" "$@" 2>&1 >/dev/null | tail -1)
    set -- $s
    echo "$label $what-wall $1" >>"$raw"
    echo "$label $what-sys $2" >>"$raw"
    echo "$label $what-minflt $3" >>"$raw"
}
cpu1() { # cpu1 LABEL WHAT BINARY ARGS...: one timed run, one thread, its user seconds
    label=$1 what=$2 b=$3; shift 3
    s=$(PLAN_THREADS=1 /usr/bin/time -f "%e %U" "$b" "$@" 2>&1 >/dev/null | tail -1)
    echo "$label $what-cpu1 ${s#* }" >>"$raw"
}
tmp=$(mktemp -d)
for i in $(seq "$n"); do
    for side in old new; do
        if [ $side = old ]; then d=$old; else d=$new; fi
        wall $side dsv3 "$d/cli/plan" --model deepseek-v3 --gpus 16384
        cpu1 $side dsv3 "$d/cli/plan" --model deepseek-v3 --gpus 16384
        wall $side 405b "$d/cli/plan" --model 405b --gpus 16384
        cpu1 $side 405b "$d/cli/plan" --model 405b --gpus 16384
        echo "# round $i $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)" \
            >>"$out/planner_speed_$side.txt"
        "$d/bench/planner_speed" 3 >>"$out/planner_speed_$side.txt" 2>&1
    done
done
r=$((n / 2)); [ "$r" -lt 2 ] && r=2
for i in $(seq "$r"); do
    for side in old new; do
        if [ $side = old ]; then d=$old; else d=$new; fi
        mkdir -p "$tmp/$side"
        (cd "$tmp/$side" && /usr/bin/time -f "%e %U" "$d/cli/plan" report -o guide.md \
            2>"$tmp/t" >/dev/null; echo "$side report-wall $(tail -1 "$tmp/t" | cut -d' ' -f1)" >>"$raw")
    done
done
rm -rf "$tmp"
uptime >>"$out/load.txt"
# min and median of each (side, what); planner_speed: median over rounds of each row's median_s
awk '{k=$1" "$2; v[k]=v[k]" "$3} END {for (k in v) {n=split(v[k], a, " ");
     for (i=1;i<=n;i++) for (j=i+1;j<=n;j++) if (a[j]<a[i]) {t=a[i];a[i]=a[j];a[j]=t}
     printf "%-18s n=%d min %.3f median %.3f\n", k, n, a[1], a[int((n+1)/2)]}}' "$raw" |
    sort >"$out/summary.txt"
for side in old new; do
    awk -v side=$side '/^[a-z0-9]/ && $1 != "model" {k=$1"@"$2; v[k]=v[k]" "$7}
         END {for (k in v) {n=split(v[k], a, " ");
         for (i=1;i<=n;i++) for (j=i+1;j<=n;j++) if (a[j]<a[i]) {t=a[i];a[i]=a[j];a[j]=t}
         printf "%s planner_speed %-18s rounds=%d median-of-median_s %.4f min %.4f\n", side, k, n,
                a[int((n+1)/2)], a[1]}}' "$out/planner_speed_$side.txt" | sort >>"$out/summary.txt"
done
cat "$out/summary.txt"
