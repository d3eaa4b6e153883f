//! *kubernetes*: the cluster zone, answered from the block's published snapshot (built from
//! the objects files, or kept by the API watch): its state, how it is built and started (the
//! objects files read and watched, or the API watch connected), its metrics, and its step.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use super::chase::Chase;
use super::lifecycle::{Build, Lifecycle, Readiness, Start};
use super::{Ctx, End, Flow, PluginChain, Query};
use crate::config::KubernetesConfig;
use crate::metrics::Collect;
use crate::metrics::process::StoreMetrics;
use crate::name::{WireName, wire_zones};
use crate::plugin::Plugin;
use crate::server::error::StartError;
use crate::server::local_ips;
use crate::server::observability::Observability;
use crate::source::api::{self, ApiStatus, ApiWatch, WatchContext};
use crate::source::programming::{self, SliceStamps, SliceTrigger};
use crate::source::publish::{self, Publisher};
use crate::source::file_watch;
use crate::store::Store;
use crate::wire::{self, rcode};
use crate::zone::Rcode;

/// The *kubernetes* plugin of a block: its options and its published snapshot.
#[derive(Debug)]
pub struct Kubernetes {
    /// The directive's options (boxed: they are large beside the other steps).
    pub config: Box<KubernetesConfig>,
    /// The current zone.
    pub store: Arc<Store>,
    fallthrough: Option<Vec<WireName>>,
    /// On-disk fingerprint of the objects files the store was built from.
    pub(crate) fingerprint: u64,
    /// The API watch feeding the store (a block without `objects`).
    api: Option<Arc<ApiWatch>>,
    /// The store's metrics, for a block with `objects` that exports metrics (an API watch
    /// has its own).
    metrics: Option<Arc<StoreMetrics>>,
    /// What the block's start takes: the change stamps of the slices the zone was loaded
    /// from, and with `objects` the publisher (and the namespaces its files did not list)
    /// until its files are watched.
    startup: Mutex<Option<Box<Startup>>>,
}

/// What the start of a [`Kubernetes`] takes.
#[derive(Debug, Default)]
struct Startup {
    triggers: Vec<SliceTrigger>,
    publisher: Option<(Publisher, Vec<String>)>,
}

impl Kubernetes {
    /// The plugin with its options and store.
    pub fn new(config: KubernetesConfig, store: Arc<Store>, fingerprint: u64) -> Self {
        let fallthrough = config.fallthrough.as_ref().map(|zones| wire_zones(zones));
        Self {
            config: Box::new(config),
            store,
            fallthrough,
            fingerprint,
            api: None,
            metrics: None,
            startup: Mutex::new(None),
        }
    }

    /// The plugin fed by the API watch `api`.
    pub fn watching(config: KubernetesConfig, api: Arc<ApiWatch>) -> Self {
        let mut plugin = Self::new(config, Arc::clone(&api.store), 0);
        plugin.api = Some(api);
        plugin
    }

    /// The API watch, for a block without `objects`.
    pub fn api(&self) -> Option<&Arc<ApiWatch>> {
        self.api.as_ref()
    }

    /// Whether the zone is not yet the API server's (not synced): an NXDOMAIN is then a
    /// SERVFAIL, as CoreDNS answers before its informers have synced — the name may well
    /// exist.
    pub(crate) fn provisional(&self) -> bool {
        self.api.as_ref().is_some_and(|api| !api.status.is_synced())
    }

    /// Whether an NXDOMAIN for `qname` passes to the next plugin (`fallthrough [ZONES]`).
    fn falls_through(&self, qname: &[u8]) -> bool {
        crate::name::falls_through(self.fallthrough.as_deref(), qname)
    }

    /// The step: the cluster zone's answer, or the name passed on (outside the zone, or
    /// NXDOMAIN with `fallthrough`). Before the API watch's first sync an NXDOMAIN is
    /// SERVFAIL ([`provisional`](Self::provisional)).
    #[inline]
    pub(crate) fn respond(&self, ctx: &Ctx<'_>, q: &Query<'_>, out: &mut Vec<u8>) -> Flow {
        let block = ctx.block;
        let request = q.request;
        let qname = request.question.name();
        let snapshot = self.store.load();
        let Some(answer) = snapshot.lookup(qname, request.question.qtype) else {
            return Flow::Pass;
        };
        // `fallthrough` hands an NXDOMAIN on to the rest of the block's chain.
        let nxdomain = answer.rcode == Rcode::NxDomain;
        let passes = nxdomain && self.falls_through(qname);
        if nxdomain && !passes && self.provisional() {
            wire::write_rcode(request, rcode::SERVFAIL, out);
            return Flow::reply(Plugin::Kubernetes);
        }
        if passes {
            return Flow::Pass;
        }
        let zone = &snapshot.zones()[answer.zone];
        if let Some(target) = answer.chase {
            return End::Chase(Chase::new(block, ctx.zone, request, &answer, zone, target)).into();
        }
        wire::write_answer(request, &answer, zone, q.limit, block.chain.shuffles(), out);
        Flow::reply(Plugin::Kubernetes)
    }
}

