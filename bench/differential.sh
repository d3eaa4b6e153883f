#!/usr/bin/env bash
# The differential check at a larger scale: clusterdns and the real CoreDNS (v1.14.7, from
# bench/peers/build.sh) side by side with kubeadm's Corefile on a local control plane, every
# answer compared. It is the ignored test `cluster::differential::differential_at_scale`
# (tests/cluster/differential.rs; the CI test runs the same check on a smaller corpus), run
# here with the sizes below; its report goes to bench/out/differential-<time>.md.
#
#   bench/differential.sh                          # 600 Services in 12 namespaces, 3 rounds
#   SERVICES=300 ROUNDS=2 bench/differential.sh    # about 5 minutes
#
# Each round asks the whole corpus once more, each question in the next of its six ways
# (UDP or TCP, with or without EDNS, DO set or not), idle in each `pods` mode and then during
# churn. The run fails if any difference is neither fixed nor listed in docs/differences.md.
set -euo pipefail

SERVICES=${SERVICES:-600}
NAMESPACES=${NAMESPACES:-12}
ROUNDS=${ROUNDS:-3}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$repo/bench/common.sh"
bench_start differential
need_tools cargo

peers=$("$repo/bench/peers/build.sh" --dir)
[[ -x "$peers/coredns" && -x "$peers/kube-apiserver" ]] ||
    die "the peers are not built: run bench/peers/build.sh"
mkdir -p "$repo/bench/out"
report="$repo/bench/out/differential-$(date -u +%Y%m%dT%H%M%SZ).md"
log "$SERVICES Services in $NAMESPACES namespaces, $ROUNDS rounds; report: $report"
status=0
(cd "$repo" && CLUSTERDNS_PEERS="$peers" CLUSTERDNS_REQUIRE_PEERS=1 \
    DIFF_SERVICES="$SERVICES" DIFF_NAMESPACES="$NAMESPACES" DIFF_ROUNDS="$ROUNDS" \
    DIFF_REPORT="$report" \
    cargo test --test main cluster::differential::differential_at_scale \
    -- --ignored --exact --nocapture) >"$work/test.log" 2>&1 || status=$?
if [[ -f "$report" ]]; then
    cat "$report"
else
    tail -n 50 "$work/test.log" >&2
fi
((status == 0)) || die "the check failed (differences not documented, or the run broke): see above"
