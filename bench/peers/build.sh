#!/usr/bin/env bash
# Builds the real peers clusterdns is tested and measured against, from the Go module proxy,
# into a cache directory outside the repository, keyed by version:
#
#   kube-apiserver, kube-controller-manager, kube-scheduler, kube-proxy, kubectl, kubelet
#       from k8s.io/kubernetes (the kubelet runs the real nodes of `cargo xtask nodes`),
#       built inside bench/peers/kubernetes (our wrapper module, which
#       replaces each staging module with its published v0.X.Y), version-stamped;
#   etcd            the go.etcd.io/etcd/server/v3 release that Kubernetes version links, same module;
#   kwok            sigs.k8s.io/kwok/cmd/kwok (go install: its own go.mod, no replaces);
#   coredns         github.com/coredns/coredns (go install), kubernetes plugin included;
#   helm            helm.sh/helm/v4/cmd/helm (go install), which renders, lints and installs
#                   deploy/helm/clusterdns in the tests (a test tool, never part of the product).
#
#   bench/peers/build.sh            build what is missing, then print where everything is
#   bench/peers/build.sh --dir      print the directory of the binaries (after building)
#
# The binaries end up in $PEERS_CACHE/bin (default ~/.cache/clusterdns-peers/bin), as links
# into one directory per version; tests and `cargo xtask cluster` find them there (or wherever
# CLUSTERDNS_PEERS points). A second run with the cache in place builds nothing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

KUBERNETES_VERSION=v1.36.3
KWOK_VERSION=v0.8.0
COREDNS_VERSION=v1.14.7
HELM_VERSION=v4.3.2

cache=${PEERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/clusterdns-peers}
bin="$cache/bin"
quiet=
[[ "${1:-}" == --dir ]] && quiet=1

say() { [[ -n "$quiet" ]] || printf '[peers] %s\n' "$*" >&2; }
die() { printf '[peers] error: %s\n' "$*" >&2; exit 1; }

command -v go >/dev/null || die "go not found: the peers are built with the Go toolchain (1.26 or newer)"
export GOFLAGS="${GOFLAGS:-} -mod=readonly -trimpath"
export CGO_ENABLED=0

# The etcd server version is whatever our go.mod resolved for k8s.io/kubernetes.
etcd_version=$(awk '$1 == "go.etcd.io/etcd/server/v3" {print $2}' "$here/kubernetes/go.mod")
[[ -n "$etcd_version" ]] || die "bench/peers/kubernetes/go.mod names no go.etcd.io/etcd/server/v3"
# The key changes with the versions and with our manifest, so an edited go.sum rebuilds.
sum=$(cat "$here/kubernetes/go.mod" "$here/kubernetes/go.sum" | sha256sum | cut -c1-12)
kube_dir="$cache/kubernetes-$KUBERNETES_VERSION-etcd-$etcd_version-$sum"
kwok_dir="$cache/kwok-$KWOK_VERSION"
coredns_dir="$cache/coredns-$COREDNS_VERSION"
helm_dir="$cache/helm-$HELM_VERSION"

# Runs "$@" (a build into $1's directory) unless the directory is complete; times it.
built=()
build_into() { # DIR NAME... -- COMMAND...
    local dir=$1 names=() missing=0 start
    shift
    while [[ $1 != -- ]]; do names+=("$1"); shift; done
    shift
    for name in "${names[@]}"; do [[ -x "$dir/$name" ]] || missing=1; done
    if ((missing)); then
        say "building ${names[*]} into $dir"
        start=$SECONDS
        rm -rf "$dir.tmp"
        mkdir -p "$dir.tmp"
        if ! "$@" "$dir.tmp" >"$cache/build.log" 2>&1; then
            cat "$cache/build.log" >&2
            die "building ${names[*]} failed (log above, also in $cache/build.log)"
        fi
        rm -rf "$dir"
        mv "$dir.tmp" "$dir"
        built+=("${names[*]} in $((SECONDS - start)) s")
    fi
    for name in "${names[@]}"; do ln -sfn "$dir/$name" "$bin/$name"; done
}

kube_build() { # OUT
    local minor=${KUBERNETES_VERSION#v1.}
    minor=${minor%%.*}
    local stamp="-s -w"
    stamp+=" -X k8s.io/component-base/version.gitVersion=$KUBERNETES_VERSION"
    stamp+=" -X k8s.io/component-base/version.gitMajor=1"
    stamp+=" -X k8s.io/component-base/version.gitMinor=$minor"
    stamp+=" -X k8s.io/component-base/version.gitTreeState=clean"
    stamp+=" -X k8s.io/client-go/pkg/version.gitVersion=$KUBERNETES_VERSION"
    stamp+=" -X k8s.io/client-go/pkg/version.gitMajor=1"
    stamp+=" -X k8s.io/client-go/pkg/version.gitMinor=$minor"
    (cd "$here/kubernetes" && go build -ldflags "$stamp" -o "$1/" \
        k8s.io/kubernetes/cmd/kube-apiserver \
        k8s.io/kubernetes/cmd/kube-controller-manager \
        k8s.io/kubernetes/cmd/kube-scheduler \
        k8s.io/kubernetes/cmd/kube-proxy \
        k8s.io/kubernetes/cmd/kubectl \
        k8s.io/kubernetes/cmd/kubelet &&
        go build -ldflags "-s -w" -o "$1/etcd" go.etcd.io/etcd/server/v3)
}

go_install() { # MODULE/PATH@VERSION OUT
    GOBIN="$2" GOFLAGS="-trimpath" go install -ldflags "-s -w" "$1"
}

mkdir -p "$bin"
total=$SECONDS
build_into "$kube_dir" kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubectl kubelet etcd -- kube_build
build_into "$kwok_dir" kwok -- go_install "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
build_into "$coredns_dir" coredns -- go_install "github.com/coredns/coredns@$COREDNS_VERSION"
build_into "$helm_dir" helm -- go_install "helm.sh/helm/v4/cmd/helm@$HELM_VERSION"

if [[ -n "$quiet" ]]; then
    echo "$bin"
    exit 0
fi
if ((${#built[@]})); then
    for line in "${built[@]}"; do say "built $line"; done
    say "all built in $((SECONDS - total)) s"
else
    say "nothing to build: every peer is in $cache"
fi
say "kubernetes $KUBERNETES_VERSION, etcd $etcd_version, kwok $KWOK_VERSION, coredns $COREDNS_VERSION, helm $HELM_VERSION in $bin"
