//! The table under construction, and its two printed forms: as `nft list` prints it, and as
//! the `nft -f` transaction kube-proxy writes.

use std::fmt::Write as _;

use crate::plan::IpFamily;

/// One rule, in both spellings.
#[derive(Debug, Clone)]
pub(super) struct NftRule {
    /// As `nft list` prints it.
    pub(super) list: String,
    /// As kube-proxy writes it (`add rule ... <this>`).
    pub(super) input: String,
}

impl NftRule {
    pub(super) fn same(text: impl Into<String>) -> Self {
        let text = text.into();
        Self {
            list: text.clone(),
            input: text,
        }
    }

    pub(super) fn comment(mut self, comment: &str) -> Self {
        let _ = write!(self.list, " comment \"{comment}\"");
        let _ = write!(self.input, " comment \"{comment}\"");
        self
    }
}

#[derive(Debug, Clone)]
pub(super) struct Element {
    pub(super) key: String,
    pub(super) comment: Option<String>,
    pub(super) value: Option<String>,
}

#[derive(Debug, Clone)]
pub(super) struct SetDecl {
    pub(super) name: String,
    pub(super) map: bool,
    pub(super) type_text: String,
    pub(super) flags: Option<&'static str>,
    pub(super) timeout: Option<u32>,
    pub(super) comment: Option<&'static str>,
    pub(super) elements: Vec<Element>,
    /// Addresses print two per line; map elements one per line.
    pub(super) addresses: bool,
}

#[derive(Debug, Clone)]
pub(super) struct BaseSpec {
    pub(super) kind: &'static str,
    pub(super) hook: &'static str,
    pub(super) priority: i32,
}

#[derive(Debug, Clone)]
pub(super) struct ChainDecl {
    pub(super) name: String,
    pub(super) base: Option<BaseSpec>,
    pub(super) comment: Option<&'static str>,
    pub(super) rules: Vec<NftRule>,
}

/// The table being built.
pub(super) struct Builder {
    pub(super) family: IpFamily,
    /// kube-proxy 1.36's layout ([`super::NftLayout::DnatMaps`]).
    pub(super) dnat_maps: bool,
    pub(super) sets: Vec<SetDecl>,
    pub(super) chains: Vec<ChainDecl>,
}

impl Builder {
    pub(super) fn chain(&mut self, name: &str) -> &mut ChainDecl {
        if let Some(index) = self.chains.iter().position(|c| c.name == name) {
            return &mut self.chains[index];
        }
        self.chains.push(ChainDecl {
            name: name.to_owned(),
            base: None,
            comment: None,
            rules: Vec::new(),
        });
        let last = self.chains.len() - 1;
        &mut self.chains[last]
    }

    pub(super) fn rule(&mut self, chain: &str, rule: NftRule) {
        self.chain(chain).rules.push(rule);
    }

    pub(super) fn set(&mut self, name: &str) -> Option<&mut SetDecl> {
        self.sets.iter_mut().find(|s| s.name == name)
    }

    pub(super) fn element(&mut self, set: &str, element: Element) {
        if let Some(set) = self.set(set)
            && !set.elements.iter().any(|e| e.key == element.key)
        {
            set.elements.push(element);
        }
    }

    pub(super) fn ip(&self) -> &'static str {
        match self.family {
            IpFamily::V4 => "ip",
            IpFamily::V6 => "ip6",
        }
    }

    pub(super) fn addr_type(&self) -> &'static str {
        match self.family {
            IpFamily::V4 => "ipv4_addr",
            IpFamily::V6 => "ipv6_addr",
        }
    }

    pub(super) fn no_localhost(&self) -> &'static str {
        match self.family {
            IpFamily::V4 => "ip daddr != 127.0.0.0/8",
            IpFamily::V6 => "ip6 daddr != ::1",
        }
    }
}

/// An anonymous set in a rule: `{ a, b }`, or the lone element as nft prints it.
pub(super) fn anonymous(items: &[String]) -> (String, String) {
    let input = format!("{{ {} }}", items.join(", "));
    let list = if items.len() == 1 {
        items[0].clone()
    } else {
        input.clone()
    };
    (list, input)
}

