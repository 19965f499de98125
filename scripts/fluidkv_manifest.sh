#!/usr/bin/env bash
# FluidKV's manifest in PM (Lu et al., "FluidKV: Seamlessly Bridging the Gap between Indexing
# Performance and Memory-Footprint on Ultra-Fast Persistent Memory", PVLDB 2024, section 5.5):
# `fluidkv` with its manifest in the pool (its default, `pm.manifest_on_pm`) against the same
# design with the manifest in the database directory on the disk, back to back: NUM random
# puts, NUM random overwrites, NUM random gets of VALUE-byte values, one client thread, a
# small write buffer (many flushes and compactions, each a manifest record), the database
# directory on the disk (DB_ROOT), the pool on /dev/shm. Then each database is reopened with
# the manifest where it was (`tierkv bench --use_existing_db`, 1000 gets). Printed per run:
# what CURRENT names after the load, ops/s per phase, flushes and compactions, manifest bytes
# written to the disk and to the pool, all SSD bytes written, the mean wall time of a flush
# and of a compaction (each ends with its manifest commit), and the reopen's open time.
#
#   scripts/fluidkv_manifest.sh [BIN]
#
# Environment: ROUNDS (default 1), NUM (default 1000000), VALUE (default 100),
#      WRITE_BUFFER (default 4194304), DB_ROOT (default /var/tmp), LOG_DIR (default a new
#      temporary directory).
set -euo pipefail

BIN=${1:-target/release/tierkv}
ROUNDS=${ROUNDS:-1}
NUM=${NUM:-1000000}
VALUE=${VALUE:-100}
WRITE_BUFFER=${WRITE_BUFFER:-4194304}
DB_ROOT=${DB_ROOT:-/var/tmp}
LOG_DIR=${LOG_DIR:-$(mktemp -d)}
mkdir -p "$LOG_DIR"
echo "logs: $LOG_DIR"
POOL=/dev/shm/tierkv-manifest.pool
for round in $(seq 1 "$ROUNDS"); do
    for on_pm in true false; do
        WORK=$(mktemp -d "$DB_ROOT/tkv-manifest-XXXXXX")
        rm -f "$POOL"*
        name="fluidkv-manifest-pm-$on_pm-$round"
        "$BIN" bench --design fluidkv --benchmarks=fillrandom,overwrite,readrandom \
            --num="$NUM" --value_size="$VALUE" --key_size=16 \
            --write_buffer_size="$WRITE_BUFFER" --set=pm.manifest_on_pm="$on_pm" \
            --pm_path "$POOL" --pm_size=8589934592 --threads=1 \
            --db "$WORK/db" --json "$LOG_DIR/$name.json" >"$LOG_DIR/$name.log" 2>&1
        head -1 "$WORK/db/CURRENT" >"$LOG_DIR/$name.current"
        # The reopen (recovery: the manifest read from where it is, the FastStore's logs
        # replayed) and a few gets; the manifest stays where it was.
        "$BIN" bench --design fluidkv --benchmarks=readrandom --num="$NUM" --reads=1000 \
            --use_existing_db --value_size="$VALUE" --key_size=16 \
            --write_buffer_size="$WRITE_BUFFER" --set=pm.manifest_on_pm="$on_pm" \
            --pm_path "$POOL" --pm_size=8589934592 --threads=1 \
            --db "$WORK/db" --json "$LOG_DIR/$name-reopen.json" >"$LOG_DIR/$name-reopen.log" 2>&1
        rm -rf "$WORK"; rm -f "$POOL"*
        python3 - "$LOG_DIR/$name.json" "$on_pm" "$LOG_DIR/$name-reopen.json" \
            "$LOG_DIR/$name.current" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]
reopen = json.load(open(sys.argv[3]))["runs"][0]
st = run["final_stats"]["stats"]
ops = {b["name"]: b["ops_per_sec"] for b in run["benchmarks"]}
flush_us = sum(t["micros"] for t in st["flush_targets"])
flushes = sum(t["flushes"] for t in st["flush_targets"])
levels = st["compaction_levels"]
comp_us = sum(l["micros"] for l in levels)
comps = sum(l["compactions"] for l in levels)
ssd = st["ssd_written_wal"] + st["ssd_written_manifest"] + st["ssd_written_flush"] \
    + st["ssd_written_compaction"]
print("manifest_on_pm=%-5s CURRENT=%-20s fill=%.0f overwrite=%.0f readrandom=%.0f "
      "flushes=%d compactions=%d manifest_ssd_KB=%.1f manifest_pm_KB=%.1f ssd_written_KB=%.1f "
      "flush_ms=%.2f compaction_ms=%.2f reopen_s=%.3f" % (
    sys.argv[2], open(sys.argv[4]).read().strip(), ops.get("fillrandom", 0),
    ops.get("overwrite", 0), ops.get("readrandom", 0), flushes, comps,
    st["ssd_written_manifest"] / 1e3, st.get("pm_written_manifest", 0) / 1e3, ssd / 1e3,
    flush_us / max(flushes, 1) / 1e3, comp_us / max(comps, 1) / 1e3,
    reopen["open_seconds"]))
PY
    done
done
