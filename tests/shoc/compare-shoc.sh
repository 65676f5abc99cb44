#!/usr/bin/env bash
# Runs the serial OpenCL benchmarks of an existing SHOC build (https://github.com/vetter/shoc,
# built with SHOC's own instructions; HiveCL neither ships nor builds it) natively and through
# HiveCL, and prints side by side whether each passed and its figures (median of SHOC's
# passes, and HiveCL / native).
#
#   tests/shoc/compare-shoc.sh PATH_TO_SHOC_BUILD [BENCHMARK...]
#
# PATH_TO_SHOC_BUILD is SHOC's install prefix (bin/Serial/OpenCL) or its build tree
# (src/opencl/level*/). The cluster is a private one started by tests/with-cluster.sh from
# the HiveCL build $HIVECL_BUILD (default: build/ in this repository), with the same native
# platform choice (HIVECL_TEST_NATIVE_PLATFORM, HIVECL_TEST_NATIVE_ICD). Each run sees one
# platform only, so SHOC's default platform 0, device 0 is the native device or HiveCL's.
#   SHOC_ARGS     arguments for every benchmark (default "-s 1 --passes 3": smallest size class)
#   SHOC_REPEATS  runs of each benchmark on each side (default 1), the side that runs first
#                 alternating (the second of a pair measured slower in some of DeviceMemory's
#                 texture figures); figures are then the median over the runs, with the range
#                 of the runs' own HiveCL / native ratios
#   SHOC_TIMEOUT  seconds per run (default 900)
#   SHOC_OUT      directory for every run's output and the table (default: a new one in /tmp)
#   SHOC_IN_PROCESS=1  HiveCL serves the device in-process (tests/local-only.sh: no cluster)
# A run passes when it exits 0, prints no failure and reports no N/A figure (SHOC's mark of a
# failed verification). Exit status: 1 when a benchmark passes natively but not through HiveCL.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)

if [ -z "${HIVECL_TEST_ICD_HIVECL:-}" ]; then
  shoc=$(cd "${1:?usage: compare-shoc.sh PATH_TO_SHOC_BUILD [BENCHMARK...]}" && pwd) || exit 2
  build=$(cd "${HIVECL_BUILD:-$repo/build}" && pwd) || exit 2
  export SHOC_OUT=${SHOC_OUT:-$(mktemp -d /tmp/shoc-compare.XXXXXX)}
  mkdir -p "$SHOC_OUT"
  shift
  runner=with-cluster.sh
  [ -n "${SHOC_IN_PROCESS:-}" ] && runner=local-only.sh
  exec "$repo/tests/$runner" "$build" "$0" "$shoc" "$@"
fi

shoc=$1; shift
out=$SHOC_OUT
args=(${SHOC_ARGS:--s 1 --passes 3})
repeats=${SHOC_REPEATS:-1}
limit=${SHOC_TIMEOUT:-900}

