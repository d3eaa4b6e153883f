//! A block's plugin chain: one ordered list of steps, in CoreDNS's compiled plugin order
//! (`plugin.cfg`, whatever the order in the Corefile), holding only the plugins the block
//! has. A query runs down it from the top; each step answers (the reply is written), passes
//! the query on to the next step (a name outside its zones, `fallthrough`), or hands the name
//! to the upstream step (*forward*, finished asynchronously). *bufsize* and *rewrite* change
//! the query the rest of the chain sees; *rewrite* also turns the reply back for the client.
//!
//! The handler ([`super::Handler`]) runs the whole chain for a client's query — for the
//! listeners, and offline for `query` and `explain`; *autopath* runs the part after itself
//! for each name of its walk; `resolve-cost` asks a block through it
//! ([`Block::answer_locally`]). There is no other copy of the chain.
//!
//! Each step holds its own state (its variant of [`Step`]); the chain keeps only where a few
//! steps are, for the others that read them: *bufsize*'s size, whether *loadbalance* shuffles,
//! the *kubernetes* zone (for *transfer*, *k8s_external* and *autopath*), the *cache* and
//! *loop* (for *forward*, [`forward`]). *cache* and *loadbalance* are steps at their places in
//! `plugin.cfg` that pass every query on: CoreDNS's wrap the reply writer, and ours work
//! where the replies are written — the cache where *forward* goes upstream (it holds nothing
//! else: the cluster zone is never cached, docs/differences.md), loadbalance in the cluster
//! zone's writer, a cache hit and a whole reply's delivery.
//!
//! The steps of kubeadm's Corefile (*loadbalance*, *cache*, *transfer*, *kubernetes*, *loop*,
//! *forward*) cost what they did before the chain existed: a cluster-zone answer is one hash
//! lookup and a copy, synchronous and without allocation; a block pays only for the steps it
//! has (a step is an enum variant, matched in a loop over a handful of them).

pub(crate) mod any;
pub(crate) mod autopath;
pub(crate) mod chaos;
pub(crate) mod chase;
pub(crate) mod file;
pub(crate) mod forward;
pub(crate) mod hosts;
pub(crate) mod k8s_external;
pub(crate) mod kubernetes;
pub(crate) mod loop_detect;
pub(crate) mod rewrite;
pub(crate) mod template;
pub(crate) mod transfer;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use hickory_proto::rr::Record;

use self::chase::Chase;
use self::forward::Forward;
use self::kubernetes::Kubernetes;
use self::loop_detect::LoopDetect;
use super::{Block, Pending, Transport};
use crate::cache::Cache;
use crate::metrics::dns::Writer;
use crate::plugin::Plugin;
use crate::search_walk::SearchPath;
use crate::wire::{self, MAX_UDP_REPLY, Request, UDP_MIN_PAYLOAD, rcode, reply};

pub(crate) use self::rewrite::Revert;

