# Shared by the bench scripts: the work directory and the processes to stop at exit,
# logging, the tools check, building, reading a process's CPU time and memory, waiting for a
# server, latency percentiles, knotd's configuration. Sourced after `repo` is set:
#
#   source "$repo/bench/common.sh"
#   bench_start NAME           # $work, the exit trap, log and die as [NAME.sh]
#   need_tools dnsperf knotd   # or die with the Debian packages to install
#   build_release

pids=()

# Stops every process in $pids, then removes $work (kept with KEEP=1).
cleanup() {
    local pid
    for pid in "${pids[@]}"; do
        if kill -0 "$pid" 2>/dev/null; then
            kill "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
        fi
    done
    if [[ -n "${KEEP:-}" ]]; then
        echo "kept $work" >&2
    elif [[ -n "${work:-}" ]]; then
        rm -rf "$work"
    fi
}

# Makes $work, a temporary directory for script $1, and cleans up at exit.
bench_start() {
    bench_name=$1
    work=$(mktemp -d "${TMPDIR:-/tmp}/clusterdns-$1.XXXXXX")
    trap cleanup EXIT
    trap 'exit 130' INT TERM
}

log() { printf '[%s.sh] %s\n' "${bench_name:-bench}" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# Dies unless every tool named is installed.
need_tools() {
    local tool
    for tool in "$@"; do
        command -v "$tool" >/dev/null ||
            die "$tool not found (apt-get install dnsperf knot unbound bind9-dnsutils curl util-linux)"
    done
}

# Builds the release binaries and sets $clusterdns, $gencluster, $querymix and $clk_tck.
# PROFILE=dist builds and runs the server with Cargo.toml's shipping profile instead (the
# helper examples stay release builds); CLUSTERDNS=PATH runs that binary (an older build kept
# for a before/after comparison) and builds only the examples.
build_release() {
    local profile=${PROFILE:-release}
    log "building ($profile)"
    if ! (cd "$repo" && cargo build --release --example gencluster --example querymix &&
        if [[ -z "${CLUSTERDNS:-}" ]]; then cargo build --profile "$profile" --bin clusterdns; fi) >"$work/build.log" 2>&1; then
        cat "$work/build.log" >&2
        die "cargo build failed"
    fi
    target=$(cd "$repo" && cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
    clusterdns=${CLUSTERDNS:-"$target/$profile/clusterdns"}
    [[ -x "$clusterdns" ]] || die "$clusterdns is not an executable"
    gencluster="$target/release/examples/gencluster"
    querymix="$target/release/examples/querymix"
    clk_tck=$(getconf CLK_TCK)
}

# utime+stime of a process, in clock ticks (fields 14 and 15 of /proc/PID/stat, counted
# after the command name, which may hold spaces).
cpu_ticks() {
    local stat
    stat=$(<"/proc/$1/stat")
    stat=${stat##*) }
    awk '{ print $12 + $13 }' <<<"$stat"
}

# "qps completed lost" of a dnsperf run's output file $1.
dnsperf_counts() {
    awk '/Queries per second:/ { qps = sprintf("%.0f", $4) }
         /Queries completed:/ { completed = $3 }
         /Queries lost:/ { lost = $3 }
         END { print qps, completed, lost }' "$1"
}

# CPU seconds between two cpu_ticks readings $1 and $2, with $3 decimals (2 by default).
cpu_seconds() {
    awk -v t=$(($2 - $1)) -v hz="$clk_tck" -v d="${3:-2}" 'BEGIN { printf("%." d "f", t / hz) }'
}

rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }

# Waits until the server on port $1 answers the SOA of zone $2 (up to $3 seconds).
wait_ready() {
    local port=$1 zone=$2 limit=$3 pid=$4 i
    for ((i = 0; i < limit * 4; i++)); do
        kill -0 "$pid" 2>/dev/null || die "server on port $port exited (see $work)"
        # dig prints its errors on stdout too: look for the record itself.
        if dig @127.0.0.1 -p "$port" +norec +time=1 +tries=1 +noall +answer SOA "$zone" 2>/dev/null |
            grep -q $'\tSOA\t'; then
            return 0
        fi
        sleep 0.25
    done
    die "server on port $port did not answer $zone SOA within ${limit}s"
}

# deploy/configmap.yaml's Corefile (kubeadm's) on loopback ports from $1: DNS on $1, health,
# ready and prometheus on the next three, forward to the one after (closed: no traffic
# leaves the machine), and `objects $2` where the pod's Corefile has `snapshot`.
kubeadm_corefile() {
    local port=$1 objects=$2
    sed -n '/Corefile: |/,$p' "$repo/deploy/configmap.yaml" | tail -n +2 | sed 's/^    //' |
        sed "s|^\.:53 {|.:$port {\n    bind 127.0.0.1|" |
        sed "s|snapshot .*|objects $objects|" |
        sed "s|health {|health 127.0.0.1:$((port + 1)) {|; s|^    ready$|    ready 127.0.0.1:$((port + 2))|" |
        sed "s|prometheus :9153|prometheus 127.0.0.1:$((port + 3))|" |
        sed "s|forward . /etc/resolv.conf|forward . 127.0.0.1:$((port + 4))|"
}

# The shorthand's Corefile (src/config/shorthand.rs) with prometheus on, for the tracker's
# cost: DNS on loopback port $1, the search-path tracker `$2` (on or off), `objects $3`.
search_path_corefile() {
    local port=$1 mode=$2 objects=$3
    cat <<COREFILE
.:$port {
    bind 127.0.0.1
    errors
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
        objects "$objects"
    }
    prometheus 127.0.0.1:0 {
        search_path $mode
    }
    cache 30 {
        disable success cluster.local
        disable denial cluster.local
    }
    loop
    loadbalance
}
COREFILE
}

# Waits until process $1's /ready on 127.0.0.1:$2 says 200 (up to $3 seconds); if the process
# exits first, prints its log $4 and dies.
wait_http_ready() {
    local pid=$1 port=$2 limit=$3 log_file=$4 i
    for ((i = 0; i < limit * 4; i++)); do
        kill -0 "$pid" 2>/dev/null || { cat "$log_file" >&2; die "clusterdns exited"; }
        [[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/ready")" == 200 ]] && return 0
        sleep 0.25
    done
    die "clusterdns did not become ready on port $port within ${limit}s"
}

# p50 and p99 in milliseconds from dnsperf -v output.
percentiles() {
    awk '$1 == ">" { print $NF * 1000 }' "$1" | sort -g |
        awk '{ v[NR] = $1 } END {
            if (NR == 0) { print "nan nan"; exit }
            i50 = int(NR * 0.50); if (i50 < 1) i50 = 1
            i99 = int(NR * 0.99); if (i99 < 1) i99 = 1
            printf "%.3f %.3f\n", v[i50], v[i99] }'
}

