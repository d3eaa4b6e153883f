#!/usr/bin/env bash
# dnsperf against clusterdns and against knotd serving the same zone (`clusterdns records
# --format zone`), with the same query file, on the same machine. See bench/README.md.
#
#   bench/dnsperf.sh                      # 100 and 10,000 Services, 15 s runs (~6 minutes)
#   SIZES=100 DURATION=5 bench/dnsperf.sh # a quick look
#   SEARCH_PATH=on bench/dnsperf.sh       # with prometheus, the search-path tracker on
#   SEARCH_PATH=off bench/dnsperf.sh      # with prometheus, the tracker off
#   TRANSPORT=tcp bench/dnsperf.sh        # over TCP: dnsperf -m tcp, queries pipelined on
#                                         # each of its connections
#
# Method (2 cores): each server pinned to CPU 0, dnsperf to CPU 1; a warm-up run, then
# `dnsperf -T 4 -c 8 -q 200 -l DURATION` for qps, lost queries and the server's CPU time
# (utime+stime from /proc/PID/stat around the run); then two runs with -v for latency
# percentiles (printing every answer costs dnsperf time, so they are kept out of the
# throughput run): the same flags (the server saturated: latency is mostly queueing behind
# the 200 outstanding queries), and the same at a fixed LATENCY_QPS that both servers
# sustain (the service-time tail). VmRSS is read after the runs.
set -euo pipefail

SIZES=${SIZES:-"100 10000"}
DURATION=${DURATION:-15}
WARMUP=${WARMUP:-5}
QUERIES=${QUERIES:-100000}
CHECK=${CHECK:-300}
LATENCY_QPS=${LATENCY_QPS:-20000}
CLUSTERDNS_PORT=${CLUSTERDNS_PORT:-15353}
KNOT_PORT=${KNOT_PORT:-15354}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
# Set (on or off): clusterdns runs the shorthand's Corefile with `prometheus` and its
# `search_path` option, to measure what the search-path tracker costs (docs/observability.md).
SEARCH_PATH=${SEARCH_PATH:-}
# udp or tcp (dnsperf -m).
TRANSPORT=${TRANSPORT:-udp}
[[ "$TRANSPORT" == udp || "$TRANSPORT" == tcp ]] || { echo "TRANSPORT must be udp or tcp" >&2; exit 2; }
# Over TCP dnsperf waits on each connection in turn: it takes many connections, each with
# queries pipelined, to load a server at all (8 give both servers under 5,000 qps).
if [[ "$TRANSPORT" == tcp ]]; then
    DNSPERF_ARGS=(-m tcp -T 4 -c 128 -q 2000)
else
    DNSPERF_ARGS=(-m udp -T 4 -c 8 -q 200)
fi

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out_dir="$repo/bench/out"
# shellcheck source=bench/common.sh
source "$repo/bench/common.sh"
bench_start dnsperf
need_tools dnsperf knotd dig taskset cargo
build_release

# Compares the two servers on the first $CHECK distinct questions of the query file.
check_answers() {
    local queries=$1 label=$2 name type a b checked=0 mismatches=0
    while read -r name type; do
        a=$(ask "$CLUSTERDNS_PORT" "$name" "$type")
        b=$(ask "$KNOT_PORT" "$name" "$type")
        checked=$((checked + 1))
        if [[ "$a" != "$b" ]]; then
            mismatches=$((mismatches + 1))
            if ((mismatches <= 20)); then
                {
                    echo "MISMATCH $name $type"
                    echo "  clusterdns: $a"
                    echo "  knotd:      $b"
                } >&2
            fi
        fi
    done < <(awk '!seen[$0]++' "$queries" | head -n "$CHECK")
    log "$label: $checked questions asked of both servers with dig, $mismatches mismatches"
    echo "$checked $mismatches"
}


