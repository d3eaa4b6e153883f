//! What each command's manual page and `--help` say after its flags: EXAMPLES (invocations that
//! work when copied, most of them on the bundled fixtures) and EXIT STATUS. One entry per
//! command, keyed by its path (`[]` for `clusterdns` itself, `["proxy", "trace"]`); the tests
//! check that every command has one and that each example runs and exits as it says.

/// A command's examples and exit statuses.
#[derive(Debug)]
pub struct Manual {
    /// The command's words after `clusterdns`: `&[]`, `&["records"]`, `&["proxy", "trace"]`.
    pub path: &'static [&'static str],
    /// Two to five invocations.
    pub examples: &'static [Example],
    /// Each exit status the command ends with, and what it means: `(0, "...")`.
    pub exit: &'static [(u8, &'static str)],
}

/// One invocation, as typed in a shell.
#[derive(Debug)]
pub struct Example {
    /// The shell line: `clusterdns ARGS...`, possibly followed by a pipe or a redirection
    /// (`| man -l -`, `> FILE`).
    pub line: &'static str,
    /// What it does, in a sentence.
    pub says: &'static str,
    /// How the tests check it.
    pub check: Check,
}

/// How an example is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// It reads only files of the repository (or nothing): run from the repository root, it
    /// exits with this status.
    Exits(u8),
    /// It serves, writes outside the repository or reads a live cluster: its arguments only
    /// parse.
    Parses,
}

impl Example {
    /// The arguments after `clusterdns`: the line's words up to the first shell operator.
    pub fn args(&self) -> Vec<&'static str> {
        self.line
            .split_whitespace()
            .skip(1)
            .take_while(|word| !matches!(*word, "|" | ">" | ">>" | "&&" | ";" | "||"))
            .collect()
    }
}

/// Errors, and usage errors, which clap reports before the command runs.
const USAGE: (u8, &str) = (
    2,
    "an error, said on standard error as `clusterdns: ...` (a file that cannot be read, an \
     object or name that is not one), or a usage error (an unknown flag, a missing or bad \
     value), said with the command's usage",
);

