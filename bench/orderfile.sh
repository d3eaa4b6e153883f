#!/usr/bin/env bash
# Writes link/hot-text.ld: the functions of the release binary that start-up and the query
# path run, as a linker script that build.rs hands the linker and that puts them in an output
# section `.text.hot` before `.text`. Laid out together, they fill about 2.4 MB of code
# instead of touching pages all over the binary's 13 MB, most of the fixture-size RSS
# (docs/kind.md, "Sizing"); .ci/layout checks the script still matches the binary.
#
#   bench/orderfile.sh          # regenerate after a change that renames or adds hot code
#
# The server runs under valgrind's callgrind on the bundled fixture with kubeadm's Corefile
# (deploy/configmap.yaml, loopback ports, forward to a closed port); the script asks it each
# kind of question over UDP and TCP, reads /health, /ready and /metrics, waits for a reload
# tick, and stops it with SIGTERM. Every function callgrind saw run in the binary is listed,
# mangled, in the order callgrind first met it. A pattern that no longer matches (renamed
# code) matches nothing, so a stale list costs pages, never a build; .ci/layout fails when
# fewer than 70 % still match.
set -euo pipefail

PORT=${PORT:-25363}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/common.sh
source "$repo/bench/common.sh"
bench_start orderfile
need_tools valgrind callgrind_control dig curl cargo

log "building (release, without the current ordering)"
(cd "$repo" && CLUSTERDNS_NO_ORDER=1 cargo build --release --bin clusterdns) >"$work/build.log" 2>&1 ||
    { cat "$work/build.log" >&2; die "cargo build failed"; }
target=$(cd "$repo" && cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
binary="$target/release/clusterdns"

kubeadm_corefile "$PORT" "$repo/fixtures/shop.json" >"$work/Corefile"

log "running the server under callgrind"
valgrind --tool=callgrind --demangle=no --callgrind-out-file="$work/callgrind.out" \
    "$binary" serve --corefile "$work/Corefile" >"$work/stdout.log" 2>"$work/stderr.log" &
pid=$!
pids+=("$pid")
wait_http_ready "$pid" $((PORT + 2)) 600 "$work/stderr.log"

ask_both() {
    dig @127.0.0.1 -p "$PORT" +time=5 +tries=1 "$@" >/dev/null || true
    dig @127.0.0.1 -p "$PORT" +tcp +time=5 +tries=1 "$@" >/dev/null || true
}
log "asking"
for _ in 1 2; do
    ask_both kubernetes.default.svc.cluster.local A
    ask_both web.shop.svc.cluster.local AAAA
    ask_both db.shop.svc.cluster.local A
    ask_both _http._tcp.web.shop.svc.cluster.local SRV
    ask_both web-headless.shop.svc.cluster.local A
    ask_both nope.shop.svc.cluster.local A
    ask_both web.shop.svc.cluster.local.shop.svc.cluster.local A
    ask_both -x 10.96.0.20
    ask_both cluster.local SOA
    ask_both cluster.local NS
    ask_both 1-2-3-4.shop.pod.cluster.local A
    ask_both +noedns web.shop.svc.cluster.local A
    ask_both example.com A
    curl -s "http://127.0.0.1:$((PORT + 1))/health" >/dev/null || true
    curl -s "http://127.0.0.1:$((PORT + 2))/ready" >/dev/null || true
    curl -s "http://127.0.0.1:$((PORT + 3))/metrics" >/dev/null || true
done
# The reload plugin's tick (every 30 s by default) re-reads the Corefile.
sleep 35
kill -TERM "$pid"
wait "$pid" || true
pids=()

# callgrind names an object file and a function once, at the first `ob=`/`cob=` or
# `fn=`/`cfn=` line with the id, and uses the bare `(ID)` after. Each `fn=` line opens the
# cost of a function that ran, under the current `ob=`.
awk -v binary="$binary" '
    function define(line, names,    id, name) {
        id = line; sub(/^[a-z]+=/, "", id); name = id
        sub(/ .*/, "", id); sub(/^\([0-9]+\) ?/, "", name)
        if (name != "") names[id] = name
        return id
    }
    /^c?ob=/ { id = define($0, object); if ($0 ~ /^ob=/) current = object[id]; next }
    /^cfn=/ { define($0, function_name); next }
    /^fn=/ {
        id = define($0, function_name)
        name = function_name[id]
        if (current == binary && !(name in seen)) { seen[name] = 1; print name }
    }
' "$work/callgrind.out" >"$work/hot.txt"
[[ -s "$work/hot.txt" ]] || die "callgrind saw no function of $binary run"

# Each function becomes a section pattern of the linker script (rustc gives each function a
# section `.text.<symbol>`). A Rust symbol ends in a hash (`17h<16 hex>E`) that moves with
# the compiler, the dependencies and the profile's settings, and ThinLTO may add
# `.llvm.<digits>`, which moves with the build directory: a function the binary has one
# instance of is matched whatever its hash; one of a generic function's instances, by its
# hash, with any suffix. callgrind marks recursion with `'N`; names with other characters
# (`(below main)`) are not functions of the binary.
nm --defined-only "$binary" | awk '$2 ~ /^[tTwW]$/ { print $3 }' >"$work/functions.txt"
awk '
    function hashless(name) {
        if (sub(/17h[0-9a-f]+E(\.llvm\.[0-9]+)?$/, "17h", name)) return name
        return ""
    }
    NR == FNR { key = hashless($0); if (key != "") instances[key]++; next }
    {
        name = $0; sub(/\047[0-9]+$/, "", name)
        if (name !~ /^[A-Za-z_][A-Za-z0-9_$.]*$/) next
        key = hashless(name)
        if (key != "" && instances[key] == 1) pattern = key "*"
        else if (key != "") { pattern = name; sub(/E\.llvm\.[0-9]+$/, "E", pattern); pattern = pattern "*" }
        else if (sub(/\.llvm\.[0-9]+$/, "", name)) pattern = name ".llvm.*"
        else pattern = name
        if (!(pattern in seen)) { seen[pattern] = 1; print "    *(.text." pattern " .text.unlikely." pattern ")" }
    }
' "$work/functions.txt" "$work/hot.txt" >"$work/patterns.txt"
mkdir -p "$repo/link"
{
    echo "/* Written by bench/orderfile.sh: the functions start-up and the query path run, laid"
    echo "   out first and together by build.rs (-T). Regenerate, don't edit. */"
    echo "SECTIONS {"
    echo "  .text.hot : {"
    cat "$work/patterns.txt"
    echo "  }"
    echo "}"
    echo "INSERT BEFORE .text;"
} >"$repo/link/hot-text.ld"
log "$(wc -l <"$work/patterns.txt") functions written to link/hot-text.ld"
