#!/usr/bin/env bash
# FluidKV's key-value separation (Lu et al., "FluidKV: Seamlessly Bridging the Gap between
# Indexing Performance and Memory-Footprint on Ultra-Fast Persistent Memory", PVLDB 2024,
# section 4.2): `fluidkv` with values of 256 bytes or more in value logs (its default) against
# the same design with every value inline in its logical sorted tables
# (`table.value_separation=0`), back to back: NUM random puts of VALUE-byte values, NUM
# random overwrites (the garbage the logs' collection must reclaim), NUM random gets, one
# client thread, the pool on /dev/shm. Printed per run: ops/s per phase, PM bytes written by
# flushes and by compactions, PM write amplification without the FastStore's logs (engine
# bytes / user bytes) and at the device (lines written back / user bytes), PM read
# amplification, the bytes on PM (tables + value logs + FastStore logs) over the live data,
# the value logs (files, bytes, live bytes), stall seconds and the DRAM held by table indexes.
#
#   scripts/fluidkv_value_separation.sh [BIN]
#
# Environment: ROUNDS (default 1), NUM (default 300000), VALUE (default 1024),
#      LOG_DIR (default a new temporary directory).
set -euo pipefail

BIN=${1:-target/release/tierkv}
ROUNDS=${ROUNDS:-1}
NUM=${NUM:-300000}
VALUE=${VALUE:-1024}
LOG_DIR=${LOG_DIR:-$(mktemp -d)}
mkdir -p "$LOG_DIR"
echo "logs: $LOG_DIR"
POOL=/dev/shm/tierkv-vsep.pool
for round in $(seq 1 "$ROUNDS"); do
    for sep in 256 0; do
        WORK=$(mktemp -d /tmp/tkv-vsep-XXXXXX)
        rm -f "$POOL"*
        name="fluidkv-sep$sep-$round"
        "$BIN" bench --design fluidkv --benchmarks=fillrandom,overwrite,readrandom \
            --num="$NUM" --value_size="$VALUE" --key_size=16 --write_buffer_size=16777216 \
            --set=table.value_separation="$sep" \
            --pm_path "$POOL" --pm_size=8589934592 --threads=1 \
            --db "$WORK/db" --json "$LOG_DIR/$name.json" >"$LOG_DIR/$name.log" 2>&1
        rm -rf "$WORK"; rm -f "$POOL"*
        python3 - "$LOG_DIR/$name.json" "$sep" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]
fs = run["final_stats"]
st = fs["stats"]
pm = [t for t in run["figures"]["tiers"] if t["part"] == "pm"][0]
ops = {b["name"]: b["ops_per_sec"] for b in run["benchmarks"]}
vl = st.get("value_logs", {})
print("separation=%-4s fill=%.0f overwrite=%.0f readrandom=%.0f pm_flush_MB=%.1f "
      "pm_compaction_MB=%.1f pm_wa_no_log=%.2f pm_device_wa=%.2f pm_read_amp=%.2f "
      "pm_space_amp=%.2f vlogs=%d vlog_MB=%.1f vlog_live_MB=%.1f stall_s=%.2f "
      "index_dram_KB=%.0f" % (
    sys.argv[2], ops.get("fillrandom", 0), ops.get("overwrite", 0), ops.get("readrandom", 0),
    st["pm_written_flush"] / 1e6, st["pm_written_compaction"] / 1e6,
    pm["amplification"]["write_excluding_log"], pm["device_write_amplification"] or 0,
    pm["amplification"]["read"], pm["amplification"]["space"],
    vl.get("files", 0), vl.get("pm_bytes", 0) / 1e6, vl.get("live_bytes", 0) / 1e6,
    fs["stall_micros"] / 1e6, st["dram"]["index_bytes"] / 1e3))
PY
    done
done
