//! The DNS server: listeners, and the request path they share.
//!
//! UDP, where nearly every query arrives, is served by a loop of our own
//! ([`udp`]): parse the question in place, look the name up in the current snapshot, copy
//! the prepared records out, send — no task, no allocation per query. TCP goes through
//! hickory-server ([`tcp`]), which owns connection handling and framing, and calls the same
//! [`Handler::respond`]. Zone transfers ([`transfer`]) are TCP only.

mod listen;
mod loop_detect;
mod reload;
mod run;
mod tcp;
mod transfer;
mod udp;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use hickory_proto::rr::Record;

pub use listen::{Listener, bind_all, local_ips};
pub use loop_detect::LoopDetect;
pub use reload::{Check, CorefileWatch, ReloadMetrics, next_wait};
pub use run::{LoadedBlock, Running, StartError, load, start};

use crate::config::{KubernetesConfig, ServerBlock, TransferConfig};
use crate::store::Store;
use crate::wire::{self, Malformed, Request, rcode};
use crate::zone::name::{WireName, suffix_offset};
use crate::zone::rrset::rtype;

/// Which transport a query came over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// UDP: replies limited to the requestor's payload size.
    Udp,
    /// TCP: replies up to 65535 bytes; zone transfers allowed.
    Tcp,
}

/// What to send back for one message.
#[derive(Debug)]
pub enum Outcome {
    /// The reply is in the output buffer.
    Reply,
    /// Send nothing.
    Drop,
    /// A zone transfer: these records, in order, over as many messages as needed.
    Transfer(Vec<Record>),
}

/// One server block at run time.
#[derive(Debug)]
pub struct Block {
    zones: Vec<WireName>,
    kubernetes: Option<Kubernetes>,
    transfer: Vec<Transfer>,
}

/// The *kubernetes* plugin of a block: its options and its published snapshot.
#[derive(Debug)]
pub struct Kubernetes {
    /// The directive's options.
    pub config: KubernetesConfig,
    /// The current zone.
    pub store: Arc<Store>,
    fallthrough: Option<Vec<WireName>>,
    /// Content hash of the objects files the store was built from.
    fingerprint: u64,
}

#[derive(Debug)]
struct Transfer {
    zones: Vec<WireName>,
    config: TransferConfig,
}

impl Kubernetes {
    /// The plugin with its options and store.
    pub fn new(config: KubernetesConfig, store: Arc<Store>, fingerprint: u64) -> Self {
        let fallthrough = config.fallthrough.as_ref().map(|zones| {
            zones
                .iter()
                .filter_map(|zone| wire_zone(&zone.to_ascii()))
                .collect()
        });
        Self {
            config,
            store,
            fallthrough,
            fingerprint,
        }
    }

    /// Whether an NXDOMAIN for `qname` passes to the next plugin (`fallthrough [ZONES]`).
    fn falls_through(&self, qname: &[u8]) -> bool {
        self.fallthrough.as_ref().is_some_and(|zones| {
            zones.is_empty()
                || zones
                    .iter()
                    .any(|zone| suffix_offset(qname, zone.as_bytes()).is_some())
        })
    }
}

fn wire_zone(text: &str) -> Option<WireName> {
    WireName::from_dotted(text)
        .ok()
        .map(|name| name.to_lowercase())
}

impl Block {
    /// A block from its configuration and, when it has a *kubernetes* directive, its store.
    pub fn new(config: &ServerBlock, kubernetes: Option<Kubernetes>) -> Self {
        let zones = config
            .zones
            .iter()
            .filter_map(|z| wire_zone(&z.to_ascii()))
            .collect();
        let transfer = config
            .transfer
            .iter()
            .map(|transfer| Transfer {
                zones: if transfer.zones.is_empty() {
                    config
                        .zones
                        .iter()
                        .filter_map(|z| wire_zone(&z.to_ascii()))
                        .collect()
                } else {
                    transfer
                        .zones
                        .iter()
                        .filter_map(|z| wire_zone(&z.to_ascii()))
                        .collect()
                },
                config: transfer.clone(),
            })
            .collect();
        Self {
            zones,
            kubernetes,
            transfer,
        }
    }

