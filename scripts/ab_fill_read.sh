#!/usr/bin/env bash
# A/B of two tierkv binaries on the db_bench workload the pipeline refactor was held to:
# `tierkv bench --design leveled,leveled-pm --benchmarks=fillrandom,readrandom --num=1000000`
# (16-byte keys, 128-byte values), in the layout of the papers: the LSM's files (and leveled's
# WAL) on the disk under /tmp, the PM pool on /dev/shm. The binaries alternate, ROUNDS rounds each,
# so both see the same machine noise.
#
# Usage: scripts/ab_fill_read.sh BEFORE_BINARY AFTER_BINARY [ROUNDS]
# Environment: DESIGNS (default leveled,leveled-pm) the designs compared; SEPARATE=1 runs each
#      design in its own process (`--design leveled`, then `--design leveled-pm`) instead of all
#      in one `tierkv bench` invocation; BENCHMARKS (default fillrandom,readrandom) the
#      benchmarks, in order (e.g. ycsb-load,ycsb-a,ycsb-c); NUM (default 1000000), VALUE_SIZE
#      (default 128), THREADS (default 1) and EXTRA (more `tierkv bench` flags, e.g.
#      "--write_buffer_size=16777216 --pm_latency=nvdimm --reads=500000") change the workload;
#      EXTRA_BEFORE and EXTRA_AFTER are flags for one side only (the same binary twice with
#      EXTRA_AFTER="--set=pm.release_freed=true" is an A/B of that option).
# Prints one line per (round, binary, design, benchmark): ops/s, p99.9 and max latency (us); at
# the end, per design and benchmark, the medians of both binaries and after / before of ops/s.
set -euo pipefail
before=${1:?before binary}
after=${2:?after binary}
rounds=${3:-3}
db=/tmp/tierkv-ab
pool=/dev/shm/tierkv-ab.pool
designs=${DESIGNS:-leveled,leveled-pm}
benchmarks=${BENCHMARKS:-fillrandom,readrandom}
run() {
  local label=$1 bin=$2 side
  side=${3:-}
  if [ "${SEPARATE:-0}" = 1 ]; then
    for d in ${designs//,/ }; do
      run_designs "$label" "$bin" "$d" "$side"
    done
  else
    run_designs "$label" "$bin" "$designs" "$side"
  fi
}
run_designs() {
  local label=$1 bin=$2 designs=$3 side=$4
  rm -rf "$db" "$pool"*
  # shellcheck disable=SC2086 # EXTRA is a list of flags
  "$bin" bench --design "$designs" --benchmarks="$benchmarks" --num="${NUM:-1000000}" \
    --key_size=16 --value_size="${VALUE_SIZE:-128}" --threads="${THREADS:-1}" ${EXTRA:-} $side \
    --db "$db" --pm_path "$pool" 2>&1 |
    awk -v label="$label" -v list="$benchmarks" '
      BEGIN { n = split(list, names, ","); for (i = 1; i <= n; i++) wanted[names[i]] = 1 }
      /^Design:/ { design = $2 }
      ($1 in wanted) && $2 == ":" { bench = $1; ops = $5 }
      /latency \(micros\)/ && bench != "" {
        for (i = 1; i <= NF; i++) { if ($i == "p99.9") p999 = $(i + 1); if ($i == "max") max = $(i + 1) }
        printf "%s %s %s ops/s %s p99.9 %s max %s\n", label, design, bench, ops, p999, max
        bench = ""
      }'
  rm -rf "$db" "$pool"*
}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for r in $(seq 1 "$rounds"); do
  run "round$r before" "$before" "${EXTRA_BEFORE:-}"
  run "round$r after" "$after" "${EXTRA_AFTER:-}"
done | tee "$out"
echo "medians over $rounds rounds (ops/s, p99.9 us, max us):"
for d in ${designs//,/ }; do for b in ${benchmarks//,/ }; do
  set -- "$d" "$b"
  line="$1 $2:"
  for label in before after; do
    for field in 6 8 10; do
      m=$(awk -v l="$label" -v d="$1" -v b="$2" -v f="$field" '$2 == l && $3 == d && $4 == b { print $f }' "$out" |
        sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
      eval "${label}_${field}=\$m"
    done
    line="$line $label $(eval echo "\$${label}_6") ops/s p99.9 $(eval echo "\$${label}_8") max $(eval echo "\$${label}_10");"
  done
  ratio=$(awk -v a="$after_6" -v b="$before_6" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "-" }')
  echo "$line after / before $ratio"
done; done
