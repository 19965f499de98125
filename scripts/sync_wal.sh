#!/usr/bin/env bash
# `--sync=1` fillrandom, 20,000 writes: `leveled` with its WAL fdatasync'ed on the disk against
# `leveled-pm` with its PM log in `msync` mode, and `leveled-pm` in the default emulated mode for
# reference (docs/BENCHMARKS.md, the `--sync=1` figures). Each round runs:
#
#   tierkv bench --design leveled --benchmarks=fillrandom --sync=1 --num=20000 --db DISK_DIR/tkv-s
#   tierkv bench --design leveled-pm --benchmarks=fillrandom --sync=1 --pm_mode msync --num=20000 \
#     --db DISK_DIR/tkv-spm --pm_path SHM_DIR/pool-s
#   tierkv bench --design leveled-pm --benchmarks=fillrandom --sync=1 --num=20000 \
#     --db DISK_DIR/tkv-spm --pm_path SHM_DIR/pool-s            # emulated mode, for reference
#
#   scripts/sync_wal.sh [BIN]
#
# BIN: the tierkv binary (default target/release/tierkv; build it with
#      `cargo build --release -p tierkv-bench`).
# Environment: ROUNDS (default 2), SHM_DIR (default /dev/shm; on tmpfs `msync` has no device
#      behind it, so the msync figure is an upper bound), DISK_DIR (default /tmp; it must be on a
#      disk), LOG_DIR (the full output of every run; default a new temporary directory).
#
# Prints each run's fillrandom result line (ops/sec) and latency line (p99), and each round's
# msync / fdatasync ratio.
set -euo pipefail

BIN=${1:-target/release/tierkv}
ROUNDS=${ROUNDS:-2}
SHM_DIR=${SHM_DIR:-/dev/shm}
DISK_DIR=${DISK_DIR:-/tmp}
LOG_DIR=${LOG_DIR:-$(mktemp -d -t tierkv-sync-wal-XXXXXX)}

summary() {
    grep -E '^fillrandom +:|latency \(micros\)' || true
}

# The fillrandom ops/s figure of log file FILE.
ops() {
    awk '$1 == "fillrandom" && $2 == ":" { for (i = 3; i < NF; i++) if ($i == "micros/op") { print $(i + 1); exit } }' "$1"
}

mkdir -p "$LOG_DIR"
echo "binary $BIN, databases in $DISK_DIR, pool in $SHM_DIR, $ROUNDS rounds, full output in $LOG_DIR"
for round in $(seq 1 "$ROUNDS"); do
    log_l="$LOG_DIR/round$round-leveled-fdatasync.log"
    log_m="$LOG_DIR/round$round-leveled-pm-msync.log"
    log_e="$LOG_DIR/round$round-leveled-pm-emulated.log"

    echo "== round $round: leveled, WAL fdatasync'ed on the disk"
    rm -rf "$DISK_DIR/tkv-s"
    "$BIN" bench --design leveled --benchmarks=fillrandom --sync=1 --num=20000 \
        --db "$DISK_DIR/tkv-s" >"$log_l"
    summary <"$log_l"

    echo "== round $round: leveled-pm, --pm_mode msync"
    rm -rf "$DISK_DIR/tkv-spm"
    rm -f "$SHM_DIR/pool-s"
    "$BIN" bench --design leveled-pm --benchmarks=fillrandom --sync=1 --pm_mode msync --num=20000 \
        --db "$DISK_DIR/tkv-spm" --pm_path "$SHM_DIR/pool-s" >"$log_m"
    summary <"$log_m"

    echo "== round $round: leveled-pm, emulated mode (for reference)"
    rm -rf "$DISK_DIR/tkv-spm"
    rm -f "$SHM_DIR/pool-s"
    "$BIN" bench --design leveled-pm --benchmarks=fillrandom --sync=1 --num=20000 \
        --db "$DISK_DIR/tkv-spm" --pm_path "$SHM_DIR/pool-s" >"$log_e"
    summary <"$log_e"

    l=$(ops "$log_l")
    m=$(ops "$log_m")
    echo "round $round: msync / fdatasync $(awk -v a="$m" -v b="$l" 'BEGIN { if (a != "" && b > 0) printf "%.0fx", a / b; else printf "n/a" }')"
done
echo "databases kept in $DISK_DIR (tkv-s, tkv-spm), full output in $LOG_DIR"
