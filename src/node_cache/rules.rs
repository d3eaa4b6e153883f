//! node-cache's rules (kubernetes/dns `cmd/node-cache/app/cache_app.go`, `initIptables`):
//! for each local address, twelve rules, in this order —
//!
//! | table  | chain      | match                                  | target  |
//! | ------ | ---------- | -------------------------------------- | ------- |
//! | raw    | PREROUTING | tcp, udp to the address, DNS port      | NOTRACK |
//! | filter | INPUT      | tcp, udp to the address, DNS port      | ACCEPT  |
//! | raw    | OUTPUT     | tcp, udp from the address, DNS port    | NOTRACK |
//! | filter | OUTPUT     | tcp, udp from the address, DNS port    | ACCEPT  |
//! | raw    | OUTPUT     | tcp, udp to the address, DNS port      | NOTRACK |
//! | raw    | OUTPUT     | tcp to the address, health port        | NOTRACK |
//! | raw    | OUTPUT     | tcp from the address, health port      | NOTRACK |
//!
//! each with the comment `NodeLocal DNS Cache: skip conntrack` (NOTRACK) or `NodeLocal DNS
//! Cache: allow DNS traffic` (ACCEPT). node-cache inserts each at the top of its chain when
//! `iptables -C` does not find it (`EnsureRule(Prepend, ...)`), so a chain lists them in
//! the reverse of this order, the last address's first.

use std::fmt::Write as _;
use std::net::IpAddr;

/// The comment of the NOTRACK rules.
pub const COMMENT_SKIP_CONNTRACK: &str = "NodeLocal DNS Cache: skip conntrack";
/// The comment of the ACCEPT rules.
pub const COMMENT_ALLOW_TRAFFIC: &str = "NodeLocal DNS Cache: allow DNS traffic";
/// The nftables table that holds the rules where the node has no iptables.
pub const NFT_TABLE: &str = "nodelocaldns";

/// An iptables table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Table {
    Raw,
    Filter,
}

impl Table {
    pub fn name(self) -> &'static str {
        match self {
            Table::Raw => "raw",
            Table::Filter => "filter",
        }
    }
}

/// A built-in chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Chain {
    Prerouting,
    Input,
    Output,
}

impl Chain {
    pub fn name(self) -> &'static str {
        match self {
            Chain::Prerouting => "PREROUTING",
            Chain::Input => "INPUT",
            Chain::Output => "OUTPUT",
        }
    }
}

/// The transport a rule matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Proto {
    Tcp,
    Udp,
}

impl Proto {
    pub fn name(self) -> &'static str {
        match self {
            Proto::Tcp => "tcp",
            Proto::Udp => "udp",
        }
    }
}

/// Which end of the packet the address and port are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum End {
    /// `-d ADDR --dport PORT`: traffic to the cache.
    Destination,
    /// `-s ADDR --sport PORT`: the cache's replies.
    Source,
}

/// What a rule does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    NoTrack,
    Accept,
}

impl Target {
    fn name(self) -> &'static str {
        match self {
            Target::NoTrack => "NOTRACK",
            Target::Accept => "ACCEPT",
        }
    }

    fn comment(self) -> &'static str {
        match self {
            Target::NoTrack => COMMENT_SKIP_CONNTRACK,
            Target::Accept => COMMENT_ALLOW_TRAFFIC,
        }
    }
}

/// One of node-cache's rules.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Rule {
    pub table: Table,
    pub chain: Chain,
    pub proto: Proto,
    pub end: End,
    pub address: IpAddr,
    pub port: u16,
    pub target: Target,
}

/// node-cache's rules for `local_ips`, with the DNS port (`-dns.port`, 53) and the health
/// port (`-health-port`, 8080), in node-cache's order (module docs).
pub fn rules(local_ips: &[IpAddr], dns_port: u16, health_port: u16) -> Vec<Rule> {
    use {Chain::*, End::*, Proto::*, Table::*, Target::*};
    let mut out = Vec::with_capacity(local_ips.len() * 12);
    for &address in local_ips {
        let rule = |table, chain, proto, end, port, target| Rule {
            table,
            chain,
            proto,
            end,
            address,
            port,
            target,
        };
        out.extend([
            rule(Raw, Prerouting, Tcp, Destination, dns_port, NoTrack),
            rule(Raw, Prerouting, Udp, Destination, dns_port, NoTrack),
            rule(Filter, Input, Tcp, Destination, dns_port, Accept),
            rule(Filter, Input, Udp, Destination, dns_port, Accept),
            rule(Raw, Output, Tcp, Source, dns_port, NoTrack),
            rule(Raw, Output, Udp, Source, dns_port, NoTrack),
            rule(Filter, Output, Tcp, Source, dns_port, Accept),
            rule(Filter, Output, Udp, Source, dns_port, Accept),
            rule(Raw, Output, Tcp, Destination, dns_port, NoTrack),
            rule(Raw, Output, Udp, Destination, dns_port, NoTrack),
            rule(Raw, Output, Tcp, Destination, health_port, NoTrack),
            rule(Raw, Output, Tcp, Source, health_port, NoTrack),
        ]);
    }
    out
}

impl Rule {
    /// The rule's specification as node-cache passes it to `iptables -C/-I/-D TABLE CHAIN`.
    pub fn args(&self) -> Vec<String> {
        let (address_flag, port_flag) = match self.end {
            End::Destination => ("-d", "--dport"),
            End::Source => ("-s", "--sport"),
        };
        [
            "-p",
            self.proto.name(),
            address_flag,
            &self.address.to_string(),
            port_flag,
            &self.port.to_string(),
            "-j",
            self.target.name(),
            "-m",
            "comment",
            "--comment",
            self.target.comment(),
        ]
        .map(str::to_owned)
        .to_vec()
    }

