#!/bin/sh
# det26_threads.sh PLAN OUT_DIR [base] — does `plan` print the same thing on any number of threads?
# (issues 13 and 21, det26). For each search of speed22_identical.sh's list (read from it), the
# human output and the JSON (--top 64) on one thread, then twice on two (PLAN_THREADS), each compared
# whole with the one-thread run, less the search's seconds. Writes OUT_DIR/threads.txt (one line
# a comparison, "same" or "DIFFERS" with the first lines of the diff); exit 1 if any differs.
# The outputs are also run with --count-fits (det26's flag), unless the third argument is
# "base" (a plan from before det26, which has no such flag).
set -u
[ $# -ge 2 ] || { echo "usage: det26_threads.sh PLAN OUT_DIR [base]" >&2; exit 2; }
count_fits=--count-fits
[ "${3:-}" = base ] && count_fits=""

plan=$(realpath "$1") out=$2
here=$(dirname "$(realpath "$0")")
mkdir -p "$out" || exit 2
export PLAN_DATA_DIR=$(realpath "${PLAN_DATA_DIR:-$here/../data}")
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
rep=$(realpath "$out")/threads.txt
: >"$rep"
rc=0 n_same=0 n_diff=0
mask() { sed -E -e 's/ in [0-9.]+ s([;.])/ in S s\1/' -e 's/"seconds": [0-9.e-]+/"seconds": S/'; }
while read -r args; do
    [ -z "$args" ] && continue
    for fmt in "" "--format json --top 64" $count_fits; do
        # shellcheck disable=SC2086
        PLAN_THREADS=1 "$plan" $args $fmt 2>&1 | mask >"$d/one"
        for k in 1 2; do
            # shellcheck disable=SC2086
            PLAN_THREADS=2 "$plan" $args $fmt 2>&1 | mask >"$d/two"
            label="plan $args $fmt: 1 thread / 2 threads (run $k)"
            if [ -s "$d/one" ] && cmp -s "$d/one" "$d/two"; then
                echo "same     $label" >>"$rep"
                n_same=$((n_same + 1))
            else
                { echo "DIFFERS  $label"; diff "$d/one" "$d/two" | head -6; } >>"$rep"
                n_diff=$((n_diff + 1)) rc=1
            fi
        done
    done
done <<EOF
$(sed -n "/^done <<'LIST'/,/^LIST\$/p" "$here/speed22_identical.sh" | sed '1d;$d')
EOF
echo "plan $plan: $n_same same, $n_diff differ" | tee -a "$rep"
exit $rc
