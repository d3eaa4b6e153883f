//! The cluster zone: every name the *kubernetes* plugin answers, prepared when a snapshot is
//! built, and the lookup that answers a question from it.
//!
//! [`build`](build::build) turns a [`Cluster`](crate::model::Cluster) and a
//! [`KubernetesConfig`](crate::config::KubernetesConfig) into a [`Snapshot`]: a hash map
//! from lower-case wire name to `Node`, each node holding its RRsets already in wire
//! format. [`Snapshot::lookup`] is then one hash lookup for every name that exists and for
//! every miss; only pod names under `pods insecure` (an infinite set) and the CNAME chase
//! of ExternalName services are computed per query. The snapshot is `snapshot.rs`, the
//! lookup `lookup.rs`, what it answers `answer.rs`, the served zones and their SOA `soa.rs`.
//!
//! A block with *k8s_external* also has its external zones in the snapshot
//! ([`Snapshot::external`], built and updated with the cluster zone from the same objects;
//! see `external.rs`); a block without it holds nothing for them.
//!
//! The DNS semantics are CoreDNS's (`plugin/kubernetes`, `plugin/backend_lookup.go`) with
//! one deliberate difference, RFC 8020: a name that exists answers NODATA for the types it
//! lacks, and a name that does not exist is NXDOMAIN for every type.

mod answer;
mod build;
mod dashed;
mod external;
mod lookup;
mod map;
mod multicluster;
mod names;
mod node;
mod records;
pub mod rrset;
mod shards;
mod snapshot;
mod soa;
mod update;
pub mod why;
mod writer;
pub mod zonefile;

pub use answer::{Answer, InlineRecord, Owner, Rcode, Run, RunData};
pub use build::{BuildContext, DNS_SCHEMA_VERSION, build};
pub(crate) use dashed::Dashed;
pub use dashed::{dashed_ip, ip_from_dashed};
pub use external::External;
pub use records::{trim, trim_cluster};
pub use snapshot::Snapshot;
pub(crate) use soa::CLUSTER_SOA_PREFIXES;
pub use soa::{ServedZone, Soa};
pub use update::{Applied, Change, Incremental};

#[cfg(test)]
mod tests;

/// Helpers for tests elsewhere in the crate.
#[cfg(test)]
pub(crate) mod tests_support {
    use super::{ServedZone, Soa};
    use crate::name::WireName;

    /// A served forward zone with a fixed SOA.
    pub(crate) fn zone(origin: &str) -> ServedZone {
        ServedZone {
            origin: WireName::from_dotted(origin).unwrap_or_else(|_| WireName::root()),
            reverse: false,
            multicluster: false,
            soa: Soa::new(30, 1),
            soa_prefixes: super::CLUSTER_SOA_PREFIXES,
        }
    }
}