/// Declares [`Step`], one variant per answering plugin, named as the plugin's
/// [`Plugin`] variant: the step's plugin is its name, with no second list to keep. Each
/// variant says whether it serves every class (`any_class`) or only IN (`class_in`): a query
/// of another class (CH, HS) that gets as far as a `class_in` step is refused, as the cluster
/// zone has never answered one.
macro_rules! steps {
    ($($(#[doc = $doc:literal])* $variant:ident $(($state:ty))? $class:ident;)*) => {
        /// One step of a chain.
        #[derive(Debug)]
        pub(crate) enum Step {
            $($(#[doc = $doc])* $variant $(($state))?,)*
        }

        impl Step {
            /// The plugin of the step, whose place in [`crate::plugin::COREDNS_DIRECTIVES`]
            /// is the step's place in the chain.
            pub(crate) fn plugin(&self) -> Plugin {
                match self {
                    $(Self::$variant { .. } => Plugin::$variant,)*
                }
            }

            /// Whether the step serves class IN only.
            fn internet_only(&self) -> bool {
                match self {
                    $(Self::$variant { .. } => steps!(@in $class),)*
                }
            }
        }
    };
    (@in any_class) => { false };
    (@in class_in) => { true };
}

steps! {
    /// *bufsize*: the EDNS payload size the upstream is offered is at most this, and so is a
    /// UDP reply (the chain's [`PluginChain::limit`] and [`PluginChain::upstream_query`]; the
    /// step itself does nothing).
    Bufsize(u16) any_class;
    /// *any*: RFC 8482's HINFO for ANY queries.
    Any any_class;
    /// *chaos*: `version.bind` and friends in class CH.
    Chaos(chaos::Chaos) any_class;
    /// *loadbalance*: the A, AAAA and MX records of the replies below it shuffled (by
    /// whoever writes them: the chain's [`PluginChain::shuffles`]; the step itself does
    /// nothing).
    Loadbalance any_class;
    /// *cache*: what *forward* brings back, looked up and stored where the query goes
    /// upstream ([`forward`]; the step itself does nothing, as the cluster zone is never
    /// cached).
    Cache(Arc<Cache>) any_class;
    /// *rewrite*: its rules, in file order.
    Rewrite(rewrite::Rewrite) any_class;
    /// *autopath*: the search walk.
    Autopath(SearchPath) class_in;
    /// *template*: its templates, in file order (each names its class).
    Template(template::Templates) any_class;
    /// *transfer*: AXFR and IXFR, refused unless a `transfer` allows them.
    Transfer(transfer::Transfer) class_in;
    /// *hosts*.
    Hosts(Arc<hosts::Hosts>) class_in;
    /// *k8s_external*: the external zones, from the *kubernetes* snapshot.
    K8sExternal(k8s_external::K8sExternal) class_in;
    /// *kubernetes*: the cluster zone.
    Kubernetes(Box<Kubernetes>) class_in;
    /// *file*: zones from zone files.
    File(Arc<file::File>) class_in;
    /// *loop*: the probe coming back, and SERVFAIL for forwarded names once it has.
    Loop(LoopDetect) class_in;
    /// *forward*.
    Forward(Forward) class_in;
}

/// A block's steps, in CoreDNS's order.
#[derive(Debug, Default)]
pub(crate) struct PluginChain {
    steps: Vec<Step>,
    /// *bufsize*'s size, when the block has it.
    bufsize: Option<u16>,
    /// Where *autopath* is (its walk runs the steps after it).
    autopath: Option<usize>,
    /// Whether the block has *loadbalance*.
    shuffles: bool,
    /// Where *kubernetes*, *cache*, *loop* and *forward* are.
    kubernetes: Option<usize>,
    cache: Option<usize>,
    loop_detect: Option<usize>,
    forward: Option<usize>,
}

/// What one step decides about a query: not its own (the next step has it), or where the
/// query's walk down the chain ends.
#[derive(Debug)]
pub(crate) enum Flow {
    /// This step does not take the query: the next step has it.
    Pass,
    /// This step takes the query: the walk ends here.
    Done(End),
}

impl Flow {
    /// Answered by `plugin`: the reply is in the output buffer.
    pub(crate) fn reply(plugin: impl Into<Writer>) -> Self {
        Self::Done(End::Reply(plugin.into()))
    }
}

impl From<End> for Flow {
    fn from(end: End) -> Self {
        Self::Done(end)
    }
}

/// Where a query's walk down the chain ([`PluginChain::run`]) ended.
#[derive(Debug)]
pub(crate) enum End {
    /// Answered by this plugin: the reply is in the output buffer, shuffled for
    /// *loadbalance* and cut to the query's limit by the step that wrote it.
    Reply(Writer),
    /// On its way upstream (*forward*, an *autopath* walk), packed: finished
    /// asynchronously by whoever holds the query.
    Forward(Box<Pending>),
    /// A CNAME whose target is asked through the server again (an ExternalName, a
    /// template's CNAME).
    Chase(Box<Chase>),
    /// A zone transfer's records.
    Transfer(Vec<Record>),
    /// Past the last step: nothing in the block serves the name, nothing forwards it
    /// (REFUSED, from the server).
    Refused,
}

/// Where a query got to: its block and the block zone the name fell in, the client, and
/// the message as the client sent it.
#[derive(Clone, Copy)]
pub(crate) struct Ctx<'c> {
    /// The block.
    pub(crate) block: &'c Arc<Block>,
    /// Index of the block zone the name fell in.
    pub(crate) zone: usize,
    /// The client.
    pub(crate) client: SocketAddr,
    /// How it asked.
    pub(crate) transport: Transport,
    /// When the query arrived.
    pub(crate) started: Instant,
    /// The message as received.
    pub(crate) received: &'c [u8],
    /// The server's own lookup of a CNAME's target for the client (a chase), not a query
    /// the client sent: counted and logged as CoreDNS does its `Upstream.Lookup`, but no
    /// step of the client's search-path walk.
    pub(crate) chased: bool,
    /// Asked to learn where the query ends, for no client (`/debug/why`, `resolve-cost`):
    /// no step records it — *forward* neither reads nor counts the cache and packs the query
    /// for the upstream, *template* counts no match, *loop* takes it for no probe.
    pub(crate) dry: bool,
}

/// The query as the steps see it (a few references: no copy of the parsed question).
pub(crate) struct Query<'q> {
    /// The message (the client's, or *rewrite*'s).
    pub(crate) packet: &'q [u8],
    /// It, parsed.
    pub(crate) request: &'q Request<'q>,
    /// The largest reply to write.
    pub(crate) limit: usize,
    /// What *rewrite* turns back in the reply, when a rule matched.
    pub(crate) revert: Option<Box<Revert>>,
}

impl<'q> Query<'q> {
    /// `request` (parsed from `packet`) as the client asked it over `transport`, for `chain`.
    #[inline]
    pub(crate) fn new(
        chain: &PluginChain,
        packet: &'q [u8],
        request: &'q Request<'q>,
        transport: Transport,
    ) -> Self {
        let limit = chain.limit(request, transport);
        Self {
            packet,
            request,
            limit,
            revert: None,
        }
    }
}

impl PluginChain {
    /// A chain of `steps`, put in CoreDNS's order (their plugins' places in `plugin.cfg`).
    pub(crate) fn new(mut steps: Vec<Step>) -> Self {
        steps.sort_by_key(|step| step.plugin().position());
        let bufsize = steps.iter().find_map(|step| match step {
            Step::Bufsize(size) => Some(*size),
            _ => None,
        });
        let at = |plugin: Plugin| steps.iter().position(|step| step.plugin() == plugin);
        let autopath = at(Plugin::Autopath);
        let shuffles = at(Plugin::Loadbalance).is_some();
        let kubernetes = at(Plugin::Kubernetes);
        let cache = at(Plugin::Cache);
        let loop_detect = at(Plugin::Loop);
        let forward = at(Plugin::Forward);
        Self {
            steps,
            bufsize,
            autopath,
            shuffles,
            kubernetes,
            cache,
            loop_detect,
            forward,
        }
    }

    /// Whether the replies are shuffled (*loadbalance*).
    #[inline]
    pub(crate) fn shuffles(&self) -> bool {
        self.shuffles
    }

    /// The block's *kubernetes*, if any.
    #[inline]
    pub(crate) fn kubernetes(&self) -> Option<&Kubernetes> {
        match self.steps.get(self.kubernetes?)? {
            Step::Kubernetes(kubernetes) => Some(kubernetes),
            _ => None,
        }
    }

    /// The block's *cache*, if any.
    #[inline]
    pub(crate) fn cache(&self) -> Option<&Arc<Cache>> {
        match self.steps.get(self.cache?)? {
            Step::Cache(cache) => Some(cache),
            _ => None,
        }
    }

    /// The block's *loop* probe, if any.
    #[inline]
    pub(crate) fn loop_detect(&self) -> Option<&LoopDetect> {
        match self.steps.get(self.loop_detect?)? {
            Step::Loop(probe) => Some(probe),
            _ => None,
        }
    }

    /// The block's *forward*s, if any.
    #[inline]
    pub(crate) fn forward(&self) -> Option<&Forward> {
        match self.steps.get(self.forward?)? {
            Step::Forward(forward) => Some(forward),
            _ => None,
        }
    }

    /// The steps.
    pub(crate) fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// The block's *hosts*, if any.
    pub(crate) fn hosts(&self) -> Option<&Arc<hosts::Hosts>> {
        self.steps.iter().find_map(|step| match step {
            Step::Hosts(hosts) => Some(hosts),
            _ => None,
        })
    }

    /// The block's *file* plugin, if any.
    pub(crate) fn file(&self) -> Option<&Arc<file::File>> {
        self.steps.iter().find_map(|step| match step {
            Step::File(file) => Some(file),
            _ => None,
        })
    }

    /// The block's *template* plugin, if any.
    pub(crate) fn templates(&self) -> Option<&template::Templates> {
        self.steps.iter().find_map(|step| match step {
            Step::Template(templates) => Some(templates),
            _ => None,
        })
    }

    /// The first step after *autopath* (where its walk asks each name).
    pub(crate) fn after_autopath(&self) -> usize {
        self.autopath.map_or(0, |at| at + 1)
    }

    /// The largest reply `request` takes over `transport`: over UDP its EDNS payload (512
    /// without EDNS), at most [`MAX_UDP_REPLY`] — or *bufsize*'s size when the block has it.
    #[inline]
    pub(crate) fn limit(&self, request: &Request<'_>, transport: Transport) -> usize {
        match transport {
            Transport::Udp => {
                let cap = self.bufsize.unwrap_or(MAX_UDP_REPLY);
                usize::from(
                    request
                        .edns
                        .map_or(UDP_MIN_PAYLOAD, |edns| edns.payload.min(cap)),
                )
            }
            Transport::Tcp => usize::from(u16::MAX),
        }
    }

    /// `request`'s EDNS as the chain answers it: the payload lowered by *bufsize*.
    pub(crate) fn edns(&self, request: &Request<'_>) -> Option<wire::Edns> {
        let mut edns = request.edns?;
        if let Some(size) = self.bufsize {
            edns.payload = edns.payload.min(size);
        }
        Some(edns)
    }

    /// A query for upstream with the payload *bufsize* allows.
    pub(crate) fn clamp(&self, query: &mut [u8]) {
        if let Some(size) = self.bufsize {
            wire::clamp_payload(query, size);
        }
    }

    /// Runs `q` down the steps from `from`, writing any reply into `out`.
    #[inline]
    pub(crate) fn run(
        &self,
        ctx: &Ctx<'_>,
        from: usize,
        q: &mut Query<'_>,
        out: &mut Vec<u8>,
    ) -> End {
        let internet = wire::is_internet_class(q.request.question.qclass);
        for (index, step) in self.steps.iter().enumerate().skip(from) {
            if !internet && step.internet_only() {
                return End::Refused;
            }
            let flow = match step {
                Step::Bufsize(_) => Flow::Pass,
                Step::Any => any::answer(q.request, q.limit, out),
                Step::Chaos(chaos) => chaos.answer(q.request, q.limit, out),
                Step::Loadbalance | Step::Cache(_) => Flow::Pass,
                Step::Rewrite(rewrite) => self.rewrite(rewrite, ctx, index, q, out),
                Step::Autopath(search) => autopath::respond(search, ctx, index, q, out),
                Step::Template(templates) => templates.answer(ctx, q, out),
                Step::Transfer(transfer) => transfer.answer(
                    self.kubernetes(),
                    q.request,
                    ctx.client.ip(),
                    ctx.transport,
                    out,
                ),
                Step::Hosts(hosts) => hosts.answer(q.request, q.limit, out),
                Step::K8sExternal(external) => external.answer(ctx, q, out),
                Step::Kubernetes(kubernetes) => kubernetes.answer(ctx, q, out),
                Step::File(file) => file.answer(ctx, q, out),
                Step::Loop(probe) => loop_detect::answer(probe, self, ctx, q.request, out),
                Step::Forward(forward) => forward.answer(self, ctx, q, out),
            };
            if let Flow::Done(end) = flow {
                return end;
            }
        }
        End::Refused
    }

    /// *rewrite*: when a rule matches, the rest of the chain runs on the rewritten query and
    /// the reversal is kept in `q` for the client's reply. Passes on when no rule matched.
    fn rewrite(
        &self,
        rewrite: &rewrite::Rewrite,
        ctx: &Ctx<'_>,
        index: usize,
        q: &mut Query<'_>,
        out: &mut Vec<u8>,
    ) -> Flow {
        let rewritten = match rewrite.apply(q.request, ctx.client, ctx.transport) {
            None => return Flow::Pass,
            Some(Ok(rewritten)) => rewritten,
            Some(Err(message)) => {
                if let Some(errors) = &ctx.block.errors {
                    errors.report(q.request, rcode::SERVFAIL, &message, Instant::now());
                }
                wire::write_rcode(q.request, rcode::SERVFAIL, out);
                return Flow::reply(Writer::Server);
            }
        };
        let Ok(request) = Request::parse(&rewritten.packet) else {
            wire::write_rcode(q.request, rcode::SERVFAIL, out);
            return Flow::reply(Writer::Server);
        };
        let mut inner = Query {
            packet: &rewritten.packet,
            request: &request,
            limit: q.limit,
            revert: None,
        };
        let end = self.run(ctx, index + 1, &mut inner, out);
        q.revert = Some(rewritten.revert);
        Flow::Done(end)
    }

    /// `bytes` (a whole reply) as the client gets it: shuffled when the block has
    /// *loadbalance*.
    pub(crate) fn shuffled<'b>(&self, bytes: &'b [u8]) -> std::borrow::Cow<'b, [u8]> {
        match self.shuffles.then(|| reply::shuffle(bytes)).flatten() {
            Some(shuffled) => std::borrow::Cow::Owned(shuffled),
            None => std::borrow::Cow::Borrowed(bytes),
        }
    }

    /// Shuffles the whole reply in `out` when the block has *loadbalance*: in place for the
    /// shapes replies have, any other decoded and shuffled.
    pub(crate) fn shuffle_out(&self, out: &mut Vec<u8>) {
        if self.shuffles
            && !reply::shuffle_in_place(out).unwrap_or(false)
            && let Some(shuffled) = reply::shuffle(out)
        {
            *out = shuffled;
        }
    }

    /// The query to send upstream for `q`: the client's message, or *rewrite*'s, with the
    /// payload *bufsize* allows.
    pub(crate) fn upstream_query(&self, q: &Query<'_>) -> Vec<u8> {
        let mut asked = q.packet.to_vec();
        self.clamp(&mut asked);
        asked
    }

    /// `q` packed for the upstream, from `forwarder` on.
    pub(crate) fn pending(&self, ctx: &Ctx<'_>, q: &Query<'_>, forwarder: usize) -> Box<Pending> {
        let same = std::ptr::eq(q.packet, ctx.received) && self.bufsize.is_none();
        Box::new(Pending {
            block: Arc::clone(ctx.block),
            zone: ctx.zone,
            packet: ctx.received.to_vec(),
            asked: (!same).then(|| self.upstream_query(q)),
            client: ctx.client,
            transport: ctx.transport,
            started: ctx.started,
            chased: ctx.chased,
            forwarder,
            autopath: None,
            chase: None,
            revert: None,
        })
    }
}

