#!/usr/bin/env bash
# The cache path: names forwarded to an authoritative upstream on loopback and answered from
# the cache, clusterdns (forward + cache + loadbalance, as kubeadm's Corefile has them)
# against unbound (forward-zone "." to the same upstream) with the same query file. See
# bench/README.md.
#
#   bench/cache.sh                 # 5,000 names, 15 s runs (~2 minutes)
#   NAMES=1000 DURATION=5 bench/cache.sh
#
# Method (2 cores): the upstream (knotd, one worker, serving NAMES names with two A records
# each, TTL 3600) and dnsperf on CPU 1; clusterdns and unbound each pinned to CPU 0, one
# worker each. A warm-up run asks every name (filling the caches), then
# `dnsperf -T 4 -c 8 -q 200 -l DURATION` for qps and the server's CPU time, then a run with
# -v at a fixed LATENCY_QPS for p50/p99. During the measured run the upstream is asked
# nothing: every answer comes from the cache.
set -euo pipefail

NAMES=${NAMES:-5000}
DURATION=${DURATION:-15}
WARMUP=${WARMUP:-5}
QUERIES=${QUERIES:-100000}
LATENCY_QPS=${LATENCY_QPS:-20000}
CLUSTERDNS_PORT=${CLUSTERDNS_PORT:-15363}
UNBOUND_PORT=${UNBOUND_PORT:-15364}
UPSTREAM_PORT=${UPSTREAM_PORT:-15365}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
DNSPERF_ARGS=(-T 4 -c 8 -q 200)

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out_dir="$repo/bench/out"
# shellcheck source=bench/common.sh
source "$repo/bench/common.sh"
bench_start cache
need_tools dnsperf knotd unbound dig taskset cargo

build_release

log "the upstream: $NAMES names in example.test"
mkdir -p "$work/zones"
{
    echo "\$ORIGIN example.test."
    echo "\$TTL 3600"
    echo "@ SOA ns.example.test. hostmaster.example.test. 1 3600 600 86400 3600"
    echo "@ NS ns"
    echo "ns A 192.0.2.53"
    awk -v n="$NAMES" 'BEGIN { for (i = 0; i < n; i++) {
        printf "h%d A 198.18.%d.%d\n", i, int(i / 250), i % 250 + 1
        printf "h%d A 198.19.%d.%d\n", i, int(i / 250), i % 250 + 1 } }'
} >"$work/zones/example.test.zone"
knot_conf "$work" "$UPSTREAM_PORT" 1 example.test
awk -v n="$NAMES" -v q="$QUERIES" 'BEGIN { srand(1); for (i = 0; i < q; i++)
    printf "h%d.example.test A\n", int(rand() * n) }' >"$work/queries.txt"
awk -v n="$NAMES" 'BEGIN { for (i = 0; i < n; i++) printf "h%d.example.test A\n", i }' >"$work/warm.txt"

cat >"$work/Corefile" <<COREFILE
.:$CLUSTERDNS_PORT {
    bind 127.0.0.1
    errors
    forward . 127.0.0.1:$UPSTREAM_PORT
    cache 3600 {
        success 65536
    }
    loadbalance
}
COREFILE
cat >"$work/unbound.conf" <<UNBOUND
server:
    interface: 127.0.0.1@$UNBOUND_PORT
    port: $UNBOUND_PORT
    do-daemonize: no
    num-threads: 1
    so-reuseport: no
    access-control: 127.0.0.0/8 allow
    do-not-query-localhost: no
    chroot: ""
    username: ""
    pidfile: ""
    directory: "$work"
    use-syslog: no
    logfile: ""
    verbosity: 0
    module-config: "iterator"
    # test. is one of unbound's built-in local zones (RFC 6761): answer it from the upstream.
    local-zone: "test." nodefault
    qname-minimisation: no
    prefetch: no
    rrset-roundrobin: yes
    msg-cache-size: 64m
    rrset-cache-size: 128m
    cache-min-ttl: 0
    cache-max-ttl: 3600
forward-zone:
    name: "."
    forward-addr: 127.0.0.1@$UPSTREAM_PORT
UNBOUND

taskset -c "$CLIENT_CPU" knotd -c "$work/knot.conf" >"$work/knotd.log" 2>&1 &
upstream_pid=$!
pids+=("$upstream_pid")
wait_ready "$UPSTREAM_PORT" example.test 60 "$upstream_pid"
taskset -c "$SERVER_CPU" "$clusterdns" serve --corefile "$work/Corefile" >"$work/clusterdns.log" 2>&1 &
clusterdns_pid=$!
pids+=("$clusterdns_pid")
taskset -c "$SERVER_CPU" unbound -d -c "$work/unbound.conf" >"$work/unbound.log" 2>&1 &
unbound_pid=$!
pids+=("$unbound_pid")
# As wait_ready, but with recursion desired: a resolver answers a query without RD from its
# cache alone.
wait_resolving() {
    local port=$1 pid=$2 i
    for ((i = 0; i < 240; i++)); do
        kill -0 "$pid" 2>/dev/null || die "server on port $port exited (see $work)"
        if dig @127.0.0.1 -p "$port" +time=1 +tries=1 +noall +answer SOA example.test 2>/dev/null |
            grep -q $'\tSOA\t'; then
            return 0
        fi
        sleep 0.25
    done
    die "server on port $port did not resolve example.test SOA within 60s"
}
wait_resolving "$CLUSTERDNS_PORT" "$clusterdns_pid"
wait_resolving "$UNBOUND_PORT" "$unbound_pid"

