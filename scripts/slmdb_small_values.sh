#!/usr/bin/env bash
# Why SLM-DB (Kaiyrakhmet et al., "SLM-DB: Single-Level Key-Value Store with Persistent
# Memory", FAST 2019) writes 128-byte values more slowly than `leveled` here: the `slmdb-pm-latency`
# experiment's 128-byte phase (NUM random puts of 20-byte keys, 8 MiB memtables, 2 MiB tables,
# the SSD model at 380/450 MB/s, one client thread) for `leveled`, `leveled-pmtable` (the same
# persistent memtable as `slmdb`, leveled tables, no global index) and `slmdb`, at each PM
# latency of LATENCIES, ROUNDS rounds back to back. Printed per run: fill ops/s, seconds
# writers stalled (and on what), flushes and the milliseconds per flush (for `slmdb` the table
# AND its keys' tree updates), compactions and their seconds.
#
#   scripts/slmdb_small_values.sh [BIN]
#
# Environment: ROUNDS (default 1), NUM (default 1600000), LATENCIES (default "dram slmdb"),
#      DISK_DIR (default /tmp), LOG_DIR (default a new temporary directory).
set -euo pipefail

BIN=${1:-target/release/tierkv}
ROUNDS=${ROUNDS:-1}
NUM=${NUM:-1600000}
LATENCIES=${LATENCIES:-dram slmdb}
DISK_DIR=${DISK_DIR:-/tmp}
LOG_DIR=${LOG_DIR:-$(mktemp -d)}
mkdir -p "$LOG_DIR"
echo "logs: $LOG_DIR"
POOL=/dev/shm/tierkv-small.pool
for round in $(seq 1 "$ROUNDS"); do
    for latency in $LATENCIES; do
        for design in leveled leveled-pmtable slmdb; do
            WORK=$(mktemp -d "$DISK_DIR/tkv-small-XXXXXX")
            rm -f "$POOL"*
            name="$design-$latency-$round"
            "$BIN" bench --design "$design" --benchmarks=fillrandom --num="$NUM" \
                --value_size=128 --key_size=20 --write_buffer_size=8388608 \
                --set=compaction.target_file_size=2097152 \
                --set=compaction.max_bytes_for_level_base=10485760 \
                --pm_latency="$latency" --pm_path "$POOL" --pm_size=2147483648 \
                --ssd_write_mbps=380 --ssd_read_mbps=450 --use_direct_reads --threads=1 \
                --db "$WORK/db" --json "$LOG_DIR/$name.json" >"$LOG_DIR/$name.log" 2>&1
            rm -rf "$WORK"; rm -f "$POOL"*
            python3 - "$LOG_DIR/$name.json" "$design" "$latency" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]
st = run["final_stats"]["stats"]
fill = [b for b in run["benchmarks"] if b["name"] == "fillrandom"][0]
flush_us = sum(t["micros"] for t in st["flush_targets"])
jobs = st["compaction_jobs"]
causes = ", ".join("%s %.2f s" % (c["cause"], c["micros"] / 1e6) for c in st["stall_causes"])
print("%-16s %-6s fill=%.0f stall_s=%.2f (%s) flushes=%d ms/flush=%.1f compactions=%d "
      "compaction_s=%.1f" % (
    sys.argv[2], sys.argv[3], fill["ops_per_sec"],
    run["final_stats"]["stall_micros"] / 1e6, causes or "none", st["flushes"],
    flush_us / 1e3 / max(st["flushes"], 1), len(jobs), sum(j["micros"] for j in jobs) / 1e6))
PY
        done
    done
done
