#!/usr/bin/env bash
# What a replica costs at the rates clusters send, not at saturation: clusterdns and knotd
# serving the same zone, unpinned, each with as many workers as the machine has CPUs, asked
# at fixed rates; then the latency at half of knotd's saturating rate, and clusterdns's
# scaling from one worker to two. See bench/README.md.
#
#   bench/fixed-rate.sh                        # 100 Services, 1k/10k/20k/50k qps, 10 s each
#   RATES="1000 20000" DURATION=5 bench/fixed-rate.sh
#
# CPU is the server's utime+stime over the run (/proc/PID/stat), given per 1,000 queries
# per second: millicores for each 1,000 qps, the figure to size a CPU request from.
set -euo pipefail

SIZE=${SIZE:-100}
RATES=${RATES:-"1000 10000 20000 50000"}
DURATION=${DURATION:-10}
QUERIES=${QUERIES:-100000}
CLUSTERDNS_PORT=${CLUSTERDNS_PORT:-15373}
KNOT_PORT=${KNOT_PORT:-15374}
WORKERS=${WORKERS:-$(nproc)}
# Saturating runs (knotd's rate, the scaling rows): dnsperf's usual load.
SATURATE=(-T 4 -c 8 -q 200)
# Fixed-rate runs: enough clients and outstanding queries for the rate, no more.
FIXED=(-T 2 -c 8 -q 100)

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out_dir="$repo/bench/out"
# shellcheck source=bench/common.sh
source "$repo/bench/common.sh"
bench_start fixed-rate
need_tools dnsperf knotd dig taskset cargo

build_release

objects="$work/objects/objects.json"
mkdir -p "$work/objects" "$work/zones"
"$gencluster" --services "$SIZE" --out "$objects" 2>"$work/gencluster.txt"
"$querymix" --objects "$objects" --count "$QUERIES" --out "$work/queries.txt" 2>"$work/querymix.txt"
"$clusterdns" records --objects "$objects" --format zone >"$work/all.zone" 2>"$work/records.log"
awk -v dir="$work/zones" '
    /^\$ORIGIN / { origin = $2; sub(/\.$/, "", origin); file = dir "/" origin ".zone" }
    file != "" { print > file }' "$work/all.zone"
knot_conf "$work" "$KNOT_PORT" "$WORKERS" cluster.local in-addr.arpa ip6.arpa

# Starts clusterdns under `taskset -c $1` (the CPUs it may use, and so its worker count).
start_clusterdns() {
    taskset -c "$1" "$clusterdns" serve --objects "$objects" --listen "127.0.0.1:$CLUSTERDNS_PORT" \
        >"$work/clusterdns.log" 2>&1 &
    clusterdns_pid=$!
    pids+=("$clusterdns_pid")
    wait_ready "$CLUSTERDNS_PORT" cluster.local 120 "$clusterdns_pid"
}