# The same answer set from both, for a sample of names.
mismatches=0
for i in 0 1 2 $((NAMES / 2)) $((NAMES - 1)); do
    a=$(dig @127.0.0.1 -p "$CLUSTERDNS_PORT" +short "h$i.example.test" A | sort | tr '\n' ' ')
    b=$(dig @127.0.0.1 -p "$UNBOUND_PORT" +short "h$i.example.test" A | sort | tr '\n' ' ')
    [[ "$a" == "$b" && -n "$a" ]] || { mismatches=$((mismatches + 1)); log "MISMATCH h$i: clusterdns '$a' unbound '$b'"; }
done

# Runs the measurement against port $1 (pid $2); prints "qps completed lost cpu_s rss p50 p99".
measure() {
    local port=$1 pid=$2 prefix=$3 before after cpu qps completed lost p50 p99
    taskset -c "$CLIENT_CPU" dnsperf -s 127.0.0.1 -p "$port" -d "$work/warm.txt" "${DNSPERF_ARGS[@]}" \
        -n 1 >"$prefix.fill.txt" 2>&1
    taskset -c "$CLIENT_CPU" dnsperf -s 127.0.0.1 -p "$port" -d "$work/queries.txt" "${DNSPERF_ARGS[@]}" \
        -l "$WARMUP" >"$prefix.warmup.txt" 2>&1
    before=$(cpu_ticks "$pid")
    upstream_before=$(cpu_ticks "$upstream_pid")
    taskset -c "$CLIENT_CPU" dnsperf -s 127.0.0.1 -p "$port" -d "$work/queries.txt" "${DNSPERF_ARGS[@]}" \
        -l "$DURATION" >"$prefix.run.txt" 2>&1
    after=$(cpu_ticks "$pid")
    upstream_after=$(cpu_ticks "$upstream_pid")
    taskset -c "$CLIENT_CPU" dnsperf -s 127.0.0.1 -p "$port" -d "$work/queries.txt" "${DNSPERF_ARGS[@]}" \
        -l "$DURATION" -Q "$LATENCY_QPS" -v >"$prefix.latency.txt" 2>&1
    cpu=$(cpu_seconds "$before" "$after")
    read -r qps completed lost < <(dnsperf_counts "$prefix.run.txt")
    read -r p50 p99 < <(percentiles "$prefix.latency.txt")
    log "$prefix: upstream CPU during the run $((upstream_after - upstream_before)) ticks"
    echo "$qps $completed $lost $cpu $(rss_kb "$pid") $p50 $p99"
}

log "measuring clusterdns"
read -r c_qps c_done c_lost c_cpu c_rss c_p50 c_p99 < <(measure "$CLUSTERDNS_PORT" "$clusterdns_pid" "$work/clusterdns")
log "measuring unbound"
read -r u_qps u_done u_lost u_cpu u_rss u_p50 u_p99 < <(measure "$UNBOUND_PORT" "$unbound_pid" "$work/unbound")

mkdir -p "$out_dir"
stamp=$(date -u +%Y%m%dT%H%M%SZ)
report="$out_dir/cache-$stamp.md"
row() {
    awk -v name="$1" -v qps="$2" -v done_="$3" -v lost="$4" -v cpu="$5" -v rss="$6" -v p50="$7" -v p99="$8" 'BEGIN {
        printf "| %s | %d | %d | %d | %.2f | %d | %.3f / %.3f | %.1f |\n", name, qps, done_, lost, cpu,
            (cpu > 0) ? done_ / cpu : 0, p50, p99, rss / 1024 }'
}
{
    echo "# The cache path: clusterdns vs unbound ($stamp)"
    echo
    echo "$(uname -srm); $(nproc) CPUs; $(unbound -V | head -n1); $(knotd --version | head -n1) as the upstream"
    echo
    echo "$NAMES names (two A records each, TTL 3600) behind an authoritative upstream on loopback, every one asked once before measuring; servers on CPU $SERVER_CPU, dnsperf and the upstream on CPU $CLIENT_CPU; \`dnsperf ${DNSPERF_ARGS[*]} -l $DURATION\`, p50/p99 at $LATENCY_QPS qps. clusterdns: \`forward\`, \`cache 3600\`, \`loadbalance\`; unbound: iterator only, \`rrset-roundrobin: yes\`, one thread."
    echo
    echo "| server | qps | completed | lost | server CPU s | queries / CPU s | p50 / p99 ms at $LATENCY_QPS qps | RSS MB |"
    echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    row clusterdns "$c_qps" "$c_done" "$c_lost" "$c_cpu" "$c_rss" "$c_p50" "$c_p99"
    row unbound "$u_qps" "$u_done" "$u_lost" "$u_cpu" "$u_rss" "$u_p50" "$u_p99"
    echo
    awk -v cd="$c_done" -v cc="$c_cpu" -v ud="$u_done" -v uc="$u_cpu" -v cq="$c_qps" -v uq="$u_qps" \
        -v c99="$c_p99" -v u99="$u_p99" 'BEGIN {
        printf "Ratios, clusterdns / unbound: qps %.2f, queries per CPU second %.2f, p99 at fixed load %.2f.\n",
            (uq > 0) ? cq / uq : 0, (uc > 0 && cc > 0) ? (cd / cc) / (ud / uc) : 0, (u99 > 0) ? c99 / u99 : 0 }'
    echo
    echo "Correctness before measuring: 5 names asked of both with dig, $mismatches with a different answer set."
} >"$report"
cat "$report"
log "report: $report"
