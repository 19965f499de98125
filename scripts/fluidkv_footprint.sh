#!/usr/bin/env bash
# FluidKV's footprint and recovery against the data size (Lu et al., "FluidKV: Seamlessly
# Bridging the Gap between Indexing Performance and Memory-Footprint on Ultra-Fast Persistent
# Memory", PVLDB 17(6), 2024, sections 6.2 and 6.4): for each NUM of SIZES, each design of
# DESIGNS loads NUM random 16-byte keys with 16-byte values over 2 threads and is closed
# without a flush (its last FastStore / memtable stays in its logs), then reopened for 1000
# gets. Printed per run: the live data (key + value bytes), the seconds the reopen took
# (recovery: the logs replayed; tables are opened as reads reach them), and at the end of the
# gets (every table opened by then): DRAM of the tables' indexes and Bloom filters, of
# `listdb`'s list upper levels, of the memtables, all DRAM, and the PM chunks allocated.
# Databases on the disk (DISK_DIR), pools on /dev/shm, the `nvdimm` PM latency preset.
#
#   scripts/fluidkv_footprint.sh [BIN]
#
# BIN: the tierkv binary (default target/release/tierkv).
# Environment: SIZES (default "500000 1000000 2000000 4000000"), DESIGNS (default
#      "fluidkv listdb leveled-pm"), DISK_DIR (default /tmp), LOG_DIR (default a new temporary
#      directory).
set -euo pipefail

BIN=${1:-target/release/tierkv}
SIZES=${SIZES:-500000 1000000 2000000 4000000}
DESIGNS=${DESIGNS:-fluidkv listdb leveled-pm}
DISK_DIR=${DISK_DIR:-/tmp}
LOG_DIR=${LOG_DIR:-$(mktemp -d)}
mkdir -p "$LOG_DIR"
echo "logs: $LOG_DIR"
COMMON=(--key_size=16 --value_size=16 --write_buffer_size=16777216 --threads=2
        --pm_latency=nvdimm --pm_path /dev/shm/tierkv-fp.pool --pm_size=4294967296)
printf '%-11s %8s %11s %8s %10s %10s %10s %10s %10s %11s\n' design records live_bytes open_s \
    index_b filter_b lists_b memtable_b dram_b pm_b
for design in $DESIGNS; do
    for num in $SIZES; do
        WORK=$(mktemp -d "$DISK_DIR/tkv-fp-XXXXXX")
        "$BIN" bench --design "$design" --benchmarks=fillrandom --num="$num" "${COMMON[@]}" \
            --db "$WORK/db" --json "$LOG_DIR/$design-$num-load.json" \
            >"$LOG_DIR/$design-$num-load.log" 2>&1
        "$BIN" bench --design "$design" --benchmarks=readrandom --num="$num" --reads=500 \
            --use_existing_db "${COMMON[@]}" \
            --db "$WORK/db" --json "$LOG_DIR/$design-$num-reopen.json" \
            >"$LOG_DIR/$design-$num-reopen.log" 2>&1
        rm -rf "$WORK"; rm -f /dev/shm/tierkv-fp.pool*
        python3 - "$LOG_DIR/$design-$num-load.json" "$LOG_DIR/$design-$num-reopen.json" \
            "$design" "$num" <<'PY'
import json, sys
load = json.load(open(sys.argv[1]))["runs"][0]
reopen = json.load(open(sys.argv[2]))["runs"][0]
fp = reopen["figures"]["footprint"]
d = fp["dram"]
print("%-11s %8s %11d %8.3f %10d %10d %10d %10d %10d %11d" % (
    sys.argv[3], sys.argv[4], load["figures"].get("logical_bytes") or 0,
    reopen["open_seconds"], d["index_bytes"], d["filter_bytes"],
    d.get("list_tower_bytes", 0), d["memtable_bytes"], fp["dram_bytes"],
    fp["pm_allocated_bytes"]))
PY
    done
done