    /// The block's *kubernetes* plugin.
    pub fn kubernetes(&self) -> Option<&Kubernetes> {
        self.kubernetes.as_ref()
    }
}

/// Answers messages for the blocks that share one listener.
#[derive(Debug)]
pub struct Handler {
    blocks: Vec<Arc<Block>>,
}

impl Handler {
    /// A handler over the blocks bound to one address and port.
    pub fn new(blocks: Vec<Arc<Block>>) -> Self {
        Self { blocks }
    }

    /// Answers one message, writing the reply into `out`.
    pub fn respond(
        &self,
        packet: &[u8],
        client: IpAddr,
        transport: Transport,
        out: &mut Vec<u8>,
    ) -> Outcome {
        let request = match Request::parse(packet) {
            Ok(request) => request,
            Err(Malformed::Ignore) => return Outcome::Drop,
            Err(Malformed::Reply {
                id, flags, rcode, ..
            }) => {
                wire::write_malformed(id, flags, rcode, out);
                return Outcome::Reply;
            }
        };
        if request.edns.is_some_and(|edns| edns.version != 0) {
            wire::write_rcode(&request, rcode::BADVERS, out);
            return Outcome::Reply;
        }
        let qname = request.question.name();
        let Some(block) = self.block_for(qname) else {
            wire::write_rcode(&request, rcode::REFUSED, out);
            return Outcome::Reply;
        };
        if !wire::is_internet_class(request.question.qclass) {
            wire::write_rcode(&request, rcode::REFUSED, out);
            return Outcome::Reply;
        }
        let qtype = request.question.qtype;
        if qtype == rtype::AXFR || qtype == rtype::IXFR {
            return transfer::respond(block, &request, client, transport, out);
        }
        if let Some(kubernetes) = &block.kubernetes {
            let snapshot = kubernetes.store.load();
            if let Some(answer) = snapshot.lookup(qname, qtype) {
                // `fallthrough` hands an NXDOMAIN on to the rest of the block's chain.
                let passes =
                    answer.rcode == crate::zone::Rcode::NxDomain && kubernetes.falls_through(qname);
                if !passes {
                    let zone = &snapshot.zones()[answer.zone];
                    let limit = match transport {
                        Transport::Udp => request.udp_limit(),
                        Transport::Tcp => usize::from(u16::MAX),
                    };
                    wire::write_answer(&request, &answer, zone, limit, false, out);
                    return Outcome::Reply;
                }
            }
        }
        // The end of the chain: nothing in the block serves the name, nothing forwards it.
        wire::write_rcode(&request, rcode::REFUSED, out);
        Outcome::Reply
    }

    /// The block whose zones hold `qname` most specifically (CoreDNS's server-block match).
    fn block_for(&self, qname: &[u8]) -> Option<&Block> {
        let mut best: Option<(&Block, usize)> = None;
        for block in &self.blocks {
            for zone in &block.zones {
                let len = zone.as_bytes().len();
                if suffix_offset(qname, zone.as_bytes()).is_some()
                    && best.is_none_or(|(_, best_len)| len > best_len)
                {
                    best = Some((block, len));
                }
            }
        }
        best.map(|(block, _)| block)
    }
}

/// The address a listener of `block` binds, for each of its bind addresses.
pub fn block_addresses(block: &ServerBlock) -> Vec<SocketAddr> {
    if block.bind.is_empty() {
        vec![SocketAddr::new(IpAddr::from([0, 0, 0, 0]), block.port)]
    } else {
        block
            .bind
            .iter()
            .map(|&ip| SocketAddr::new(ip, block.port))
            .collect()
    }
}
