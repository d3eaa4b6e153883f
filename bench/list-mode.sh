#!/usr/bin/env bash
# The two ways the API watch can read its initial state, measured on the real control plane
# (cargo xtask cluster): `list_mode paginated` (LIST in pages of 500, then a watch) and
# `list_mode streaming` (one watch with sendInitialEvents=true, WatchList). For each, RUNS
# starts of the release binary on a synthetic cluster of SERVICES Services from
# examples/gencluster, as ServiceAccount kube-system/coredns, and reports per start: the time
# to the first sync, clusterdns's peak RSS, and the API server's CPU time and RSS growth
# meanwhile. Run alternately, in one cluster, so both see the same machine.
#
#   bench/list-mode.sh                    # 2,000 Services, 3 runs each
#   SERVICES=10000 RUNS=5 bench/list-mode.sh
#
# The objects are loaded as they are (Services without their selectors and as ClusterIP, so
# the EndpointSlice controller leaves gencluster's slices alone and no NodePort range runs
# out; their slices without ownerReferences, which name uids that do not exist here; no Pods:
# the zone needs none with `pods insecure`).
set -euo pipefail

SERVICES=${SERVICES:-2000}
RUNS=${RUNS:-3}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$repo/bench/common.sh"
bench_start list-mode
need_tools python3 curl
build_release

# The control plane (xtask/src/cluster.rs), from the peers bench/peers/build.sh builds.
(cd "$repo" && cargo build --release --package xtask) >>"$work/build.log" 2>&1 ||
    { cat "$work/build.log" >&2; die "cargo build --package xtask failed"; }
peers=$("$repo/bench/peers/build.sh" --dir)
cluster() { CLUSTERDNS_PEERS="$peers" "$target/release/xtask" cluster "$@"; }

log "starting the control plane"
trap 'cluster down --dir "$work/cluster" >/dev/null 2>&1 || true; cleanup' EXIT
cluster up --dir "$work/cluster" 2>"$work/cluster.log" ||
    { cat "$work/cluster.log" >&2; die "xtask cluster up failed"; }
eval "$(cluster env --dir "$work/cluster")"
apiserver_pid=$(<"$work/cluster/pid/kube-apiserver.pid")
kubectl apply --server-side --force-conflicts -f "$repo/deploy/rbac.yaml" >/dev/null

log "loading $SERVICES Services"
"$gencluster" --services "$SERVICES" --out "$work/generated.json" 2>/dev/null
python3 - "$work/generated.json" "$work" <<'EOF'
import json, sys
items = json.load(open(sys.argv[1]))["items"]
out = {"Namespace": [], "Service": [], "EndpointSlice": []}
existing = {("default", "kubernetes"), ("kube-system", "kube-dns")}
for item in items:
    kind = item["kind"]
    if kind not in out:
        continue
    meta = item["metadata"]
    for key in ("resourceVersion", "uid", "creationTimestamp", "generation", "managedFields", "ownerReferences"):
        meta.pop(key, None)
    if kind == "Namespace" and meta["name"] in ("default", "kube-system"):
        continue
    if kind == "Service":
        if (meta.get("namespace"), meta["name"]) in existing:
            continue
        spec = item["spec"]
        spec.pop("selector", None)
        if spec.get("type") in ("NodePort", "LoadBalancer"):
            spec["type"] = "ClusterIP"
        for key in ("allocateLoadBalancerNodePorts", "externalTrafficPolicy", "healthCheckNodePort"):
            spec.pop(key, None)
        for port in spec.get("ports", []):
            port.pop("nodePort", None)
        item.pop("status", None)
    if kind == "EndpointSlice":
        if meta.get("namespace") == "default" and meta["name"] == "kubernetes":
            continue
        meta.setdefault("labels", {})["endpointslice.kubernetes.io/managed-by"] = "gencluster.clusterdns.test"
    out[kind].append(item)
for kind, objects in out.items():
    with open(f"{sys.argv[2]}/{kind}.json", "w") as f:
        json.dump({"apiVersion": "v1", "kind": "List", "items": objects}, f)