# Runs dnsperf against port $1; prints
# "qps completed lost cpu_s rss_kb p50_ms p99_ms fixed_p50_ms fixed_p99_ms".
measure() {
    local port=$1 pid=$2 queries=$3 prefix=$4 before after cpu qps completed lost p50 p99 f50 f99
    taskset -c "$CLIENT_CPU" dnsperf -s 127.0.0.1 -p "$port" -d "$queries" "${DNSPERF_ARGS[@]}" \
        -l "$WARMUP" >"$prefix.warmup.txt" 2>&1
    before=$(cpu_ticks "$pid")
    taskset -c "$CLIENT_CPU" dnsperf -s 127.0.0.1 -p "$port" -d "$queries" "${DNSPERF_ARGS[@]}" \
        -l "$DURATION" >"$prefix.run.txt" 2>&1
    after=$(cpu_ticks "$pid")
    taskset -c "$CLIENT_CPU" dnsperf -s 127.0.0.1 -p "$port" -d "$queries" "${DNSPERF_ARGS[@]}" \
        -l "$DURATION" -v >"$prefix.latency.txt" 2>&1
    taskset -c "$CLIENT_CPU" dnsperf -s 127.0.0.1 -p "$port" -d "$queries" "${DNSPERF_ARGS[@]}" \
        -l "$DURATION" -Q "$LATENCY_QPS" -v >"$prefix.latency-fixed.txt" 2>&1
    cpu=$(cpu_seconds "$before" "$after")
    read -r qps completed lost < <(dnsperf_counts "$prefix.run.txt")
    read -r p50 p99 < <(percentiles "$prefix.latency.txt")
    read -r f50 f99 < <(percentiles "$prefix.latency-fixed.txt")
    echo "$qps $completed $lost $cpu $(rss_kb "$pid") $p50 $p99 $f50 $f99"
}

mkdir -p "$out_dir"
stamp=$(date -u +%Y%m%dT%H%M%SZ)
report="$out_dir/dnsperf-$TRANSPORT-$stamp.md"
{
    echo "# dnsperf: clusterdns vs knotd, ${TRANSPORT^^} ($stamp)"
    echo
    echo "$(uname -srm); $(nproc) CPUs ($(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)); $(knotd --version | head -n1); $(dnsperf -h 2>&1 | awk '/^Version/ { print "dnsperf " $2 }')"
    echo
    echo "Servers pinned to CPU $SERVER_CPU, dnsperf to CPU $CLIENT_CPU; \`dnsperf ${DNSPERF_ARGS[*]} -l $DURATION\` after a ${WARMUP}s warm-up; qps, completed and lost from that run, server CPU time (utime+stime) over it; p50/p99 \"saturated\" from a second identical run with -v, \"at ${LATENCY_QPS}\" from a third with \`-Q $LATENCY_QPS -v\`; RSS (VmRSS) after the runs. $QUERIES-line query file (the mix of benches/support/queries.rs), ${TRANSPORT^^}, no EDNS."
    echo
    echo "| services | pods | server | ready after s | qps | completed | lost | server CPU s | queries / CPU s | p50 / p99 ms saturated | p50 / p99 ms at $LATENCY_QPS qps | RSS MB |"
    echo "| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
} >"$report"
ratios=()
checks=()

