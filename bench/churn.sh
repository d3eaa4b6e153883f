#!/usr/bin/env bash
# The API watch under churn: the release binary syncs a synthetic cluster from the API server
# stand-in (tests/common/apiserver/), then (server pinned to CPU 0, the stand-in, probes and
# dnsperf to CPU 1):
#   - sync time, peak RSS during the sync, steady RSS;
#   - programming latency from outside: the stand-in gets a new Service, a client asks for
#     its name every 200 µs until it answers (40 samples, idle and under churn);
#   - a steady churn of EndpointSlice updates (CHURN_RATE a second, default 100): the
#     server's CPU and RSS meanwhile, and its dnsperf capacity (queries per server CPU-second)
#     during the churn against idle.
#
#   bench/churn.sh                      # 1,000 and 10,000 Services
#   SCALES="100 1000" bench/churn.sh
#   PODS=verified bench/churn.sh        # `pods verified` (the pods are watched too)
set -euo pipefail

SCALES=${SCALES:-"1000 10000"}
CHURN_RATE=${CHURN_RATE:-100}
PODS=${PODS:-insecure}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/clusterdns-churn.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$repo"
for tool in dnsperf taskset; do
    command -v "$tool" >/dev/null || { echo "$tool not found (apt-get install dnsperf util-linux)" >&2; exit 1; }
done
for services in $SCALES; do
    cargo run -q --release --example gencluster -- --services "$services" --out "$work/cluster.json"
    cargo run -q --release --example querymix -- --objects "$work/cluster.json" --count 100000 \
        > "$work/queries.txt"
    echo "== $services Services, pods $PODS, churn $CHURN_RATE slice updates/s"
    CLUSTERDNS_SCALE_FILE="$work/cluster.json" CLUSTERDNS_SCALE_QUERIES="$work/queries.txt" \
        CLUSTERDNS_CHURN_RATE="$CHURN_RATE" CLUSTERDNS_SCALE_PODS="$PODS" \
        cargo test -q --release --test main -- --ignored --exact live::churn_at_scale --nocapture \
        2>&1 | grep -E "^(sync|programming|server CPU|queries per)"
done