/// Every command's entry.
pub const MANUALS: &[Manual] = &[
    Manual {
        path: &[],
        examples: &[
            Example {
                line: "clusterdns serve --objects fixtures/shop.json",
                says: "Serve the bundled fixture's cluster zone on 127.0.0.1:1053, with kubeadm's \
                       Corefile (ask it with `dig @127.0.0.1 -p 1053 web.shop.svc.cluster.local`).",
                check: Check::Parses,
            },
            Example {
                line: "clusterdns query web.shop.svc.cluster.local --objects fixtures/shop.json",
                says: "Answer one question as the server would, printed like dig, without a \
                       server or the network.",
                check: Check::Exits(0),
            },
            Example {
                line: "clusterdns explain shop/web --objects fixtures/shop.json",
                says: "Follow Service shop/web through its pods, EndpointSlices, kube-proxy's \
                       endpoints and DNS, and report where they disagree.",
                check: Check::Exits(0),
            },
            Example {
                line: "clusterdns man explain | man -l -",
                says: "Read a command's manual page (here explain's).",
                check: Check::Exits(0),
            },
        ],
        exit: &[
            (0, "the command did what it was asked"),
            (
                1,
                "a negative answer: explain found drift, proxy trace's connection is not \
                 DNATed, query's name is a short one not in the cluster zone (each command's \
                 page says when)",
            ),
            USAGE,
        ],
    },
    Manual {
        path: &["serve"],
        examples: &[
            Example {
                line: "clusterdns serve",
                says: "Serve the cluster of the current kubeconfig context, watched live (the \
                       context and file chosen as kubectl chooses them).",
                check: Check::Parses,
            },
            Example {
                line: "clusterdns serve --objects fixtures/shop.json --listen 127.0.0.1:5353 \
                       --health 127.0.0.1:8080 --metrics 127.0.0.1:9153",
                says: "Serve the bundled fixture on port 5353, with /health and /metrics.",
                check: Check::Parses,
            },
            Example {
                line: "clusterdns serve --corefile fixtures/plugins/Corefile",
                says: "Serve what a CoreDNS Corefile describes (`clusterdns -conf FILE` works \
                       too, as kubeadm's Deployment starts CoreDNS).",
                check: Check::Parses,
            },
        ],
        exit: &[
            (
                0,
                "stopped by SIGTERM or SIGINT, once lameduck is over (or at once by SIGQUIT)",
            ),
            (
                2,
                "it could not start (a bad Corefile line or object, a file it cannot read, an \
                 address it cannot listen on; the error names the file, line or JSON path), or \
                 a usage error",
            ),
        ],
    },
    Manual {
        path: &["records"],
        examples: &[
            Example {
                line: "clusterdns records --objects fixtures/shop.json",
                says: "The bundled fixture's whole zone as RFC 1035 zone files, one per zone.",
                check: Check::Exits(0),
            },
            Example {
                line: "clusterdns records --objects fixtures/shop.json --zone cluster.local \
                       --format json",
                says: "Only the cluster.local zone, as JSON (`--format yaml` for YAML).",
                check: Check::Exits(0),
            },
            Example {
                line: "clusterdns records --context kind-kind",
                says: "The zone of the live cluster of kubeconfig context kind-kind.",
                check: Check::Parses,
            },
        ],
        exit: &[
            (0, "the records were printed"),
            (
                2,
                "the objects or the Corefile could not be read or loaded, or a usage error",
            ),
        ],
    },
    Manual {
        path: &["query"],
        examples: &[
            Example {
                line: "clusterdns query web.shop.svc.cluster.local --objects fixtures/shop.json",
                says: "Service shop/web's A record, from the bundled fixture, printed like dig.",
                check: Check::Exits(0),
            },
            Example {
                line: "clusterdns query db.shop.svc.cluster.local +short --objects \
                       fixtures/shop.json",
                says: "Only the answer's data, one record a line, as dig +short: here the \
                       addresses of headless Service shop/db's ready endpoints.",
                check: Check::Exits(0),
            },
            Example {
                line: "clusterdns query -t SRV _http._tcp.web.shop.svc.cluster.local --why \
                       --objects fixtures/shop.json",
                says: "An SRV record, and why: the Service port behind it.",
                check: Check::Exits(0),
            },
            Example {
                line: "clusterdns query nope.shop.svc.cluster.local --why -o json --objects \
                       fixtures/shop.json",
                says: "An NXDOMAIN as JSON (status, flags, question, answer, authority, \
                       additional, why); the exit status is 0 all the same.",
                check: Check::Exits(0),
            },
            Example {
                line: "clusterdns query web.shop --objects fixtures/shop.json",
                says: "A short name, which only a pod's search path completes: not in the zone, \
                       and the error names the full name and resolve-cost.",
                check: Check::Exits(1),
            },
        ],
        exit: &[
            (
                0,
                "the reply was printed, whatever its status (NOERROR, NXDOMAIN, REFUSED...; with \
                 +short its answers' data, nothing for an NXDOMAIN), or the name goes upstream, \
                 which query says and does not ask",
            ),
            (
                1,
                "the name is a short one (web.shop) that only a pod's search path completes: not \
                 in the cluster zone as given",
            ),
            (
                2,
                "an error (a +option query does not take, +short with -o json, objects that \
                 cannot be read, a name or type that is not one), or a usage error",
            ),
        ],
    },
    Manual {
        path: &["endpoints"],
        examples: &[
            Example {
                line: "clusterdns endpoints --objects fixtures/shop.json --service shop/web",
                says: "Service shop/web's EndpointSlices, each endpoint's conditions, and the \
                       endpoints kube-proxy uses.",
                check: Check::Exits(0),
            },
            Example {
                line: "clusterdns endpoints --objects fixtures/proxy.json --service pay/payments \
                       --slices computed",
                says: "The slices the EndpointSlice controller computes from the pods, in place \
                       of those in the file.",
                check: Check::Exits(0),
            },
            Example {
                line: "clusterdns endpoints --objects fixtures/shop.json -n shop --node \
                       kind-worker",
                says: "Every Service of namespace shop, with the endpoints local to node \
                       kind-worker.",
                check: Check::Exits(0),
            },
            Example {
                line: "clusterdns endpoints -A",
                says: "Every Service of the live cluster of the current kubeconfig context.",
                check: Check::Parses,
            },
        ],
        exit: &[
            (0, "the report was printed"),
            (
                2,
                "a --service not in the objects (the error says where one of that name is), \
                 objects that cannot be read, or a usage error",
            ),
        ],
    },
    Manual {
        path: &["proxy"],
        examples: &[
            Example {
                line: "clusterdns proxy render --mode iptables --objects fixtures/shop.json \
                       --cluster-cidr 10.244.0.0/16 --node kind-worker",
                says: "kube-proxy's iptables rules for node kind-worker of the bundled fixture.",
                check: Check::Exits(0),
            },
            Example {
                line: "clusterdns proxy trace --ruleset fixtures/node-nat.txt --to 10.96.0.20:80",
                says: "Where a new connection to 10.96.0.20:80 goes through a node's rules.",
                check: Check::Exits(0),
            },
        ],
        exit: &[
            (0, "render printed the rules; trace's connection is DNATed"),
            (
                1,
                "trace's connection is rejected, dropped or matches nothing",
            ),
            (
                2,
                "an error (a ruleset that does not parse, objects that cannot be read), a usage \
                 error, or `proxy` without a subcommand",
            ),
        ],
    },
    Manual {
        path: &["proxy", "render"],
        examples: &[
            Example {
                line: "clusterdns proxy render --mode iptables --objects fixtures/shop.json \
                       --cluster-cidr 10.244.0.0/16 --node kind-worker --kube-proxy-names",
                says: "kube-proxy's iptables rules for node kind-worker, as iptables-save prints \
                       them, with kube-proxy's own chain names.",
                check: Check::Exits(0),
            },
            Example {
                line: "clusterdns proxy render --mode nftables --objects fixtures/shop.json \
                       --cluster-cidr 10.244.0.0/16 | grep numgen",
                says: "Its nftables rules (nft list table ip kube-proxy), here each Service's \
                       endpoint map.",
                check: Check::Exits(0),
            },
            Example {
                line: "clusterdns proxy render --mode iptables --cluster-cidr 10.244.0.0/16 \
                       --node kind-worker > nat.txt",
                says: "The rules for the live cluster of the current kubeconfig context, into a \
                       file for proxy trace.",
                check: Check::Parses,
            },
        ],
        exit: &[
            (0, "the rules were printed"),
            (
                2,
                "no --cluster-cidr of the family asked for, objects that cannot be read, or a \
                 usage error",
            ),
        ],
    },
    Manual {
        path: &["proxy", "trace"],
        examples: &[
            Example {
                line: "clusterdns proxy trace --ruleset fixtures/node-nat.txt --to 10.96.0.20:80 \
                       --simulate 3000",
                says: "A connection to Service shop/web's ClusterIP: the rules it passes, each \
                       endpoint's share, and 3000 simulated connections.",
                check: Check::Exits(0),
            },
            Example {
                line: "clusterdns proxy trace --ruleset fixtures/node.nft --to 10.96.0.40:80",
                says: "A Service without endpoints in nftables rules: rejected, exit status 1.",
                check: Check::Exits(1),
            },
            Example {
                line: "clusterdns proxy trace --ruleset fixtures/node-nat.txt --to 10.96.0.20 \
                       --proto icmp",
                says: "A ping to a ClusterIP: no rule matches, and the report says why nothing \
                       answers.",
                check: Check::Exits(1),
            },
            Example {
                line: "clusterdns proxy trace --ruleset fixtures/node-nat.txt --to 10.96.0.20:80 \
                       --output json",
                says: "The same trace as JSON: verdict, path, endpoints, masquerade.",
                check: Check::Exits(0),
            },
        ],
        exit: &[
            (0, "the connection is DNATed to an endpoint"),
            (1, "the connection is rejected, dropped, or matches no rule"),
            (
                2,
                "the ruleset does not parse (the error names the file and line), another error, \
                 or a usage error",
            ),
        ],
    },
    Manual {
        path: &["explain"],
        examples: &[
            Example {
                line: "clusterdns explain shop/web --objects fixtures/shop.json",
                says: "Service shop/web across its pods, slices, kube-proxy's endpoints and DNS: \
                       every layer agrees.",
                check: Check::Exits(0),
            },
            Example {
                line: "clusterdns explain pay/payments --objects fixtures/proxy.json",
                says: "A named targetPort two of three pods lack: a finding, with its fix, and \
                       exit status 1.",
                check: Check::Exits(1),
            },
            Example {
                line: "clusterdns explain -A --objects fixtures/proxy.json",
                says: "Every Service of every namespace: only those with findings are listed, \
                       then how many were checked.",
                check: Check::Exits(1),
            },
            Example {
                line: "clusterdns explain -A -o json",
                says: "Every Service of the live cluster, as data: the Services with findings, \
                       each finding's change or command.",
                check: Check::Parses,
            },
            Example {
                line: "clusterdns explain web -n shop --cluster-cidr 10.244.0.0/16",
                says: "Service shop/web of the live cluster, with the rules rendered for it and \
                       the cluster's running DNS asked.",
                check: Check::Parses,
            },
        ],
        exit: &[
            (
                0,
                "no finding: every layer agrees (for each Service checked)",
            ),
            (1, "at least one finding (drift between the layers)"),
            (
                2,
                "no such Service or namespace (the error says where one of that name is, or \
                 the name meant), objects or a ruleset that cannot be read, or a usage error",
            ),
        ],
    },
    Manual {
        path: &["node-cache"],
        examples: &[
            Example {
                line: "clusterdns node-cache --localip 169.254.20.10,10.96.0.10 --corefile \
                       /etc/Corefile --upstreamsvc kube-dns-upstream",
                says: "NodeLocal DNSCache's DaemonSet's arguments (single-dash as its manifest \
                       writes them, `-localip ... -conf ...`, work too): the Corefile made from \
                       /etc/coredns/Corefile.base, the interface, the rules, until SIGTERM.",
                check: Check::Parses,
            },
            Example {
                line: "clusterdns node-cache --localip 169.254.20.10 --setupinterface=false \
                       --setupiptables=false --syncinterval 10",
                says: "Only the cache and its Corefile: no interface, no rules.",
                check: Check::Parses,
            },
        ],
        exit: &[
            (
                0,
                "stopped by SIGTERM or SIGINT; the interface and the rules removed unless \
                 -skipteardown",
            ),
            (
                2,
                "a bad flag, template, kube-dns ConfigMap or Service environment, or a set-up \
                 or start that failed (whatever it made is removed again), or a usage error",
            ),
        ],
    },
    Manual {
        path: &["resolv-conf"],
        examples: &[
            Example {
                line: "clusterdns resolv-conf --namespace shop",
                says: "The resolv.conf of a pod in namespace shop, with the kubelet's defaults.",
                check: Check::Exits(0),
            },
            Example {
                line: "clusterdns resolv-conf -n shop --nameserver 10.96.0.10 --cluster-domain \
                       example.internal",
                says: "The same for a cluster whose domain is example.internal.",
                check: Check::Exits(0),
            },
            Example {
                line: "clusterdns resolv-conf -n shop --host-network --dns-policy \
                       ClusterFirstWithHostNet",
                says: "A pod on the host network that keeps the cluster DNS.",
                check: Check::Exits(0),
            },
        ],
        exit: &[
            (
                0,
                "the file was printed (the kubelet's warnings, if any, on standard error)",
            ),
            (
                2,
                "a namespace or dnsConfig the API server would refuse, a file that cannot be \
                 read, or a usage error",
            ),
        ],
    },
    Manual {
        path: &["resolve-cost"],
        examples: &[
            Example {
                line: "clusterdns resolve-cost api.partner.example.com --namespace shop \
                       --objects fixtures/shop.json",
                says: "Every name glibc tries for an outside name from namespace shop, and what \
                       each fix saves.",
                check: Check::Exits(0),
            },
            Example {
                line: "clusterdns resolve-cost shop --namespace payments --objects \
                       fixtures/shop.json --libc musl",
                says: "The walk musl makes, which stops where glibc's goes on.",
                check: Check::Exits(0),
            },
            Example {
                line: "clusterdns resolve-cost _http._tcp.web --namespace shop --objects \
                       fixtures/shop.json --type SRV",
                says: "An SRV lookup (res_search) rather than getaddrinfo.",
                check: Check::Exits(0),
            },
            Example {
                line: "clusterdns resolve-cost --log fixtures/shop-queries.log --objects \
                       fixtures/shop.json --top 3",
                says: "What the search path cost the clients of a query log, per namespace and \
                       per client.",
                check: Check::Exits(0),
            },
        ],
        exit: &[
            (
                0,
                "the report was printed, whether or not the lookup finds addresses (the report \
                 says how it ends)",
            ),
            (
                2,
                "a name or namespace that is not one, a file that cannot be read, or a usage \
                 error",
            ),
        ],
    },
    Manual {
        path: &["completion"],
        examples: &[
            Example {
                line: "clusterdns completion bash > /usr/share/bash-completion/completions/clusterdns",
                says: "Install bash's completions for every session.",
                check: Check::Exits(0),
            },
            Example {
                line: "clusterdns completion zsh > \"${fpath[1]}/_clusterdns\"",
                says: "Install zsh's.",
                check: Check::Exits(0),
            },
            Example {
                line: "clusterdns completion fish > ~/.config/fish/completions/clusterdns.fish",
                says: "Install fish's.",
                check: Check::Exits(0),
            },
        ],
        exit: &[
            (0, "the script was printed"),
            (2, "a shell other than bash, zsh or fish (a usage error)"),
        ],
    },
    Manual {
        path: &["man"],
        examples: &[
            Example {
                line: "clusterdns man | man -l -",
                says: "Read the page of clusterdns itself.",
                check: Check::Exits(0),
            },
            Example {
                line: "clusterdns man proxy trace | man -l -",
                says: "Read the page of a command (here proxy trace).",
                check: Check::Exits(0),
            },
            Example {
                line: "clusterdns man --out /usr/local/share/man/man1",
                says: "Install every page, for `man clusterdns-explain` (then `mandb -q`).",
                check: Check::Parses,
            },
        ],
        exit: &[
            (0, "the page was printed, or the pages written"),
            (
                2,
                "no such command (the error names those there are), a directory that cannot be \
                 made or written, or a usage error",
            ),
        ],
    },
    Manual {
        path: &["version"],
        examples: &[
            Example {
                line: "clusterdns version",
                says: "Print the version.",
                check: Check::Exits(0),
            },
            Example {
                line: "clusterdns --version",
                says: "The same.",
                check: Check::Exits(0),
            },
        ],
        exit: &[(0, "the version was printed"), (2, "a usage error")],
    },
];

