#!/usr/bin/env bash
# A local Kubernetes control plane without containers, on loopback, from the peers that
# bench/peers/build.sh builds: etcd, kube-apiserver (RBAC, service-account tokens, a
# dual-stack service CIDR, an audit log of service accounts' requests), kube-controller-manager
# (endpointslice, namespace, deployment, replicaset, statefulset, serviceaccount and its tokens,
# the garbage collector), kube-scheduler, and kwok standing in for the kubelets of a few fake
# nodes: a Deployment yields Pods that are scheduled, get addresses and turn Running and Ready,
# and the real EndpointSlice controller writes real slices for them.
#
#   bench/cluster.sh up [--dir DIR] [--nodes N] [--owner PID] [--compaction-interval DURATION]
#                       [--watch-cache-sizes RESOURCE#SIZE,...] [--feature-gates GATE=BOOL,...]
#   bench/cluster.sh env [--dir DIR]     # the exports for kubectl: eval "$(bench/cluster.sh env)"
#   bench/cluster.sh down [--dir DIR]    # stops everything it started, by PID
#   bench/cluster.sh stop|start|restart COMPONENT [--dir DIR]   # etcd, kube-apiserver, ...
#
# DIR (default $TMPDIR/clusterdns-cluster, or CLUSTER_DIR) holds everything: pki/,
# admin.kubeconfig, the logs (log/), the PIDs (pid/), etcd's data and `ports`. With --owner,
# the cluster goes down by itself once process PID has exited (the tests use this). `up` prints
# how long it took; nothing listens beyond 127.0.0.1.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
self="$repo/bench/cluster.sh"

usage() { sed -n '10,14p' "$self" | sed 's/^# \{0,1\}//' >&2; exit 2; }
say() { printf '[cluster] %s\n' "$*" >&2; }
die() { printf '[cluster] error: %s\n' "$*" >&2; exit 1; }

action=${1:-}
[[ -n "$action" ]] || usage
shift
component=
case "$action" in
    stop | start | restart)
        component=${1:-}
        [[ -n "$component" ]] || usage
        shift
        ;;
esac
dir=${CLUSTER_DIR:-${TMPDIR:-/tmp}/clusterdns-cluster}
nodes=${CLUSTER_NODES:-3}
owner=
compaction_interval=
watch_cache_sizes=
feature_gates=
while (($#)); do
    case "$1" in
        --dir) dir=$2; shift 2 ;;
        --nodes) nodes=$2; shift 2 ;;
        --owner) owner=$2; shift 2 ;;
        --compaction-interval) compaction_interval=$2; shift 2 ;;
        --watch-cache-sizes) watch_cache_sizes=$2; shift 2 ;;
        --feature-gates) feature_gates=$2; shift 2 ;;
        *) usage ;;
    esac
done
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

# The order components start in (and the reverse of the order they stop in).
components=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok)

pki="$dir/pki"
kubeconfig="$dir/admin.kubeconfig"

peers_dir() {
    if [[ -n "${CLUSTERDNS_PEERS:-}" ]]; then
        echo "$CLUSTERDNS_PEERS"
    else
        "$repo/bench/peers/build.sh" --dir
    fi
}

# N free loopback TCP ports, held together while chosen so they differ.
free_ports() {
    python3 - "$1" <<'EOF'
import socket, sys
held = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in held:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in held))
EOF
}

