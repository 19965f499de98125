#!/usr/bin/env bash
# SLM-DB's global index with its inner nodes in PM (the paper's "B+ tree entirely in PM":
# Kaiyrakhmet et al., "SLM-DB: Single-Level Key-Value Store with Persistent Memory", FAST 2019,
# section 3.2) against the same tree with a DRAM map of inner nodes (`--set
# slmdb.inner_nodes_in_pm=false`), back to back, ROUNDS rounds, two workloads:
#
# * small: NUM_SMALL random puts of 20-byte keys and 100-byte values, `waitforcompaction`,
#   then READS random gets and READS range queries of 100 keys, no SSD model and reads through
#   the page cache (the tree lookup is most of a get); then the database is reopened for 1000
#   gets (the open's seconds: the tree read back, inner nodes adopted or rebuilt).
# * paper: the `slmdb-ops` setup (1 KiB values, 8 MiB memtables, 2 MiB tables, the SSD model at
#   380/450 MB/s, direct reads, 8 MiB block cache) at NUM_PAPER puts, `waitforcompaction`, then
#   READS random gets.
#
# Both with the `slmdb` PM preset (500 ns per written-back line), databases on the disk
# (DISK_DIR), pools on /dev/shm. Printed per run: ops/s of each benchmark, the global index's
# inner nodes, their PM bytes, its DRAM bytes, and the reopen's seconds.
#
#   scripts/slmdb_inner_nodes.sh [BIN]
#
# Environment: ROUNDS (default 3), NUM_SMALL (default 2000000), NUM_PAPER (default 500000),
#      READS (default 50000), DISK_DIR (default /tmp), LOG_DIR
#      (default a new temporary directory).
set -euo pipefail

BIN=${1:-target/release/tierkv}
ROUNDS=${ROUNDS:-3}
NUM_SMALL=${NUM_SMALL:-2000000}
NUM_PAPER=${NUM_PAPER:-500000}
READS=${READS:-50000}
DISK_DIR=${DISK_DIR:-/tmp}
LOG_DIR=${LOG_DIR:-$(mktemp -d)}
mkdir -p "$LOG_DIR"
echo "logs: $LOG_DIR"
POOL=/dev/shm/tierkv-inner.pool
COMMON=(--design slmdb --key_size=20 --write_buffer_size=8388608
        --set=compaction.target_file_size=2097152 --pm_latency=slmdb --pm_path "$POOL"
        --pm_size=4294967296 --threads=1)
PAPER=(--set=compaction.max_bytes_for_level_base=10485760 --ssd_write_mbps=380
       --ssd_read_mbps=450 --use_direct_reads)

report() {
    python3 - "$@" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]
ops = " ".join("%s=%.0f" % (b["name"], b["ops_per_sec"]) for b in run["benchmarks"]
               if b["name"] != "waitforcompaction")
g = run["final_stats"]["stats"]["global_index"]
extra = ""
if len(sys.argv) > 4:
    reopen = json.load(open(sys.argv[4]))["runs"][0]
    extra = " reopen_s=%.3f" % reopen["open_seconds"]
print("%-6s %-5s %s keys=%d leaves=%d inner_nodes=%d inner_pm_b=%d dram_b=%d%s" % (
    sys.argv[2], sys.argv[3], ops, g["keys"], g["leaves"], g.get("inner_nodes", 0),
    g.get("inner_pm_bytes", 0), g["dram_bytes"], extra))
PY
}

for round in $(seq 1 "$ROUNDS"); do
    echo "round $round"
    for inner in true false; do
        name=$([ "$inner" = true ] && echo pm || echo dram)
        WORK=$(mktemp -d "$DISK_DIR/tkv-inner-XXXXXX")
        rm -f "$POOL"*
        "$BIN" bench "${COMMON[@]}" --set=slmdb.inner_nodes_in_pm=$inner \
            --benchmarks=fillrandom,waitforcompaction,readrandom,seekrandom --num="$NUM_SMALL" --reads="$READS" \
            --seek_nexts=100 --value_size=100 --db "$WORK/db" \
            --json "$LOG_DIR/small-$name-$round.json" >"$LOG_DIR/small-$name-$round.log" 2>&1
        "$BIN" bench "${COMMON[@]}" --set=slmdb.inner_nodes_in_pm=$inner \
            --benchmarks=readrandom --num="$NUM_SMALL" --reads=1000 --value_size=100 \
            --use_existing_db --db "$WORK/db" \
            --json "$LOG_DIR/reopen-$name-$round.json" >"$LOG_DIR/reopen-$name-$round.log" 2>&1
        report "$LOG_DIR/small-$name-$round.json" small "$name" "$LOG_DIR/reopen-$name-$round.json"
        rm -rf "$WORK"; rm -f "$POOL"*
        WORK=$(mktemp -d "$DISK_DIR/tkv-inner-XXXXXX")
        "$BIN" bench "${COMMON[@]}" "${PAPER[@]}" --set=slmdb.inner_nodes_in_pm=$inner \
            --benchmarks=fillrandom,waitforcompaction,readrandom --num="$NUM_PAPER" \
            --reads="$READS" --value_size=1024 --db "$WORK/db" \
            --json "$LOG_DIR/paper-$name-$round.json" >"$LOG_DIR/paper-$name-$round.log" 2>&1
        report "$LOG_DIR/paper-$name-$round.json" paper "$name"
        rm -rf "$WORK"; rm -f "$POOL"*
    done
done