EOF
start=$SECONDS
for kind in Namespace Service EndpointSlice; do
    kubectl create -f "$work/$kind.json" >/dev/null
done
log "loaded in $((SECONDS - start)) s: $(kubectl get services -A --no-headers | wc -l) Services, $(kubectl get endpointslices -A --no-headers | wc -l) EndpointSlices"

token=$(kubectl create token coredns -n kube-system --duration 2h)
api_port=$(awk -F= '$1 == "APISERVER_PORT" { print $2 }' "$work/cluster/ports")
cat >"$work/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: "https://127.0.0.1:$api_port", certificate-authority: "$work/cluster/pki/ca.crt"}
users:
- name: coredns
  user: {token: "$token"}
contexts:
- name: coredns
  context: {cluster: local, user: coredns}
current-context: coredns
EOF

# One start in MODE: "seconds_to_sync clusterdns_peak_MB apiserver_cpu_s apiserver_rss_growth_MB".
measure() {
    local mode=$1 pid t0 t1 cpu0 cpu1 rss0 rss peak=0 port ready
    read -r port ready <<<"$(python3 -c 'import socket
s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1",0)) for x in s]
print(*[x.getsockname()[1] for x in s])')"
    cat >"$work/Corefile" <<EOF
.:$port {
    bind 127.0.0.1
    ready 127.0.0.1:$ready
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig $work/kubeconfig
        pods insecure
        list_mode $mode
        startup_timeout 0
    }
}
EOF
    rss0=$(rss_kb "$apiserver_pid")
    cpu0=$(cpu_ticks "$apiserver_pid")
    t0=$(date +%s.%N)
    "$clusterdns" serve --corefile "$work/Corefile" 2>"$work/$mode.log" &
    pid=$!
    until curl -sf "http://127.0.0.1:$ready/ready" >/dev/null 2>&1; do
        kill -0 "$pid" 2>/dev/null || die "clusterdns exited: $(tail -3 "$work/$mode.log")"
        rss=$(rss_kb "$apiserver_pid")
        ((rss > peak)) && peak=$rss
        sleep 0.02
    done
    t1=$(date +%s.%N)
    cpu1=$(cpu_ticks "$apiserver_pid")
    local hwm
    hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status")
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    awk -v t0="$t0" -v t1="$t1" -v hwm="$hwm" -v c="$(cpu_seconds "$cpu0" "$cpu1")" \
        -v peak="$peak" -v rss0="$rss0" \
        'BEGIN { printf "%.2f %.1f %s %.1f\n", t1 - t0, hwm / 1024, c, (peak > rss0 ? peak - rss0 : 0) / 1024 }'
}

mkdir -p "$repo/bench/out"
out="$repo/bench/out/list-mode-$SERVICES.txt"
{
    echo "list modes, $SERVICES Services ($(kubectl get endpointslices -A --no-headers | wc -l) slices), $RUNS runs each, $(date -u +%F)"
    echo "mode        sync_s  clusterdns_peak_MB  apiserver_cpu_s  apiserver_rss_growth_MB"
} | tee "$out"
for ((run = 1; run <= RUNS; run++)); do
    for mode in paginated streaming; do
        sleep 3
        printf '%-10s  %s\n' "$mode" "$(measure "$mode")" | tee -a "$out"
    done
done
awk 'NR > 2 { n[$1]++; s[$1] += $2; m[$1] += $3; c[$1] += $4; r[$1] += $5 }
     END {
        for (k in n) printf "mean %-10s  %.2f s  %.1f MB  %.2f s  %.1f MB\n", k, s[k]/n[k], m[k]/n[k], c[k]/n[k], r[k]/n[k]
        if (n["paginated"] && n["streaming"])
            printf "streaming / paginated: sync %.2fx, clusterdns peak %.2fx, API server CPU %.2fx\n",
                (s["streaming"]/n["streaming"]) / (s["paginated"]/n["paginated"]),
                (m["streaming"]/n["streaming"]) / (m["paginated"]/n["paginated"]),
                (c["streaming"]/n["streaming"]) / (c["paginated"]/n["paginated"])
     }' "$out" | tee -a "$out"
log "written to $out"