/// The entry of the command at `path`.
pub fn of(path: &[&str]) -> Option<&'static Manual> {
    MANUALS.iter().find(|manual| manual.path == path)
}

impl Manual {
    /// What `--help` shows after the flags: the examples, then the exit statuses.
    pub(super) fn help_text(&self) -> String {
        let mut out = String::from("Examples:\n");
        for example in self.examples {
            out.push_str(&format!("  {}\n      {}\n", example.line, example.says));
        }
        out.push_str("\nExit status:\n");
        for (code, meaning) in self.exit {
            out.push_str(&format!("  {code}  {meaning}\n"));
        }
        out
    }

    /// The EXIT STATUS and EXAMPLES sections of the manual page, in roff.
    pub(super) fn roff(&self) -> clap_mangen::roff::Roff {
        use clap_mangen::roff::{Roff, bold, roman};
        let mut roff = Roff::new();
        roff.control("SH", ["EXIT STATUS"]);
        for (code, meaning) in self.exit {
            roff.control("TP", []);
            roff.text([bold(code.to_string())]);
            roff.text([roman(capitalised(meaning))]);
        }
        roff.control("SH", ["EXAMPLES"]);
        if self.examples.iter().any(|e| e.line.contains("fixtures/")) {
            roff.text([roman(
                "The examples that name fixtures/ read the bundled fixtures: run them from a \
                 checkout of the clusterdns repository.",
            )]);
        }
        // Each sentence, then its line unfilled: never broken or hyphenated, so it copies
        // as it is.
        for example in self.examples {
            roff.control("PP", []);
            roff.text([roman(example.says)]);
            roff.control("RS", ["4"]);
            roff.control("nf", []);
            roff.text([bold(example.line)]);
            roff.control("fi", []);
            roff.control("RE", []);
        }
        roff
    }
}

