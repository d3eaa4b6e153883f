# clusterdns as a drop-in for the CoreDNS image: `clusterdns -conf /etc/coredns/Corefile`
# (kubeadm's Deployment args) runs `clusterdns serve --corefile /etc/coredns/Corefile`.
#
#   docker build -t clusterdns:dev .
#
# The same image without Docker or a registry, from the release binary: `cargo xtask image`
# (xtask/src/images.rs; tests/deploy/image.rs holds the two to each other).
#
# Build: the release binary with the Rust version the crate asks for (rust-version 1.95).
FROM rust:1.95-bookworm AS build
# The git revision for coredns_build_info (the build context has no .git):
#   docker build --build-arg CLUSTERDNS_REVISION=$(git rev-parse --short HEAD) ...
ARG CLUSTERDNS_REVISION=""
ENV CLUSTERDNS_REVISION=${CLUSTERDNS_REVISION}
RUN apt-get update \
    && apt-get install -y --no-install-recommends libcap2-bin \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# The workspace whole: src/, crates/ (the model and the kube-proxy toolbox, crates of the
# binary's own) and xtask/ (a member); .dockerignore keeps target/ and .git out.
COPY . .
# Port 53 as a non-root user: the Deployment adds NET_BIND_SERVICE to the container's
# capabilities, and this file capability makes the binary's process have it at exec (with
# allowPrivilegeEscalation false it can never exceed what the container was given).
# The release profile exactly as Cargo.toml has it (line tables included), then stripped: its
# symbol names are then the ones link/hot-text.ld lists, so the functions start-up and the
# query path run are laid out together (build.rs), as in the measured binary.
RUN cargo build --release --locked --bin clusterdns \
    && install -m 0755 target/release/clusterdns /usr/local/bin/clusterdns \
    && strip --strip-debug /usr/local/bin/clusterdns \
    && setcap cap_net_bind_service=+ep /usr/local/bin/clusterdns

# NodeLocal DNSCache's node-cache (deploy/nodelocaldns/, docs/kind.md), a separate target:
#
#   docker build --target node-cache -t clusterdns-node-cache:dev .
#
# `clusterdns node-cache` as root with what it runs on the node — iptables (both backends),
# iproute2's `ip`, `nft` — from Debian 12's packages, as node-cache's debian-iptables base has
# them. xtask::images::node_cache builds the same tools without a shell or apt, on the
# distroless-like base of the image below. The default target stays the last stage.
FROM debian:bookworm-slim AS node-cache
RUN apt-get update \
    && apt-get install -y --no-install-recommends iptables iproute2 nftables \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /usr/local/bin/clusterdns /usr/local/bin/clusterdns
EXPOSE 53/udp 53/tcp 8080/tcp 9253/tcp 9353/tcp
ENTRYPOINT ["/usr/local/bin/clusterdns", "node-cache"]

# Run: glibc and libgcc only, no shell, user nonroot (65532).
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /usr/local/bin/clusterdns /usr/local/bin/clusterdns
USER 65532:65532
EXPOSE 53/udp 53/tcp 8080/tcp 8181/tcp 9153/tcp
ENTRYPOINT ["/usr/local/bin/clusterdns"]
CMD ["-conf", "/etc/coredns/Corefile"]
