#!/usr/bin/env bash
# fillrandom, 1M keys (16-byte keys, 128-byte values, the defaults), `leveled-pm` against
# `leveled`, in interleaved rounds and two layouts (docs/BENCHMARKS.md, the fillrandom ratio
# tables). In each round, for each layout and each binary, it runs:
#
#   # S: everything on SHM_DIR (pool in the database directory)
#   tierkv bench --design leveled    --benchmarks=fillrandom --num=1000000 --db SHM_DIR/tkv-l
#   tierkv bench --design leveled-pm --benchmarks=fillrandom --num=1000000 --db SHM_DIR/tkv-pm
#   # D: the papers' layout: LSM (and leveled's WAL) on the disk, pool on SHM_DIR
#   tierkv bench --design leveled    --benchmarks=fillrandom --num=1000000 --db DISK_DIR/tkv-l
#   tierkv bench --design leveled-pm --benchmarks=fillrandom --num=1000000 --db DISK_DIR/tkv-pm \
#     --pm_path SHM_DIR/pool-pm
#
#   scripts/fill_rounds.sh [BIN...]
#
# BIN: the tierkv binary (default target/release/tierkv; build it with
#      `cargo build --release -p tierkv-bench`). Give two or more to compare builds (an A/B, e.g.
#      one built in a git worktree of an older commit): each round then runs every binary in turn.
# Environment: ROUNDS (default 6), LAYOUTS (default "S D"; "D" for the disk layout only),
#      SHM_DIR (default /dev/shm), DISK_DIR (default /tmp; it must be on a disk for layout D),
#      LOG_DIR (the full output of every run; default a new temporary directory).
#
# Prints each run's fillrandom result line (ops/sec), each round's `leveled-pm` / `leveled`
# ratio, and at the end, per layout and binary, the ratios of all rounds with their median and
# the median ops/s of both designs.
set -euo pipefail

if [ "$#" -eq 0 ]; then set -- target/release/tierkv; fi
BINS=("$@")
ROUNDS=${ROUNDS:-6}
LAYOUTS=${LAYOUTS:-S D}
SHM_DIR=${SHM_DIR:-/dev/shm}
DISK_DIR=${DISK_DIR:-/tmp}
LOG_DIR=${LOG_DIR:-$(mktemp -d -t tierkv-fill-rounds-XXXXXX)}

# The fillrandom ops/s figure of log file FILE.
ops() {
    awk '$1 == "fillrandom" && $2 == ":" { for (i = 3; i < NF; i++) if ($i == "micros/op") { print $(i + 1); exit } }' "$1"
}

# The median, printed with printf format FMT, of the numbers that follow (mean of the middle two
# for an even count).
median() {
    local fmt=$1
    shift
    printf '%s\n' "$@" | sort -g | awk -v f="$fmt" '{ v[NR] = $1 } END {
        if (NR == 0) { print "n/a"; exit }
        if (NR % 2) m = v[(NR + 1) / 2]; else m = (v[NR / 2] + v[NR / 2 + 1]) / 2
        printf f "\n", m }'
}

mkdir -p "$LOG_DIR"
echo "binaries ${BINS[*]}, layouts $LAYOUTS, $ROUNDS rounds, full output in $LOG_DIR"
declare -A RATIOS OPS_L OPS_PM
for round in $(seq 1 "$ROUNDS"); do
    for layout in $LAYOUTS; do
        case "$layout" in
            S) dir=$SHM_DIR; pm_args=() ;;
            D) dir=$DISK_DIR; pm_args=(--pm_path "$SHM_DIR/pool-pm") ;;
            *) echo "unknown layout $layout (S or D)" >&2; exit 2 ;;
        esac
        for b in "${!BINS[@]}"; do
            bin=${BINS[$b]}
            log_l="$LOG_DIR/round$round-$layout-bin$((b + 1))-leveled.log"
            log_pm="$LOG_DIR/round$round-$layout-bin$((b + 1))-leveled-pm.log"
            rm -rf "$dir/tkv-l"
            "$bin" bench --design leveled --benchmarks=fillrandom --num=1000000 \
                --db "$dir/tkv-l" >"$log_l"
            echo "round $round $layout $bin leveled:    $(grep -E '^fillrandom +:' "$log_l" || true)"
            rm -rf "$dir/tkv-pm"
            if [ "$layout" = D ]; then rm -f "$SHM_DIR/pool-pm"; fi
            "$bin" bench --design leveled-pm --benchmarks=fillrandom --num=1000000 \
                --db "$dir/tkv-pm" ${pm_args[@]+"${pm_args[@]}"} >"$log_pm"
            echo "round $round $layout $bin leveled-pm: $(grep -E '^fillrandom +:' "$log_pm" || true)"
            l=$(ops "$log_l")
            pm=$(ops "$log_pm")
            r=$(awk -v a="$pm" -v b="$l" 'BEGIN { if (a != "" && b > 0) printf "%.2f", a / b; else printf "n/a" }')
            echo "round $round $layout $bin leveled-pm / leveled: $r"
            key="$layout $b"
            RATIOS[$key]="${RATIOS[$key]:-} $r"
            OPS_L[$key]="${OPS_L[$key]:-} $l"
            OPS_PM[$key]="${OPS_PM[$key]:-} $pm"
        done
    done
done

echo "== summary"
for layout in $LAYOUTS; do
    for b in "${!BINS[@]}"; do
        key="$layout $b"
        # shellcheck disable=SC2086
        echo "layout $layout, ${BINS[$b]}: leveled-pm / leveled per round${RATIOS[$key]};" \
            "median $(median %.2f ${RATIOS[$key]})x;" \
            "median ops/s leveled $(median %.0f ${OPS_L[$key]}) / leveled-pm $(median %.0f ${OPS_PM[$key]})"
    done
done