/// `text` with its first letter upper-case, and a full stop.
fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    let first = chars.next().map(|c| c.to_uppercase().to_string());
    format!("{}{}.", first.unwrap_or_default(), chars.as_str())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// Every command of the clap definition has an entry, and every entry is a command.
    #[test]
    fn every_command_has_an_entry_and_every_entry_a_command() {
        use clap::CommandFactory as _;
        fn walk(command: &clap::Command, path: &[&str], out: &mut Vec<String>) {
            assert!(of(path).is_some(), "no manual entry for {path:?}");
            out.push(path.join(" "));
            for sub in command.get_subcommands() {
                let mut path = path.to_vec();
                path.push(sub.get_name());
                walk(sub, &path, out);
            }
        }
        let mut seen = Vec::new();
        walk(&super::super::Cli::command(), &[], &mut seen);
        for manual in MANUALS {
            assert!(
                seen.contains(&manual.path.join(" ")),
                "{:?} is no command",
                manual.path
            );
        }
        assert_eq!(seen.len(), MANUALS.len());
    }

    /// Two to five examples each, of the command itself, with statuses the page explains;
    /// every page explains 0 and 2, in order.
    #[test]
    fn examples_are_of_their_command_and_exit_as_explained() {
        for manual in MANUALS {
            assert!(
                (2..=5).contains(&manual.examples.len()),
                "{:?}: {} examples",
                manual.path,
                manual.examples.len()
            );
            let codes: Vec<u8> = manual.exit.iter().map(|(code, _)| *code).collect();
            assert!(codes.is_sorted() && codes.first() == Some(&0) && codes.last() == Some(&2));
            for example in manual.examples {
                assert!(example.line.starts_with("clusterdns "), "{}", example.line);
                let args = example.args();
                if manual.path != ["version"] {
                    assert_eq!(args[..manual.path.len()], *manual.path, "{}", example.line);
                }
                assert!(!args.iter().any(|arg| arg.contains(['\'', '"'])));
                if let Check::Exits(code) = example.check {
                    assert!(codes.contains(&code), "{}: exit {code}", example.line);
                }
            }
        }
    }
}
