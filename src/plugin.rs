//! The plugins clusterdns implements, each declared once, in [`registry!`]'s table.
//!
//! The table is the one list of plugins in the crate: [`Plugin`] (a plugin's name, its
//! place in CoreDNS's `plugin.cfg`, its metric label) is expanded from it here, and
//! `config`'s directive parsing (the per-block configuration of every plugin, the `apply`
//! that reads each directive line, what `coredns_plugin_enabled` reports) from the same
//! table there, and the server's chain of steps (each step plugin's module, its variant of
//! `Step`, how it is built, started, observed and asked) in `server::chain`. Adding a plugin
//! is one row here and its own files; ARCHITECTURE.md walks through it.
//!
//! The table names each plugin's configuration type and modules as `config` and the server
//! see them; this module only reads the rows' first three columns, so it depends on
//! nothing.

/// The plugin table, handed to the macro `$then`: one row per plugin clusterdns implements,
///
/// ```text
/// Variant "directive" role field how ConfigType;
/// ```
///
/// `Variant` names the plugin in [`Plugin`]; `"directive"` is its Corefile name; `role` is
/// `step` for a plugin that is a step of the block's chain on our side (its server module is
/// `server::chain::field`, holding the type `Variant` with its lifecycle: how it is built,
/// started and observed, and how it takes a query), `handler` for one CoreDNS puts in a
/// block's chain of handlers that our server applies around the chain (*prometheus*,
/// *errors*, *log*), and `setup` for one that only configures the server (*bind*, *health*,
/// *ready*, *reload*, *multisocket*); CoreDNS reports the first two in
/// `coredns_plugin_enabled`. `field` is its parser module (`config::directives::field`, with
/// a `parse(line, context)`), its field in the block's configuration and, for a step, its
/// server module; `how` says what several directives of it in a
/// block mean: `once` (a second one is an error naming the first's line, in CoreDNS's words,
/// as CoreDNS refuses it too: `plugin.ErrOnce`; the field is an `Option`), `single` (a second
/// one is an error as well, though CoreDNS silently keeps one of them; an `Option`), `each`
/// (one value per directive, in file order; a `Vec`), `merge` (every directive's values
/// gathered, each once; a `Vec`). Rows are in `plugin.cfg` order.
macro_rules! registry {
    ($then:ident) => {
        $then! {
            Multisocket "multisocket"  setup   multisocket  single MultisocketConfig;
            Reload      "reload"       setup   reload       single ReloadConfig;
            Bufsize     "bufsize"      step    bufsize      single BufsizeConfig;
            Bind        "bind"         setup   bind         merge  IpAddr;
            Ready       "ready"        setup   ready        once   ReadyConfig;
            Health      "health"       setup   health       single HealthConfig;
            Prometheus  "prometheus"   handler prometheus   once   PrometheusConfig;
            Errors      "errors"       handler errors       once   ErrorsConfig;
            Log         "log"          handler log          each   LogConfig;
            Any         "any"          step    any          single AnyConfig;
            Chaos       "chaos"        step    chaos        single ChaosConfig;
            Loadbalance "loadbalance"  step    loadbalance  single LoadBalanceConfig;
            Rewrite     "rewrite"      step    rewrite      each   RewriteRule;
            Autopath    "autopath"     step    autopath     single AutopathConfig;
            Cache       "cache"        step    cache        once   CacheConfig;
            Template    "template"     step    template     each   TemplateConfig;
            Transfer    "transfer"     step    transfer     each   TransferConfig;
            Hosts       "hosts"        step    hosts        once   HostsConfig;
            K8sExternal "k8s_external" step    k8s_external single K8sExternalConfig;
            Kubernetes  "kubernetes"   step    kubernetes   once   KubernetesConfig;
            File        "file"         step    file         each   FileConfig;
            Loop        "loop"         step    loop_detect  once   LoopConfig;
            Forward     "forward"      step    forward      each   ForwardConfig;
        }
    };
}
pub(crate) use registry;

/// Expands the table into [`Plugin`].
macro_rules! plugin_enum {
    ($($variant:ident $name:literal $role:ident $field:ident $how:ident $config:ident;)*) => {
        /// A plugin clusterdns implements.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Plugin {
            $(
                #[doc = concat!("*", $name, "*.")]
                $variant,
            )*
        }

        impl Plugin {
            /// Every plugin, in `plugin.cfg` order.
            pub const ALL: &[Self] = &[$(Self::$variant),*];

            /// The directive that configures it, which is also its `plugin` metric label.
            pub const fn name(self) -> &'static str {
                match self {
                    $(Self::$variant => $name,)*
                }
            }

            /// Whether CoreDNS makes it a handler in a block's chain (and reports it in
            /// `coredns_plugin_enabled`), not only a part of the server's set-up: a `step`
            /// or a `handler` row.
            pub const fn is_handler(self) -> bool {
                match self {
                    $(Self::$variant => plugin_enum!(@handler $role),)*
                }
            }
        }
    };
    (@handler handler) => { true };
    (@handler step) => { true };
    (@handler setup) => { false };
}
registry!(plugin_enum);

