#!/bin/sh
# report7_measure.sh OUT_DIR N LABEL=BUILD_DIR... — the guide's time (issue 21's target:
# `plan report` of the guide in under 2 s on 2 cores), before and after the report7 round.
# Each BUILD_DIR is a release build directory holding cli/plan. Interleaved (every build once
# per round), N rounds, in a fresh directory each run:
#   - `plan report -o guide.html` and `plan report -o guide.md` with every core: wall, user
#     and sys seconds;
#   - `plan report -o guide.html` with PLAN_THREADS=1: user seconds (the work, one core).
# Raw figures go to OUT_DIR/raw.txt (one line a run: label, what, seconds), the machine's load
# to OUT_DIR/load.txt; a summary (min and median of each) is printed and written to
# OUT_DIR/summary.txt. The instruction counts (callgrind) are made apart: OUT_DIR/README.md.
out=$1 n=$2
shift 2
mkdir -p "$out"
out=$(realpath "$out")
export PLAN_DATA_DIR=$(realpath "${PLAN_DATA_DIR:-data}")
raw=$out/raw.txt
: >"$raw"
{ date -u; nproc; uptime; } >"$out/load.txt"
tmp=$(mktemp -d)
run() { # run LABEL WHAT THREADS BINARY FILE: one timed report in a fresh directory (THREADS
       # "": every core)
    label=$1 what=$2 threads=$3 bin=$4 file=$5
    rm -rf "$tmp/w" && mkdir "$tmp/w"
    (cd "$tmp/w" && env ${threads:+PLAN_THREADS=$threads} /usr/bin/time -f "%e %U %S" "$bin" \
        report -o "$file" >/dev/null 2>"$tmp/t")
    set -- $(tail -1 "$tmp/t")
    echo "$label $what-wall $1" >>"$raw"
    echo "$label $what-user $2" >>"$raw"
    echo "$label $what-cpu $(echo "$2 + $3" | bc)" >>"$raw"
}
for i in $(seq "$n"); do
    for b in "$@"; do
        label=${b%%=*} d=$(realpath "${b#*=}")
        run "$label" html "" "$d/cli/plan" guide.html
        run "$label" md "" "$d/cli/plan" guide.md
        run "$label" html1 1 "$d/cli/plan" guide.html
    done
    echo "# round $i $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)" >>"$out/load.txt"
done
rm -rf "$tmp"
uptime >>"$out/load.txt"
awk '{k=$1" "$2; v[k]=v[k]" "$3} END {for (k in v) {n=split(v[k], a, " ");
     for (i=1;i<=n;i++) for (j=i+1;j<=n;j++) if (a[j]<a[i]) {t=a[i];a[i]=a[j];a[j]=t}
     printf "%-24s n=%d min %.3f median %.3f\n", k, n, a[1], a[int((n+1)/2)]}}' "$raw" |
    sort >"$out/summary.txt"
cat "$out/summary.txt"
