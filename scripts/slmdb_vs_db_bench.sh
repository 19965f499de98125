#!/usr/bin/env bash
# The workload of `tierkv reproduce slmdb-ops` (1M random puts of 20-byte keys and 1 KiB
# values through 8 MiB memtables into 2 MiB tables, then 5k random gets, 5k sequential reads
# and 5k range queries of 100 keys, reads bypassing the page cache) on `leveled`, `slmdb` and
# RocksDB's db_bench, back to back, databases on the disk (DISK_DIR), the slmdb pool on
# /dev/shm with the `slmdb` PM preset (docs/BENCHMARKS.md, "SLM-DB").
#
#   scripts/slmdb_vs_db_bench.sh [BIN]
#
# BIN: the tierkv binary (default target/release/tierkv).
# Environment: DISK_DIR (default /tmp; must be on a disk), DB_BENCH (default db_bench),
#      LOG_DIR (default a new temporary directory).
#
# RocksDB runs as the paper's LevelDB does: no compression, 10-bit Bloom filters, an 8 MiB
# block cache, direct reads, L1 10 MiB; its rate limiter at 380 MB/s limits flush and
# compaction writes only (tierkv's SSD model charges every SSD write and caps reads at
# 450 MB/s too).
set -euo pipefail

BIN=${1:-target/release/tierkv}
DISK_DIR=${DISK_DIR:-/tmp}
DB_BENCH=${DB_BENCH:-db_bench}
LOG_DIR=${LOG_DIR:-$(mktemp -d)}
mkdir -p "$LOG_DIR"
WORK=$(mktemp -d "$DISK_DIR/tkv-slm-XXXXXX")
POOL=/dev/shm/tierkv-slm-dbb.pool
trap 'rm -rf "$WORK"; rm -f "$POOL"*' EXIT

BENCHES=fillrandom,readrandom,readseq,seekrandom
COMMON=(--num=1000000 --key_size=20 --value_size=1024 --reads=5000 --seek_nexts=100
    --write_buffer_size=8388608 --threads=1)
echo "logs: $LOG_DIR"
for d in leveled slmdb; do
    "$BIN" bench --design "$d" --benchmarks=$BENCHES "${COMMON[@]}" \
        --set=compaction.target_file_size=2097152 \
        --set=compaction.max_bytes_for_level_base=10485760 \
        --pm_latency=slmdb --pm_path "$POOL" --pm_size=2147483648 \
        --ssd_write_mbps=380 --ssd_read_mbps=450 --use_direct_reads \
        --db "$WORK/$d" >"$LOG_DIR/$d.log" 2>&1
    grep -E '^(fillrandom|readrandom|readseq|seekrandom) ' "$LOG_DIR/$d.log" | sed "s/^/$d  /"
    grep -E '^SSD bytes written' "$LOG_DIR/$d.log" | sed "s/^/$d  /"
done
"$DB_BENCH" --benchmarks=$BENCHES,stats "${COMMON[@]}" --target_file_size_base=2097152 \
    --max_bytes_for_level_base=10485760 --compression_type=none --bloom_bits=10 \
    --cache_size=8388608 --use_direct_reads=true \
    --rate_limiter_bytes_per_sec=380000000 --db="$WORK/rocks" >"$LOG_DIR/rocksdb.log" 2>&1
grep -E '^(fillrandom|readrandom|readseq|seekrandom) ' "$LOG_DIR/rocksdb.log" | sed 's/^/rocksdb  /'
grep -E '^ *Sum' "$LOG_DIR/rocksdb.log" | head -1 | sed 's/^/rocksdb compaction stats: /'
grep -E 'Cumulative writes|Cumulative WAL' "$LOG_DIR/rocksdb.log" | head -2 | sed 's/^/rocksdb  /'
