#!/usr/bin/env bash
# fillrandom + readrandom, 1M keys (16-byte keys, 128-byte values), of tierkv's `leveled` and
# `leveled-pm` designs and of RocksDB's db_bench, back to back in each round: `leveled`, then
# `leveled-pm`, then db_bench (docs/BENCHMARKS.md, the db_bench tables). Each round runs, with
# the layout's paths:
#
#   tierkv bench --design leveled --benchmarks=fillrandom,readrandom --num=1000000 \
#     --key_size=16 --value_size=128 --db DIR/tkv-l
#   tierkv bench --design leveled-pm --benchmarks=fillrandom,readrandom --num=1000000 \
#     --key_size=16 --value_size=128 --db DIR/tkv-pm [--pm_path SHM_DIR/pool-pm]
#   db_bench --benchmarks=fillrandom,readrandom[,stats] --num=1000000 --key_size=16 \
#     --value_size=128 --compression_type=none --bloom_bits=10 --db=DIR/rocks
#
#   scripts/leveled_vs_db_bench.sh [BIN] [LAYOUT]
#
# BIN: the tierkv binary (default target/release/tierkv; build it with
#      `cargo build --release -p tierkv-bench`).
# LAYOUT: S (default): every database in SHM_DIR, leveled-pm's pool inside its database
#      directory, and db_bench runs its `stats` benchmark too (RocksDB's write amplification).
#      D: the papers' layout: the databases (LSM trees and leveled's WAL, and RocksDB's) in
#      DISK_DIR, which must be on a disk, leveled-pm's pool in SHM_DIR (emulated PM).
# Environment: ROUNDS (default 2), ROCKSDB (default 1; 0 leaves db_bench out), NVLSM (default 0;
#      1 runs the `nvlsm` design too, after leveled-pm, its pool in SHM_DIR/pool-nvlsm:
#      `tierkv bench --design nvlsm ... --db DIR/tkv-nvlsm --pm_path SHM_DIR/pool-nvlsm`),
#      DB_BENCH (default
#      db_bench: RocksDB's tool from Debian's rocksdb-tools, `apt-get install -y rocksdb-tools`),
#      SHM_DIR (default /dev/shm), DISK_DIR (default /tmp), LOG_DIR (the full output of every
#      run; default a new temporary directory).
#
# Prints, for every run, the db_bench-style result lines (ops/sec) the tables were built from,
# tierkv's byte and amplification lines (SSD and PM) and db_bench's WAL, flush and compaction
# lines; after each round, the ratios of the ops/s figures.
set -euo pipefail

BIN=${1:-target/release/tierkv}
LAYOUT=${2:-S}
ROUNDS=${ROUNDS:-2}
ROCKSDB=${ROCKSDB:-1}
NVLSM=${NVLSM:-0}
DB_BENCH=${DB_BENCH:-db_bench}
SHM_DIR=${SHM_DIR:-/dev/shm}
DISK_DIR=${DISK_DIR:-/tmp}
LOG_DIR=${LOG_DIR:-$(mktemp -d -t tierkv-vs-db-bench-XXXXXX)}

COMMON=(--benchmarks=fillrandom,readrandom --num=1000000 --key_size=16 --value_size=128)
case "$LAYOUT" in
    S)
        DIR=$SHM_DIR
        PM_ARGS=()
        ROCKS_BENCHMARKS=fillrandom,readrandom,stats
        ;;
    D)
        DIR=$DISK_DIR
        PM_ARGS=(--pm_path "$SHM_DIR/pool-pm")
        ROCKS_BENCHMARKS=fillrandom,readrandom
        ;;
    *)
        echo "usage: $0 [BIN] [S|D]" >&2
        exit 2
        ;;
esac

summary() {
    grep -E '^(fillrandom|readrandom) +:|latency \(micros\)|^SSD bytes written|^  (WAL|flush|compaction|manifest): |^Write amplification|^PM bytes written|^PM amplification|^Cumulative (writes|WAL|compaction)|^Flush\(GB\)' || true
}

# The ops/s figure of BENCHMARK in log file FILE (tierkv and db_bench print it after micros/op).
ops() {
    awk -v b="$1" '$1 == b && $2 == ":" { for (i = 3; i < NF; i++) if ($i == "micros/op") { print $(i + 1); exit } }' "$2"
}

ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && b != "" && b > 0) printf "%.2fx", a / b; else printf "n/a" }'
}

mkdir -p "$LOG_DIR"
echo "binary $BIN, layout $LAYOUT, databases in $DIR, $ROUNDS rounds, full output in $LOG_DIR"
for round in $(seq 1 "$ROUNDS"); do
    log_l="$LOG_DIR/round$round-leveled.log"
    log_pm="$LOG_DIR/round$round-leveled-pm.log"
    log_r="$LOG_DIR/round$round-rocksdb.log"
    log_n="$LOG_DIR/round$round-nvlsm.log"

    echo "== round $round: leveled"
    rm -rf "$DIR/tkv-l"
    "$BIN" bench --design leveled "${COMMON[@]}" --db "$DIR/tkv-l" >"$log_l"
    summary <"$log_l"

    echo "== round $round: leveled-pm"
    rm -rf "$DIR/tkv-pm"
    if [ "$LAYOUT" = D ]; then rm -f "$SHM_DIR/pool-pm"; fi
    "$BIN" bench --design leveled-pm "${COMMON[@]}" --db "$DIR/tkv-pm" ${PM_ARGS[@]+"${PM_ARGS[@]}"} >"$log_pm"
    summary <"$log_pm"

    if [ "$NVLSM" != 0 ]; then
        echo "== round $round: nvlsm"
        rm -rf "$DIR/tkv-nvlsm"
        rm -f "$SHM_DIR/pool-nvlsm"
        "$BIN" bench --design nvlsm "${COMMON[@]}" --db "$DIR/tkv-nvlsm" --pm_path "$SHM_DIR/pool-nvlsm" >"$log_n"
        summary <"$log_n"
    fi

    if [ "$ROCKSDB" != 0 ]; then
        echo "== round $round: RocksDB db_bench"
        rm -rf "$DIR/rocks"
        "$DB_BENCH" --benchmarks="$ROCKS_BENCHMARKS" --num=1000000 --key_size=16 --value_size=128 \
            --compression_type=none --bloom_bits=10 --db="$DIR/rocks" >"$log_r" 2>&1
        summary <"$log_r"
    fi

    for b in fillrandom readrandom; do
        l=$(ops "$b" "$log_l")
        pm=$(ops "$b" "$log_pm")
        line="round $round $b: leveled ${l:-?}, leveled-pm ${pm:-?}"
        line="$line; leveled-pm / leveled $(ratio "$pm" "$l")"
        if [ "$ROCKSDB" != 0 ]; then
            r=$(ops "$b" "$log_r")
            line="$line; RocksDB ${r:-?}; leveled-pm / RocksDB $(ratio "$pm" "$r")"
            line="$line; leveled / RocksDB $(ratio "$l" "$r")"
        fi
        if [ "$NVLSM" != 0 ]; then
            n=$(ops "$b" "$log_n")
            line="$line; nvlsm ${n:-?}; nvlsm / leveled $(ratio "$n" "$l"); nvlsm / leveled-pm $(ratio "$n" "$pm")"
            if [ "$ROCKSDB" != 0 ]; then line="$line; nvlsm / RocksDB $(ratio "$n" "$r")"; fi
        fi
        echo "$line"
    done
done
echo "databases kept in $DIR (tkv-l, tkv-pm, rocks), full output in $LOG_DIR"
