#!/usr/bin/env bash
# The random-write workload of `tierkv reproduce trianglekv-write` (160k random puts of
# 16-byte keys and 4 KiB values, 2 MiB memtables and SSTables, SSD writes capped at 200 MB/s)
# on `leveled`, `trianglekv` and RocksDB's db_bench, back to back, databases on the disk
# (DISK_DIR), the trianglekv pool on /dev/shm (docs/BENCHMARKS.md, "TriangleKV and MatrixKV").
#
#   scripts/trianglekv_vs_db_bench.sh [BIN]
#
# BIN: the tierkv binary (default target/release/tierkv).
# Environment: DISK_DIR (default /tmp; must be on a disk), DB_BENCH (default db_bench),
#      LOG_DIR (default a new temporary directory).
#
# RocksDB runs as RocksDB-SSD in the paper: WAL and L0 on the disk, L1 16 MiB, no compression,
# 10-bit Bloom filters, its rate limiter at 200 MB/s (it limits flush and compaction writes,
# not the WAL, unlike tierkv's SSD model, which charges every SSD write).
set -euo pipefail

BIN=${1:-target/release/tierkv}
DISK_DIR=${DISK_DIR:-/tmp}
DB_BENCH=${DB_BENCH:-db_bench}
LOG_DIR=${LOG_DIR:-$(mktemp -d)}
WORK=$(mktemp -d "$DISK_DIR/tkv-tri-XXXXXX")
POOL=/dev/shm/tierkv-tri-dbb.pool
trap 'rm -rf "$WORK"; rm -f "$POOL"*' EXIT

COMMON=(--benchmarks=fillrandom --num=160000 --key_size=16 --value_size=4096
    --write_buffer_size=2097152 --set=compaction.target_file_size=2097152 --threads=1
    --ssd_write_mbps=200 --ssd_read_mbps=250)
echo "logs: $LOG_DIR"
"$BIN" bench --design "leveled=leveled+compaction.max_bytes_for_level_base=16777216" \
    "${COMMON[@]}" --db "$WORK/leveled" >"$LOG_DIR/leveled.log" 2>&1
grep -E '^fillrandom' "$LOG_DIR/leveled.log" | sed 's/^/leveled     /'
"$BIN" bench --design "trianglekv=trianglekv+rows.l0_bytes=67108864" "${COMMON[@]}" \
    --pm_path "$POOL" --pm_size=2147483648 --set=pm.chunk_bytes=262144 --pm_latency=nvdimm \
    --db "$WORK/trianglekv" >"$LOG_DIR/trianglekv.log" 2>&1
grep -E '^fillrandom' "$LOG_DIR/trianglekv.log" | sed 's/^/trianglekv  /'
"$DB_BENCH" --benchmarks=fillrandom,stats --num=160000 --key_size=16 --value_size=4096 \
    --write_buffer_size=2097152 --target_file_size_base=2097152 \
    --max_bytes_for_level_base=16777216 --compression_type=none --bloom_bits=10 \
    --rate_limiter_bytes_per_sec=200000000 --threads=1 --db="$WORK/rocks" \
    >"$LOG_DIR/rocksdb.log" 2>&1
grep -E '^fillrandom' "$LOG_DIR/rocksdb.log" | sed 's/^/rocksdb     /'
grep -E '^ *Sum' "$LOG_DIR/rocksdb.log" | head -1 | sed 's/^/rocksdb compaction stats: /'