/// `timeout` as nft prints a duration: `3h`, `10m`, `1h1m1s`.
pub(super) fn duration(seconds: u32) -> String {
    let mut out = String::new();
    let (days, rest) = (seconds / 86_400, seconds % 86_400);
    let (hours, rest) = (rest / 3_600, rest % 3_600);
    let (minutes, secs) = (rest / 60, rest % 60);
    for (value, unit) in [(days, "d"), (hours, "h"), (minutes, "m"), (secs, "s")] {
        if value > 0 {
            let _ = write!(out, "{value}{unit}");
        }
    }
    if out.is_empty() {
        out.push_str("0s");
    }
    out
}

/// nft's name for a standard priority, as nft 1.0.6 (Debian 12, kind's node image) lists it:
/// a name within 10 of the priority, but `dstnat` only on the prerouting hook and `srcnat`
/// only on postrouting; a number otherwise. That nft also refuses those two names on other
/// hooks as input, so a listing that names them (as newer nft releases print `dstnat - 10` on
/// output) does not load back into it; kube-proxy itself writes numbers (knftables).
pub(super) fn priority_text(hook: &str, priority: i32) -> String {
    let standard: &[(i32, &str)] = &[
        (-300, "raw"),
        (-150, "mangle"),
        (-100, "dstnat"),
        (0, "filter"),
        (50, "security"),
        (100, "srcnat"),
    ];
    for (value, name) in standard {
        let offset = priority - value;
        if offset.abs() <= 10 {
            let compatible = match *name {
                "dstnat" => hook == "prerouting",
                "srcnat" => hook == "postrouting",
                _ => true,
            };
            if !compatible {
                break;
            }
            return match offset {
                0 => (*name).to_owned(),
                o if o > 0 => format!("{name} + {o}"),
                o => format!("{name} - {}", -o),
            };
        }
    }
    priority.to_string()
}

pub(super) fn family_name(family: IpFamily) -> &'static str {
    match family {
        IpFamily::V4 => "ip",
        IpFamily::V6 => "ip6",
    }
}

impl Builder {
    /// The table as `nft list table` prints it.
    pub(super) fn list_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "table {} kube-proxy {{", family_name(self.family));
        out.push_str("\tcomment \"rules for kube-proxy\"\n");
        let mut delim = "";
        for set in &self.sets {
            out.push_str(delim);
            delim = "\n";
            let _ = writeln!(
                out,
                "\t{} {} {{",
                if set.map { "map" } else { "set" },
                set.name
            );
            let _ = writeln!(out, "\t\ttype {}", set.type_text);
            if set.flags.is_some() && set.timeout.is_some() {
                out.push_str("\t\tsize 65535\n");
            }
            if let Some(flags) = set.flags {
                let _ = writeln!(out, "\t\tflags {flags}");
            }
            if let Some(timeout) = set.timeout {
                let _ = writeln!(out, "\t\ttimeout {}", duration(timeout));
            }
            if let Some(comment) = set.comment {
                let _ = writeln!(out, "\t\tcomment \"{comment}\"");
            }
            if !set.elements.is_empty() {
                out.push_str("\t\telements = { ");
                for (index, element) in set.elements.iter().enumerate() {
                    if index > 0 {
                        let newline = !set.addresses || index % 2 == 0;
                        out.push_str(if newline { ",\n\t\t\t     " } else { ", " });
                    }
                    out.push_str(&element.key);
                    if let Some(comment) = &element.comment {
                        let _ = write!(out, " comment \"{comment}\"");
                    }
                    if let Some(value) = &element.value {
                        let _ = write!(out, " : {value}");
                    }
                }
                out.push_str(" }\n");
            }
            out.push_str("\t}\n");
        }
        for chain in &self.chains {
            out.push_str(delim);
            delim = "\n";
            let _ = write!(out, "\tchain {} {{", chain.name);
            if let Some(comment) = chain.comment {
                let _ = write!(out, "\n\t\tcomment \"{comment}\"");
            }
            out.push('\n');
            if let Some(base) = &chain.base {
                let _ = writeln!(
                    out,
                    "\t\ttype {} hook {} priority {}; policy accept;",
                    base.kind,
                    base.hook,
                    priority_text(base.hook, base.priority)
                );
            }
            for rule in &chain.rules {
                let _ = writeln!(out, "\t\t{}", rule.list);
            }
            out.push_str("\t}\n");
        }
        out.push_str("}\n");
        out
    }

    /// The table as the `nft -f` transaction kube-proxy writes.
    pub(super) fn transaction_text(&self) -> String {
        let family = family_name(self.family);
        let prefix = format!("{family} kube-proxy");
        let mut out = String::new();
        let _ = writeln!(
            out,
            "add table {prefix} {{ comment \"rules for kube-proxy\" ; }}"
        );
        for set in &self.sets {
            let mut spec = format!("type {} ;", set.type_text);
            if let Some(flags) = set.flags {
                let _ = write!(spec, " flags {flags} ;");
            }
            if let Some(timeout) = set.timeout {
                let _ = write!(spec, " timeout {timeout}s ;");
            }
            if let Some(comment) = set.comment {
                let _ = write!(spec, " comment \"{comment}\" ;");
            }
            let _ = writeln!(
                out,
                "add {} {prefix} {} {{ {spec} }}",
                if set.map { "map" } else { "set" },
                set.name
            );
        }
        for chain in &self.chains {
            let mut spec = Vec::new();
            if let Some(base) = &chain.base {
                spec.push(format!(
                    "type {} hook {} priority {} ;",
                    base.kind, base.hook, base.priority
                ));
            }
            if let Some(comment) = chain.comment {
                spec.push(format!("comment \"{comment}\" ;"));
            }
            if spec.is_empty() {
                let _ = writeln!(out, "add chain {prefix} {}", chain.name);
            } else {
                let _ = writeln!(
                    out,
                    "add chain {prefix} {} {{ {} }}",
                    chain.name,
                    spec.join(" ")
                );
            }
            let _ = writeln!(out, "flush chain {prefix} {}", chain.name);
        }
        for chain in &self.chains {
            for rule in &chain.rules {
                let _ = writeln!(out, "add rule {prefix} {} {}", chain.name, rule.input);
            }
        }
        for set in &self.sets {
            for element in &set.elements {
                let comment = element
                    .comment
                    .as_ref()
                    .map(|c| format!(" comment \"{c}\""))
                    .unwrap_or_default();
                let value = element
                    .value
                    .as_ref()
                    .map(|v| format!(" : {v}"))
                    .unwrap_or_default();
                let _ = writeln!(
                    out,
                    "add element {prefix} {} {{ {}{comment}{value} }}",
                    set.name, element.key
                );
            }
        }
        out
    }
}

