#!/usr/bin/env bash
# Fills a small file system (a 24 MiB tmpfs, so it needs root) with a `leveled` database until
# writes fail, then shows that the tools still open it: read-only with a warning, every key the
# load acknowledged readable. Usage: scripts/full_disk.sh [path/to/tierkv]
set -uo pipefail
TIERKV=${1:-target/release/tierkv}
MNT=$(mktemp -d /tmp/tierkv-full.XXXXXX)
mount -t tmpfs -o size=24m tmpfs "$MNT" || exit 1
trap 'umount "$MNT"; rmdir "$MNT"' EXIT
"$TIERKV" bench --design leveled --db "$MNT/db" --benchmarks=fillseq --num=1000000 \
  --value_size=100 --use_existing_db=0 2>&1 | grep -E "^error" | cut -c1-160
df -k "$MNT" | tail -1
echo "scan:  $("$TIERKV" scan --db "$MNT/db" 2>"$MNT.err" | wc -l) keys"
cut -c1-200 "$MNT.err"; rm -f "$MNT.err"
"$TIERKV" check --db "$MNT/db" | head -1
"$TIERKV" put --db "$MNT/db" k v 2>&1 | cut -c1-200
