//! `proxy render` for the node kube-proxy ran as, in each of the four dumps' shapes: the
//! iptables modes through the binary (`clusterdns proxy render`), the nftables modes through
//! the library, whose `NftLayout::DnatMaps` is kube-proxy 1.36's table (the command line
//! writes the layout before it, docs/differences.md `## kube-proxy`).

use std::path::Path;

use clusterdns::proxy::endpoints::{SliceSource, with_slices};
use clusterdns::proxy::names::NameScheme;
use clusterdns::proxy::nftables::{NftLayout, NftOptions, render_list_as};
use clusterdns::proxy::plan::{IpFamily, PlanOptions, plan};

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

/// kube-proxy 1.36's nftables table for the node, through the library.
fn nftables(objects: &Path, family: IpFamily) -> String {
    let loaded = clusterdns::source::file::read_objects(&[objects.to_path_buf()]).unwrap();
    let cluster = with_slices(&loaded.cluster, SliceSource::Input);
    let options = PlanOptions {
        family,
        node: Some(NODE.to_owned()),
        cluster_cidrs: CLUSTER_CIDRS
            .split(',')
            .map(|c| c.parse().unwrap())
            .collect(),
    };
    let nft = NftOptions {
        node_ips: NODE_IPS.iter().map(|ip| ip.parse().unwrap()).collect(),
        service_cidrs: SERVICE_CIDRS.iter().map(|c| c.parse().unwrap()).collect(),
    };
    render_list_as(
        &plan(&cluster, &options),
        NameScheme::KubeProxy,
        &nft,
        NftLayout::DnatMaps,
    )
}

/// `proxy render --mode nftables` as the command line writes it (the layout before 1.36).
pub fn nftables_command_line(objects: &Path, family: IpFamily) -> String {
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
