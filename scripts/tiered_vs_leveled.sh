#!/usr/bin/env bash
# Size-tiered (`tiered`, RocksDB's universal compaction) against leveled compaction (`leveled`):
# write, read and space amplification and throughput on random writes, overwrites and random
# reads, both designs back to back in each round (docs/designs/tiered.md records the figures).
#
#   scripts/tiered_vs_leveled.sh BIN [OUT_DIR]
#
# BIN: a release build (`cargo build --release -p tierkv-bench`, then target/release/tierkv).
# Scale: 2M keys of 16 + 100 bytes, memtables of 4 MiB, L1 of 16 MiB, tables of 4 MiB (RocksDB's
# defaults divided by 16, so the data spans the levels a 64 MiB-memtable database reaches at
# about 32M keys). ROUNDS (default 3).
set -euo pipefail
BIN=${1:?usage: scripts/tiered_vs_leveled.sh BIN [OUT_DIR]}
OUT=${2:-tiered-vs-leveled}
mkdir -p "$OUT"
for round in $(seq 1 "${ROUNDS:-3}"); do
    "$BIN" bench --design=leveled,tiered --benchmarks=fillrandom,overwrite,readrandom \
        --num=2000000 --reads=200000 --key_size=16 --value_size=100 \
        --write_buffer_size=4194304 --max_bytes_for_level_base=16777216 \
        --target_file_size_base=4194304 --json="$OUT/round-$round.json" >"$OUT/round-$round.txt"
    echo "round $round: $OUT/round-$round.txt"
done
