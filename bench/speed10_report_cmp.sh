#!/bin/sh
# speed10_report_cmp.sh OLD_PLAN NEW_PLAN — plan report (Markdown with its charts, and HTML) of
# the default guide and six other option sets (report7's report_cmp.sh list), byte for byte.
# PLAN_DATA_DIR defaults to data/. Prints one line per option set; exit 1 if any differs.
old=$(realpath "$1") new=$(realpath "$2")
export PLAN_DATA_DIR=$(realpath "${PLAN_DATA_DIR:-data}")
d=$(mktemp -d)
rc=0
while read -r args; do
  for side in o n; do rm -rf "$d/$side"; mkdir -p "$d/$side"; done
  # shellcheck disable=SC2086
  (cd "$d/o" && "$old" report $args -o g.md >/dev/null 2>&1; "$old" report $args -o g.html >/dev/null 2>&1)
  # shellcheck disable=SC2086
  (cd "$d/n" && "$new" report $args -o g.md >/dev/null 2>&1; "$new" report $args -o g.html >/dev/null 2>&1)
  if [ -s "$d/o/g.md" ] && [ -s "$d/o/g.html" ] && diff -r "$d/o" "$d/n" >/dev/null; then
    echo "same    plan report ${args:-(default guide)}"
  else echo "DIFFERS plan report ${args:-(default guide)}"; rc=1; fi
done <<'LIST'

--models 405b --gpus 8
--models 70b --gpus 64
--models 8b,mixtral-8x7b --gpus 16,128
--models 405b,8b --gpus 4,8
--models deepseek-v3 --gpus 32
--models 30b --gpus 1,2048
LIST
rm -rf "$d"
exit $rc
