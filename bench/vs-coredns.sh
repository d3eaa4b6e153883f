#!/usr/bin/env bash
# clusterdns beside the real CoreDNS (bench/peers: CoreDNS v1.14.7), measured in one run on a
# real local control plane (cargo xtask cluster): both with kubeadm's Corefile (deploy/configmap.yaml;
# CoreDNS without clusterdns's `snapshot` line), each as its own ServiceAccount bound to
# deploy/'s ClusterRole system:coredns, against the same API server holding the same objects.
# See bench/README.md ("clusterdns beside CoreDNS") for the method and every figure.
#
#   bench/vs-coredns.sh                                 # 1,000 and 10,000 Services
#   SCALES=100 DURATION=5 STEADY=5 SAMPLES=10 bench/vs-coredns.sh   # a quick look
#   PODS_PER_SERVICE=3 bench/vs-coredns.sh              # fewer pods to load (default 15)
#   NO_BUILD=1 bench/vs-coredns.sh                      # the release binaries as they are
#   LOAD_ONLY=1 SCALES=10000 bench/vs-coredns.sh        # only the load (cargo xtask load), timed
set -euo pipefail

SCALES=${SCALES:-"1000 10000"}
PODS_PER_SERVICE=${PODS_PER_SERVICE:-15}
DURATION=${DURATION:-15}      # each measured dnsperf run, seconds
WARMUP=${WARMUP:-5}
QUERIES=${QUERIES:-100000}
CHECK=${CHECK:-300}           # distinct questions asked of both servers with dig first
FIXED_QPS=${FIXED_QPS:-20000}
STEADY=${STEADY:-15}          # the steady window after each sync, seconds
SAMPLES=${SAMPLES:-20}        # programming-latency samples per case
CHURN_DEPLOYMENTS=${CHURN_DEPLOYMENTS:-3}
CHURN_PERIOD=${CHURN_PERIOD:-1}   # seconds between two scalings of each churning Deployment
CHURN_HIGH=${CHURN_HIGH:-6}       # they go 1 -> CHURN_HIGH -> 1 ...
CHURN_WINDOW=${CHURN_WINDOW:-30}  # seconds of churn over which the servers' CPU is read
PERF_CHURN=${PERF_CHURN:-}        # FILE: perf record clusterdns over the churn window into FILE
REPLICAS=${REPLICAS:-3}
PODS_PER_NODE=${PODS_PER_NODE:-200}
SNAPSHOT=${SNAPSHOT:-1}       # 0: clusterdns without the ConfigMap's snapshot line
LOAD_CONCURRENCY=${LOAD_CONCURRENCY:-32}   # creates in flight at once (cargo xtask load)
LOAD_ONLY=${LOAD_ONLY:-}      # 1: load each scale, report how long it took, nothing else
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out_dir="$repo/bench/out"
# shellcheck source=bench/common.sh
source "$repo/bench/common.sh"
bench_start vs-coredns
need_tools dnsperf knotd dig taskset curl python3 ss cargo
if [[ -n "${NO_BUILD:-}" ]]; then
    # The release binaries as they are (copied: a build beside this run may replace them).
    target=$(cd "$repo" && cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
    mkdir -p "$work/bin"
    cp "$target/release/clusterdns" "$target/release/examples/gencluster" "$target/release/examples/querymix" \
        "$target/release/xtask" "$work/bin/"
    clusterdns="$work/bin/clusterdns" gencluster="$work/bin/gencluster" querymix="$work/bin/querymix"
    xtask="$work/bin/xtask"
    clk_tck=$(getconf CLK_TCK)
else
    build_release
    # The loader (cargo xtask load), optimised: it serialises and sends 150,000 objects.
    (cd "$repo" && cargo build --release --package xtask) >>"$work/build.log" 2>&1 ||
        { cat "$work/build.log" >&2; die "cargo build --package xtask failed"; }
    xtask="$target/release/xtask"
fi
peers=$("$repo/bench/peers/build.sh" --dir)
coredns="$peers/coredns"
[[ -x "$coredns" ]] || die "$coredns missing: run bench/peers/build.sh"

cluster_dir="$work/cluster"
# The control plane (xtask/src/cluster.rs), from the peers above.
cluster() { CLUSTERDNS_PEERS="$peers" "$xtask" cluster "$@"; }
trap 'cluster down --dir "$cluster_dir" >/dev/null 2>&1 || true; kill_instances; cleanup' EXIT
audit="$cluster_dir/log/audit.log"
apiserver_pid() { cat "$cluster_dir/pid/kube-apiserver.pid"; }
# Every server started, also from subshells: stopped at exit.
kill_instances() {
    local pid
    [[ -f "$work/instance.pids" ]] || return 0
    while read -r pid; do kill -KILL "$pid" 2>/dev/null || true; done <"$work/instance.pids"
}
declare -A account=([coredns]=coredns [clusterdns]=clusterdns)

# A fresh control plane: deploy/'s ServiceAccount and ClusterRole, a second account for
# clusterdns bound to it too, a kubeconfig with a TokenRequest token for each, the workload
# the latency and churn phases scale.
cluster_up() {
    local server token
    cluster down --dir "$cluster_dir" >/dev/null 2>&1 || true
    log "starting the control plane"
    cluster up --dir "$cluster_dir" 2>"$work/cluster.log" ||
        { cat "$work/cluster.log" >&2; die "xtask cluster up failed"; }
    eval "$(cluster env --dir "$cluster_dir")"
    api_port=$(awk -F= '$1 == "APISERVER_PORT" { print $2 }' "$cluster_dir/ports")
    kubectl apply --server-side --force-conflicts -f "$repo/deploy/rbac.yaml" >/dev/null
    kubectl create serviceaccount clusterdns -n kube-system >/dev/null
    kubectl create clusterrolebinding system:clusterdns --clusterrole system:coredns \
        --serviceaccount kube-system:clusterdns >/dev/null
    for server in coredns clusterdns; do
        token=$(kubectl create token "${account[$server]}" -n kube-system --duration 6h)
        cat >"$work/$server.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: "https://127.0.0.1:$api_port", certificate-authority: "$cluster_dir/pki/ca.crt"}
users:
- name: $server
  user: {token: "$token"}
contexts:
- name: $server
  context: {cluster: local, user: $server}
current-context: $server
EOF
    done
    kubectl apply -f "$work/workload.yaml" >/dev/null
}

# The upstream `forward` points at: knotd with one zone of its own, REFUSED for everything else.
mkdir -p "$work/upstream/zones"
# shellcheck disable=SC2016 # $ORIGIN is the zone file's
printf '$ORIGIN upstream.test.\n@ 3600 SOA ns hostmaster 1 3600 600 86400 60\n@ 3600 NS ns\nns 3600 A 127.0.0.1\n' \
    >"$work/upstream/zones/upstream.test.zone"

free_ports() {
    python3 - "$1" <<'EOF'
import socket, sys
held = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in held:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in held))
EOF
}
read -r upstream_port <<<"$(free_ports 1)"
knot_conf "$work/upstream" "$upstream_port" 1 upstream.test
taskset -c "$CLIENT_CPU" knotd -c "$work/upstream/knot.conf" >"$work/upstream/knotd.log" 2>&1 &
pids+=($!)
wait_ready "$upstream_port" upstream.test 30 "$!"

