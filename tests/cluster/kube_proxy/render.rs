//! `proxy render` for the node kube-proxy ran as, in each of the four dumps' shapes, through
//! the binary (`clusterdns proxy render`).

use std::path::Path;

use clusterdns::kube_proxy::plan::IpFamily;

use crate::common::cli::ok;

/// The node kube-proxy ran as, and its flags.
pub const NODE: &str = "kwok-node-0";
/// `--cluster-cidr`.
pub const CLUSTER_CIDRS: &str = "10.244.0.0/16,fd00:10:244::/56";
/// The node's addresses (kube-proxy's `--nodeport-addresses primary` in nftables mode).
pub const NODE_IPS: [&str; 2] = ["10.0.0.10", "fd00:10::10"];
/// The cluster's Service CIDRs (its ServiceCIDR objects).
pub const SERVICE_CIDRS: [&str; 2] = ["10.96.0.0/12", "fd00:10:96::/112"];

/// One of the dumps a node gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `iptables-save` / `ip6tables-save`.
    IptablesSave,
    /// `nft list table ip|ip6 kube-proxy`.
    NftList,
}

/// Render's output for `objects` in `shape` and `family`.
pub fn render(objects: &Path, shape: Shape, family: IpFamily) -> String {
    match shape {
        Shape::IptablesSave => iptables(objects, family),
        Shape::NftList => nftables(objects, family),
    }
}

/// `clusterdns proxy render --mode iptables --kube-proxy-names --nfacct` for the node.
fn iptables(objects: &Path, family: IpFamily) -> String {
    let objects = objects.to_str().unwrap();
    let family = match family {
        IpFamily::V4 => "ipv4",
        IpFamily::V6 => "ipv6",
    };
    ok(&[
        "proxy",
        "render",
        "--mode",
        "iptables",
        "--family",
        family,
        "--objects",
        objects,
        "--kube-proxy-names",
        "--node",
        NODE,
        "--cluster-cidr",
        CLUSTER_CIDRS,
        "--nfacct",
    ])
}

/// `clusterdns proxy render --mode nftables --kube-proxy-names` for the node (kube-proxy
/// 1.36's layout, the default).
fn nftables(objects: &Path, family: IpFamily) -> String {
    let (family, node_ip, cidr) = match family {
        IpFamily::V4 => ("ipv4", NODE_IPS[0], SERVICE_CIDRS[0]),
        IpFamily::V6 => ("ipv6", NODE_IPS[1], SERVICE_CIDRS[1]),
    };
    ok(&[
        "proxy",
        "render",
        "--mode",
        "nftables",
        "--family",
        family,
        "--objects",
        objects.to_str().unwrap(),
        "--kube-proxy-names",
        "--node",
        NODE,
        "--cluster-cidr",
        CLUSTER_CIDRS,
        "--node-ip",
        node_ip,
        "--service-cidr",
        cidr,
    ])
}
