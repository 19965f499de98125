#!/usr/bin/env bash
# SLM-DB's YCSB-A and C against `leveled` with and without the emulated PM write latency: the
# slmdb-ycsb experiment's settings (Kaiyrakhmet et al., "SLM-DB: Single-Level Key-Value Store
# with Persistent Memory", FAST 2019; 400k records of 1 KiB, 8 MiB memtables, 2 MiB tables, the
# SSD model at 380/450 MB/s with direct reads, one thread), ycsb-load, waitforcompaction, then
# ycsb-a and ycsb-c with --reads operations each, once with the `slmdb` PM latency preset (500 ns
# per cache line written back) and once with `dram` (none). Databases in WORK_DIR, pools on
# /dev/shm. Prints each run's throughput per workload.
#
#   scripts/slmdb_ycsb_latency.sh [BIN]
#
# BIN: the tierkv binary (default target/release/tierkv).
# Environment: READS (default 30000), WORK_DIR (default a new temporary directory on /tmp).
set -euo pipefail

BIN=${1:-target/release/tierkv}
READS=${READS:-30000}
WORK_DIR=${WORK_DIR:-$(mktemp -d /tmp/tkv-slmlat-XXXXXX)}
COMMON=(--key_size=20 --write_buffer_size=8388608 --set=compaction.target_file_size=2097152
        --set=compaction.max_bytes_for_level_base=10485760 --pm_size=2147483648
        --ssd_write_mbps=380 --ssd_read_mbps=450 --use_direct_reads --threads=1 --num=400000
        --value_size=1024 --reads="$READS")
for latency in slmdb dram; do
    for design in slmdb leveled; do
        log="$WORK_DIR/$latency-$design.log"
        "$BIN" bench --design "$design" --benchmarks=ycsb-load,waitforcompaction,ycsb-a,ycsb-c \
            --pm_latency="$latency" "${COMMON[@]}" --pm_path "/dev/shm/tierkv-slmlat.pool" \
            --db "$WORK_DIR/db-$design" >"$log" 2>&1
        rm -rf "$WORK_DIR/db-$design"; rm -f /dev/shm/tierkv-slmlat.pool*
        echo "pm_latency=$latency $design: $(grep -E '^ycsb-(load|a|c) ' "$log" \
            | awk '{print $1, $5, "ops/s;"}' | tr '\n' ' ')"
    done
done
