#!/usr/bin/env bash
# What the search-path tracker costs, measured in pairs. Two servers hold the same objects,
# one with the tracker on and one with it off, both pinned to one CPU; dnsperf loads them in
# turn, ROUNDS rounds of DURATION seconds each, the order swapped every round. Each round
# gives one ratio of queries per CPU-second, on / off, from two runs seconds apart: the
# drifts of a shared machine, which move whole runs of `SEARCH_PATH=on|off cargo xtask bench
# dnsperf` by more than the tracker costs, fall on both halves of a pair.
#
#   bench/tracker-paired.sh                        # 10,000 Services, 16 rounds of 5 s
#   SERVICES=100 ROUNDS=20 bench/tracker-paired.sh
#   CLUSTERDNS=/path/to/old/clusterdns bench/tracker-paired.sh
#   AGAINST=/path/to/old/clusterdns bench/tracker-paired.sh   # two builds, the tracker on in both
#
# With AGAINST, the pair is two binaries instead: "on" is this build ($CLUSTERDNS) and "off"
# the binary AGAINST names, both on the same Corefile with the tracker on (the default
# wherever prometheus is), so the ratio is the new build's queries per CPU-second against
# the old's.
set -euo pipefail

SERVICES=${SERVICES:-10000}
ROUNDS=${ROUNDS:-16}
DURATION=${DURATION:-5}
QUERIES=${QUERIES:-100000}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
ON_PORT=${ON_PORT:-15371}
OFF_PORT=${OFF_PORT:-15372}
DNSPERF_ARGS=(-m udp -T 4 -c 8 -q 200)

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$repo/bench/common.sh"
bench_start tracker-paired
need_tools dnsperf dig taskset
build_release

# The objects file in a directory of its own (the server watches the directory).
mkdir -p "$work/objects"
objects="$work/objects/objects.json"
log "$SERVICES services: generating"
"$gencluster" --services "$SERVICES" --out "$objects" 2>"$work/gencluster.txt"
"$querymix" --objects "$objects" --count "$QUERIES" --out "$work/queries.txt" 2>"$work/querymix.txt"

declare -A port pid binary tracker
port[on]=$ON_PORT
port[off]=$OFF_PORT
binary[on]=$clusterdns
binary[off]=${AGAINST:-$clusterdns}
tracker[on]=on
tracker[off]=off
if [[ -n "${AGAINST:-}" ]]; then
    [[ -x "$AGAINST" ]] || die "AGAINST=$AGAINST is not an executable"
    tracker[off]=on
    log "this build (on) against $AGAINST (off), the tracker on in both"
fi
for mode in on off; do
    # The Corefile `cargo xtask bench dnsperf` runs with SEARCH_PATH=on|off.
    search_path_corefile "${port[$mode]}" "${tracker[$mode]}" "$objects" >"$work/Corefile.$mode"
    taskset -c "$SERVER_CPU" "${binary[$mode]}" serve --corefile "$work/Corefile.$mode" \
        >"$work/clusterdns.$mode.log" 2>&1 &
    pid[$mode]=$!
    pids+=("${pid[$mode]}")
done
for mode in on off; do
    wait_ready "${port[$mode]}" cluster.local 300 "${pid[$mode]}"
done
log "both servers answering; warming up"

# One dnsperf run of DURATION seconds against mode $1; prints its queries per CPU-second.
run() {
    local mode=$1 before after completed cpu
    before=$(cpu_ticks "${pid[$mode]}")
    taskset -c "$CLIENT_CPU" dnsperf -s 127.0.0.1 -p "${port[$mode]}" -d "$work/queries.txt" \
        "${DNSPERF_ARGS[@]}" -l "$DURATION" >"$work/run.$mode.txt" 2>&1
    after=$(cpu_ticks "${pid[$mode]}")
    read -r _ completed _ < <(dnsperf_counts "$work/run.$mode.txt")
    cpu=$(cpu_seconds "$before" "$after" 3)
    awk -v q="$completed" -v c="$cpu" 'BEGIN { printf("%.0f", c > 0 ? q / c : 0) }'
}

run on >/dev/null
run off >/dev/null

echo "| round | order | on: queries / CPU s | off: queries / CPU s | on / off |"
echo "| ---: | --- | ---: | ---: | ---: |"
ratios=()
declare -A rate
for ((round = 1; round <= ROUNDS; round++)); do
    if ((round % 2)); then order=(on off); else order=(off on); fi
    for mode in "${order[@]}"; do
        rate[$mode]=$(run "$mode")
    done
    ratio=$(awk -v a="${rate[on]}" -v b="${rate[off]}" 'BEGIN { printf("%.3f", b > 0 ? a / b : 0) }')
    ratios+=("$ratio")
    echo "| $round | ${order[0]}, ${order[1]} | ${rate[on]} | ${rate[off]} | $ratio |"
done
printf '%s\n' "${ratios[@]}" | sort -n | awk '
    { r[NR] = $1; log_sum += log($1) }
    END {
        median = NR % 2 ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
        printf("\non / off over %d rounds: median %.3f, geometric mean %.3f, range %.3f to %.3f\n",
            NR, median, exp(log_sum / NR), r[1], r[NR])
    }'
