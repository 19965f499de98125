#!/usr/bin/env bash
# `fluidkv` in a pool smaller than its data, against the same load in a pool that holds it all,
# back to back: NUM random puts of VALUE-byte values, then NUM random gets, one client thread,
# the database directory on the disk (DB_ROOT), the pool on /dev/shm (SMALL_POOL bytes, or 8 GiB).
# A flush that finds the pool full writes its run to the SSD, a compaction whose inputs could
# not fit in the free chunks writes its outputs there at once (`pm.compaction_space_check`), one
# that fills the pool anyway runs again with its outputs there, and a manifest that needs a
# chunk none is left for moves to the directory;
# before these fallbacks the first compaction that found the pool full poisoned the database.
# Printed per run: ops/s of each phase, the runs that went to the SSD (flushes, compactions, and
# how many of those compactions filled the pool first), the PM bytes compactions wrote,
# manifest fallbacks, where the tables ended up, and whether `tierkv check` passes.
#
#   scripts/fluidkv_full_pool.sh [BIN]
#
# Environment: ROUNDS (default 1), NUM (default 1000000), VALUE (default 100),
#      SMALL_POOL (default 67108864), DB_ROOT (default /var/tmp), LOG_DIR (default a new
#      temporary directory), SET (an option for both runs, e.g.
#      "pm.compaction_space_check=false").
set -euo pipefail

BIN=${1:-target/release/tierkv}
ROUNDS=${ROUNDS:-1}
NUM=${NUM:-1000000}
VALUE=${VALUE:-100}
SMALL_POOL=${SMALL_POOL:-67108864}
DB_ROOT=${DB_ROOT:-/var/tmp}
LOG_DIR=${LOG_DIR:-$(mktemp -d)}
mkdir -p "$LOG_DIR"
echo "logs: $LOG_DIR"
POOL=/dev/shm/tierkv-full-pool.pool
for round in $(seq 1 "$ROUNDS"); do
    for size in "$SMALL_POOL" 8589934592; do
        WORK=$(mktemp -d "$DB_ROOT/tkv-full-pool-XXXXXX")
        rm -f "$POOL"
        name="fluidkv-pool-$size-$round"
        "$BIN" bench --design fluidkv --benchmarks=fillrandom,readrandom \
            --num="$NUM" --value_size="$VALUE" --key_size=16 \
            --pm_path "$POOL" --pm_size="$size" --threads=1 ${SET:+--set "$SET"} \
            --db "$WORK/db" --json "$LOG_DIR/$name.json" >"$LOG_DIR/$name.log" 2>&1
        if "$BIN" check --db "$WORK/db" --pm_path "$POOL" >"$LOG_DIR/$name.check" 2>&1; then
            check=OK
        else
            check=FAILED
        fi
        "$BIN" stats --db "$WORK/db" --pm_path "$POOL" --json >"$LOG_DIR/$name.stats" 2>&1
        rm -rf "$WORK"; rm -f "$POOL"
        python3 - "$LOG_DIR/$name.json" "$size" "$check" "$LOG_DIR/$name.stats" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]
held = json.load(open(sys.argv[4]))
st = run["final_stats"]["stats"]
ops = {b["name"]: b["ops_per_sec"] for b in run["benchmarks"]}
found = {b["name"]: b.get("found") for b in run["benchmarks"]}
print(
    f"pool {int(sys.argv[2]) >> 20} MiB: fillrandom {ops['fillrandom']:.0f} ops/s, "
    f"readrandom {ops['readrandom']:.0f} ops/s (found {found['readrandom']}), "
    f"to SSD: {st['pm_flush_fallbacks']} flushes, {st['pm_compaction_fallbacks']} compactions "
    f"({st.get('pm_compaction_retries', st['pm_compaction_fallbacks'])} after filling the pool), "
    f"PM written by compactions {st['pm_written_compaction'] >> 20} MiB, "
    f"{st['pm_manifest_fallbacks']} manifest moves; tables: "
    f"{held['pm_tables']['bytes'] >> 20} MiB on PM, {held['ssd_tables']['bytes'] >> 20} MiB on SSD; "
    f"manifest {held['manifest_tier']}; check {sys.argv[3]}"
)
PY
    done
done
