#!/usr/bin/env bash
# The NVLSM experiments of `tierkv reproduce`, one after the other (docs/BENCHMARKS.md, section
# "NVLSM"), through scripts/reproduce.sh: each writes its report under OUT_DIR/<experiment>.
#
#   scripts/nvlsm_reproduce.sh [BIN] [EXPERIMENT...]
#
# BIN: the tierkv binary (default target/release/tierkv; build it with
#      `cargo build --release -p tierkv-bench`).
# EXPERIMENT: default all four: nvlsm-amplification nvlsm-put-ratio nvlsm-range nvlsm-ycsb.
# Environment: OUT_DIR (default reproduce-out), ROUNDS (default: each experiment's own, 1).
set -euo pipefail

BIN=${1:-target/release/tierkv}
shift || true
EXPERIMENTS=("$@")
if [ ${#EXPERIMENTS[@]} -eq 0 ]; then
    EXPERIMENTS=(nvlsm-amplification nvlsm-put-ratio nvlsm-range nvlsm-ycsb)
fi
exec "$(dirname "$0")/reproduce.sh" "$BIN" "${EXPERIMENTS[@]}"
