#!/usr/bin/env bash
# YCSB-C on a reopened database: `slmdb` against `leveled` with the settings of the
# `slmdb-ycsb` experiment (400k x 1 KiB load, the SSD model, direct reads, the `slmdb` PM
# latency preset), but each design loaded and compacted in one process and read in a fresh one,
# so that neither read phase inherits the other workloads' memtables, caches or background work.
#
#   scripts/slmdb_reopened_reads.sh BIN [DIR]
#
# BIN: the tierkv binary (cargo build --release -p tierkv-bench). DIR: where the databases go
# (default: a temporary directory on the disk, removed at the end). Pools go to /dev/shm.
set -euo pipefail
BIN=${1:?usage: scripts/slmdb_reopened_reads.sh BIN [DIR]}
DIR=${2:-$(mktemp -d)}
COMMON=(--num=400000 --value_size=1024 --key_size=20 --write_buffer_size=8388608
  --set=compaction.target_file_size=2097152 --set=compaction.max_bytes_for_level_base=10485760
  --pm_latency=slmdb --ssd_write_mbps=380 --ssd_read_mbps=450 --use_direct_reads)
for design in leveled slmdb; do
  db="$DIR/$design"
  pool=/dev/shm/tierkv-reopened-$design.pool
  rm -rf "$db" "$pool" "$pool.lock"
  "$BIN" bench "${COMMON[@]}" --design="$design" --db="$db" --pm_path="$pool" \
    --benchmarks=ycsb-load,waitforcompaction | grep -E '^(ycsb|wait)'
  "$BIN" bench "${COMMON[@]}" --design="$design" --db="$db" --pm_path="$pool" \
    --use_existing_db --reads=60000 --benchmarks=ycsb-c,levelstats |
    grep -E '^ycsb|engine:'
  rm -rf "$db" "$pool" "$pool.lock"
done
[ -n "${2:-}" ] || rmdir "$DIR"