/// What [`Block::answer_locally`] found.
#[derive(Debug)]
pub enum Local {
    /// The block answered: the whole reply (an ExternalName's CNAME alone, when its target
    /// lies outside the block).
    Reply(Vec<u8>),
    /// No step before the upstream answered: the name goes to *forward* (or, without one,
    /// past the end of the chain).
    Upstream,
}

/// Where a query ran down a block's chain to, asked for no client ([`Block::dry_run`]).
pub(crate) struct DryRun {
    /// Where the walk ended.
    pub(crate) end: End,
    /// The reply a step wrote, for [`End::Reply`]: as the step wrote it, *rewrite* not
    /// turned back.
    pub(crate) reply: Vec<u8>,
    /// What *rewrite* turns back, when a rule matched.
    pub(crate) revert: Option<Box<Revert>>,
}

impl Block {
    /// Runs `packet` down the block's chain as a TCP query (no size limit) from 127.0.0.1
    /// with nothing recorded ([`Ctx::dry`]): where it ends, and what was written. `None` for
    /// a packet that is no query.
    pub(crate) fn dry_run(self: &Arc<Self>, packet: &[u8]) -> Option<DryRun> {
        self.run_from_loopback(packet, true)
    }

    /// [`dry_run`](Self::dry_run), or with `dry` false as a client's query the plugins count
    /// (the unit tests' view).
    pub(crate) fn run_from_loopback(self: &Arc<Self>, packet: &[u8], dry: bool) -> Option<DryRun> {
        let request = Request::parse(packet).ok()?;
        let ctx = Ctx {
            block: self,
            zone: 0,
            client: SocketAddr::from(([127, 0, 0, 1], 0)),
            transport: Transport::Tcp,
            started: Instant::now(),
            received: packet,
            chased: false,
            dry,
        };
        let mut q = Query::new(&self.chain, packet, &request, Transport::Tcp);
        let mut out = Vec::new();
        let end = self.chain.run(&ctx, 0, &mut q, &mut out);
        Some(DryRun {
            end,
            reply: out,
            revert: q.revert,
        })
    }

