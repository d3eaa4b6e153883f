//! *file* on the request path (CoreDNS `plugin/file`): zones served authoritatively from
//! RFC 1035 zone files.
//!
//! Each `file` directive reads its file once for each of its zones ([`read`]) into a
//! [`zone::Zone`], whose lookup is CoreDNS's. A name goes to the first directive (in file
//! order) one of whose zones holds it, and within it to the longest such zone; a name in
//! none passes on. Answers are authoritative (a referral is not); NXDOMAIN and NODATA carry
//! the SOA. AXFR and IXFR are refused here, as CoreDNS's *file* refuses them when no
//! *transfer* takes them. With `fallthrough`, a name of its zones without records goes on
//! (to the next `file`, then the rest of the chain). A CNAME whose target the zone does not
//! hold is chased through the server, as CoreDNS asks its upstream.
//!
//! Zones are read when the server loads: a file that does not parse is an error naming the
//! file and line; one that cannot be opened is an error with `reload 0`, else a warning and
//! SERVFAIL for its zones until it can be read (as CoreDNS). Every `reload` period the file
//! is read again and its zone replaced when the SOA serial changed (or, with
//! `reload_by_mtime`, when the modification time moved on); a file that no longer reads
//! keeps the zone last read, and the reason is logged once. Lookups take no lock: a zone is
//! swapped whole. No metrics of its own (CoreDNS's *file* has none).

mod read;
mod zone;

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use arc_swap::ArcSwapOption;
use hickory_proto::rr::{Name, RecordType};
use tokio_util::sync::CancellationToken;

use self::read::{ZoneError, read_zone};
use self::zone::{Outcome, Zone};
use super::chase::Chase;
use super::lifecycle::{Build, Lifecycle, Start};
use super::{Ctx, End, Flow, PluginChain, Query};
use crate::codes::rtype;
use crate::config::FileConfig;
use crate::name::{WireName, labels, suffix_offset};
use crate::plugin::Plugin;
use crate::server::error::StartError;
use crate::wire::{self, Rebuilt, rcode, reply};

/// The *file* directives of one block, in file order.
#[derive(Debug)]
pub(crate) struct File {
    directives: Vec<Arc<Directive>>,
}

/// One `file` directive.
#[derive(Debug)]
struct Directive {
    config: FileConfig,
    zones: Vec<Served>,
    fallthrough: Option<Vec<WireName>>,
}

/// One zone of a directive.
#[derive(Debug)]
struct Served {
    /// The origin, lower case.
    origin: Name,
    /// It, as lower-case wire.
    wire: WireName,
    /// The zone last read; `None` until the file could be read.
    zone: ArcSwapOption<Zone>,
    /// The file as last seen.
    seen: Mutex<Seen>,
}

/// The file as last seen by a zone.
#[derive(Debug, Default)]
struct Seen {
    /// Its modification time when last read.
    modified: Option<SystemTime>,
    /// The last error reading it (logged once).
    error: Option<String>,
}

/// The zone of `config`'s file for `origin`, and the file's modification time.
fn load_zone(config: &FileConfig, origin: &Name) -> Result<(Zone, SystemTime), ZoneError> {
    let modified = std::fs::metadata(&config.path)
        .and_then(|metadata| metadata.modified())
        .unwrap_or(SystemTime::UNIX_EPOCH);
    let records = read_zone(&config.path, origin)?;
    let zone = Zone::new(origin, records).map_err(|message| ZoneError {
        file: config.path.clone(),
        line: 0,
        message,
    })?;
    Ok((zone, modified))
}

