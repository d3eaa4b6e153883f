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

pub(crate) mod block;
pub(crate) mod chase;
pub(crate) mod lifecycle;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use hickory_proto::rr::Record;

use self::block::{Block, Pending};
use self::chase::Chase;
use self::lifecycle::{Build, Lifecycle, Readiness, Serving, Start};
use super::Transport;
use super::error::StartError;
use crate::metrics::Collect;
use crate::metrics::dns::Writer;
use crate::plugin::{Plugin, registry};
use crate::wire::{self, MAX_UDP_REPLY, OwnedRequest, Request, UDP_MIN_PAYLOAD, rcode, reply};

pub(crate) use self::rewrite::Revert;

/// Expands the registry's `step` rows ([`crate::plugin::registry!`]) into the chain: each
/// step plugin's module (`server::chain::field`), its variant of [`Step`] holding its type
/// (named as the plugin), and the dispatch of its [`Lifecycle`] — build, start, serving,
/// collectors, answer — with no second list of plugins to keep.
macro_rules! steps {
    ($($variant:ident $name:literal $role:ident $field:ident $how:ident $config:ident;)*) => {
        steps!(@rows [] $($role $variant $field)*);
    };
    (@rows [$($done:tt)*] step $variant:ident $field:ident $($rest:tt)*) => {
        steps!(@rows [$($done)* $variant $field] $($rest)*);
    };
    (@rows [$($done:tt)*] $role:ident $variant:ident $field:ident $($rest:tt)*) => {
        steps!(@rows [$($done)*] $($rest)*);
    };
    (@rows [$($variant:ident $field:ident)*]) => {
        $(pub(crate) mod $field;)*

        /// One step of a chain: a step plugin of the block, in its variant.
        #[derive(Debug)]
        pub(crate) enum Step {
            $(
                #[doc = concat!("*", stringify!($field), "*.")]
                $variant($field::$variant),
            )*
        }

        impl Step {
            /// The plugin of the step, whose place in [`crate::plugin::COREDNS_DIRECTIVES`]
            /// is the step's place in the chain.
            pub(crate) fn plugin(&self) -> Plugin {
                match self {
                    $(Self::$variant(_) => Plugin::$variant,)*
                }
            }

            /// Whether the step serves class IN only.
            #[inline]
            fn internet_only(&self) -> bool {
                match self {
                    $(Self::$variant(_) => <$field::$variant as Lifecycle>::INTERNET_ONLY,)*
                }
            }

            /// The step takes `q` ([`Lifecycle::answer`]).
            #[inline]
            fn answer(
                &self,
                chain: &PluginChain,
                ctx: &Ctx<'_>,
                index: usize,
                q: &mut Query<'_>,
                out: &mut Vec<u8>,
            ) -> Flow {
                match self {
                    $(Self::$variant(step) => step.answer(chain, ctx, index, q, out),)*
                }
            }

            /// Every step the block `at` describes has, in registry order.
            pub(crate) fn build_all(at: &Build<'_>) -> Result<Vec<Self>, StartError> {
                let mut steps = Vec::new();
                $(
                    if let Some(step) = <$field::$variant as Lifecycle>::build(at)? {
                        steps.push(Self::$variant(step));
                    }
                )*
                Ok(steps)
            }

            /// Starts what runs for the step ([`Lifecycle::start`]).
            pub(crate) async fn start(&self, at: &Start<'_>) -> Result<(), StartError> {
                match self {
                    $(Self::$variant(step) => step.start(at).await,)*
                }
            }

            /// A listener of the step's block is bound ([`Lifecycle::serving`]).
            pub(crate) fn serving(&self, at: &Serving<'_>) {
                match self {
                    $(Self::$variant(step) => step.serving(at),)*
                }
            }

            /// What `/ready` asks of the step, if it can be unready ([`Lifecycle::readiness`]).
            pub(crate) fn readiness(&self) -> Option<Arc<dyn Readiness>> {
                match self {
                    $(Self::$variant(step) => step.readiness(),)*
                }
            }

            /// The step's metrics ([`Lifecycle::collectors`]).
            pub(crate) fn collectors(&self, out: &mut Vec<Arc<dyn Collect>>) {
                match self {
                    $(Self::$variant(step) => step.collectors(out),)*
                }
            }

            /// Every step plugin's process-wide metrics ([`Lifecycle::process_collectors`]).
            pub(crate) fn process_collectors() -> Vec<Arc<dyn Collect>> {
                let mut out = Vec::new();
                $(<$field::$variant as Lifecycle>::process_collectors(&mut out);)*
                out
            }
        }

        $(
            impl StepType for $field::$variant {
                const PLUGIN: Plugin = Plugin::$variant;

                #[inline]
                fn of(step: &Step) -> Option<&Self> {
                    match step {
                        Step::$variant(it) => Some(it),
                        #[allow(unreachable_patterns)]
                        _ => None,
                    }
                }
            }
        )*
    };
}
registry!(steps);

