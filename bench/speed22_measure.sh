#!/bin/sh
# speed22_measure.sh OLD_PLAN NEW_PLAN OUT_DIR [ROUNDS] — issues 13 and 21's timings, before and
# after, on a shared machine: ROUNDS (default 5) interleaved rounds (old, new, old, new, ...)
# of `plan --model 405b|deepseek-v3 --gpus 16384` on every core and with PLAN_THREADS=1, and
# `plan report -o guide.html` (the guide) on every core; `/usr/bin/time` wall and user seconds
# with `uptime` before each round (the load says how far a wall time can be read). Writes
# OUT_DIR/timing.txt (one line a run: label, threads, wall, user) and prints the medians.
# Instruction counts: bench/speed11_callgrind.sh (load-independent).
old=$(realpath "$1") new=$(realpath "$2") out=$3 rounds=${4:-5}
here=$(dirname "$(realpath "$0")")
export PLAN_DATA_DIR=$(realpath "${PLAN_DATA_DIR:-$here/../data}")
mkdir -p "$out" || exit 2
f=$out/timing.txt
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
{ date -u; echo "# label threads wall_s user_s | command"; } >>"$f"
run() { # run LABEL BINARY THREADS ARGS...
    label=$1 bb=$2 th=$3
    shift 3
    if [ "$th" = 1 ]; then
        r=$(PLAN_THREADS=1 /usr/bin/time -f "%e %U" "$bb" "$@" 2>&1 >/dev/null | tail -1)
    else
        r=$(/usr/bin/time -f "%e %U" "$bb" "$@" 2>&1 >/dev/null | tail -1)
    fi
    echo "$label $th $r | plan $*" >>"$f"
}
for i in $(seq "$rounds"); do
    echo "# round $i: $(uptime)" >>"$f"
    for b in old new; do
        bin=$old
        [ $b = new ] && bin=$new
        for m in 405b deepseek-v3; do
            run $b "$bin" 2 --model $m --gpus 16384
            run $b "$bin" 1 --model $m --gpus 16384
        done
        run $b "$bin" 2 report -o "$d/guide.html"
    done
done
echo "# end: $(uptime)" >>"$f"
# medians per (label, threads, command)
grep -v '^#' "$f" | grep ' | plan ' | awk -F' \\| ' '{split($1, a, " "); k = a[1] " " a[2] " | " $2;
    w[k] = w[k] " " a[3]; u[k] = u[k] " " a[4]}
    END {for (k in w) print k " ||" w[k] " ||" u[k]}' | while IFS= read -r line; do
    k=${line%% ||*}
    rest=${line#* ||}
    ws=${rest%% ||*}
    us=${rest#* ||}
    mw=$(echo "$ws" | tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    mu=$(echo "$us" | tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    echo "median wall $mw user $mu : $k"
done | sort -t: -k2 | tee -a "$f"