# kubeadm's Corefile, as deploy/configmap.yaml holds it.
awk '/^  Corefile: \|/ { on = 1; next } on && /^    / { print substr($0, 5); next } on { exit }' \
    "$repo/deploy/configmap.yaml" >"$work/Corefile.configmap"
grep -q 'snapshot /var/lib/clusterdns/snapshot.json' "$work/Corefile.configmap" ||
    die "deploy/configmap.yaml: no snapshot line to adapt"

# The Corefile of one instance: SERVER DIR PODS DNS HEALTH READY METRICS.
write_corefile() {
    local server=$1 dir=$2 pods=$3 dns=$4 health=$5 ready=$6 metrics=$7 connection
    connection="kubeconfig $work/$server.kubeconfig"
    if [[ "$server" == clusterdns && "$SNAPSHOT" == 1 ]]; then
        connection="snapshot $dir/snapshot.json
       $connection"
    fi
    CONNECTION=$connection awk -v dns="$dns" -v health="$health" -v ready="$ready" \
        -v metrics="$metrics" -v up="$upstream_port" -v pods="$pods" '
        $0 == ".:53 {" { print ".:" dns " {"; print "    bind 127.0.0.1"; next }
        $1 == "health" && $2 == "{" { print "    health 127.0.0.1:" health " {"; next }
        $0 == "    ready" { print "    ready 127.0.0.1:" ready; next }
        $1 == "prometheus" { print "    prometheus 127.0.0.1:" metrics; next }
        $1 == "forward" { sub("/etc/resolv.conf", "127.0.0.1:" up) }
        $1 == "pods" { sub($2, pods) }
        $1 == "snapshot" { print "       " ENVIRON["CONNECTION"]; next }
        { print }' "$work/Corefile.configmap" >"$dir/Corefile"
}

# Started instances: inst_pid[ID], inst_ready[ID] (the ready port), inst_dns[ID], inst_server[ID].
declare -A inst_pid inst_ready inst_dns inst_server
# start_instance ID SERVER PODS CPUS: writes the Corefile in $work/ID, starts the server.
start_instance() {
    local id=$1 server=$2 pods=$3 cpus=$4 dir="$work/$1" dns health ready metrics
    rm -rf "$dir"
    mkdir -p "$dir"
    read -r dns health ready metrics <<<"$(free_ports 4)"
    write_corefile "$server" "$dir" "$pods" "$dns" "$health" "$ready" "$metrics"
    if [[ "$server" == coredns ]]; then
        taskset -c "$cpus" "$coredns" -conf "$dir/Corefile" >"$dir/log" 2>&1 &
    else
        taskset -c "$cpus" "$clusterdns" serve --corefile "$dir/Corefile" >"$dir/log" 2>&1 &
    fi
    inst_pid[$id]=$!
    pids+=("${inst_pid[$id]}")
    echo "${inst_pid[$id]}" >>"$work/instance.pids"
    inst_ready[$id]=$ready
    inst_dns[$id]=$dns
    inst_server[$id]=$server
}
stop_instance() {
    local pid=${inst_pid[$1]}
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}
is_ready() { curl -sf -o /dev/null --max-time 1 "http://127.0.0.1:${inst_ready[$1]}/ready"; }
hwm_kb() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"; }
# "PID LOCAL_PORT bytes_received bytes_sent" of every established connection of the PIDs to
# the API server (sampled while a group runs: the largest reading of each connection counts).
socket_sample() {
    ss -tinpH state established "( dport = :$api_port )" 2>/dev/null | awk -v pids=" $* " '
        { if (match($0, /pid=[0-9]+,/)) {
              pid = substr($0, RSTART + 4, RLENGTH - 5)
              mine = index(pids, " " pid " ") > 0
              split($3, la, ":"); port = la[2]
              next } }
        mine { r = 0; s = 0
               for (i = 1; i <= NF; i++) {
                   if ($i ~ /^bytes_received:/) { split($i, a, ":"); r = a[2] }
                   if ($i ~ /^bytes_sent:/) { split($i, a, ":"); s = a[2] } }
               print pid, port, r, s
               mine = 0 }'
}
# "rx tx" summed over the connections in a file of socket_sample lines.
socket_totals() {
    awk '{ k = $1 " " $2; if ($3 > r[k]) r[k] = $3; if ($4 > s[k]) s[k] = $4 }
         END { for (k in r) { R += r[k]; S += s[k] } printf "%d %d\n", R, S }' "$1"
}
# The service account's requests in audit log lines FROM..TO: "lists watches others
# initial", initial counting the lists and the watches that begin with the whole state
# (sendInitialEvents=true, WatchList: client-go's reflectors stream their lists so).
audit_requests() {
    sed -n "$(($1 + 1)),$2p" "$audit" | python3 -c '
import json, sys
user = "system:serviceaccount:kube-system:" + sys.argv[1]
seen = {}
for line in sys.stdin:
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if e.get("user", {}).get("username") != user:
        continue
    seen[e["auditID"]] = (e.get("verb"), "sendInitialEvents=true" in e.get("requestURI", ""))
verbs = [v for v, _ in seen.values()]
lists = verbs.count("list"); watches = verbs.count("watch")
initial = sum(1 for v, i in seen.values() if v == "list" or i)
print(lists, watches, len(verbs) - lists - watches, initial)' "$3"
}
audit_lines() { if [[ -f "$audit" ]]; then wc -l <"$audit"; else echo 0; fi; }