impl File {
    /// The plugin for `configs`, every zone read.
    pub(crate) fn load(configs: &[FileConfig]) -> Result<Self, StartError> {
        let mut directives = Vec::with_capacity(configs.len());
        for config in configs {
            let mut zones = Vec::with_capacity(config.zones.len());
            for origin in &config.zones {
                let origin = origin.to_lowercase();
                let Ok(wire) = WireName::from_dotted(&origin.to_ascii()) else {
                    continue;
                };
                let served = Served {
                    origin,
                    wire: wire.to_lowercase(),
                    zone: ArcSwapOption::empty(),
                    seen: Mutex::new(Seen::default()),
                };
                match load_zone(config, &served.origin) {
                    Ok((zone, modified)) => {
                        served.zone.store(Some(Arc::new(zone)));
                        if let Ok(mut seen) = served.seen.lock() {
                            seen.modified = Some(modified);
                        }
                    }
                    // A file that cannot be opened is retried, unless it never will be.
                    Err(error) if error.line == 0 && !config.reload.is_zero() => {
                        tracing::warn!(
                            "file (line {}): {error}; trying again in {:?}",
                            config.line,
                            config.reload
                        );
                    }
                    Err(error) => {
                        return Err(StartError::Plugin {
                            plugin: Plugin::File,
                            line: config.line,
                            error: error.to_string(),
                        });
                    }
                }
                zones.push(served);
            }
            directives.push(Arc::new(Directive {
                fallthrough: config.fallthrough.as_ref().map(|zones| {
                    zones
                        .iter()
                        .filter_map(|zone| WireName::from_dotted(&zone.to_ascii()).ok())
                        .map(|zone| zone.to_lowercase())
                        .collect()
                }),
                config: config.clone(),
                zones,
            }));
        }
        Ok(Self { directives })
    }

    /// Reads each directive's file every `reload` period until `shutdown` (not with
    /// `reload 0`).
    pub(crate) fn watch(&self, shutdown: &CancellationToken) {
        for directive in &self.directives {
            let period = directive.config.reload;
            if period.is_zero() {
                continue;
            }
            let directive = Arc::clone(directive);
            let shutdown = shutdown.clone();
            tokio::spawn(async move {
                let start = tokio::time::Instant::now() + period;
                let mut tick = tokio::time::interval_at(start, period);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    tokio::select! {
                        _ = tick.tick() => {}
                        () = shutdown.cancelled() => return,
                    }
                    directive.reload();
                }
            });
        }
    }

    /// Answers `q` into `out`, or passes it on.
    pub(crate) fn respond(&self, ctx: &Ctx<'_>, q: &Query<'_>, out: &mut Vec<u8>) -> Flow {
        let request = q.request;
        let qname = request.question.name();
        for directive in &self.directives {
            let Some(served) = directive
                .zones
                .iter()
                .filter(|served| suffix_offset(qname, served.wire.as_bytes()).is_some())
                .max_by_key(|served| served.wire.as_bytes().len())
            else {
                continue;
            };
            let Some(zone) = served.zone.load_full() else {
                wire::write_rcode(request, rcode::SERVFAIL, out);
                return Flow::reply(Plugin::File);
            };
            let qtype = request.question.qtype;
            if qtype == rtype::AXFR || qtype == rtype::IXFR {
                wire::write_rcode(request, rcode::REFUSED, out);
                return Flow::reply(Plugin::File);
            }
            let Ok(name) = Name::from_labels(labels(qname)) else {
                wire::write_rcode(request, rcode::SERVFAIL, out);
                return Flow::reply(Plugin::File);
            };
            let found = zone.lookup(&name, RecordType::from(qtype));
            let empty = found.answer.is_empty();
            if empty
                && matches!(found.outcome, Outcome::NameError | Outcome::Success)
                && directive.falls_through(qname)
            {
                continue;
            }
            return match reply_of(ctx, q, found, out) {
                Some(flow) => flow,
                None => {
                    wire::write_rcode(request, rcode::SERVFAIL, out);
                    Flow::reply(Plugin::File)
                }
            };
        }
        Flow::Pass
    }
}

