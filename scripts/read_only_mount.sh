#!/usr/bin/env bash
# Reads every design's database off a file system mounted read-only, with the tools'
# --read_only flag, and shows that the same reads fail without it. Needs root (it mounts a
# small tmpfs). Usage: scripts/read_only_mount.sh [path/to/tierkv]
set -euo pipefail
TIERKV=${1:-target/release/tierkv}
MNT=$(mktemp -d /tmp/tierkv-ro.XXXXXX)
mount -t tmpfs -o size=1g tmpfs "$MNT"
trap 'umount "$MNT"; rmdir "$MNT"' EXIT
DESIGNS="leveled leveled-pm leveled-pmtable nvlsm nvlsm-leveled nvlsm-fragmented trianglekv matrixkv slmdb labdb fluidkv listdb"
for d in $DESIGNS; do
  "$TIERKV" bench --design "$d" --db "$MNT/$d" --benchmarks=fillrandom --num=20000 \
    --set pm.size_bytes=268435456 --use_existing_db=0 >/dev/null
done
mount -o remount,ro "$MNT"
printf '%-17s %-24s %-8s %-6s %s\n' design "scan --read_only (keys)" "get" check "scan without --read_only"
for d in $DESIGNS; do
  keys=$("$TIERKV" scan --db "$MNT/$d" --read_only | wc -l)
  key=$("$TIERKV" scan --db "$MNT/$d" --read_only | head -1 | cut -f1)
  got=$("$TIERKV" get --db "$MNT/$d" --read_only "$key" >/dev/null && echo found || echo MISSING)
  chk=$("$TIERKV" check --db "$MNT/$d" --read_only | head -1 | cut -c1-2)
  plain=$("$TIERKV" scan --db "$MNT/$d" 2>&1 >/dev/null | head -1 | cut -c1-200 || true)
  printf '%-17s %-24s %-8s %-6s %s\n' "$d" "$keys" "$got" "$chk" "${plain:-ok}"
done
