#!/usr/bin/env bash
# The NVLSM experiments of `tierkv reproduce`, one after the other (docs/BENCHMARKS.md, section
# "NVLSM"): each writes its report (report.md, report.json, the runs' JSON and charts) under
# OUT_DIR/<experiment>, and this script prints each report's verdict table.
#
#   scripts/nvlsm_reproduce.sh [BIN] [EXPERIMENT...]
#
# BIN: the tierkv binary (default target/release/tierkv; build it with
#      `cargo build --release -p tierkv-bench`).
# EXPERIMENT: default all four: nvlsm-amplification nvlsm-put-ratio nvlsm-range nvlsm-ycsb.
# Environment: OUT_DIR (default reproduce-out), ROUNDS (default: each experiment's own, 1).
# Each store's PM pool is a file on /dev/shm (/dev/shm/tierkv-nvlsm.pool-<label>), removed
# after each experiment; the databases (their manifests) are temporary directories.
set -euo pipefail

BIN=${1:-target/release/tierkv}
shift || true
EXPERIMENTS=("$@")
if [ ${#EXPERIMENTS[@]} -eq 0 ]; then
    EXPERIMENTS=(nvlsm-amplification nvlsm-put-ratio nvlsm-range nvlsm-ycsb)
fi
OUT_DIR=${OUT_DIR:-reproduce-out}
ROUND_ARGS=()
if [ -n "${ROUNDS:-}" ]; then ROUND_ARGS=(--rounds "$ROUNDS"); fi

for e in "${EXPERIMENTS[@]}"; do
    echo "== $e"
    start=$(date +%s)
    "$BIN" reproduce "$e" --out "$OUT_DIR/$e" ${ROUND_ARGS[@]+"${ROUND_ARGS[@]}"} >"$OUT_DIR-$e.log" 2>&1 || {
        echo "$e failed; its output: $OUT_DIR-$e.log" >&2
        tail -20 "$OUT_DIR-$e.log" >&2
        exit 1
    }
    rm -f /dev/shm/tierkv-nvlsm.pool-*
    echo "$e: $(($(date +%s) - start)) s"
    # The report's figure tables and verdicts.
    sed -n '/^## /,$p' "$OUT_DIR/$e/report.md"
done
