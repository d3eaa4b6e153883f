//! The interface and the rules over node-cache's life (`cache_app.go`): the interface is set
//! up before the DNS server starts (it binds to the local addresses), the rules once it
//! serves (so that no rule sends DNS to a cache that could not start); both are checked every
//! `-syncinterval` and put back where something removed them; both go at exit, unless
//! `-skipteardown`. Failures of the periodic check are logged and counted in node-cache's
//! `coredns_nodecache_setup_errors_total{errortype}`.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

use super::error::Error;
use super::interface::Interface;
use super::netfilter::{Failure, Netfilter};

/// node-cache's error types, each counted from 0.
const ERROR_TYPES: [&str; 5] = [
    "iptables",
    "iptables_lock",
    "interface_add",
    "interface_check",
    "configmap",
];

/// `coredns_nodecache_setup_errors_total`, by `errortype`.
#[derive(Debug, Default)]
pub struct SetupErrors {
    counts: [AtomicU64; 5],
}

impl SetupErrors {
    /// Counts one error of `errortype` (one of node-cache's five).
    pub fn count(&self, errortype: &str) {
        if let Some(at) = ERROR_TYPES.iter().position(|t| *t == errortype) {
            self.counts[at].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The count of `errortype`.
    pub fn get(&self, errortype: &str) -> u64 {
        ERROR_TYPES
            .iter()
            .position(|t| *t == errortype)
            .map_or(0, |at| self.counts[at].load(Ordering::Relaxed))
    }

    /// The metric in Prometheus's text format, as node-cache's `/metrics` has it.
    pub fn exposition(&self) -> String {
        let mut out = String::from(
            "# HELP coredns_nodecache_setup_errors_total The number of errors during periodic \
             network setup for node-cache\n# TYPE coredns_nodecache_setup_errors_total counter\n",
        );
        for (name, count) in ERROR_TYPES.iter().zip(&self.counts) {
            let _ = writeln!(
                out,
                "coredns_nodecache_setup_errors_total{{errortype=\"{name}\"}} {}",
                count.load(Ordering::Relaxed)
            );
        }
        out
    }
}

/// The interface and the rules, each when asked for (`-setupinterface`, `-setupiptables`).
#[derive(Debug)]
pub struct Networking {
    pub interface: Option<Interface>,
    pub netfilter: Option<Netfilter>,
}

impl Networking {
    /// Makes the interface (before the server binds its addresses).
    pub fn setup_interface(&self) -> Result<(), Error> {
        if let Some(interface) = &self.interface {
            let existed = interface.ensure()?;
            if !existed {
                tracing::info!("Added interface - {}", interface.name);
            }
        }
        Ok(())
    }

    /// Writes the rules (once the server serves).
    pub fn setup_rules(&mut self) -> Result<(), Error> {
        if let Some(netfilter) = &mut self.netfilter {
            let added = netfilter.ensure().map_err(|(_, error)| error)?;
            tracing::info!(
                "{} node-cache rules in place ({} added) through {:?}",
                netfilter.rules().len(),
                added.len(),
                netfilter.backend()
            );
        }
        Ok(())
    }

    /// The periodic check: every rule and the interface put back where missing; failures
    /// logged and counted in `errors`.
    pub fn check(&mut self, errors: &SetupErrors) {
        if let Some(netfilter) = &mut self.netfilter {
            match netfilter.ensure() {
                Ok(added) => {
                    for rule in added {
                        tracing::info!(
                            "Added back nodelocaldns rule - {} {} {}",
                            rule.table.name(),
                            rule.chain.name(),
                            rule.args().join(" ")
                        );
                    }
                }
                Err((failure, error)) => {
                    tracing::error!("Error checking/adding node-cache rules: {error}");
                    errors.count(match failure {
                        Failure::Lock => "iptables_lock",
                        Failure::Other => "iptables",
                    });
                }
            }
        }
        if let Some(interface) = &self.interface {
            match interface.exists() {
                Ok(true) => {
                    if let Err(error) = interface.ensure() {
                        tracing::error!("Error checking interface {} - {error}", interface.name);
                        errors.count("interface_check");
                    }
                }
                Ok(false) => match interface.ensure() {
                    Ok(_) => tracing::info!("Added interface - {}", interface.name),
                    Err(error) => {
                        tracing::error!(
                            "Failed to add non-existent interface {}: {error}",
                            interface.name
                        );
                        errors.count("interface_add");
                    }
                },
                Err(error) => {
                    tracing::error!("Error checking interface {} - {error}", interface.name);
                    errors.count("interface_check");
                }
            }
        }
    }

    /// Removes the rules, then the interface (node-cache's order); the first failure after
    /// trying both.
    pub fn teardown(&mut self) -> Result<(), Error> {
        tracing::info!("Tearing down");
        let rules = self.netfilter.as_mut().map_or(Ok(()), Netfilter::remove);
        let interface = self.interface.as_ref().map_or(Ok(()), Interface::remove);
        rules.and(interface)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn every_error_type_is_exposed_from_zero() {
        let errors = SetupErrors::default();
        errors.count("iptables_lock");
        errors.count("unknown");
        let text = errors.exposition();
        assert!(text.contains("coredns_nodecache_setup_errors_total{errortype=\"iptables\"} 0\n"));
        assert!(
            text.contains("coredns_nodecache_setup_errors_total{errortype=\"iptables_lock\"} 1\n")
        );
        assert_eq!(text.matches("errortype=").count(), 5);
        assert_eq!(errors.get("iptables_lock"), 1);
    }
}
