#!/usr/bin/env bash
# Shows the SSD model (Options::ssd; docs/ARCHITECTURE.md, "SSD model") at work, with databases
# on the disk:
#   A. fillrandom, everything on SSD (leveled), without and with a write cap;
#   B. fillrandom in the papers' layout, WAL (and for leveled-pm the L0 tables) in a PM pool on
#      /dev/shm and the rest on SSD, without and with the same cap;
#   C. readrandom on A's uncapped database: through the page cache, with direct reads, and with
#      direct reads under a read cap.
# About two and a half minutes on a 2-core machine with the defaults.
#
#   scripts/ssd_model_check.sh [BIN] [DIR]
#
# BIN: the tierkv binary (default target/release/tierkv; build it with
#      `cargo build --release -p tierkv-bench`). DIR: where the databases go (default a new
#      directory in the temporary location, see mktemp(1); it must be on a disk, not tmpfs:
#      direct reads are refused there). Environment: ROUNDS (default 2), NUM (1000000),
#      READS (100000), WRITE_MBPS (50), READ_MBPS (50), PM_DIR (/dev/shm; part B is skipped if
#      it is missing).
set -euo pipefail

BIN=${1:-target/release/tierkv}
DIR=${2:-$(mktemp -d -t tierkv-ssd-model-XXXXXX)}
ROUNDS=${ROUNDS:-2}
NUM=${NUM:-1000000}
READS=${READS:-100000}
WRITE_MBPS=${WRITE_MBPS:-50}
READ_MBPS=${READ_MBPS:-50}
PM_DIR=${PM_DIR:-/dev/shm}
# A 4 MiB memtable: many flushes and L0 -> L1 compactions within a short run.
COMMON=(--num="$NUM" --key_size=16 --value_size=128 --write_buffer_size=4194304)

summary() {
    grep -E '^(fillrandom|readrandom) |^Design:|^SSD model:|^Stalls:|^Flushes|^SSD bytes (written|read)|^  L0:' || true
}

mkdir -p "$DIR"
echo "binary $BIN, databases in $DIR, $ROUNDS rounds"
for round in $(seq 1 "$ROUNDS"); do
    for mbps in 0 "$WRITE_MBPS"; do
        db="$DIR/fill-$mbps"
        rm -rf "$db"
        echo "== round $round: A. fillrandom, leveled, --ssd_write_mbps=$mbps"
        "$BIN" bench --benchmarks=fillrandom "${COMMON[@]}" --ssd_write_mbps="$mbps" \
            --db "$db" --json "$DIR/fill-$mbps-round$round.json" | summary
    done
    if [ -d "$PM_DIR" ]; then
        for mbps in 0 "$WRITE_MBPS"; do
            db="$DIR/pm-$mbps"
            pool="$PM_DIR/tierkv-ssd-model-check.pool"
            rm -rf "$db"
            echo "== round $round: B. fillrandom, WAL on PM (pool in $PM_DIR), --ssd_write_mbps=$mbps"
            "$BIN" bench --benchmarks=fillrandom "${COMMON[@]}" --ssd_write_mbps="$mbps" \
                --design=leveled,leveled-pm --wal_on_pm --pm_path="$pool" --pm_size=1073741824 \
                --db "$db" --json "$DIR/pm-$mbps-round$round.json" | summary
            rm -f "$pool"-leveled "$pool"-leveled-pm
        done
    fi
    db="$DIR/fill-0"
    for flags in "" "--use_direct_reads" "--use_direct_reads --ssd_read_mbps=$READ_MBPS"; do
        echo "== round $round: C. readrandom on A's uncapped database ${flags:-(page cache)}"
        # shellcheck disable=SC2086
        "$BIN" bench --benchmarks=readrandom "${COMMON[@]}" --reads="$READS" \
            --use_existing_db --db "$db" $flags | summary
    done
done
echo "databases and JSON reports kept in $DIR"