pid_of() { cat "$dir/pid/$1.pid" 2>/dev/null || true; }
running() { local pid; pid=$(pid_of "$1"); [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; }

# Starts COMPONENT from the command line `up` saved for it (run/COMPONENT, NUL-separated).
start_component() {
    local name=$1 args=()
    running "$name" && return 0
    mapfile -d '' args <"$dir/run/$name"
    nohup "${args[@]}" >>"$dir/log/$name.log" 2>&1 </dev/null &
    echo $! >"$dir/pid/$name.pid"
}

stop_component() {
    local name=$1 pid i
    pid=$(pid_of "$name")
    [[ -n "$pid" ]] || return 0
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for ((i = 0; i < 100; i++)); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$dir/pid/$name.pid"
}

# Saves the command line of COMPONENT for start_component.
save_run() {
    local name=$1
    shift
    printf '%s\0' "$@" >"$dir/run/$name"
}

# Waits until "$@" succeeds, up to $1 seconds, else dies with COMPONENT's log.
wait_until() { # SECONDS COMPONENT WHAT COMMAND...
    local seconds=$1 name=$2 what=$3 deadline
    shift 3
    deadline=$((SECONDS + seconds))
    until "$@" >/dev/null 2>&1; do
        if ! running "$name"; then
            tail -n 30 "$dir/log/$name.log" >&2 || true
            die "$name exited before $what (log: $dir/log/$name.log)"
        fi
        if ((SECONDS >= deadline)); then
            tail -n 30 "$dir/log/$name.log" >&2 || true
            die "$name: no $what within $seconds s (log: $dir/log/$name.log)"
        fi
        sleep 0.2
    done
}

load_ports() {
    [[ -f "$dir/ports" ]] || die "no cluster in $dir (bench/cluster.sh up --dir $dir)"
    # shellcheck source=/dev/null
    source "$dir/ports"
}

kubectl_() { "$peers/kubectl" --kubeconfig "$kubeconfig" "$@"; }

etcd_healthy() { curl -sf "http://127.0.0.1:$ETCD_PORT/health" | grep -q '"health":"true"'; }
apiserver_ready() {
    curl -sf --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" \
        "https://127.0.0.1:$APISERVER_PORT/readyz" | grep -q '^ok$'
}

# Waits until COMPONENT does its job.
wait_ready() {
    case "$1" in
        etcd) wait_until 60 etcd "health" etcd_healthy ;;
        kube-apiserver) wait_until 120 kube-apiserver "/readyz ok" apiserver_ready ;;
        kube-controller-manager)
            # The serviceaccount controller has made the default namespace's account.
            wait_until 60 kube-controller-manager "default ServiceAccount" \
                kubectl_ get serviceaccount default -n default
            ;;
        kube-scheduler | kwok) ;;
    esac
}

