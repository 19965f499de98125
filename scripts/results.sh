#!/usr/bin/env bash
# Measures what the results page (docs/RESULTS.md) shows and generates it:
#
#   scripts/results.sh BIN [EXPERIMENT...]
#
# 1. The survey: every design on one common workload (16-byte keys, 128-byte values, 1M
#    keys; fillrandom, readrandom, YCSB load, A and C), at one and at two client threads, each
#    design on a fresh database with its PM pool on /dev/shm (SURVEY=0 skips it and keeps the
#    survey reports already in OUT_DIR).
# 2. Each EXPERIMENT (default: the headline experiment of each paper) at three rounds, with
#    its pools on /dev/shm.
# 3. Each finished experiment's `report.json` and each survey report is kept under `results/`
#    (version-controlled: the page's inputs, so measurements add up from run to run and anyone
#    can regenerate the page), replacing an older measurement of the same experiment; then
#    `tierkv reproduce --summary` over every experiment kept there and the survey reports
#    writes docs/RESULTS.md.
#
# BIN: the tierkv binary (`cargo build --release -p tierkv-bench`). Environment: OUT_DIR
# (default results-out: every artifact of the runs, charts and rounds included), ROUNDS (default 3), DESIGNS (the survey's, default every design),
# ROCKSDB_BIN (a `rocksdb` feature build: RocksDB joins the survey), SURVEY=0 (keep the survey
# reports in OUT_DIR), and experiment names as arguments (none: the headline ones).
set -euo pipefail

BIN=${1:?usage: scripts/results.sh BIN [EXPERIMENT...]}
shift
OUT_DIR=${OUT_DIR:-results-out}
ROUNDS=${ROUNDS:-3}
DESIGNS=${DESIGNS:-$("$BIN" designs | awk '$1 != "rocksdb" {print $1}' | paste -sd,)}
EXPERIMENTS=("$@")
if [ ${#EXPERIMENTS[@]} -eq 0 ]; then
    EXPERIMENTS=(leveled-vs-leveled-pm nvlsm-ycsb trianglekv-write slmdb-ycsb fluidkv-write
        labdb-ycsb)
fi
KEEP=results
mkdir -p "$OUT_DIR/experiments" "$OUT_DIR/survey" "$KEEP/experiments" "$KEEP/survey"
# The pools' directory, named the same in every run so the commands the page records read the
# same; refused if it exists (this script removes only what it created).
PM=/dev/shm/tierkv-results
mkdir "$PM" || { echo "$PM exists: remove it or finish the run that made it" >&2; exit 1; }
trap 'rm -rf "$PM"' EXIT

if [ "${SURVEY:-1}" != 0 ]; then
    for threads in 1 2; do
        echo "== survey, $threads thread(s)"
        start=$(date +%s)
        "$BIN" bench --design="$DESIGNS" \
            --benchmarks=fillrandom,readrandom,ycsb-load,ycsb-a,ycsb-c \
            --num=1000000 --reads=200000 --key_size=16 --value_size=128 --threads="$threads" \
            --pm_path="$PM/survey.pool" --json="$OUT_DIR/survey/threads-$threads.json" \
            >"$OUT_DIR/survey/threads-$threads.log" 2>&1
        cp "$OUT_DIR/survey/threads-$threads.json" "$KEEP/survey/"
        echo "survey, $threads thread(s): $(($(date +%s) - start)) s"
    done
fi

# RocksDB in the survey, from a build with the `rocksdb` feature (ROCKSDB_BIN, e.g.
# `cargo build --release -p tierkv-bench --features rocksdb --target-dir /tmp/rocks-target`
# then /tmp/rocks-target/release/tierkv): the same workload, its own report per thread count,
# which the page puts in the same columns.
if [ -n "${ROCKSDB_BIN:-}" ]; then
    for threads in 1 2; do
        echo "== survey, rocksdb, $threads thread(s)"
        "$ROCKSDB_BIN" bench --design=rocksdb \
            --benchmarks=fillrandom,readrandom,ycsb-load,ycsb-a,ycsb-c \
            --num=1000000 --reads=200000 --key_size=16 --value_size=128 --threads="$threads" \
            --json="$OUT_DIR/survey/rocksdb-threads-$threads.json" \
            >"$OUT_DIR/survey/rocksdb-threads-$threads.log" 2>&1
        cp "$OUT_DIR/survey/rocksdb-threads-$threads.json" "$KEEP/survey/"
    done
fi

for e in "${EXPERIMENTS[@]}"; do
    echo "== $e"
    start=$(date +%s)
    "$BIN" reproduce "$e" --rounds "$ROUNDS" --pm_path "$PM" --out "$OUT_DIR/experiments/$e" \
        >"$OUT_DIR/experiments/$e.log" 2>&1 || {
        echo "$e failed; its output: $OUT_DIR/experiments/$e.log" >&2
        tail -20 "$OUT_DIR/experiments/$e.log" >&2
        continue
    }
    mkdir -p "$KEEP/experiments/$e"
    cp "$OUT_DIR/experiments/$e/report.json" "$KEEP/experiments/$e/"
    echo "$e: $(($(date +%s) - start)) s"
done

dirs=()
for d in "$KEEP"/experiments/*/; do
    [ -f "$d/report.json" ] && dirs+=(--summary "$d")
done
surveys=()
for s in "$KEEP"/survey/threads-*.json "$KEEP"/survey/rocksdb-threads-*.json; do
    [ -f "$s" ] && surveys+=(--survey "$s")
done
"$BIN" reproduce "${dirs[@]}" ${surveys[@]+"${surveys[@]}"} --out docs/RESULTS.md