impl Lifecycle for Kubernetes {
    const INTERNET_ONLY: bool = true;

    /// Without `objects`, the API watch (the running configuration's when it watches the
    /// same way; offline, an error); with them, the files read and the zone built.
    fn build(at: &Build<'_>) -> Result<Option<Self>, StartError> {
        let Some(k8s) = &at.config.plugins.kubernetes else {
            return Ok(None);
        };
        if k8s.objects.is_empty() {
            let Some(observability) = at.observability else {
                return Err(StartError::NoObjects { line: k8s.line });
            };
            let mut triggers = Vec::new();
            // The running configuration's API watches: kept by a block that watches the same
            // way, and serving the others until they have synced.
            let previous: Vec<&Arc<ApiWatch>> = at
                .previous
                .iter()
                .filter_map(|block| block.chain.kubernetes()?.api())
                .collect();
            let watch = match previous.iter().find(|watch| watch.serves(k8s)) {
                Some(watch) => Arc::clone(watch),
                None => {
                    let (watch, restored) =
                        new_api_watch(k8s, &local_ips(at.addrs), &previous, observability);
                    triggers = restored;
                    Arc::new(watch)
                }
            };
            let plugin = Self::watching(k8s.clone(), watch);
            *plugin.startup.lock().unwrap_or_else(PoisonError::into_inner) = Some(Box::new(Startup {
                triggers,
                publisher: None,
            }));
            return Ok(Some(plugin));
        }
        let loaded = file_watch::load(&k8s.objects, k8s).map_err(|source| StartError::Objects {
            line: k8s.line,
            error: Box::new(source),
        })?;
        for (kind, count) in &loaded.ignored {
            tracing::info!(
                kind,
                count,
                "objects of a kind clusterdns does not use; ignored"
            );
        }
        let metrics = at
            .observability
            .filter(|_| at.measured)
            .map(|observability| {
                let primary = k8s
                    .zones
                    .get(k8s.primary_zone)
                    .map(ToString::to_string)
                    .unwrap_or_default();
                Arc::new(
                    StoreMetrics::new(&primary)
                        .reporting_programming(Arc::clone(&observability.programming)),
                )
            });
        let fingerprint = loaded.fingerprint();
        loaded.report_unlisted(&[]);
        let unlisted = loaded.unlisted_namespaces;
        let triggers = programming::triggers(&loaded.cluster);
        let (owner, published) = Publisher::start(
            k8s.clone(),
            local_ips(at.addrs),
            loaded.cluster,
            loaded.modified,
            metrics.clone(),
        );
        tracing::info!(
            zones = ?k8s.zones.iter().map(ToString::to_string).collect::<Vec<_>>(),
            serial = published.serial,
            names = published.names,
            read_ms = loaded.read_time.as_millis(),
            build_ms = published.build_time.as_millis(),
            "zone loaded"
        );
        let store = Arc::clone(owner.store());
        let mut plugin = Self::new(k8s.clone(), store, fingerprint);
        plugin.metrics = metrics;
        *plugin.startup.get_mut().unwrap_or_else(PoisonError::into_inner) = Some(Box::new(Startup {
            triggers,
            publisher: Some((owner, unlisted)),
        }));
        Ok(Some(plugin))
    }

    /// Connects the API watch (a watch kept from the previous generation runs on), or
    /// watches the objects files.
    async fn start(&self, at: &Start<'_>) -> Result<(), StartError> {
        let Startup {
            triggers,
            publisher,
        } = self
            .startup
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .map(|startup| *startup)
            .unwrap_or_default();
        let tracker = SliceStamps::new(at.started, &triggers);
        if let Some(watch) = &self.api {
            let context = WatchContext {
                local_ips: local_ips(at.addrs),
                tracker,
            };
            return watch
                .start(context)
                .await
                .map_err(|error| StartError::Api {
                    line: watch.config().line,
                    error,
                });
        }
        if let Some((mut publisher, unlisted)) = publisher {
            publisher.track(tracker);
            file_watch::watch(
                self.config.objects.clone(),
                publisher,
                self.fingerprint,
                unlisted,
                at.token.clone(),
            )
            .map_err(StartError::Watch)?;
        }
        Ok(())
    }