make_pki() {
    mkdir -p "$pki"
    (
        cd "$pki"
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 \
            -keyout ca.key -out ca.crt -subj "/CN=clusterdns-test-ca" 2>/dev/null
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
            -keyout apiserver.key -out apiserver.csr -subj "/CN=kube-apiserver" 2>/dev/null
        printf 'subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\nextendedKeyUsage=serverAuth\n' >apiserver.ext
        openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 \
            -extfile apiserver.ext -out apiserver.crt 2>/dev/null
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
            -keyout admin.key -out admin.csr -subj "/O=system:masters/CN=kubernetes-admin" 2>/dev/null
        printf 'extendedKeyUsage=clientAuth\n' >admin.ext
        openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 \
            -extfile admin.ext -out admin.crt 2>/dev/null
        # Service-account tokens are signed with this key (RS256, as kubeadm's sa.key).
        openssl genrsa -out sa.key 2048 2>/dev/null
        openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
        rm -f ./*.csr ./*.ext ./*.srl
    )
}

write_kubeconfig() {
    cat >"$kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    certificate-authority-data: $(base64 -w0 "$pki/ca.crt")
users:
- name: admin
  user:
    client-certificate-data: $(base64 -w0 "$pki/admin.crt")
    client-key-data: $(base64 -w0 "$pki/admin.key")
contexts:
- name: local
  context:
    cluster: local
    user: admin
current-context: local
EOF
}

# The audit policy: every request of a service account (clusterdns runs as one), at Metadata
# level (who, what, when, the response code), nothing else.
write_audit_policy() {
    cat >"$dir/audit-policy.yaml" <<'EOF'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    userGroups: ["system:serviceaccounts"]
  - level: None
EOF
}

# Nodes for kwok: each with an IPv4 and an IPv6 pod range and a zone.
node_manifests() {
    local i v6
    for ((i = 0; i < nodes; i++)); do
        v6=$(printf 'fd00:10:244:%x::/64' "$i")
        ((i > 0)) || v6=fd00:10:244::/64
        cat <<EOF
---
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-$i
  annotations:
    kwok.x-k8s.io/node: fake
  labels:
    type: kwok
    kubernetes.io/hostname: kwok-node-$i
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    topology.kubernetes.io/zone: zone-$((i % 2))
spec:
  podCIDR: 10.244.$i.0/24
  podCIDRs: [10.244.$i.0/24, "$v6"]
EOF
    done
}

up() {
    local start=$SECONDS name
    for name in "${components[@]}"; do
        running "$name" && die "$name is already running from $dir (bench/cluster.sh down --dir $dir)"
    done
    peers=$(peers_dir)
    for name in etcd kube-apiserver kube-controller-manager kube-scheduler kwok kubectl; do
        [[ -x "$peers/$name" ]] || die "$peers/$name missing: run bench/peers/build.sh"
    done
    rm -rf "$dir/etcd" "$dir/pki" "$dir/log" "$dir/pid" "$dir/run"
    mkdir -p "$dir/log" "$dir/pid" "$dir/run"
    read -r ETCD_PORT ETCD_PEER_PORT APISERVER_PORT <<<"$(free_ports 3)"
    printf 'ETCD_PORT=%s\nETCD_PEER_PORT=%s\nAPISERVER_PORT=%s\nPEERS=%s\n' \
        "$ETCD_PORT" "$ETCD_PEER_PORT" "$APISERVER_PORT" "$peers" >"$dir/ports"
    make_pki
    write_kubeconfig
    write_audit_policy

    # The Go runtime's collector, traded for memory: at 150,000 pods (bench/README.md,
    # "Loading objects") the API server, kwok and the controllers spend much of their CPU
    # collecting at the default GOGC=100; GOMEMLIMIT keeps their heaps bounded all the same
    # (the collector works harder as a heap nears it). CLUSTER_GOGC=100 restores the default.
    local gogc=${CLUSTER_GOGC:-400}
    local go_env=(env "GOGC=$gogc" GOMEMLIMIT=3GiB)
    save_run etcd "${go_env[@]}" "$peers/etcd" --name local --data-dir "$dir/etcd" \
        --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
        --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
        --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
        --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
        --initial-cluster "local=http://127.0.0.1:$ETCD_PEER_PORT" \
        --unsafe-no-fsync --log-level warn
    local apiserver=(env "GOGC=$gogc" "GOMEMLIMIT=${CLUSTER_APISERVER_MEMLIMIT:-8GiB}" "$peers/kube-apiserver"
        --etcd-servers "http://127.0.0.1:$ETCD_PORT"
        --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$APISERVER_PORT"
        --cert-dir "$pki"
        --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key"
        --client-ca-file "$pki/ca.crt"
        --authorization-mode RBAC
        --service-account-issuer https://kubernetes.default.svc.cluster.local
        --service-account-key-file "$pki/sa.pub"
        --service-account-signing-key-file "$pki/sa.key"
        --service-cluster-ip-range "10.96.0.0/12,fd00:10:96::/112"
        # Nodes are kwok's: no node-lifecycle controller removes the not-ready taint this
        # plugin would put on them, and no kubelet holds an endpoint for the API server's
        # own Service (loopback addresses are not valid endpoints).
        --disable-admission-plugins TaintNodesByCondition
        --endpoint-reconciler-type none
        --audit-policy-file "$dir/audit-policy.yaml" --audit-log-path "$dir/log/audit.log"
        --audit-log-maxsize 200
        --allow-privileged=true --profiling=false)
    # The API server compacts etcd every 5 min, to the revision of its previous round; a
    # watch etcd serves from before that is answered 410 Gone. Watches the watch cache serves
    # are 410 only from before its window (the cache is sized to hold 75 s of events, and
    # starts anew with the API server), whatever etcd compacted; `services#0` makes etcd serve
    # the services.
    [[ -z "$compaction_interval" ]] || apiserver+=(--etcd-compaction-interval "$compaction_interval")
    [[ -z "$watch_cache_sizes" ]] || apiserver+=(--watch-cache-sizes "$watch_cache_sizes")
    # The API server's feature gates (WatchList=false: it refuses streaming lists).
    [[ -z "$feature_gates" ]] || apiserver+=(--feature-gates "$feature_gates")
    save_run kube-apiserver "${apiserver[@]}"
    save_run kube-controller-manager "${go_env[@]}" "$peers/kube-controller-manager" \
        --kubeconfig "$kubeconfig" --secure-port 0 --leader-elect=false \
        --controllers "endpointslice-controller,namespace-controller,deployment-controller,replicaset-controller,statefulset-controller,serviceaccount-controller,serviceaccount-token-controller,garbage-collector-controller,root-ca-certificate-publisher-controller,service-cidr-controller,clusterrole-aggregation-controller" \
        --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
        --use-service-account-credentials=false \
        --kube-api-qps 500 --kube-api-burst 1000
    save_run kube-scheduler "${go_env[@]}" "$peers/kube-scheduler" \
        --kubeconfig "$kubeconfig" --authentication-kubeconfig "$kubeconfig" \
        --authorization-kubeconfig "$kubeconfig" --secure-port 0 --leader-elect=false \
        --kube-api-qps 500 --kube-api-burst 1000
    # kwok logs every pod it patches at INFO (a line of JSON each, 150,000 of them at the
    # largest load): warnings and errors only.
    save_run kwok "${go_env[@]}" "$peers/kwok" --kubeconfig "$kubeconfig" --config "$repo/bench/peers/kwok.yaml" \
        --v WARN \
        --manage-all-nodes=false --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake \
        --node-ip 10.0.0.1 --node-lease-duration-seconds 0

    for name in "${components[@]}"; do
        start_component "$name"
        wait_ready "$name"
        say "$name running (pid $(pid_of "$name"))"
    done
    # With --nodes 0 the nodes are real ones, joined later (cargo xtask nodes).
    if ((nodes > 0)); then
        node_manifests | kubectl_ apply -f - >/dev/null
        wait_until 60 kwok "nodes Ready" kubectl_ wait --for=condition=Ready node --all --timeout=1s
        # One pod through the whole path (scheduled, given an address, Ready) before we say so.
        kubectl_ run cluster-probe -n default --image=probe --restart=Never >/dev/null
        wait_until 60 kube-scheduler "probe pod Ready" \
            kubectl_ wait --for=condition=Ready pod/cluster-probe -n default --timeout=1s
        kubectl_ delete pod cluster-probe -n default --wait=false >/dev/null
    fi

    if [[ -n "$owner" ]]; then
        # Goes down with its owner: the tests' processes never outlive them.
        nohup bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 1; done; exec "$2" down --dir "$3"' \
            _ "$owner" "$self" "$dir" >/dev/null 2>&1 </dev/null &
        echo $! >"$dir/pid/owner-watch.pid"
    fi
    say "up in $((SECONDS - start)) s: $nodes kwok nodes, API server https://127.0.0.1:$APISERVER_PORT"
    say "eval \"\$(bench/cluster.sh env --dir $dir)\"   # then kubectl get nodes"
}

down() {
    local i name
    for ((i = ${#components[@]} - 1; i >= 0; i--)); do
        stop_component "${components[i]}"
    done
    name=$(pid_of owner-watch)
    if [[ -n "$name" && "$name" != "$$" && "$name" != "$PPID" ]]; then
        kill "$name" 2>/dev/null || true
    fi
    rm -f "$dir/pid/owner-watch.pid"
    rm -rf "$dir/etcd"
    say "down: $dir"
}

case "$action" in
    up) up ;;
    down) down ;;
    env)
        load_ports
        printf 'export KUBECONFIG=%q\nexport PATH=%q:$PATH\n' "$kubeconfig" "$PEERS"
        ;;
    stop)
        load_ports
        stop_component "$component"
        ;;
    start | restart)
        load_ports
        peers=$PEERS
        [[ -f "$dir/run/$component" ]] || die "no component $component (one of: ${components[*]})"
        [[ "$action" == start ]] || stop_component "$component"
        start_component "$component"
        wait_ready "$component"
        say "$component running (pid $(pid_of "$component"))"
        ;;
    *) usage ;;
esac
