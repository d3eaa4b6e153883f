//! The link that holds the local addresses (kubernetes/dns `pkg/netif`): a `dummy` link named
//! `-interfacename` with every `-localip` as a host address (/32, /128), left down as
//! node-cache leaves it when they are IPv4 (their local routes exist either way), set up when
//! they are IPv6 (which needs it: `add_addresses`).
//! `EnsureDummyDevice`: when the link exists its addresses are added again (one already
//! there is fine); when it does not, it is made with them.
//!
//! Done with iproute2's `ip` (`ip link add NAME type dummy`, `ip addr replace`, `ip link del`),
//! as the rules are done with the iptables and nft binaries: the same tool an operator uses
//! to look at the result, present wherever iptables is, and no netlink message code of our
//! own to keep. The link kind is `dummy` on every real node; the tests, on a kernel without
//! the dummy module, ask for a `bridge` (an equally portless link that holds addresses) with
//! the command's hidden `--link-kind` (docs/commands/node-cache.md).

use std::net::IpAddr;
use std::process::{Command, Stdio};

use super::error::Error;

/// The kind of link made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LinkKind {
    /// node-cache's: a dummy link.
    Dummy,
    /// For kernels without the dummy module (the tests'): a bridge with no ports.
    Bridge,
}

impl LinkKind {
    fn name(self) -> &'static str {
        match self {
            LinkKind::Dummy => "dummy",
            LinkKind::Bridge => "bridge",
        }
    }
}

/// The link and its addresses.
#[derive(Clone, Debug)]
pub struct Interface {
    pub name: String,
    pub kind: LinkKind,
    pub addresses: Vec<IpAddr>,
}

impl Interface {
    /// Whether a link of this name exists.
    pub fn exists(&self) -> Result<bool, Error> {
        let out = Command::new("ip")
            .args(["-o", "link", "show", "dev", &self.name])
            .stdin(Stdio::null())
            .output()
            .map_err(|error| Error::new(format!("could not run ip: {error}")))?;
        if out.status.success() {
            return Ok(true);
        }
        let stderr = String::from_utf8_lossy(&out.stderr);
        if stderr.contains("does not exist") {
            Ok(false)
        } else {
            Err(Error::new(format!(
                "ip link show dev {}: {}",
                self.name,
                stderr.trim()
            )))
        }
    }

    /// node-cache's `EnsureDummyDevice`: `Ok(true)` when the link was there (its addresses
    /// added again where missing), `Ok(false)` when it was made now.
    pub fn ensure(&self) -> Result<bool, Error> {
        if self.exists()? {
            self.add_addresses()?;
            return Ok(true);
        }
        ip(&["link", "add", &self.name, "type", self.kind.name()]).map_err(|error| {
            if self.kind == LinkKind::Dummy && error.0.contains("Unknown device type") {
                Error::new(format!(
                    "{error} (this kernel has no dummy link type: its dummy module is missing)"
                ))
            } else {
                error
            }
        })?;
        self.add_addresses()?;
        Ok(false)
    }

    /// Adds every address (`ip addr replace`: one already on the link is kept as it is).
    /// IPv6 addresses are added without duplicate address detection and the link is set up:
    /// on a link left down, as node-cache leaves it, an IPv6 address stays tentative (it
    /// cannot be bound) and gets no local route, where an IPv4 address has both.
    fn add_addresses(&self) -> Result<(), Error> {
        for address in &self.addresses {
            let prefix = if address.is_ipv4() { 32 } else { 128 };
            let with_prefix = format!("{address}/{prefix}");
            let mut args = vec!["addr", "replace", &with_prefix, "dev", &self.name];
            if address.is_ipv6() {
                args.push("nodad");
            }
            ip(&args)?;
        }
        if self.addresses.iter().any(IpAddr::is_ipv6) {
            ip(&["link", "set", &self.name, "up"])?;
        }
        Ok(())
    }

    /// Deletes the link (its addresses with it); one already gone is fine.
    pub fn remove(&self) -> Result<(), Error> {
        if !self.exists()? {
            return Ok(());
        }
        ip(&["link", "del", &self.name])
    }
}

/// `ip ARGS...`, which must succeed; the error has its command line and what it said.
fn ip(args: &[&str]) -> Result<(), Error> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|error| Error::new(format!("could not run ip: {error}")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(Error::new(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}
