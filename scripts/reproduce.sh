#!/usr/bin/env bash
# Runs `tierkv reproduce` experiments one after the other (docs/BENCHMARKS.md): each writes its
# report (report.md, report.json, the runs' JSON and charts) under OUT_DIR/<experiment>, and
# this script prints each report's verdict table and how long the experiment took.
#
#   scripts/reproduce.sh BIN EXPERIMENT...
#
# BIN: the tierkv binary (build it with `cargo build --release -p tierkv-bench`).
# Environment: OUT_DIR (default reproduce-out), ROUNDS (default: each experiment's own).
# The experiments' PM pools are files /dev/shm/tierkv-*.pool-<label>, removed after each
# experiment; their databases are temporary directories on the disk (or OUT_DIR/<phase>/db
# for phases that later phases start from, removed at the end).
set -euo pipefail

BIN=${1:?usage: scripts/reproduce.sh BIN EXPERIMENT...}
shift
[ $# -gt 0 ] || { echo "name at least one experiment (tierkv reproduce --list)" >&2; exit 2; }
OUT_DIR=${OUT_DIR:-reproduce-out}
ROUND_ARGS=()
if [ -n "${ROUNDS:-}" ]; then ROUND_ARGS=(--rounds "$ROUNDS"); fi

for e in "$@"; do
    echo "== $e"
    start=$(date +%s)
    "$BIN" reproduce "$e" --out "$OUT_DIR/$e" ${ROUND_ARGS[@]+"${ROUND_ARGS[@]}"} >"$OUT_DIR-$e.log" 2>&1 || {
        echo "$e failed; its output: $OUT_DIR-$e.log" >&2
        tail -20 "$OUT_DIR-$e.log" >&2
        exit 1
    }
    rm -f /dev/shm/tierkv-*.pool-*
    echo "$e: $(($(date +%s) - start)) s"
    # The report's figure tables and verdicts.
    sed -n '/^## /,$p' "$OUT_DIR/$e/report.md"
done