impl Plugin {
    /// The plugin a directive names, if clusterdns implements it.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL
            .iter()
            .copied()
            .find(|plugin| plugin.name() == name)
    }

    /// Its place in [`COREDNS_DIRECTIVES`], which is its place in a block's chain.
    pub fn position(self) -> usize {
        COREDNS_DIRECTIVES
            .iter()
            .position(|directive| *directive == self.name())
            .unwrap_or(COREDNS_DIRECTIVES.len())
    }
}

impl std::fmt::Display for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Every CoreDNS plugin directive, in `plugin.cfg` order, which is the order plugins handle a
/// query in (whatever the order in the Corefile): CoreDNS v1.14.7's `plugin.cfg` (and its
/// generated `core/dnsserver/zdirectives.go`), checked against the coredns/coredns
/// repository. `proxyproto`, `quic`, `grpc_server`, `https`, `https3` and `tls` configure
/// server transports; `on` is `github.com/coredns/caddy/onevent`. A block's chain takes its
/// order from this list ([`Plugin::position`]).
pub const COREDNS_DIRECTIVES: &[&str] = &[
    "root",
    "metadata",
    "geoip",
    "cancel",
    "proxyproto",
    "quic",
    "grpc_server",
    "https",
    "https3",
    "timeouts",
    "multisocket",
    "reload",
    "nsid",
    "bufsize",
    "bind",
    "debug",
    "trace",
    "ready",
    "health",
    "pprof",
    "shed",
    "prometheus",
    "errors",
    "log",
    "dnstap",
    "local",
    "dns64",
    "any",
    "chaos",
    "loadbalance",
    "tsig",
    "rewrite",
    "autopath",
    "acl",
    "cache",
    "header",
    "dnssec",
    "tls",
    "minimal",
    "template",
    "transfer",
    "hosts",
    "route53",
    "azure",
    "clouddns",
    "k8s_external",
    "kubernetes",
    "file",
    "auto",
    "secondary",
    "etcd",
    "loop",
    "forward",
    "grpc",
    "erratic",
    "whoami",
    "on",
    "sign",
    "view",
    "nomad",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_plugin_cfg_order_and_names_coredns_plugins() {
        let positions: Vec<usize> = Plugin::ALL.iter().map(|p| p.position()).collect();
        assert!(
            positions.iter().all(|&p| p < COREDNS_DIRECTIVES.len()),
            "{:?}",
            Plugin::ALL
                .iter()
                .filter(|p| p.position() == COREDNS_DIRECTIVES.len())
                .collect::<Vec<_>>()
        );
        assert!(positions.windows(2).all(|w| w[0] < w[1]), "{positions:?}");
        for plugin in Plugin::ALL {
            assert_eq!(Plugin::from_name(plugin.name()), Some(*plugin));
        }
        assert_eq!(Plugin::from_name("dnssec"), None);
        assert_eq!(Plugin::from_name("Kubernetes"), None);
    }

    #[test]
    fn coredns_directives_are_plugin_cfgs_sixty_each_once() {
        assert_eq!(COREDNS_DIRECTIVES.len(), 60);
        for (i, name) in COREDNS_DIRECTIVES.iter().enumerate() {
            assert!(
                !COREDNS_DIRECTIVES[..i].contains(name),
                "{name} listed twice"
            );
        }
        let position = |name: &str| COREDNS_DIRECTIVES.iter().position(|d| *d == name);
        // CoreDNS v1.14.7's order where it is easy to get wrong: rewrite and autopath before
        // acl and cache, loop just before forward.
        let order = ["rewrite", "autopath", "acl", "cache", "loop", "forward"];
        let positions: Vec<Option<usize>> = order.iter().map(|name| position(name)).collect();
        assert!(positions.iter().all(Option::is_some));
        assert!(positions.windows(2).all(|pair| pair[0] < pair[1]));
    }

    #[test]
    fn setup_plugins_are_not_handlers() {
        let setup: Vec<&str> = Plugin::ALL
            .iter()
            .filter(|p| !p.is_handler())
            .map(|p| p.name())
            .collect();
        assert_eq!(setup, ["multisocket", "reload", "bind", "ready", "health"]);
    }
}