# One group: COUNT instances of SERVER with `pods PODS`, started together, alone against the
# API server. Prints "ready_s rss_sync_kb rss_steady_kb api_cpu_sync_s api_cpu_steady_s
# api_rss_growth_kb lists watches others initial socket_rx socket_tx".
measure_group() {
    local server=$1 pods=$2 count=$3 tag=$4 i id ids=() api t0 t1 c0 c1 c2 r0 rss peak=0 a0 a1
    local rss_sync=0 rss_steady=0 rx tx all ipids=() samples="$work/$tag-$server.sockets"
    api=$(apiserver_pid)
    a0=$(audit_lines)
    r0=$(rss_kb "$api")
    c0=$(cpu_ticks "$api")
    t0=$(date +%s.%N)
    for ((i = 0; i < count; i++)); do
        id="$tag-$server-$i"
        ids+=("$id")
        start_instance "$id" "$server" "$pods" "$SERVER_CPU"
        ipids+=("${inst_pid[$id]}")
    done
    : >"$samples"
    while :; do
        all=1
        for id in "${ids[@]}"; do
            kill -0 "${inst_pid[$id]}" 2>/dev/null || die "$id exited: $(tail -n 5 "$work/$id/log")"
            is_ready "$id" || { all=0; break; }
        done
        ((all)) && break
        rss=$(rss_kb "$api")
        ((rss > peak)) && peak=$rss
        socket_sample "${ipids[@]}" >>"$samples"
        awk -v t0="$t0" -v now="$(date +%s.%N)" 'BEGIN { exit !(now - t0 > 600) }' &&
            die "$server not ready within 600 s"
        sleep 0.05
    done
    t1=$(date +%s.%N)
    c1=$(cpu_ticks "$api")
    for id in "${ids[@]}"; do
        rss_sync=$((rss_sync + $(rss_kb "${inst_pid[$id]}")))
    done
    socket_sample "${ipids[@]}" >>"$samples"
    for ((i = 0; i < STEADY; i++)); do
        sleep 1
        socket_sample "${ipids[@]}" >>"$samples"
    done
    c2=$(cpu_ticks "$api")
    rss=$(rss_kb "$api")
    ((rss > peak)) && peak=$rss
    for id in "${ids[@]}"; do
        rss_steady=$((rss_steady + $(rss_kb "${inst_pid[$id]}")))
    done
    read -r rx tx <<<"$(socket_totals "$samples")"
    sleep 1 # the audit log is written a moment after the request
    a1=$(audit_lines)
    for id in "${ids[@]}"; do stop_instance "$id"; done
    awk -v t0="$t0" -v t1="$t1" -v n="$count" -v rs="$rss_sync" -v rt="$rss_steady" \
        -v cs="$(cpu_seconds "$c0" "$c1")" -v ct="$(cpu_seconds "$c1" "$c2")" \
        -v g="$((peak > r0 ? peak - r0 : 0))" -v req="$(audit_requests "$a0" "$a1" "${account[$server]}")" \
        -v rx="$rx" -v tx="$tx" \
        'BEGIN { printf "%.2f %d %d %s %s %d %s %d %d\n", t1 - t0, rs / n, rt / n, cs, ct, g, req, rx, tx }'
}

# The prober: programming latency from outside (see bench/README.md). Writes through the API
# server itself (the admin's certificate), polls both servers over UDP.
cat >"$work/probe.py" <<'EOF'
import http.client, json, random, select, socket, ssl, struct, sys, threading, time

cfg = json.loads(sys.argv[1])
ctx = ssl.create_default_context(cafile=cfg["ca"])
ctx.load_cert_chain(cfg["cert"], cfg["key"])
def conn():
    return http.client.HTTPSConnection("127.0.0.1", cfg["api_port"], context=ctx, timeout=30)
api = conn()
def call(method, path, body=None, ctype="application/json"):
    data = json.dumps(body).encode() if body is not None else None
    t_send = time.monotonic()
    api.request(method, path, body=data, headers={"Content-Type": ctype})
    resp = api.getresponse()
    payload = resp.read()
    t_resp = time.monotonic()
    if resp.status >= 300:
        sys.exit(f"{method} {path}: {resp.status} {payload[:300]!r}")
    return json.loads(payload), t_send, t_resp

def query(name, qid):
    q = struct.pack(">HHHHHH", qid, 0, 1, 0, 0, 0)
    for label in name.rstrip(".").split("."):
        q += bytes([len(label)]) + label.encode()
    return q + b"\0" + struct.pack(">HH", 1, 1)

def skip_name(m, i):
    while True:
        n = m[i]
        if n == 0:
            return i + 1
        if n & 0xC0 == 0xC0:
            return i + 2
        i += n + 1

def answer(m):
    """(rcode, frozenset of A addresses)"""
    rcode = m[3] & 0xF
    qd, an = struct.unpack(">HH", m[4:8])
    i = 12
    for _ in range(qd):
        i = skip_name(m, i) + 4
    addrs = set()
    for _ in range(an):
        i = skip_name(m, i)
        t, _c, _ttl, rdlen = struct.unpack(">HHIH", m[i:i + 10])
        i += 10
        if t == 1 and rdlen == 4:
            addrs.add(socket.inet_ntoa(m[i:i + 4]))
        i += rdlen
    return rcode, frozenset(addrs)

servers = cfg["servers"]  # name -> port
socks = {}
for name, port in servers.items():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect(("127.0.0.1", port))
    s.setblocking(False)
    socks[name] = s

