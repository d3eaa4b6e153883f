#!/usr/bin/env bash
# Memory and CPU of one clusterdns replica running kubeadm's Corefile (deploy/configmap.yaml),
# for docs/kind.md's "Sizing" section and deploy/deployment.yaml's resources.
#
#   bench/sizing.sh                        # the fixture, 100, 1,000 and 10,000 Services
#   SIZES="fixture 1000" bench/sizing.sh   # some of them
#
# For each size: the objects (fixtures/shop.json, or examples/gencluster), kubeadm's Corefile
# with `objects FILE` where the pod has `snapshot`, on loopback ports, forward to a closed
# loopback port (no traffic leaves the machine). The server is pinned to CPU 0. Read from
# /proc/PID/status: VmRSS once /ready says 200 (with its RssAnon + RssFile: the heap, and the
# binary's and libraries' pages), again after IDLE seconds without queries
# (the allocator has returned what loading used by then), and after a dnsperf run on CPU 1
# (`-T 2 -c 4 -q 100 -l DURATION`, the querymix mix); VmHWM (the peak, reached while
# loading) at the end. CPU: the server's utime+stime over the idle wait and over the
# dnsperf run (queries per CPU-second).
set -euo pipefail

SIZES=${SIZES:-"fixture 100 1000 10000"}
DURATION=${DURATION:-10}
IDLE=${IDLE:-30}
PORT=${PORT:-15363}

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/common.sh
source "$repo/bench/common.sh"
bench_start sizing
need_tools dnsperf curl taskset cargo
build_release

status_mb() { awk -v k="$2:" '$1 == k { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }

echo "| services / pods | peak RSS MB (load) | RSS MB when ready (anon + file) | RSS MB after ${IDLE} s idle | RSS MB after queries | queries / CPU-second | CPU ms per idle minute |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
for size in $SIZES; do
    dir="$work/$size"
    mkdir -p "$dir/objects"
    objects="$dir/objects/objects.json"
    if [[ "$size" == fixture ]]; then
        cp "$repo/fixtures/shop.json" "$objects"
        label="fixtures/shop.json"
    else
        "$target/release/examples/gencluster" --services "$size" --out "$objects" 2>"$dir/gencluster.txt"
        label="$size / $(grep -o '[0-9]* pods on' "$dir/gencluster.txt" | cut -d' ' -f1)"
    fi
    "$target/release/examples/querymix" --objects "$objects" --count 100000 --out "$dir/queries.txt" 2>/dev/null
    kubeadm_corefile "$PORT" "$objects" >"$dir/Corefile"
    taskset -c 0 "$clusterdns" serve --corefile "$dir/Corefile" >"$dir/stdout.log" 2>"$dir/stderr.log" &
    pid=$!
    pids+=("$pid")
    wait_http_ready "$pid" $((PORT + 2)) 300 "$dir/stderr.log"
    sleep 2
    ready_rss="$(status_mb "$pid" VmRSS) ($(status_mb "$pid" RssAnon) + $(status_mb "$pid" RssFile))"
    before=$(cpu_ticks "$pid")
    sleep "$IDLE"
    idle_ms=$(( ($(cpu_ticks "$pid") - before) * 1000 * 60 / clk_tck / IDLE ))
    idle_rss=$(status_mb "$pid" VmRSS)
    before=$(cpu_ticks "$pid")
    taskset -c 1 dnsperf -s 127.0.0.1 -p "$PORT" -d "$dir/queries.txt" -T 2 -c 4 -q 100 \
        -l "$DURATION" >"$dir/dnsperf.txt" 2>&1
    after=$(cpu_ticks "$pid")
    completed=$(awk '/Queries completed:/ { print $3 }' "$dir/dnsperf.txt")
    per_cpu=$(awk -v q="$completed" -v t=$((after - before)) -v hz="$clk_tck" 'BEGIN { printf "%.0f", q / (t / hz) }')
    busy_rss=$(status_mb "$pid" VmRSS)
    peak=$(status_mb "$pid" VmHWM)
    echo "| $label | $peak | $ready_rss | $idle_rss | $busy_rss | $per_cpu | $idle_ms |"
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    pid=""
done
