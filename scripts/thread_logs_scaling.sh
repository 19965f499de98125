#!/usr/bin/env bash
# Writers without a leader: `leveled-pm` with its group-committed PM WAL against `leveled-pm`
# writing through FluidKV's FastStore (`pm.thread_logs`: a concurrent DRAM index over one PM log
# per writer thread; Lu et al., "FluidKV: Seamlessly Bridging the Gap between Indexing
# Performance and Memory-Footprint on Ultra-Fast Storage", PVLDB 17(6), 2024), at each thread
# count of THREADS, back to back: fillrandom of NUM 16-byte keys and 100-byte values split over
# the threads, then readrandom. Databases on the disk (DISK_DIR), pools on /dev/shm. After each
# round, `tierkv scaling` draws the round's curves (throughput against threads, a line per
# design) into LOG_DIR/scaling-r<round> (charts and scaling.md).
#
#   scripts/thread_logs_scaling.sh [BIN]
#
# BIN: the tierkv binary (default target/release/tierkv).
# Environment: THREADS (default "1 2"), NUM (default 2000000), ROUNDS (default 1),
#      DISK_DIR (default /tmp), LOG_DIR (default a new temporary directory), DESIGNS (the
#      `--design` list, default "leveled-pm,thread-logs=leveled-pm+pm.thread_logs=true"; e.g.
#      add `fluidkv`, or `rocksdb` with a binary built with the `rocksdb` feature), BENCHMARKS
#      (default "fillrandom,readrandom"; e.g. "ycsb-load,ycsb-a,ycsb-b,ycsb-c,ycsb-f,ycsb-d,
#      ycsb-e", whose runs do --reads operations per thread per workload).
set -euo pipefail

BIN=${1:-target/release/tierkv}
THREADS=${THREADS:-1 2}
NUM=${NUM:-2000000}
ROUNDS=${ROUNDS:-1}
DISK_DIR=${DISK_DIR:-/tmp}
LOG_DIR=${LOG_DIR:-$(mktemp -d)}
DESIGNS=${DESIGNS:-leveled-pm,thread-logs=leveled-pm+pm.thread_logs=true}
BENCHMARKS=${BENCHMARKS:-fillrandom,readrandom}
mkdir -p "$LOG_DIR"
echo "logs: $LOG_DIR"
for round in $(seq 1 "$ROUNDS"); do
    for t in $THREADS; do
        WORK=$(mktemp -d "$DISK_DIR/tkv-tl-XXXXXX")
        "$BIN" bench --design "$DESIGNS" \
            --benchmarks="$BENCHMARKS" --num="$NUM" --reads=$((NUM / 4)) \
            --key_size=16 --value_size=100 --threads="$t" \
            --pm_path /dev/shm/tierkv-tl.pool --pm_size=4294967296 \
            --db "$WORK/db" --json "$LOG_DIR/r$round-t$t.json" >"$LOG_DIR/r$round-t$t.log" 2>&1
        rm -rf "$WORK"; rm -f /dev/shm/tierkv-tl.pool*
        echo "round $round, $t thread(s):"
        grep -E '^[a-z0-9-]+ +(:|ops/s)' "$LOG_DIR/r$round-t$t.log" | sed 's/^/  /' || true
    done
    "$BIN" scaling --out "$LOG_DIR/scaling-r$round" "$LOG_DIR"/r"$round"-t*.json
done