def poll_until(qname, done, deadline):
    """Polls every server for qname A until done(addrs) holds for it; returns name -> time."""
    seen = {}
    while len(seen) < len(socks) and time.monotonic() < deadline:
        qid = random.randrange(65536)
        pending = {}
        for name, s in socks.items():
            if name in seen:
                continue
            try:
                s.send(query(qname, qid))
                pending[s] = name
            except OSError:
                pass
        end = time.monotonic() + 0.002
        while pending and time.monotonic() < end:
            ready, _, _ = select.select(list(pending), [], [], max(0, end - time.monotonic()))
            for s in ready:
                try:
                    m = s.recv(4096)
                except OSError:
                    pending.pop(s, None)
                    continue
                now = time.monotonic()
                if struct.unpack(">H", m[:2])[0] != qid:
                    continue
                name = pending.pop(s)
                rcode, addrs = answer(m)
                if rcode == 0 and done(addrs):
                    seen[name] = now
        time.sleep(cfg.get("interval", 0.0003))
    return seen

ns = cfg["namespace"]
out = []
names = list(servers)
if cfg["mode"] == "service":
    for i in range(cfg["samples"]):
        svc = f"lat-{cfg['tag']}-{i}"
        body = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": svc},
                "spec": {"ports": [{"name": "http", "port": 80}]}}
        obj, t_send, t_resp = call("POST", f"/api/v1/namespaces/{ns}/services", body)
        ip = obj["spec"]["clusterIP"]
        seen = poll_until(f"{svc}.{ns}.svc.cluster.local", lambda a: ip in a, t_resp + 30)
        out.append([(seen[n] - t_resp) * 1000 if n in seen else None for n in names]
                   + [(t_resp - t_send) * 1000])
        time.sleep(0.2)
else:
    # A headless Service whose Deployment is scaled 1 -> 2 -> 1: the time to the new address.
    deploy, svc = cfg["deployment"], cfg["service"]
    events = []  # (time, frozenset of ready addresses) as a watch sees them
    def watch():
        c = conn()
        c.timeout = None
        c.request("GET", f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices?watch=1"
                  f"&labelSelector=kubernetes.io%2Fservice-name%3D{svc}")
        r = c.getresponse()
        slices, buf = {}, b""
        while True:
            chunk = r.read1(65536)
            if not chunk:
                return
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                t = time.monotonic()
                ev = json.loads(line)
                o = ev["object"]
                key = o["metadata"]["name"]
                if ev["type"] == "DELETED":
                    slices.pop(key, None)
                else:
                    slices[key] = frozenset(a for e in (o.get("endpoints") or [])
                                            if (e.get("conditions") or {}).get("ready")
                                            for a in e["addresses"] if ":" not in a)
                events.append((t, frozenset().union(*slices.values()) if slices else frozenset()))
    threading.Thread(target=watch, daemon=True).start()
    qname = f"{svc}.{ns}.svc.cluster.local"
    scale = f"/apis/apps/v1/namespaces/{ns}/deployments/{deploy}/scale"
    def settle(n):
        seen = poll_until(qname, lambda a: len(a) == n, time.monotonic() + 60)
        if len(seen) < len(names):
            sys.exit(f"the servers did not settle on {n} addresses for {qname}")
    time.sleep(1)
    settle(1)
    for i in range(cfg["samples"]):
        base = events[-1][1] if events else frozenset()
        _, t_send, t_resp = call("PATCH", scale, {"spec": {"replicas": 2}},
                                 "application/merge-patch+json")
        seen = poll_until(qname, lambda a: bool(a - base) and len(a) == 2, t_resp + 30)
        t_slice = next((t for t, a in events if t >= t_send and a - base), None)
        row = [(seen[n] - t_resp) * 1000 if n in seen else None for n in names]
        row += [(seen[n] - t_slice) * 1000 if n in seen and t_slice else None for n in names]
        out.append(row + [(t_slice - t_resp) * 1000 if t_slice else None])
        call("PATCH", scale, {"spec": {"replicas": 1}}, "application/merge-patch+json")
        settle(1)
        time.sleep(0.2)
for row in out:
    print(" ".join("nan" if v is None else f"{v:.3f}" for v in row))
EOF

# p50 and p99 of column $2 of file $1 ("nan" for a sample that timed out); "p50 p99 timeouts".
column_percentiles() {
    awk -v c="$2" '{ if ($c == "nan") t++; else print $c }' "$1" | sort -g |
        awk -v t="$(awk -v c="$2" '$c == "nan"' "$1" | wc -l)" '{ v[NR] = $1 } END {
            if (NR == 0) { print "nan nan " t; exit }
            i50 = int(NR * 0.50 + 0.5); if (i50 < 1) i50 = 1
            i99 = int(NR * 0.99 + 0.5); if (i99 < 1) i99 = 1; if (i99 > NR) i99 = NR
            printf "%.2f %.2f %d\n", v[i50], v[i99], t }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 > 0 && a != "nan") printf "%.2f", a / b; else printf "—" }'; }
mb() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

# dnsperf against instance $1, pinned: "qps completed lost cpu_s".
dnsperf_run() {
    local id=$1 prefix=$2 queries=$3 pid before after qps completed lost
    shift 3
    pid=${inst_pid[$id]}
    before=$(cpu_ticks "$pid")
    taskset -c "$CLIENT_CPU" dnsperf -s 127.0.0.1 -p "${inst_dns[$id]}" -d "$queries" "$@" \
        >"$prefix.txt" 2>&1
    after=$(cpu_ticks "$pid")
    read -r qps completed lost < <(dnsperf_counts "$prefix.txt")
    echo "$qps $completed $lost $(cpu_seconds "$before" "$after")"
}

# Nodes beyond the control plane's own kwok-node-N: bench-node-I with a /24 each from
# 10.248.0.0/13 (IPv4 only).
add_nodes() {
    local have=$1 want=$2 i
    for ((i = have; i < want; i++)); do
        cat <<EOF
---
apiVersion: v1
kind: Node
metadata:
  name: bench-node-$i
  annotations: {kwok.x-k8s.io/node: fake}
  labels: {type: kwok, kubernetes.io/hostname: bench-node-$i, kubernetes.io/os: linux, topology.kubernetes.io/zone: zone-$((i % 2))}
spec:
  podCIDR: 10.$((248 + i / 256)).$((i % 256)).0/24
  podCIDRs: [10.$((248 + i / 256)).$((i % 256)).0/24]
EOF
    done
}