# The benchmarks' programs: an install prefix, else a build tree.
declare -A programs
if [ -d "$shoc/bin/Serial/OpenCL" ]; then
  for program in "$shoc"/bin/Serial/OpenCL/*; do programs[$(basename "$program")]=$program; done
else
  for program in "$shoc"/src/opencl/level[012]/*/* "$shoc"/src/opencl/level0/*; do
    [ -f "$program" ] && [ -x "$program" ] && programs[$(basename "$program")]=$program
  done
fi
[ ${#programs[@]} -gt 0 ] || { echo "compare-shoc.sh: no SHOC OpenCL programs under $shoc" >&2; exit 2; }
names=("$@")
[ ${#names[@]} -gt 0 ] || mapfile -t names < <(printf '%s\n' "${!programs[@]}" | sort)

# on native|hivecl COMMAND: runs it with that platform alone visible.
source "$repo/tests/e2e/lib.sh"

# "pass", or why not; figures go to FILE.figures as "test atts units<TAB>median".
verdict() {
  local log=$1 status=$2
  # SHOC's progress bars redraw with carriage returns: keep the last state of each line.
  sed 's/.*\r//' "$log" | awk -F'\t' '/^test\tatts\tunits\tmedian/ { table = 1; next }
    table && NF >= 4 && $1 != "" { print $1 " " $2 " " $3 "\t" $4 }' >"$log.figures"
  if [ "$status" -eq 124 ]; then echo "timeout"
  elif [ "$status" -ne 0 ]; then echo "exit $status"
  elif grep -qiE "fail" "$log"; then echo "FAILED"
  elif cut -f2 "$log.figures" | grep -q "N/A"; then echo "$(cut -f2 "$log.figures" | grep -c "N/A") N/A"
  elif [ ! -s "$log.figures" ]; then echo "no figures"
  else echo "pass"
  fi
}

# "pass" when every run of benchmark $1 on side $2 passed, else the first failed run's reason
# (each run's figures go to its log's .figures file).
side_verdict() {
  local name=$1 side=$2 run result first=pass
  for run in $(seq 1 "$repeats"); do
    result=$(verdict "$out/$name.$side.$run.log" "$(cat "$out/$name.$side.$run.status")")
    if [ "$result" != pass ] && [ "$first" = pass ]; then
      first=$result
      [ "$repeats" -gt 1 ] && first="$first (run $run)"
    fi
  done
  echo "$first"
}

# "test atts units<TAB>value" lines, grouped: each test's median of its numeric values, or the
# text it had instead (SHOC's N/A) when it had none.
medians() {
  cat "$@" | sort -t $'\t' -k1,1 -k2,2g |
    awk -F'\t' 'function flush() {
                   if (n) printf "%s\t%.10g\n", key, n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
                   else if (key != "") printf "%s\t%s\n", key, text }
                 $1 != key { flush(); key = $1; n = 0; text = $2 }
                 $2 ~ /^[0-9.e+-]+$/ { v[++n] = $2 } END { flush() }'
}

# Each test's lowest and highest ratio HiveCL / native over the runs, as "test<TAB>low-high".
ratio_ranges() {
  local name=$1 run
  for run in $(seq 1 "$repeats"); do
    join -t $'\t' <(sort "$out/$name.native.$run.log.figures") <(sort "$out/$name.hivecl.$run.log.figures") |
      awk -F'\t' '$2 ~ /^[0-9.e+-]+$/ && $3 ~ /^[0-9.e+-]+$/ && $2 + 0 != 0 { printf "%s\t%.3f\n", $1, $3 / $2 }'
  done | sort -t $'\t' -k1,1 -k2,2g |
    awk -F'\t' 'function flush() { if (key != "") printf "%s\t%s-%s\n", key, low, high }
                 $1 != key { flush(); key = $1; low = $2 } { high = $2 } END { flush() }'
}

table=$out/table.txt
: >"$table"
regressions=0
printf '%-18s %-12s %-12s\n' benchmark native HiveCL | tee -a "$table"
for name in "${names[@]}"; do
  program=${programs[$name]:-}
  [ -n "$program" ] || { echo "compare-shoc.sh: no program $name" >&2; regressions=$((regressions + 1)); continue; }
  for run in $(seq 1 "$repeats"); do
    order="native hivecl"
    [ $((run % 2)) -eq 0 ] && order="hivecl native"
    for side in $order; do
      (cd "$out" && on "$side" timeout "$limit" "$program" "${args[@]}") >"$out/$name.$side.$run.log" 2>&1
      echo $? >"$out/$name.$side.$run.status"
    done
  done
  native_verdict=$(side_verdict "$name" native)
  hivecl_verdict=$(side_verdict "$name" hivecl)
  printf '%-18s %-12s %-12s\n' "$name" "$native_verdict" "$hivecl_verdict" | tee -a "$table"
  [ "$native_verdict" = pass ] && [ "$hivecl_verdict" != pass ] && regressions=$((regressions + 1))
  # Figures side by side, joined on "test atts units"; with several runs, the range of their ratios.
  join -t $'\t' -a 1 -e '-' -o 0,1.2,2.2 <(medians "$out/$name".native.*.log.figures) \
    <(medians "$out/$name".hivecl.*.log.figures) |
    join -t $'\t' -a 1 -e '' -o 0,1.2,1.3,2.2 - <(ratio_ranges "$name") |
    awk -F'\t' -v repeats="$repeats" '{ ratio = ($2 + 0 != 0 && $3 ~ /^[0-9.e+-]+$/) ? sprintf("%.3f", $3 / $2) : "-"
                  printf "    %-52s %14s %14s %8s", $1, $2, $3, ratio
                  if (repeats > 1) printf " %13s", $4
                  printf "\n" }' | tee -a "$table"
done
if [ "$repeats" -gt 1 ]; then
  echo "figures: median over $repeats runs a side of SHOC's median over its passes; columns: native, HiveCL," \
    "HiveCL / native, the runs' own ratios (lowest-highest)" | tee -a "$table"
else
  echo "figures: SHOC's median over its passes; columns: native, HiveCL, HiveCL / native" | tee -a "$table"
fi
echo "logs and table: $out"
[ $regressions -eq 0 ]