stop() {
    kill "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}

# dnsperf against port $1 (server pid $2) with the extra arguments after $3 (the output
# file); prints "achieved_qps completed lost cpu_s p50_ms p99_ms".
run() {
    local port=$1 pid=$2 output=$3 before after
    shift 3
    before=$(cpu_ticks "$pid")
    dnsperf -s 127.0.0.1 -p "$port" -d "$work/queries.txt" -l "$DURATION" "$@" >"$output" 2>&1
    after=$(cpu_ticks "$pid")
    local cpu qps completed lost p50=nan p99=nan
    cpu=$(cpu_seconds "$before" "$after" 3)
    read -r qps completed lost < <(dnsperf_counts "$output")
    if grep -q '^> ' "$output"; then
        read -r p50 p99 < <(percentiles "$output")
    fi
    echo "$qps $completed $lost $cpu $p50 $p99"
}

start_clusterdns "0-$((WORKERS - 1))"
knotd -c "$work/knot.conf" >"$work/knotd.log" 2>&1 &
knot_pid=$!
pids+=("$knot_pid")
for zone in cluster.local in-addr.arpa; do wait_ready "$KNOT_PORT" "$zone" 120 "$knot_pid"; done
grep -h "udp workers" "$work/clusterdns.log" | sed 's/.*INFO //' >&2

# Warm both up, then knotd's saturating rate.
dnsperf -s 127.0.0.1 -p "$CLUSTERDNS_PORT" -d "$work/queries.txt" -l 3 "${SATURATE[@]}" >/dev/null 2>&1
dnsperf -s 127.0.0.1 -p "$KNOT_PORT" -d "$work/queries.txt" -l 3 "${SATURATE[@]}" >/dev/null 2>&1
read -r k_sat _ < <(run "$KNOT_PORT" "$knot_pid" "$work/knot-saturated.txt" "${SATURATE[@]}")
read -r c_sat _ < <(run "$CLUSTERDNS_PORT" "$clusterdns_pid" "$work/clusterdns-saturated.txt" "${SATURATE[@]}")
log "saturating rate, unpinned, $WORKERS workers each: knotd $k_sat qps, clusterdns $c_sat qps"

rows=()
for rate in $RATES; do
    for server in clusterdns knotd; do
        if [[ $server == clusterdns ]]; then port=$CLUSTERDNS_PORT pid=$clusterdns_pid; else port=$KNOT_PORT pid=$knot_pid; fi
        read -r qps completed lost cpu p50 p99 < <(run "$port" "$pid" "$work/$server-$rate.txt" "${FIXED[@]}" -Q "$rate" -v)
        log "$rate qps: $server achieved $qps, lost $lost, CPU ${cpu}s, p99 ${p99} ms"
        rows+=("$(awk -v rate="$rate" -v s="$server" -v q="$qps" -v l="$lost" -v c="$cpu" -v d="$DURATION" \
            -v p50="$p50" -v p99="$p99" 'BEGIN {
            printf "| %d | %s | %d | %d | %.3f | %.1f | %s / %s |", rate, s, q, l, c,
                (q > 0) ? 1000 * (c / d) / (q / 1000) : 0, p50, p99 }')")
        eval "${server}_cpu_$rate=$cpu"
    done
done

half=$((k_sat / 2))
read -r _ _ c_half_lost _ c_half_p50 c_half_p99 < <(run "$CLUSTERDNS_PORT" "$clusterdns_pid" "$work/clusterdns-half.txt" "${FIXED[@]}" -Q "$half" -v)
read -r _ _ k_half_lost _ k_half_p50 k_half_p99 < <(run "$KNOT_PORT" "$knot_pid" "$work/knot-half.txt" "${FIXED[@]}" -Q "$half" -v)
log "at $half qps (half of knotd's saturating rate): p99 clusterdns $c_half_p99 ms, knotd $k_half_p99 ms"
stop "$knot_pid"
stop "$clusterdns_pid"

# Scaling: one worker (one CPU allowed) against two, saturated, dnsperf unpinned.
scaling=()
for cpus in 0 0-1; do
    start_clusterdns "$cpus"
    dnsperf -s 127.0.0.1 -p "$CLUSTERDNS_PORT" -d "$work/queries.txt" -l 3 "${SATURATE[@]}" >/dev/null 2>&1
    read -r qps completed _ cpu _ < <(run "$CLUSTERDNS_PORT" "$clusterdns_pid" "$work/scaling-$cpus.txt" "${SATURATE[@]}")
    workers=$(grep -o '[0-9]* udp workers' "$work/clusterdns.log" | head -n1 | cut -d' ' -f1)
    scaling+=("$(awk -v w="$workers" -v q="$qps" -v d="$completed" -v c="$cpu" 'BEGIN {
        printf "| %d | %d | %.2f | %d |", w, q, c, (c > 0) ? d / c : 0 }')")
    stop "$clusterdns_pid"
done

mkdir -p "$out_dir"
stamp=$(date -u +%Y%m%dT%H%M%SZ)
report="$out_dir/fixed-rate-$stamp.md"
{
    echo "# Fixed rates: clusterdns vs knotd ($stamp)"
    echo
    echo "$(uname -srm); $(nproc) CPUs; $(knotd --version | head -n1); $SIZE Services; servers and dnsperf unpinned, each server with $WORKERS workers; \`dnsperf ${FIXED[*]} -Q RATE -l $DURATION -v\`."
    echo
    echo "| rate | server | achieved qps | lost | server CPU s | millicores per 1,000 qps | p50 / p99 ms |"
    echo "| ---: | --- | ---: | ---: | ---: | ---: | ---: |"
    printf '%s\n' "${rows[@]}"
    echo
    echo -n "Server CPU, clusterdns / knotd, at the same rate:"
    for rate in $RATES; do
        c_var="clusterdns_cpu_$rate" k_var="knotd_cpu_$rate"
        awk -v r="$rate" -v c="${!c_var}" -v k="${!k_var}" 'BEGIN { printf " %d qps %.2f;", r, (k > 0) ? c / k : 0 }'
    done
    echo
    echo
    echo "Saturating rate (\`dnsperf ${SATURATE[*]}\`, unpinned): knotd $k_sat qps, clusterdns $c_sat qps. At half of knotd's ($half qps): p50 / p99 clusterdns $c_half_p50 / $c_half_p99 ms (lost $c_half_lost), knotd $k_half_p50 / $k_half_p99 ms (lost $k_half_lost)."
    echo
    echo "Scaling, clusterdns saturated, dnsperf unpinned (on a 2-CPU machine dnsperf takes its share of the same CPUs):"
    echo
    echo "| workers | qps | server CPU s | queries / CPU s |"
    echo "| ---: | ---: | ---: | ---: |"
    printf '%s\n' "${scaling[@]}"
} >"$report"
cat "$report"
log "report: $report"