    /// Asks `packet` through the block's chain from what it holds, as a TCP query (no size
    /// limit) from 127.0.0.1: nothing upstream is asked, nothing is logged or counted.
    /// `resolve-cost`'s view of the server.
    pub fn answer_locally(self: &Arc<Self>, packet: &[u8]) -> Option<Local> {
        self.dry_run(packet)?.local()
    }
}

impl DryRun {
    /// What a block answered from what it holds: its reply (*rewrite* turned back; a chase's
    /// CNAMEs so far), or that the name goes upstream. `None` for a zone transfer.
    pub(crate) fn local(self) -> Option<Local> {
        let DryRun { end, reply, revert } = self;
        let mut reply = match end {
            End::Reply(_) => reply,
            End::Chase(chase) => chase.so_far(),
            End::Forward(_) | End::Refused => return Some(Local::Upstream),
            End::Transfer(_) => return None,
        };
        if let Some(revert) = &revert {
            revert.apply(&mut reply);
        }
        Some(Local::Reply(reply))
    }
}

/// `bytes` (a whole reply) cut to the client's size into `out`, with its OPT record (the
/// payload *bufsize* allows); SERVFAIL if it cannot be.
pub(crate) fn fit(at: &Ctx<'_>, request: &Request<'_>, bytes: &[u8], out: &mut Vec<u8>) {
    let chain = &at.block.chain;
    let edns = chain.edns(request);
    if reply::fit_for_client(
        bytes,
        request.id,
        edns.as_ref(),
        chain.limit(request, at.transport),
        out,
    )
    .is_err()
    {
        wire::write_rcode(request, rcode::SERVFAIL, out);
    }
}

#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;