    /// The rule as `iptables-save` prints it (without its table's header):
    /// `-A PREROUTING -d 169.254.20.10/32 -p tcp -m tcp --dport 53 -m comment --comment "..." -j NOTRACK`.
    pub fn save_line(&self) -> String {
        let (address_flag, port_flag) = match self.end {
            End::Destination => ("-d", "--dport"),
            End::Source => ("-s", "--sport"),
        };
        let prefix = if self.address.is_ipv4() { 32 } else { 128 };
        let proto = self.proto.name();
        format!(
            "-A {} {address_flag} {}/{prefix} -p {proto} -m {proto} {port_flag} {} -m comment \
             --comment \"{}\" -j {}",
            self.chain.name(),
            self.address,
            self.port,
            self.target.comment(),
            self.target.name()
        )
    }

    /// The rule in nft's syntax, in the chain of [`nft_table`].
    pub fn nft_line(&self) -> String {
        let family = if self.address.is_ipv4() { "ip" } else { "ip6" };
        let (address, port) = match self.end {
            End::Destination => ("daddr", "dport"),
            End::Source => ("saddr", "sport"),
        };
        let verdict = match self.target {
            Target::NoTrack => "notrack",
            Target::Accept => "accept",
        };
        format!(
            "{family} {address} {} {} {port} {} {verdict} comment \"{}\"",
            self.address,
            self.proto.name(),
            self.port,
            self.target.comment()
        )
    }
}

/// The nftables chains the rules go in where the node has no iptables: one base chain per
/// iptables table and chain, at that table's priority (raw -300, filter 0).
const NFT_CHAINS: [(Table, Chain, &str, &str, &str); 4] = [
    (
        Table::Raw,
        Chain::Prerouting,
        "raw_prerouting",
        "prerouting",
        "raw",
    ),
    (Table::Raw, Chain::Output, "raw_output", "output", "raw"),
    (
        Table::Filter,
        Chain::Input,
        "filter_input",
        "input",
        "filter",
    ),
    (
        Table::Filter,
        Chain::Output,
        "filter_output",
        "output",
        "filter",
    ),
];

/// The nft family of `rules` (`ip`, or `ip6` when their addresses are IPv6: node-cache's
/// local addresses are of one family).
pub fn nft_family(rules: &[Rule]) -> &'static str {
    match rules.first() {
        Some(rule) if rule.address.is_ipv6() => "ip6",
        _ => "ip",
    }
}

/// The table `nft -f` loads: `rules` in one chain per iptables chain, listed as iptables
/// lists them after node-cache's inserts (the reverse of `rules`' order).
pub fn nft_table(rules: &[Rule]) -> String {
    let mut out = format!("table {} {NFT_TABLE} {{\n", nft_family(rules));
    for (table, chain, name, hook, priority) in NFT_CHAINS {
        let _ = writeln!(out, "\tchain {name} {{");
        let _ = writeln!(
            out,
            "\t\ttype filter hook {hook} priority {priority}; policy accept;"
        );
        for rule in rules
            .iter()
            .rev()
            .filter(|rule| rule.table == table && rule.chain == chain)
        {
            let _ = writeln!(out, "\t\t{}", rule.nft_line());
        }
        out.push_str("\t}\n");
    }
    out.push_str("}\n");
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn ips(list: &[&str]) -> Vec<IpAddr> {
        list.iter().map(|ip| ip.parse().unwrap()).collect()
    }

    #[test]
    fn twelve_rules_per_address_in_node_caches_order() {
        let rules = rules(&ips(&["169.254.20.10", "10.96.0.10"]), 53, 8080);
        assert_eq!(rules.len(), 24);
        assert_eq!(
            rules[0].args().join(" "),
            "-p tcp -d 169.254.20.10 --dport 53 -j NOTRACK -m comment --comment NodeLocal DNS \
             Cache: skip conntrack"
        );
        assert_eq!(
            rules[11].save_line(),
            "-A OUTPUT -s 169.254.20.10/32 -p tcp -m tcp --sport 8080 -m comment --comment \
             \"NodeLocal DNS Cache: skip conntrack\" -j NOTRACK"
        );
        assert_eq!(rules[12].address, "10.96.0.10".parse::<IpAddr>().unwrap());
        assert_eq!(
            rules[6].save_line(),
            "-A OUTPUT -s 169.254.20.10/32 -p tcp -m tcp --sport 53 -m comment --comment \
             \"NodeLocal DNS Cache: allow DNS traffic\" -j ACCEPT"
        );
    }

    #[test]
    fn ipv6_rules_have_128_bit_prefixes_and_an_ip6_table() {
        let rules = rules(&ips(&["fd00::10"]), 53, 8080);
        assert!(rules[0].save_line().contains("-d fd00::10/128"));
        let table = nft_table(&rules);
        assert!(table.starts_with("table ip6 nodelocaldns {"));
        assert!(table.contains(
            "ip6 daddr fd00::10 udp dport 53 notrack comment \"NodeLocal DNS Cache: skip conntrack\""
        ));
    }

    #[test]
    fn nft_table_has_every_rule_once() {
        let rules = rules(&ips(&["169.254.20.10"]), 53, 8080);
        let table = nft_table(&rules);
        assert_eq!(table.matches(" comment ").count(), 12);
        assert!(table.contains("type filter hook prerouting priority raw; policy accept;"));
        assert!(table.contains(
            "ip saddr 169.254.20.10 udp sport 53 accept comment \"NodeLocal DNS Cache: allow DNS traffic\""
        ));
    }
}