mkdir -p "$out_dir"
stamp=$(date -u +%Y%m%dT%H%M%SZ)
report="$out_dir/vs-coredns-$stamp.md"
declare -a t_qps t_fixed t_mem t_ready t_lat t_churn t_api t_checks t_load

# The Deployments the latency and churn phases scale (headless Services: their addresses are
# answered), on the control plane's kwok nodes or any other.
cat >"$work/workload.yaml" <<EOF
apiVersion: v1
kind: Namespace
metadata: {name: vs-probe}
---
apiVersion: v1
kind: Service
metadata: {name: probe-hl, namespace: vs-probe}
spec: {clusterIP: None, selector: {app: probe-hl}, ports: [{name: http, port: 80}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: probe-hl, namespace: vs-probe}
spec:
  replicas: 1
  selector: {matchLabels: {app: probe-hl}}
  template:
    metadata: {labels: {app: probe-hl}}
    spec: {containers: [{name: c, image: probe}], terminationGracePeriodSeconds: 0}
EOF
for ((i = 0; i < CHURN_DEPLOYMENTS; i++)); do
    cat >>"$work/workload.yaml" <<EOF
---
apiVersion: v1
kind: Service
metadata: {name: churn-$i, namespace: vs-probe}
spec: {clusterIP: None, selector: {app: churn-$i}, ports: [{name: http, port: 80}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: churn-$i, namespace: vs-probe}
spec:
  replicas: 1
  selector: {matchLabels: {app: churn-$i}}
  template:
    metadata: {labels: {app: churn-$i}}
    spec: {containers: [{name: c, image: churn}], terminationGracePeriodSeconds: 0}
EOF
done
churn_loop() {
    local n=0 i
    while :; do
        n=$((n + 1))
        for ((i = 0; i < CHURN_DEPLOYMENTS; i++)); do
            kubectl scale deployment "churn-$i" -n vs-probe --replicas=$((n % 2 ? CHURN_HIGH : 1)) >/dev/null
        done
        echo "$n" >"$work/churn.count"
        sleep "$CHURN_PERIOD"
    done
}

for services in $SCALES; do
    dir="$work/s$services"
    mkdir -p "$dir"
    cluster_up
    nodes_made=0
    pods=$((services * PODS_PER_SERVICE))
    log "$services Services, $pods pods: generating and loading"
    "$gencluster" --services "$services" --pods "$pods" --out "$dir/generated.json" 2>"$dir/gencluster.txt"
    want_nodes=$(((pods + 20 + PODS_PER_NODE - 1) / PODS_PER_NODE))
    if ((want_nodes > nodes_made)); then
        add_nodes "$nodes_made" "$want_nodes" | kubectl apply -f - >/dev/null
        nodes_made=$want_nodes
    fi
    # gencluster's Namespaces, Pods (on bench-node-*, each given its status by the loader)
    # and Services (with their selectors) created through the API server, LOAD_CONCURRENCY at
    # a time; the EndpointSlice controller writes the slices. Loaded when every pod has an address and
    # the slices hold them (cargo xtask load --wait; bench/README.md, "Loading objects").
    n_fail=0 eps=
    {
        read -r _ _ n_pods n_fail || true
        read -r created_s loaded_s eps || true
    } < <("$xtask" load --objects "$dir/generated.json" --cluster "$cluster_dir" \
        --pods-per-node "$PODS_PER_NODE" --concurrency "$LOAD_CONCURRENCY" --wait 2>"$dir/load.txt")
    [[ -n "${eps:-}" ]] || { cat "$dir/load.txt" >&2; die "cargo xtask load failed"; }
    if ((n_fail > 0)); then
        grep -v '^\[load\]' "$dir/load.txt" >&2 || true
        log "warning: $n_fail objects refused (see above)"
    fi
    t_load+=("$(awk -v s="$services" -v p="$n_pods" -v b="$created_s" -v c="$loaded_s" -v e="$eps" \
        'BEGIN { printf "%d Services and %d pods created and running in %.0f s (%.0f objects/s); the EndpointSlice controller writing %d endpoints took until %.0f s", s, p, b, (s + p) / b, e, c }')")
    if [[ -n "$LOAD_ONLY" ]]; then
        t_load[-1]+=" (peak RSS: kube-apiserver $(mb "$(hwm_kb "$(apiserver_pid)")") MB, etcd $(mb "$(hwm_kb "$(cat "$cluster_dir/pid/etcd.pid")")") MB; etcd's data $(du -sm "$cluster_dir/etcd" | cut -f1) MB)"
        log "${t_load[-1]}"
        [[ -n "${KEEP:-}" ]] || rm -f "$dir/generated.json"
        continue
    fi
    log "${t_load[-1]}"
    # What `kubectl get ns,svc,endpointslices,pods -A -o json` prints, page by page (kubectl
    # itself holds every object at once: the kernel killed it at 150,000 pods).
    read -r _ total_svc _ total_pods < <("$xtask" dump --cluster "$cluster_dir" --out "$dir/objects.json" 2>>"$dir/load.txt")
    [[ -n "${total_pods:-}" ]] || die "cargo xtask dump failed (see $dir/load.txt)"
    "$querymix" --objects "$dir/objects.json" --count "$QUERIES" --out "$dir/queries.txt" 2>"$dir/querymix.txt"
    label="$total_svc / $total_pods"

    # 1. Each alone, then REPLICAS of each, against the API server: sync, steady, its cost.
    declare -A g=()
    for pods_mode in insecure verified; do
        for server in coredns clusterdns; do
            log "$services Services: $server alone, pods $pods_mode"
            g[$server-$pods_mode-1]=$(measure_group "$server" "$pods_mode" 1 "s$services-$pods_mode")
            log "  ${g[$server-$pods_mode-1]}"
            sleep 2
        done
    done
    for server in coredns clusterdns; do
        log "$services Services: $REPLICAS replicas of $server"
        g[$server-insecure-$REPLICAS]=$(measure_group "$server" insecure "$REPLICAS" "s$services-x$REPLICAS")
        log "  ${g[$server-insecure-$REPLICAS]}"
        sleep 2
    done
    for pods_mode in insecure verified; do
        read -r cr cs ct _ <<<"${g[coredns-$pods_mode-1]}"
        read -r dr ds dt _ <<<"${g[clusterdns-$pods_mode-1]}"
        t_ready+=("| $label | $pods_mode | $cr | $dr | $(ratio "$dr" "$cr") |")
        t_mem+=("| $label | after sync, pods $pods_mode | $(mb "$cs") | $(mb "$ds") | $(ratio "$ds" "$cs") |")
        t_mem+=("| $label | steady (${STEADY} s later), pods $pods_mode | $(mb "$ct") | $(mb "$dt") | $(ratio "$dt" "$ct") |")
    done
    for n in 1 "$REPLICAS"; do
        for server in coredns clusterdns; do
            read -r _ _ _ acs act agr li wa ot _ rx tx <<<"${g[$server-insecure-$n]}"
            t_api+=("| $label | $n | $server | $li / $wa / $ot | $(mb $((rx / 1024))) / $(mb $((tx / 1024))) | $acs | $act | $(mb "$agr") |")
        done
        read -r _ _ _ acs act agr li wa ot _ rx <<<"${g[coredns-insecure-$n]}"
        read -r _ _ _ dcs dct dgr dli dwa dot _ drx <<<"${g[clusterdns-insecure-$n]}"
        t_api+=("| $label | $n | clusterdns / CoreDNS | $(ratio $((dli + dwa + dot)) $((li + wa + ot))) | $(ratio "$drx" "$rx") | $(ratio "$dcs" "$acs") | $(ratio "$dct" "$act") | $(ratio "$dgr" "$agr") |")
    done

    # 2. One of each, together, pinned to CPU $SERVER_CPU: answers, dnsperf.
    log "$services Services: one of each together, pinned to CPU $SERVER_CPU"
    start_instance c coredns insecure "$SERVER_CPU"
    start_instance d clusterdns insecure "$SERVER_CPU"
    until is_ready c && is_ready d; do
        { kill -0 "${inst_pid[c]}" && kill -0 "${inst_pid[d]}"; } || die "a server exited (see $work/c/log, $work/d/log)"
        sleep 0.1
    done
    checked=0 mismatches=0
    while read -r name type; do
        a=$(ask "${inst_dns[c]}" "$name" "$type")
        b=$(ask "${inst_dns[d]}" "$name" "$type")
        checked=$((checked + 1))
        if [[ "$a" != "$b" ]]; then
            mismatches=$((mismatches + 1))
            printf 'MISMATCH %s %s\n  coredns:    %s\n  clusterdns: %s\n' "$name" "$type" "$a" "$b" >>"$dir/mismatches.txt"
        fi
    done < <(awk '!seen[$0]++' "$dir/queries.txt" | head -n "$CHECK")
    t_checks+=("$label: $checked distinct questions of the query file asked of both with dig; $mismatches with a different rcode or answer RRset$( ((mismatches == 0)) || echo " (the first: $(head -n 3 "$dir/mismatches.txt" | tr '\n' ' ' | tr -s ' '))")")
    log "${t_checks[-1]}"
    declare -A q=()
    for id in c d; do
        log "$services Services: dnsperf against ${inst_server[$id]}"
        taskset -c "$CLIENT_CPU" dnsperf -s 127.0.0.1 -p "${inst_dns[$id]}" -d "$dir/queries.txt" \
            -m udp -T 4 -c 8 -q 200 -l "$WARMUP" >"$dir/$id.warmup.txt" 2>&1
        q[$id-udp]=$(dnsperf_run "$id" "$dir/$id.udp" "$dir/queries.txt" -m udp -T 4 -c 8 -q 200 -l "$DURATION")
        q[$id-tcp]=$(dnsperf_run "$id" "$dir/$id.tcp" "$dir/queries.txt" -m tcp -T 4 -c 128 -q 2000 -l "$DURATION")
        q[$id-fixed]=$(dnsperf_run "$id" "$dir/$id.fixed" "$dir/queries.txt" -m udp -T 4 -c 8 -q 200 -Q "$FIXED_QPS" -l "$DURATION")
    done
    for tr in udp tcp; do
        read -r cq cd _ cc <<<"${q[c-$tr]}"
        read -r dq dd _ dc <<<"${q[d-$tr]}"
        cpq=$(awk -v a="$cd" -v b="$cc" 'BEGIN { printf "%.0f", (b > 0) ? a / b : 0 }')
        dpq=$(awk -v a="$dd" -v b="$dc" 'BEGIN { printf "%.0f", (b > 0) ? a / b : 0 }')
        t_qps+=("| $label | ${tr^^} | $cq | $dq | $cpq | $dpq | $(ratio "$dpq" "$cpq") |")
    done
    read -r cq cd cl cc <<<"${q[c-fixed]}"
    read -r dq dd dl dc <<<"${q[d-fixed]}"
    cm=$(awk -v c="$cc" -v d="$DURATION" 'BEGIN { printf "%.0f", c / d * 1000 }')
    dm=$(awk -v c="$dc" -v d="$DURATION" 'BEGIN { printf "%.0f", c / d * 1000 }')
    cp=$(awk -v m="$cm" -v q="$cq" 'BEGIN { printf "%.1f", (q > 0) ? m / q * 1000 : 0 }')
    dp=$(awk -v m="$dm" -v q="$dq" 'BEGIN { printf "%.1f", (q > 0) ? m / q * 1000 : 0 }')
    t_fixed+=("| $label | $cq ($cl lost) | $dq ($dl lost) | $cm | $dm | $cp | $dp | $(ratio "$dp" "$cp") |")

    # 3. Programming latency and churn: both on CPUs 0-1 so that neither waits for the other.
    for id in c d; do taskset -a -p -c 0,1 "${inst_pid[$id]}" >/dev/null; done
    probe_cfg() {
        printf '{"ca":"%s","cert":"%s","key":"%s","api_port":%s,"servers":{"coredns":%s,"clusterdns":%s},"namespace":"vs-probe","mode":"%s","samples":%s,"tag":"%s","deployment":"probe-hl","service":"probe-hl"}' \
            "$cluster_dir/pki/ca.crt" "$cluster_dir/pki/admin.crt" "$cluster_dir/pki/admin.key" "$api_port" \
            "${inst_dns[c]}" "${inst_dns[d]}" "$1" "$SAMPLES" "$2"
    }
    lat_rows() { # FILE CASE
        local c50 c99 ct d50 d99 dt
        read -r c50 c99 ct <<<"$(column_percentiles "$1" 1)"
        read -r d50 d99 dt <<<"$(column_percentiles "$1" 2)"
        t_lat+=("| $label | $2 | $c50 / $c99 | $d50 / $d99 | $(ratio "$d50" "$c50") / $(ratio "$d99" "$c99") | $(wc -l <"$1") ($ct / $dt timed out) |")
        if [[ "$2" == *scale* ]]; then
            read -r c50 c99 ct <<<"$(column_percentiles "$1" 3)"
            read -r d50 d99 dt <<<"$(column_percentiles "$1" 4)"
            t_lat+=("| $label | $2, from the slice event | $c50 / $c99 | $d50 / $d99 | $(ratio "$d50" "$c50") / $(ratio "$d99" "$c99") | $(wc -l <"$1") |")
        fi
    }
    for phase in idle churn; do
        if [[ "$phase" == churn ]]; then
            rm -f "$work/churn.count"
            churn_loop &
            churn_pid=$!
            pids+=("$churn_pid")
            until [[ -s "$work/churn.count" ]]; do sleep 0.2; done
            sleep 2
            log "$services Services: server CPU over ${CHURN_WINDOW} s of churn"
            c0=$(cpu_ticks "${inst_pid[c]}")
            d0=$(cpu_ticks "${inst_pid[d]}")
            n0=$(<"$work/churn.count")
            if [[ -n "$PERF_CHURN" ]]; then
                # A profile of clusterdns over the window (its overhead counts in the figure).
                perf record -q -F 2000 --call-graph dwarf,16384 -p "${inst_pid[d]}" \
                    -o "$PERF_CHURN" -- sleep "$CHURN_WINDOW" 2>/dev/null
            else
                sleep "$CHURN_WINDOW"
            fi
            c1=$(cpu_ticks "${inst_pid[c]}")
            d1=$(cpu_ticks "${inst_pid[d]}")
            n1=$(<"$work/churn.count")
            cm=$(awk -v c="$(cpu_seconds "$c0" "$c1" 3)" -v w="$CHURN_WINDOW" 'BEGIN { printf "%.1f", c / w * 1000 }')
            dm=$(awk -v c="$(cpu_seconds "$d0" "$d1" 3)" -v w="$CHURN_WINDOW" 'BEGIN { printf "%.1f", c / w * 1000 }')
            t_churn+=("| $label | $(awk -v n=$((n1 - n0)) -v k="$CHURN_DEPLOYMENTS" -v w="$CHURN_WINDOW" 'BEGIN { printf "%.1f", n * k / w }') | $cm | $dm | $(ratio "$dm" "$cm") |")
        fi
        log "$services Services: programming latency, $phase"
        python3 "$work/probe.py" "$(probe_cfg service "$services-$phase")" >"$dir/lat-service-$phase.txt"
        lat_rows "$dir/lat-service-$phase.txt" "new Service, $phase"
        python3 "$work/probe.py" "$(probe_cfg scale "$services-$phase")" >"$dir/lat-scale-$phase.txt"
        lat_rows "$dir/lat-scale-$phase.txt" "Deployment scaled up, $phase"
        if [[ "$phase" == churn ]]; then
            kill "$churn_pid" 2>/dev/null || true
            wait "$churn_pid" 2>/dev/null || true
            for ((i = 0; i < CHURN_DEPLOYMENTS; i++)); do
                kubectl scale deployment "churn-$i" -n vs-probe --replicas=1 >/dev/null
            done
        fi
    done

    # 4. A full re-list: the API server restarted under both; their peak RSS meanwhile.
    log "$services Services: restarting kube-apiserver (both re-list)"
    for id in c d; do echo 5 >"/proc/${inst_pid[$id]}/clear_refs"; done
    a0=$(audit_lines)
    declare -A peak=([c]=0 [d]=0)
    cluster restart kube-apiserver --dir "$cluster_dir" 2>>"$work/cluster.log" &
    restart_pid=$!
    wait "$restart_pid" || die "kube-apiserver did not come back (see $cluster_dir/log)"
    # Until each has read the whole state again (a list or a WatchList in the audit log), then 5 s more.
    deadline=$((SECONDS + 120 + services / 100))
    while ((SECONDS < deadline)); do
        a1=$(audit_lines)
        read -r _ _ _ cl <<<"$(audit_requests "$a0" "$a1" coredns)"
        read -r _ _ _ dl <<<"$(audit_requests "$a0" "$a1" clusterdns)"
        ((cl > 0 && dl > 0)) && break
        sleep 1
    done
    sleep 5
    a1=$(audit_lines)
    read -r cl cw _ ci <<<"$(audit_requests "$a0" "$a1" coredns)"
    read -r dl dw _ di <<<"$(audit_requests "$a0" "$a1" clusterdns)"
    ch=$(hwm_kb "${inst_pid[c]}")
    dh=$(hwm_kb "${inst_pid[d]}")
    t_mem+=("| $label | peak during a re-list (API server restarted; after it lists / watches / of them with the whole state: CoreDNS $cl / $cw / $ci, clusterdns $dl / $dw / $di) | $(mb "$ch") | $(mb "$dh") | $(ratio "$dh" "$ch") |")
    stop_instance c
    stop_instance d
    [[ -n "${KEEP:-}" ]] || rm -f "$dir/generated.json" "$dir/objects.json"
done

if [[ -n "$LOAD_ONLY" ]]; then
    printf -- '- Loading: %s.\n' "${t_load[@]}"
    exit 0
fi
{
    echo "# clusterdns beside CoreDNS, on a local control plane ($stamp)"
    echo
    echo "$(uname -srm); $(nproc) CPUs ($(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)); $("$coredns" -version 2>&1 | head -n1); clusterdns $(git -C "$repo" describe --always --dirty 2>/dev/null); $("$peers/kube-apiserver" --version 2>&1); $(dnsperf -h 2>&1 | awk '/^Version/ { print "dnsperf " $2 }')"
    echo
    echo "Method: cargo xtask cluster (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok). gencluster's Namespaces, Services (with selectors) and Pods ($PODS_PER_SERVICE per Service, bound to kwok nodes) created through the API server, Pods first, each given its status (Running, Ready, an address) by the loader; the EndpointSlice controller writes the slices. Both servers run kubeadm's Corefile (deploy/configmap.yaml) on loopback, \`forward\` to a knotd that refuses, each as its own ServiceAccount (kube-system/coredns for CoreDNS, kube-system/clusterdns for clusterdns) bound to ClusterRole system:coredns with a TokenRequest token; clusterdns keeps the ConfigMap's \`snapshot\` line (SNAPSHOT=$SNAPSHOT), CoreDNS has none; every start is cold (no snapshot file). Servers pinned to CPU $SERVER_CPU, dnsperf to CPU $CLIENT_CPU. Details: bench/README.md, \"clusterdns beside CoreDNS\"."
    echo
    for line in "${t_load[@]}"; do echo "- Loading: $line."; done
    echo
    echo "## Queries per server CPU-second"
    echo
    echo "\`dnsperf -T 4 -c 8 -q 200 -l $DURATION\` (UDP) and \`-m tcp -T 4 -c 128 -q 2000\` (TCP) after a ${WARMUP} s warm-up, $QUERIES-line querymix file from the cluster's dump; completed queries / the server's utime+stime over the run."
    echo
    echo "| Services / pods | transport | CoreDNS qps | clusterdns qps | CoreDNS queries / CPU s | clusterdns queries / CPU s | clusterdns / CoreDNS |"
    echo "| --- | --- | ---: | ---: | ---: | ---: | ---: |"
    printf '%s\n' "${t_qps[@]}"
    echo
    echo "## CPU at a fixed $FIXED_QPS qps"
    echo
    echo "\`dnsperf -Q $FIXED_QPS\` over UDP for $DURATION s; the server's CPU over the run. A server that cannot carry the rate is saturated there: the ratio is per 1,000 achieved qps."
    echo
    echo "| Services / pods | CoreDNS achieved qps | clusterdns achieved qps | CoreDNS millicores | clusterdns millicores | CoreDNS millicores / 1,000 qps | clusterdns millicores / 1,000 qps | clusterdns / CoreDNS |"
    echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    printf '%s\n' "${t_fixed[@]}"
    echo
    echo "## Memory (RSS, MB)"
    echo
    echo "Each started alone (after sync: at /ready 200; steady: $STEADY s later). The re-list peak: VmHWM reset (clear_refs 5) before the API server restart, read once both have listed again and 5 s more."
    echo
    echo "| Services / pods | when | CoreDNS | clusterdns | clusterdns / CoreDNS |"
    echo "| --- | --- | ---: | ---: | ---: |"
    printf '%s\n' "${t_mem[@]}"
    echo
    echo "## Start to ready"
    echo
    echo "Seconds from the exec to /ready 200 on the ready plugin's port, each started alone, cold."
    echo
    echo "| Services / pods | pods | CoreDNS s | clusterdns s | clusterdns / CoreDNS |"
    echo "| --- | --- | ---: | ---: | ---: |"
    printf '%s\n' "${t_ready[@]}"
    echo
    echo "## Programming latency (ms, p50 / p99)"
    echo
    echo "Both running, unpinned (CPUs 0-1). The prober writes through the API server itself and polls both servers over UDP about every 0.5 ms. New Service: from the POST's response (the write committed) to the first answer with its ClusterIP. Deployment scaled up (a headless Service, 1 -> 2 replicas, back to 1 between samples): from the scale PATCH's response to the first A RRset with the new address (the controllers' chain included, the same for both), and from the moment a watch of the prober's own received the slice with it (what the server itself adds). Churn: $CHURN_DEPLOYMENTS headless Deployments scaled 1 <-> $CHURN_HIGH every $CHURN_PERIOD s by kubectl."
    echo
    echo "| Services / pods | case | CoreDNS | clusterdns | clusterdns / CoreDNS | samples |"
    echo "| --- | --- | ---: | ---: | ---: | ---: |"
    printf '%s\n' "${t_lat[@]}"
    echo
    echo "## Server CPU during churn"
    echo
    echo "Both running, unpinned, no queries; utime+stime over $CHURN_WINDOW s of churn."
    echo
    echo "| Services / pods | scalings / s | CoreDNS millicores | clusterdns millicores | clusterdns / CoreDNS |"
    echo "| --- | ---: | ---: | ---: | ---: |"
    printf '%s\n' "${t_churn[@]}"
    echo
    echo "## What the replicas cost the API server"
    echo
    echo "Each server's group started alone (1 replica, then $REPLICAS started together). Requests: the service account's lists / watches / other requests in the audit log from the start to the end of the steady window. Bytes: bytes_received / bytes_sent (ss -ti, TLS included) of the servers' connections to the API server, sampled every 50 ms during the sync and every second after it, the largest reading of each connection, summed over connections and replicas. API server: its CPU seconds from the start to the last /ready 200 (sync) and over the $STEADY s steady window, its RSS growth (peak sampled every 50 ms, against before the start)."
    echo
    echo "| Services / pods | replicas | server | lists / watches / other | received / sent MB | API server CPU s, sync | API server CPU s, steady | API server RSS growth MB |"
    echo "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |"
    printf '%s\n' "${t_api[@]}"
    echo
    echo "## Answers"
    echo
    printf -- '- %s\n' "${t_checks[@]}"
} >"$report"
for services in $SCALES; do
    [[ -f "$work/s$services/mismatches.txt" ]] && cp "$work/s$services/mismatches.txt" "$out_dir/vs-coredns-$stamp-$services-mismatches.txt"
done
cat "$report"
log "report: $report"
