#!/usr/bin/env bash
# LAB-DB's YCSB comparison (Kim et al., "An LSM Tree Augmented with B+ Tree on Nonvolatile
# Memory", ACM TOS 2024, Fig. 12 and Table 2), scaled to this machine: NUM records of 8-byte
# keys and 1 KiB values loaded by 2 client threads, then OPS operations of each of YCSB A, B,
# C, F, D and E (the paper's order, Zipfian 0.99, D "latest") in one database, on `leveled`,
# `leveled-pm` (its L0 trigger raised so the PM L0 fills) with its WAL on PM (`l0-8`) and on
# SSD (`nvm`: the paper's RocksDB-NVM baseline), and `labdb`, back to back. Databases on the disk (DISK_DIR), pools
# on /dev/shm, the SSD model on (380 MB/s writes, 450 MB/s direct reads, so reads do not come
# from the page cache).
#
#   scripts/labdb_ycsb.sh [BIN]
#
# BIN: the tierkv binary (default target/release/tierkv).
# Environment: NUM (default 400000), OPS (default 50000), DISK_DIR (default /tmp; must be on
#      a disk), LOG_DIR (default a new temporary directory), DESIGNS (default the four),
#      BENCHES (default the load, then A, B, C, F, D, E).
#
# Scaling (docs/designs/labdb.md): memtables 4 MiB (paper 64 MB), L1 16 MiB (256 MB), tables
# 4 MiB; LAB-DB's leaf region 4 MiB (the paper's 256 MB holds about 18% of its keys; 4 MiB of
# leaves holds about as large a share of 400k keys), chunks 4 MiB (64 MB), hot-key buffer
# 4 MiB (256 MB). With a build that has the `rocksdb` feature, DESIGNS may name `rocksdb`.
set -euo pipefail

BIN=${1:-target/release/tierkv}
NUM=${NUM:-400000}
OPS=${OPS:-50000}
DISK_DIR=${DISK_DIR:-/tmp}
LOG_DIR=${LOG_DIR:-$(mktemp -d)}
DESIGNS=${DESIGNS:-leveled,l0-8=leveled-pm+compaction.level0_compaction_trigger=8,nvm=leveled-pm+pm.wal_on_ssd=true+compaction.level0_compaction_trigger=8,labdb}
BENCHES=${BENCHES:-ycsb-load,waitforcompaction,ycsb-a,ycsb-b,ycsb-c,ycsb-f,ycsb-d,ycsb-e}
mkdir -p "$LOG_DIR"
WORK=$(mktemp -d "$DISK_DIR/tkv-lab-XXXXXX")
POOL=/dev/shm/tierkv-lab.pool
trap 'rm -rf "$WORK"; rm -f "$POOL"*' EXIT

echo "logs: $LOG_DIR"
"$BIN" bench --design "$DESIGNS" \
    --benchmarks="$BENCHES" \
    --num="$NUM" --reads="$OPS" --key_size=8 --value_size=1024 --threads=2 --histogram \
    --write_buffer_size=4194304 \
    --set=compaction.max_bytes_for_level_base=16777216 \
    --set=compaction.target_file_size=4194304 \
    --set=labdb.leaf_region_bytes=4194304 --set=labdb.chunk_bytes=4194304 \
    --set=labdb.hot_buffer_bytes=4194304 \
    --pm_path "$POOL" --pm_size=2147483648 \
    --ssd_write_mbps=380 --ssd_read_mbps=450 --use_direct_reads \
    --db "$WORK/db" --json "$LOG_DIR/labdb_ycsb.json" 2>&1 | tee "$LOG_DIR/labdb_ycsb.log"