    /// An API watch is ready once synced (or serving its snapshot file); objects files are
    /// read before the server starts.
    fn readiness(&self) -> Option<Arc<dyn Readiness>> {
        self.api
            .as_ref()
            .map(|watch| Arc::clone(watch) as Arc<dyn Readiness>)
    }

    fn collectors(&self, out: &mut Vec<Arc<dyn Collect>>) {
        if let Some(watch) = &self.api {
            out.push(Arc::clone(&watch.metrics) as Arc<dyn Collect>);
            out.push(Arc::clone(&watch.status) as Arc<dyn Collect>);
        }
        if let Some(metrics) = &self.metrics {
            out.push(Arc::clone(metrics) as Arc<dyn Collect>);
        }
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

impl Readiness for ApiWatch {
    fn is_ready(&self) -> bool {
        self.status.is_ready()
    }

    fn notes(&self, now: SystemTime) -> Vec<String> {
        self.status.notes(now)
    }

    /// Waits up to the block's `startup_timeout` for the sync, as CoreDNS holds its server
    /// back; then serves regardless.
    fn wait(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            if self.status.is_ready() {
                return;
            }
            let timeout = self.config().startup_timeout;
            tracing::info!("waiting for Kubernetes API before starting server");
            if !self.status.wait_synced(timeout).await {
                tracing::warn!(
                    "starting server with unsynced Kubernetes API (startup_timeout {} s): \
                     names not known yet are answered SERVFAIL until it syncs",
                    timeout.as_secs_f64()
                );
            }
        })
    }
}

/// A new API watch for `k8s`, not started, and the change stamps of what it serves until it
/// syncs: the zone of a watch it replaces (a reloaded Corefile changed the block), else the
/// `snapshot` file, else an empty zone — where every NXDOMAIN is a SERVFAIL until the sync.
fn new_api_watch(
    k8s: &KubernetesConfig,
    local_ips: &[std::net::IpAddr],
    previous: &[&Arc<ApiWatch>],
    observability: &Observability,
) -> (ApiWatch, Vec<SliceTrigger>) {
    let zone = k8s
        .zones
        .get(k8s.primary_zone)
        .map(ToString::to_string)
        .unwrap_or_default();
    let status = Arc::new(ApiStatus::new(&zone));
    let metrics = Arc::new(
        StoreMetrics::new(&zone).reporting_programming(Arc::clone(&observability.programming)),
    );
    let mut triggers = Vec::new();
    let store = if let Some(before) = previous.iter().find(|w| w.config().zones == k8s.zones) {
        status.inherited();
        Store::from_shared(before.store.snapshot())
    } else if let Some(path) = &k8s.snapshot
        && path.exists()
    {
        match api::read_snapshot(path) {
            Ok((cluster, written)) => {
                // Answers from a state of unknown age are given a short life, so clients
                // ask again soon after the sync.
                let snapshot = publish::restored(&cluster, k8s, local_ips, written);
                let age = SystemTime::now()
                    .duration_since(written)
                    .unwrap_or_default();
                tracing::info!(
                    zone,
                    names = snapshot.name_count(),
                    services = cluster.services.len(),
                    "serving the snapshot {} (age {} s) until the API server is synced",
                    path.display(),
                    age.as_secs()
                );
                status.restored(written);
                triggers = programming::triggers(&cluster);
                Store::new(snapshot)
            }
            Err(error) => {
                tracing::warn!(
                    "snapshot {}: {error}; starting without it (SERVFAIL for unknown names until \
                     the API server is synced)",
                    path.display()
                );
                Store::new(publish::standalone(
                    &crate::model::Cluster::default(),
                    k8s,
                    local_ips,
                    SystemTime::now(),
                ))
            }
        }
    } else {
        Store::new(publish::standalone(
            &crate::model::Cluster::default(),
            k8s,
            local_ips,
            SystemTime::now(),
        ))
    };
    (
        ApiWatch::new(k8s.clone(), Arc::new(store), status, metrics),
        triggers,
    )
}