/// kube-proxy's masquerade mark.
pub(super) const MARK: u32 = 0x4000;

/// The masquerade mark as a rule's action: kube-proxy 1.36 sets it inline, before it through
/// `mark-for-masquerade`.
pub(super) fn mark_rule(b: &Builder, test: &str) -> NftRule {
    let test = if test.is_empty() {
        String::new()
    } else {
        format!("{test} ")
    };
    if b.dnat_maps {
        NftRule {
            list: format!("{test}meta mark set meta mark | {MARK:#010x}"),
            input: format!("{test}mark set mark or {MARK:#x}"),
        }
    } else {
        NftRule::same(format!("{test}jump mark-for-masquerade"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities_print_like_nft() {
        assert_eq!(priority_text("prerouting", -110), "dstnat - 10");
        assert_eq!(priority_text("output", -110), "-110");
        assert_eq!(priority_text("input", -110), "-110");
        assert_eq!(priority_text("output", -100), "-100");
        assert_eq!(priority_text("input", 100), "100");
        assert_eq!(priority_text("postrouting", 110), "srcnat + 10");
        assert_eq!(priority_text("output", -145), "mangle + 5");
        assert_eq!(priority_text("forward", 0), "filter");
        assert_eq!(priority_text("prerouting", -100), "dstnat");
        assert_eq!(priority_text("postrouting", 100), "srcnat");
        assert_eq!(priority_text("output", -90), "-90");
        assert_eq!(priority_text("prerouting", -90), "dstnat + 10");
        assert_eq!(priority_text("input", 200), "200");
    }

    #[test]
    fn durations_print_like_nft() {
        assert_eq!(duration(10_800), "3h");
        assert_eq!(duration(600), "10m");
        assert_eq!(duration(3_661), "1h1m1s");
        assert_eq!(duration(86_400), "1d");
    }

    #[test]
    fn single_element_sets_print_as_the_element() {
        assert_eq!(
            anonymous(&["10.0.0.0/8".to_owned()]),
            ("10.0.0.0/8".to_owned(), "{ 10.0.0.0/8 }".to_owned())
        );
        assert_eq!(
            anonymous(&["10.0.0.0/8".to_owned(), "192.168.0.0/16".to_owned()]).0,
            "{ 10.0.0.0/8, 192.168.0.0/16 }"
        );
    }
}