/// A step plugin's type, found in a chain by its plugin ([`PluginChain::get`]).
pub(crate) trait StepType: Sized {
    /// Its plugin.
    const PLUGIN: Plugin;
    /// It, when `step` is it.
    fn of(step: &Step) -> Option<&Self>;
}

/// A block's steps, in CoreDNS's order.
#[derive(Debug, Default)]
pub(crate) struct PluginChain {
    steps: Vec<Step>,
    /// Where each plugin's step is, by [`Plugin`] (as `usize`).
    at: [Option<u8>; Plugin::ALL.len()],
    /// *bufsize*'s size, when the block has it.
    bufsize: Option<u16>,
    /// Whether the block has *loadbalance*.
    shuffles: bool,
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
    /// The message as received, parsed.
    pub(crate) request: &'c Request<'c>,
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
        let mut at = [None; Plugin::ALL.len()];
        for (index, step) in steps.iter().enumerate() {
            at[step.plugin() as usize] = u8::try_from(index).ok();
        }
        let mut chain = Self {
            steps,
            at,
            bufsize: None,
            shuffles: false,
        };
        chain.bufsize = chain.get::<bufsize::Bufsize>().map(bufsize::Bufsize::size);
        chain.shuffles = chain.get::<loadbalance::Loadbalance>().is_some();
        chain
    }

    /// The block's step of plugin `T`, if it has one.
    #[inline]
    pub(crate) fn get<T: StepType>(&self) -> Option<&T> {
        let index = self.at[T::PLUGIN as usize]?;
        T::of(self.steps.get(usize::from(index))?)
    }

    /// Whether the replies are shuffled (*loadbalance*).
    #[inline]
    pub(crate) fn shuffles(&self) -> bool {
        self.shuffles
    }

    /// The block's *kubernetes*, if any.
    #[inline]
    pub(crate) fn kubernetes(&self) -> Option<&kubernetes::Kubernetes> {
        self.get()
    }

    /// The block's *cache*, if any.
    #[inline]
    pub(crate) fn cache(&self) -> Option<&cache::Cache> {
        self.get()
    }

    /// The block's *forward*s, if any.
    #[inline]
    pub(crate) fn forward(&self) -> Option<&forward::Forward> {
        self.get()
    }

    /// The steps.
    pub(crate) fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// The first step after *autopath* (where its walk asks each name).
    pub(crate) fn after_autopath(&self) -> usize {
        self.at[Plugin::Autopath as usize].map_or(0, |at| usize::from(at) + 1)
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
            if let Flow::Done(end) = step.answer(self, ctx, index, q, out) {
                return end;
            }
        }
        End::Refused
    }

    /// `bytes` (a whole reply) as the client gets it: shuffled when the block has
    /// *loadbalance*.
    pub(crate) fn shuffled<'b>(&self, bytes: &'b [u8]) -> std::borrow::Cow<'b, [u8]> {
        match self.shuffles.then(|| wire::shuffled(bytes)).flatten() {
            Some(shuffled) => std::borrow::Cow::Owned(shuffled),
            None => std::borrow::Cow::Borrowed(bytes),
        }
    }

    /// Shuffles the whole reply in `out` when the block has *loadbalance*: in place for the
    /// shapes replies have, any other decoded and shuffled.
    pub(crate) fn shuffle_out(&self, out: &mut Vec<u8>) {
        if self.shuffles
            && !reply::shuffle_in_place(out).unwrap_or(false)
            && let Some(shuffled) = wire::shuffled(out)
        {
            *out = shuffled;
        }
    }

    /// The query to send upstream for `q` (the client's message, or *rewrite*'s) with the
    /// payload *bufsize* allows, owned with its parse.
    pub(crate) fn upstream_request(&self, q: &Query<'_>) -> OwnedRequest {
        let mut asked = OwnedRequest::new(q.request);
        if let Some(size) = self.bufsize {
            asked.clamp_payload(size);
        }
        asked
    }

    /// `q` packed for the upstream, from `forwarder` on: the client's query and the one
    /// asked upstream, each with its parse.
    pub(crate) fn pending(&self, ctx: &Ctx<'_>, q: &Query<'_>, forwarder: usize) -> Box<Pending> {
        let same = std::ptr::eq(q.packet, ctx.request.bytes) && self.bufsize.is_none();
        let asked = (!same).then(|| self.upstream_request(q));
        Box::new(Pending {
            block: Arc::clone(ctx.block),
            zone: ctx.zone,
            query: OwnedRequest::new(ctx.request),
            asked,
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
            request: &request,
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
