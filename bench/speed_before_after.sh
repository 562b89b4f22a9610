#!/bin/sh
# speed_before_after.sh OLD_PLAN NEW_PLAN [N] — issue 21's before/after table: each command run
# N times by each binary, interleaved, and the minimum kept (the machine is shared: the minimum
# is the figure least disturbed by other work): wall time with every core, and CPU time with
# PLAN_THREADS=1 (the work itself). Prints Markdown rows.
old=$1 new=$2 n=${3:-7}
export PLAN_DATA_DIR=${PLAN_DATA_DIR:-data}
t() { # t BINARY THREADS ARGS... -> "wall user"
    b=$1 th=$2; shift 2
    if [ "$th" = all ]; then /usr/bin/time -f "%e %U" "$b" "$@" 2>&1 >/dev/null | tail -1
    else PLAN_THREADS=1 /usr/bin/time -f "%e %U" "$b" "$@" 2>&1 >/dev/null | tail -1; fi
}
min() { sort -g | head -1; }
row() {
    for b in "$old" "$new"; do
        w=$(for i in $(seq "$n"); do t "$b" all "$@"; done | awk '{print $1}' | min)
        u=$(for i in $(seq "$n"); do t "$b" 1 "$@"; done | awk '{print $2}' | min)
        s=$("$b" "$@" 2>/dev/null | grep -o 'Searched [0-9]* layouts' | grep -o '[0-9]*')
        printf '%s %s %s ' "$w" "$u" "${s:--}"
    done
    echo "| plan $* |"
}
echo "old_wall old_cpu1 old_layouts new_wall new_cpu1 new_layouts | command"
row --model 405b --gpus 16384
row --model deepseek-v3 --gpus 16384
row report -o /tmp/space_report.html
