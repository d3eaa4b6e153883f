#!/usr/bin/env bash
# Memory of the API watch at scale: the release binary lists and watches a synthetic cluster
# served by the API server stand-in (tests/common/apiserver/), then goes through a full
# re-list (410 Gone). Prints the peak and steady RSS for each pods mode.
#
#   bench/watch-memory.sh                 # 10,000 Services, 150,000 pods
#   SERVICES=1000 bench/watch-memory.sh
set -euo pipefail

SERVICES=${SERVICES:-10000}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/clusterdns-watch-memory.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$repo"
cargo run -q --release --example gencluster -- --services "$SERVICES" --out "$work/cluster.json"
for pods in disabled verified; do
    CLUSTERDNS_SCALE_FILE="$work/cluster.json" CLUSTERDNS_SCALE_PODS=$pods \
        cargo test -q --release --test main -- --ignored --exact live::watch_memory_at_scale --nocapture \
        2>&1 | grep -E "^pods |synced with|stand-in loaded"
done