# Writes a knotd configuration to $1/knot.conf: listening on 127.0.0.1@$2 with $3 UDP and
# TCP workers, serving every $1/zones/ZONE.zone for the zones named after $4 (ip6.arpa only
# when it holds PTR records).
knot_conf() {
    local dir=$1 port=$2 workers=$3 zone file
    shift 3
    {
        echo "server:"
        echo "    listen: 127.0.0.1@$port"
        echo "    rundir: \"$dir/run\""
        echo "    udp-workers: $workers"
        echo "    tcp-workers: $workers"
        echo "    background-workers: 1"
        echo "database:"
        echo "    storage: \"$dir/knot\""
        echo "template:"
        echo "  - id: default"
        echo "    storage: \"$dir/zones\""
        echo "    file: \"%s.zone\""
        echo "    journal-content: none"
        echo "    zonefile-sync: -1"
        echo "    zonefile-load: whole"
        echo "    semantic-checks: off"
        echo "log:"
        echo "  - target: stderr"
        echo "    any: warning"
        echo "zone:"
        for zone in "$@"; do
            file="$dir/zones/$zone.zone"
            [[ -s "$file" ]] || continue
            if [[ "$zone" == ip6.arpa ]] && ! grep -q $'\tPTR\t' "$file"; then
                continue
            fi
            echo "  - domain: $zone"
        done
    } >"$dir/knot.conf"
    mkdir -p "$dir/run" "$dir/knot"
}
