#!/usr/bin/env bash
# `fluidkv` loaded by interleaved sequential streams (`fillseq --streams=N`: each stream appends
# to its own slice of the keys, as time series per device), with per-LST reuse (the default)
# and with reuse of whole runs only (`compaction.reuse_untouched_tables=false`), back to back.
# Each compaction's buffer trees touch one LST per stream; per-LST reuse keeps the others in
# place where the merged piece between two kept stretches is worth a file
# (`compaction.reuse_min_gap_bytes`, the pool's chunk size by default).
# Printed per run: fillseq ops/s, bytes the compactions wrote, LST bytes kept in place, the
# table files in the pool and on the SSD (a compaction that finds the pool full writes to the
# SSD), PM space amplification, the pool's allocated chunks, and whether `tierkv check` passes.
#
#   scripts/fluidkv_streams.sh [BIN]
#
# Environment: STREAMS (default "10 1000"), NUM (default 4000000), ROUNDS (default 1),
#      DB_ROOT (default /var/tmp), LOG_DIR (default a new temporary directory).
set -euo pipefail

BIN=${1:-target/release/tierkv}
STREAMS=${STREAMS:-"10 1000"}
NUM=${NUM:-4000000}
ROUNDS=${ROUNDS:-1}
DB_ROOT=${DB_ROOT:-/var/tmp}
LOG_DIR=${LOG_DIR:-$(mktemp -d)}
mkdir -p "$LOG_DIR"
echo "logs: $LOG_DIR"
POOL=/dev/shm/tierkv-streams.pool
for round in $(seq 1 "$ROUNDS"); do
    for streams in $STREAMS; do
        for tables in true false; do
            WORK=$(mktemp -d "$DB_ROOT/tkv-streams-XXXXXX")
            rm -f "$POOL"
            name="streams-$streams-tables-$tables-$round"
            "$BIN" bench --design fluidkv --benchmarks=fillseq,waitforcompaction \
                --num="$NUM" --streams="$streams" --key_size=16 --value_size=16 \
                --write_buffer_size=16777216 --pm_latency=nvdimm \
                --pm_path "$POOL" --pm_size=4294967296 --threads=1 \
                --set compaction.reuse_untouched_tables="$tables" \
                --db "$WORK/db" --json "$LOG_DIR/$name.json" >"$LOG_DIR/$name.log" 2>&1
            if "$BIN" check --db "$WORK/db" --pm_path "$POOL" >"$LOG_DIR/$name.check" 2>&1; then
                check=OK
            else
                check=FAILED
            fi
            rm -rf "$WORK"; rm -f "$POOL"
            python3 - "$LOG_DIR/$name.json" "$streams" "$tables" "$check" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]
st = run["final_stats"]["stats"]
ops = {b["name"]: b["ops_per_sec"] for b in run["benchmarks"]}
files = sum(l["files"] for l in st["levels"])
pm_files = sum(l["files"] for l in st["pm_levels"])
logical = run["final_stats"].get("logical_bytes") or 0
pm_live = sum(l["bytes"] for l in st["pm_levels"])
print(
    f"{sys.argv[2]} streams, per-LST reuse {sys.argv[3]}: fillseq {ops['fillseq']:.0f} ops/s, "
    f"compactions wrote {st['pm_written_compaction'] + st['ssd_written_compaction']} B, "
    f"kept {st['reused_table_bytes']} B of LSTs, "
    f"{st['pm_compaction_fallbacks']} compactions to the SSD, table files: {pm_files} in the pool, "
    f"{files - pm_files} on the SSD, PM tables {pm_live} B"
    + (f" ({pm_live / logical:.3f}x the data)" if logical else "")
    + f", pool allocated {st['pm']['bytes_allocated'] / 2**20:.0f} MiB"
    + f"; check {sys.argv[4]}"
)
PY
        done
    done
done