/// The reply of `found` to `q`: written into `out`, or a chase of its last CNAME's target.
/// `None` when it does not encode.
fn reply_of(ctx: &Ctx<'_>, q: &Query<'_>, found: zone::Found, out: &mut Vec<u8>) -> Option<Flow> {
    let request = q.request;
    if found.outcome == Outcome::ServerFailure && found.answer.is_empty() {
        wire::write_rcode(request, rcode::SERVFAIL, out);
        return Some(Flow::reply(Plugin::File));
    }
    // A referral alone is not authoritative; an alias that leads to one is.
    let authoritative = !(found.outcome == Outcome::Delegation && found.answer.is_empty());
    let code = match found.outcome {
        Outcome::NameError => rcode::NXDOMAIN,
        Outcome::ServerFailure => rcode::SERVFAIL,
        _ => rcode::NOERROR,
    };
    let mut message = Rebuilt::reply_to(request, authoritative, code);
    for (section, records) in [(1, &found.answer), (2, &found.authority), (3, &found.additional)] {
        for record in records {
            message.push_record(record, section)?;
        }
    }
    let whole = message.finish();
    if let Some(target) = found.external {
        let target = WireName::from_dotted(&target.to_ascii()).ok()?;
        return Some(
            End::Chase(Chase::from_reply(
                ctx.block,
                ctx.zone,
                request,
                whole,
                target.to_lowercase(),
                Plugin::File.into(),
            ))
            .into(),
        );
    }
    let edns = ctx.block.chain.edns(request);
    reply::fit_for_client(&whole, request.id, edns.as_ref(), q.limit, out).ok()?;
    Some(Flow::reply(Plugin::File))
}

impl Directive {
    /// Whether a name of the zones without records goes on (`fallthrough [ZONES]`).
    fn falls_through(&self, qname: &[u8]) -> bool {
        crate::name::falls_through(self.fallthrough.as_deref(), qname)
    }

    /// One reload check of every zone of the directive.
    fn reload(&self) {
        for served in &self.zones {
            match self.reload_zone(served) {
                Ok(Some(serial)) => tracing::info!(
                    "file: reloaded zone {} from {} with SOA serial {serial}",
                    served.origin,
                    self.config.path.display()
                ),
                Ok(None) => {}
                Err(error) => {
                    let Ok(mut seen) = served.seen.lock() else {
                        continue;
                    };
                    if seen.error.as_deref() != Some(error.as_str()) {
                        tracing::warn!(
                            "file: zone {}: {error}; keeping the zone last read",
                            served.origin
                        );
                        seen.error = Some(error);
                    }
                }
            }
        }
    }

    /// Reads `served`'s file again when it changed: the new serial when the zone was
    /// replaced.
    fn reload_zone(&self, served: &Served) -> Result<Option<u32>, String> {
        let current = served.zone.load_full();
        if self.config.reload_by_mtime {
            let modified = std::fs::metadata(&self.config.path)
                .and_then(|metadata| metadata.modified())
                .map_err(|error| format!("{}: {error}", self.config.path.display()))?;
            let before = served.seen.lock().ok().and_then(|seen| seen.modified);
            if current.is_some() && before.is_some_and(|before| modified <= before) {
                return Ok(None);
            }
        }
        let (zone, modified) =
            load_zone(&self.config, &served.origin).map_err(|error| error.to_string())?;
        let serial = zone.serial();
        if !self.config.reload_by_mtime && current.is_some_and(|old| old.serial() == serial) {
            if let Ok(mut seen) = served.seen.lock() {
                seen.error = None;
            }
            return Ok(None);
        }
        served.zone.store(Some(Arc::new(zone)));
        if let Ok(mut seen) = served.seen.lock() {
            *seen = Seen {
                modified: Some(modified),
                error: None,
            };
        }
        Ok(Some(serial))
    }
}

impl Lifecycle for File {
    const INTERNET_ONLY: bool = true;

    fn build(at: &Build<'_>) -> Result<Option<Self>, StartError> {
        let configs = &at.config.plugins.file;
        if configs.is_empty() {
            return Ok(None);
        }
        Ok(Some(Self::load(configs)?))
    }

    fn start(&self, at: &Start<'_>) -> impl Future<Output = Result<(), StartError>> + Send {
        self.watch(at.token);
        std::future::ready(Ok(()))
    }

    #[inline]
    fn answer(
        &self,
        _chain: &PluginChain,
        ctx: &Ctx<'_>,
        _index: usize,
        q: &mut Query<'_>,
        out: &mut Vec<u8>,
    ) -> Flow {
        self.respond(ctx, q, out)
    }
}

#[cfg(test)]
mod tests;