for size in $SIZES; do
    dir="$work/$size"
    # The objects file has a directory of its own: clusterdns watches the directory, and
    # every event there (dnsperf writing its output beside it, say) makes it re-read and
    # hash the whole file on its serving thread.
    objects="$dir/objects/objects.json"
    mkdir -p "$dir/objects" "$dir/zones"
    log "$size services: generating"
    "$gencluster" --services "$size" --out "$objects" 2>"$dir/gencluster.txt"
    pods=$(grep -o '[0-9]* pods on' "$dir/gencluster.txt" | cut -d' ' -f1)
    "$querymix" --objects "$objects" --count "$QUERIES" --out "$dir/queries.txt" 2>"$dir/querymix.txt"
    cat "$dir/querymix.txt" >&2

    log "$size services: zone files for knotd"
    "$clusterdns" records --objects "$objects" --format zone >"$dir/all.zone" 2>"$dir/records.log"
    awk -v dir="$dir/zones" '
        /^\$ORIGIN / { origin = $2; sub(/\.$/, "", origin); file = dir "/" origin ".zone" }
        file != "" { print > file }' "$dir/all.zone"
    knot_conf "$dir" "$KNOT_PORT" 1 cluster.local in-addr.arpa ip6.arpa

    log "$size services: starting clusterdns (port $CLUSTERDNS_PORT) and knotd (port $KNOT_PORT) on CPU $SERVER_CPU"
    serve_args=(serve --objects "$objects" --listen "127.0.0.1:$CLUSTERDNS_PORT")
    if [[ -n "$SEARCH_PATH" ]]; then
        search_path_corefile "$CLUSTERDNS_PORT" "$SEARCH_PATH" "$objects" >"$dir/Corefile"
        serve_args=(serve --corefile "$dir/Corefile")
    fi
    taskset -c "$SERVER_CPU" "$clusterdns" "${serve_args[@]}" >"$dir/clusterdns.log" 2>&1 &
    clusterdns_pid=$!
    pids+=("$clusterdns_pid")
    taskset -c "$SERVER_CPU" knotd -c "$dir/knot.conf" >"$dir/knotd.log" 2>&1 &
    knot_pid=$!
    pids+=("$knot_pid")
    started=$SECONDS
    wait_ready "$CLUSTERDNS_PORT" cluster.local 300 "$clusterdns_pid"
    c_ready=$((SECONDS - started))
    log "$size services: clusterdns answering after $c_ready s"
    while read -r _ _ zone; do
        wait_ready "$KNOT_PORT" "$zone" 300 "$knot_pid"
    done < <(grep '^  - domain:' "$dir/knot.conf")
    k_ready=$((SECONDS - started))
    log "$size services: knotd answering after $k_ready s (checked after clusterdns; both load at once on CPU $SERVER_CPU)"

    read -r checked mismatches < <(check_answers "$dir/queries.txt" "$size services")
    checks+=("$size services: $checked distinct questions from the query file asked of both servers with dig; $mismatches with a different rcode or answer RRset")

    log "$size services: measuring clusterdns"
    read -r c_qps c_done c_lost c_cpu c_rss c_p50 c_p99 c_f50 c_f99 < <(measure "$CLUSTERDNS_PORT" "$clusterdns_pid" "$dir/queries.txt" "$dir/clusterdns")
    log "$size services: measuring knotd"
    read -r k_qps k_done k_lost k_cpu k_rss k_p50 k_p99 k_f50 k_f99 < <(measure "$KNOT_PORT" "$knot_pid" "$dir/queries.txt" "$dir/knotd")

    for pid in "$clusterdns_pid" "$knot_pid"; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    pids=()

    row() {
        awk -v size="$size" -v pods="$pods" -v name="$1" -v ready="$2" -v qps="$3" -v done_="$4" \
            -v lost="$5" -v cpu="$6" -v rss="$7" -v p50="$8" -v p99="$9" -v f50="${10}" -v f99="${11}" 'BEGIN {
            per = (cpu > 0) ? done_ / cpu : 0
            printf "| %d | %d | %s | %d | %d | %d | %d | %.2f | %d | %.3f / %.3f | %.3f / %.3f | %.1f |\n",
                size, pods, name, ready, qps, done_, lost, cpu, per, p50, p99, f50, f99, rss / 1024 }'
    }
    row clusterdns "$c_ready" "$c_qps" "$c_done" "$c_lost" "$c_cpu" "$c_rss" "$c_p50" "$c_p99" "$c_f50" "$c_f99" >>"$report"
    row knotd "$k_ready" "$k_qps" "$k_done" "$k_lost" "$k_cpu" "$k_rss" "$k_p50" "$k_p99" "$k_f50" "$k_f99" >>"$report"
    ratios+=("$(awk -v size="$size" -v cq="$c_qps" -v kq="$k_qps" -v cd="$c_done" -v kd="$k_done" \
        -v cc="$c_cpu" -v kc="$k_cpu" -v c99="$c_p99" -v k99="$k_p99" -v cf="$c_f99" -v kf="$k_f99" \
        -v cr="$c_rss" -v kr="$k_rss" 'BEGIN {
        ce = (cc > 0) ? cd / cc : 0; ke = (kc > 0) ? kd / kc : 0
        printf "| %d | %.2f | %.2f | %.2f | %.2f | %.2f |", size, (kq > 0) ? cq / kq : 0,
            (ke > 0) ? ce / ke : 0, (k99 > 0) ? c99 / k99 : 0, (kf > 0) ? cf / kf : 0,
            (kr > 0) ? cr / kr : 0 }')")
    cp "$dir/clusterdns.run.txt" "$out_dir/$stamp-$size-clusterdns.dnsperf.txt"
    cp "$dir/knotd.run.txt" "$out_dir/$stamp-$size-knotd.dnsperf.txt"
done

{
    echo
    echo "Ratios, clusterdns / knotd (above 1 is better for clusterdns in qps and queries per CPU second, worse in p99 and RSS):"
    echo
    echo "| services | qps | queries / CPU s | p99 saturated | p99 at $LATENCY_QPS qps | RSS |"
    echo "| ---: | ---: | ---: | ---: | ---: | ---: |"
    printf '%s\n' "${ratios[@]}"
    echo
    echo "Correctness before measuring:"
    echo
    printf -- '- %s\n' "${checks[@]}"
} >>"$report"

cat "$report"
log "report: $report"
