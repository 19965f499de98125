#!/usr/bin/env bash
# A/B of two tierkv binaries on the db_bench workload the pipeline refactor was held to:
# `tierkv bench --design leveled,leveled-pm --benchmarks=fillrandom,readrandom --num=1000000`
# (16-byte keys, 128-byte values), in the layout of the papers: the LSM's files (and leveled's
# WAL) on the disk under /tmp, the PM pool on /dev/shm. The binaries alternate, ROUNDS rounds each,
# so both see the same machine noise.
#
# Usage: scripts/ab_fill_read.sh BEFORE_BINARY AFTER_BINARY [ROUNDS]
# Prints one line per (round, binary, design, benchmark): ops/s, p99.9 and max latency (us).
set -euo pipefail
before=${1:?before binary}
after=${2:?after binary}
rounds=${3:-3}
db=/tmp/tierkv-ab
pool=/dev/shm/tierkv-ab.pool
run() {
  local label=$1 bin=$2
  rm -rf "$db" "$pool"*
  "$bin" bench --design leveled,leveled-pm --benchmarks=fillrandom,readrandom --num=1000000 \
    --key_size=16 --value_size=128 --db "$db" --pm_path "$pool" 2>&1 |
    awk -v label="$label" '
      /^Design:/ || /^design/ { }
      /^Database:/ { design = ($2 ~ /leveled-pm/) ? "leveled-pm" : "leveled" }
      /^(fillrandom|readrandom) +:/ { bench = $1; ops = $5 }
      /latency \(micros\)/ && bench != "" {
        for (i = 1; i <= NF; i++) { if ($i == "p99.9") p999 = $(i + 1); if ($i == "max") max = $(i + 1) }
        printf "%s %s %s ops/s %s p99.9 %s max %s\n", label, design, bench, ops, p999, max
        bench = ""
      }'
  rm -rf "$db" "$pool"*
}
for r in $(seq 1 "$rounds"); do
  run "round$r before" "$before"
  run "round$r after" "$after"
done
