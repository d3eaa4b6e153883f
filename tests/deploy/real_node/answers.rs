//! Real pods resolve through clusterdns as kube-dns: on each node, a client pod in `shop` looks
//! up every kind of name — ClusterIP Services short, `name.ns` and fully qualified, a
//! headless Service and its StatefulSet's pods, a pod's dashed name, SRV, PTR of Service and
//! pod addresses, an ExternalName, names outside the cluster (forwarded to the upstream), and
//! names that exist nowhere — with glibc (Debian's `getent ahosts`, and lookup.c against
//! glibc: getaddrinfo, getnameinfo, res_search) and musl (lookup.c, static), through the
//! resolv.conf the kubelet wrote and kube-proxy's DNAT to 10.96.0.10. Every answer must be
//! what `clusterdns records` says the cluster holds (the upstream's records for names
//! outside it; a dashed pod name's address is its own, `pods insecure`), and the kubelet's
//! resolv.conf what `clusterdns resolv-conf` says it writes.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::net::IpAddr;

use super::{RealCluster, items};
use crate::common::cli::{clusterdns_env, ok};

/// What a lookup should give.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Expect {
    /// Addresses, and the canonical name getaddrinfo reports (without the final dot).
    Addresses {
        canonical: String,
        addresses: BTreeSet<IpAddr>,
    },
    /// getnameinfo's name.
    Name(String),
    /// res_search's SRV records, as `priority weight port target.`.
    Srv(BTreeSet<String>),
    /// No answer at all.
    NotFound,
}

/// What a resolver printed for one lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Got {
    found: bool,
    canonical: Option<String>,
    addresses: BTreeSet<IpAddr>,
    name: Option<String>,
    srv: BTreeSet<String>,
    text: String,
}

/// The zone as `clusterdns records` prints it: (owner, type) to each record's data.
pub(super) struct Zone(BTreeMap<(String, String), BTreeSet<String>>);

impl Zone {
    pub(super) fn live(real: &RealCluster) -> Self {
        let kubeconfig = real.nodes.plane.kubeconfig.display().to_string();
        let run = clusterdns_env(
            &["records", "--kubeconfig", &kubeconfig, "--format", "zone"],
            &[],
        );
        assert_eq!(run.code, 0, "clusterdns records: {}", run.stderr);
        let mut records: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
        for line in run.stdout.lines() {
            let fields: Vec<&str> = line.split('\t').collect();
            if let [owner, _ttl, "IN", kind, data] = fields[..] {
                records
                    .entry((owner.to_ascii_lowercase(), kind.to_owned()))
                    .or_default()
                    .insert(data.to_owned());
            }
        }
        Self(records)
    }

    pub(super) fn get(&self, owner: &str, kind: &str) -> BTreeSet<String> {
        self.0
            .get(&(owner.to_ascii_lowercase(), kind.to_owned()))
            .cloned()
            .unwrap_or_default()
    }

    /// What getaddrinfo gives for the fully qualified `name`: its addresses, after its CNAME
    /// if it has one (a name outside the cluster: the upstream's).
    fn addresses(&self, name: &str) -> Expect {
        if let Some(target) = self.get(name, "CNAME").into_iter().next() {
            let external = super::EXTERNAL
                .iter()
                .any(|e| format!("{e}.") == target.to_ascii_lowercase());
            assert!(
                external,
                "{name} is a CNAME to {target}, which the upstream does not know"
            );
            return upstream(&target);
        }
        let addresses: BTreeSet<IpAddr> = ["A", "AAAA"]
            .iter()
            .flat_map(|kind| self.get(name, kind))
            .map(|a| a.parse().unwrap())
            .collect();
        if addresses.is_empty() {
            return Expect::NotFound;
        }
        Expect::Addresses {
            canonical: name.trim_end_matches('.').to_owned(),
            addresses,
        }
    }

    /// What getnameinfo gives for `address`.
    fn reverse(&self, address: IpAddr) -> Expect {
        let IpAddr::V4(v4) = address else {
            panic!("{address}: the nodes are IPv4 only")
        };
        let [a, b, c, d] = v4.octets();
        let owner = format!("{d}.{c}.{b}.{a}.in-addr.arpa.");
        let names = self.get(&owner, "PTR");
        assert!(names.len() <= 1, "{owner}: {names:?}");
        names.into_iter().next().map_or(Expect::NotFound, |name| {
            Expect::Name(name.trim_end_matches('.').to_owned())
        })
    }

    /// What res_search gives for the fully qualified SRV `name`.
    fn srv(&self, name: &str) -> Expect {
        let records = self.get(name, "SRV");
        if records.is_empty() {
            return Expect::NotFound;
        }
        Expect::Srv(
            records
                .iter()
                .map(|r| r.trim_end_matches('.').to_owned())
                .collect(),
        )
    }
}

/// The upstream's answer for `name` (it knows every name in [`super::EXTERNAL`]).
fn upstream(name: &str) -> Expect {
    Expect::Addresses {
        canonical: name.trim_end_matches('.').to_owned(),
        addresses: ["192.0.2.10", "2001:db8::10"]
            .iter()
            .map(|a| a.parse().unwrap())
            .collect(),
    }
}

/// One lookup: lookup.c's mode (`addr`, `ptr`, `srv`), what is asked, and the answer expected
/// of each libc (musl's `res_search` never applies the search list).
struct Lookup {
    mode: &'static str,
    query: String,
    glibc: Expect,
    musl: Expect,
}

impl Lookup {
    fn both(mode: &'static str, query: impl Into<String>, expect: Expect) -> Self {
        Self {
            mode,
            query: query.into(),
            glibc: expect.clone(),
            musl: expect,
        }
    }
}

#[test]
fn glibc_and_musl_pods_resolve_every_name_kind_as_records_says() {
    let Some(real) = RealCluster::shared(
        "real_node::glibc_and_musl_pods_resolve_every_name_kind_as_records_says",
    ) else {
        return;
    };
    let (checked, failures) = every_name_kind(&real);
    let asked = real.upstream.asked();
    assert!(
        asked.iter().any(|(name, _)| name == "api.partner.example."),
        "the names outside the cluster were forwarded to the nodes' upstream: {asked:?}"
    );
    eprintln!("real nodes: {checked} lookups from pods on both nodes checked against records");
    assert!(
        failures.is_empty(),
        "{} of {checked} lookups differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// CoreDNS, from its own image (built by its recipe from the peer) with kubeadm's Corefile, in
/// deploy/'s Deployment on the same nodes: the same lookups from the same pods get the same
/// answers — what `clusterdns records` says — as they do from clusterdns. Then clusterdns is
/// kube-dns again.
#[test]
fn coredns_on_the_same_nodes_gives_the_pods_the_same_answers() {
    let Some(real) = RealCluster::shared(
        "real_node::answers::coredns_on_the_same_nodes_gives_the_pods_the_same_answers",
    ) else {
        return;
    };
    let swap = |image: &str, patches: &[xtask::nodes::Patch]| {
        real.nodes
            .apply_dns(image, patches)
            .and_then(|()| real.nodes.wait_dns())
            .unwrap_or_else(|e| panic!("{image}: {e:#}"));
        xtask::operations::settle(&real.kubectl()).unwrap();
    };
    let corefile = xtask::operations::kubeadm_corefile().unwrap();
    swap(
        xtask::images::COREDNS,
        &[xtask::nodes::Patch::corefile(&corefile)],
    );
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let images: Vec<String> =
            super::items(&real.get(&["pods", "-n", "kube-system", "-l", "k8s-app=kube-dns"]))
                .iter()
                .map(|pod| {
                    pod["spec"]["containers"][0]["image"]
                        .as_str()
                        .unwrap()
                        .to_owned()
                })
                .collect();
        assert_eq!(images, ["coredns/coredns:peer"; 2], "CoreDNS answers");
        every_name_kind(&real)
    }));
    swap(xtask::images::CLUSTERDNS, &[]);
    let (checked, failures) = result.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
    eprintln!("real nodes: {checked} lookups answered by CoreDNS checked against records");
    assert!(
        failures.is_empty(),
        "{} of {checked} lookups differ from clusterdns's answers (docs/differences.md says \
         nothing of these):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Every lookup of the table from the client pod on each node, with glibc (lookup.c and
/// Debian's getent) and musl: how many, and each that is not what `records` says.
pub(super) fn every_name_kind(real: &RealCluster) -> (usize, Vec<String>) {
    let zone = Zone::live(real);
    let pods = real.get(&["pods", "-n", "shop"]);
    let pod_ip = |name: &str| -> IpAddr {
        items(&pods)
            .iter()
            .find(|p| p["metadata"]["name"] == name)
            .and_then(|p| p["status"]["podIP"].as_str())
            .unwrap_or_else(|| panic!("no address for shop/{name}"))
            .parse()
            .unwrap()
    };
    let web_pod = items(&pods)
        .iter()
        .find(|p| p["metadata"]["labels"]["app"] == "web")
        .and_then(|p| p["metadata"]["name"].as_str().map(str::to_owned))
        .unwrap();
    let service_ip = |namespace: &str, name: &str| -> IpAddr {
        real.get(&["service", name, "-n", namespace])["spec"]["clusterIP"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap()
    };
    let dashed = |ip: IpAddr| ip.to_string().replace('.', "-");
    let client_2 = pod_ip("client-node-2");
    let web_ip = service_ip("shop", "web");

    // What the zone holds, which the table is about: none of it may be missing.
    let web = zone.addresses("web.shop.svc.cluster.local.");
    let db = zone.addresses("db.shop.svc.cluster.local.");
    let partner = zone.addresses("partner.shop.svc.cluster.local.");
    let web_ptr = zone.reverse(web_ip);
    let db_0_ptr = zone.reverse(pod_ip("db-0"));
    let db_srv = zone.srv("_pg._tcp.db.shop.svc.cluster.local.");
    for (what, expect) in [
        ("web", &web),
        ("the ExternalName", &partner),
        ("web's PTR", &web_ptr),
        ("db-0's PTR", &db_0_ptr),
        ("db's SRV", &db_srv),
    ] {
        assert_ne!(
            *expect,
            Expect::NotFound,
            "records has no answer for {what}"
        );
    }
    let Expect::Addresses { addresses, .. } = &db else {
        panic!("db: {db:?}")
    };
    assert_eq!(addresses.len(), 2, "db's two endpoints");

    let lookups = [
        Lookup::both("addr", "web", web.clone()),
        Lookup::both("addr", "web.shop", web.clone()),
        Lookup::both("addr", "web.shop.svc", web.clone()),
        Lookup::both("addr", "web.shop.svc.cluster.local", web.clone()),
        Lookup::both("addr", "web.shop.svc.cluster.local.", web),
        Lookup::both(
            "addr",
            "kube-dns.kube-system",
            zone.addresses("kube-dns.kube-system.svc.cluster.local."),
        ),
        Lookup::both("addr", "db", db),
        Lookup::both(
            "addr",
            "db-0.db",
            zone.addresses("db-0.db.shop.svc.cluster.local."),
        ),
        Lookup::both(
            "addr",
            "db-1.db.shop",
            zone.addresses("db-1.db.shop.svc.cluster.local."),
        ),
        // A pod's dashed name (`pods insecure`): any dashed address answers as itself.
        Lookup::both(
            "addr",
            format!("{}.shop.pod", dashed(client_2)),
            Expect::Addresses {
                canonical: format!("{}.shop.pod.cluster.local", dashed(client_2)),
                addresses: [client_2].into(),
            },
        ),
        Lookup::both("addr", "partner", partner),
        Lookup::both(
            "addr",
            "api.partner.example",
            upstream("api.partner.example."),
        ),
        Lookup::both("addr", "example.com", upstream("example.com.")),
        Lookup::both("addr", "nope", Expect::NotFound),
        Lookup::both("addr", "nope.shop.svc.cluster.local.", Expect::NotFound),
        Lookup::both("ptr", web_ip.to_string(), web_ptr),
        Lookup::both(
            "ptr",
            "10.96.0.10",
            zone.reverse("10.96.0.10".parse().unwrap()),
        ),
        Lookup::both("ptr", pod_ip("db-0").to_string(), db_0_ptr),
        Lookup::both(
            "ptr",
            pod_ip(&web_pod).to_string(),
            zone.reverse(pod_ip(&web_pod)),
        ),
        Lookup::both("srv", "_pg._tcp.db.shop.svc.cluster.local", db_srv.clone()),
        Lookup::both(
            "srv",
            "_http._tcp.web.shop.svc.cluster.local",
            zone.srv("_http._tcp.web.shop.svc.cluster.local."),
        ),
        // musl's res_search is res_query: never the search list.
        Lookup {
            mode: "srv",
            query: "_pg._tcp.db".into(),
            glibc: db_srv,
            musl: Expect::NotFound,
        },
    ];

    let mut failures = Vec::new();
    let mut checked = 0;
    for client in ["client-node-1", "client-node-2"] {
        let resolv = real.sh("shop", client, "cat /etc/resolv.conf");
        let written = ok(&[
            "resolv-conf",
            "--namespace",
            "shop",
            "--nameserver",
            "10.96.0.10",
        ]);
        assert_eq!(resolv, written, "{client}: the kubelet's resolv.conf");
        for (libc, program) in [("glibc", "lookup-glibc"), ("musl", "lookup-musl")] {
            let script: String = lookups
                .iter()
                .map(|l| {
                    format!(
                        "echo '== {} {}'; {program} {} '{}'; echo \"rc $?\"\n",
                        l.mode, l.query, l.mode, l.query
                    )
                })
                .collect();
            let output = real.sh("shop", client, &script);
            let got = parse(&output);
            for lookup in &lookups {
                checked += 1;
                let expect = if libc == "glibc" {
                    &lookup.glibc
                } else {
                    &lookup.musl
                };
                let key = format!("{} {}", lookup.mode, lookup.query);
                let Some(got) = got.get(&key) else {
                    failures.push(format!("{client} {libc} {key}: no output\n{output}"));
                    continue;
                };
                if let Some(problem) = differs(expect, got) {
                    failures.push(format!(
                        "{client} {libc} {key}: {problem}\n  printed: {}",
                        got.text.trim()
                    ));
                }
            }
        }
        // Debian's getent (glibc's getaddrinfo, with AI_ADDRCONFIG: the pods' IPv6 link-local
        // addresses count, so it asks AAAA too).
        let addr: Vec<&Lookup> = lookups.iter().filter(|l| l.mode == "addr").collect();
        let script: String = addr
            .iter()
            .map(|l| {
                format!(
                    "echo '== addr {0}'; out=$(getent ahosts '{0}'); rc=$?; echo \"$out\" | sed 's/^/getent /'; echo \"rc $rc\"\n",
                    l.query
                )
            })
            .collect();
        let output = real.sh("shop", client, &script);
        let got = parse(&output);
        for lookup in addr {
            checked += 1;
            let key = format!("addr {}", lookup.query);
            match got.get(&key) {
                Some(got) => {
                    if let Some(problem) = differs(&lookup.glibc, got) {
                        failures.push(format!(
                            "{client} getent {key}: {problem}\n  printed: {}",
                            got.text.trim()
                        ));
                    }
                }
                None => failures.push(format!("{client} getent {key}: no output\n{output}")),
            }
        }
    }
    (checked, failures)
}

/// What each lookup printed, by `mode query`: lookup.c's lines (`canonical`, `address`,
/// `name`, `srv`, `error`), getent's (prefixed `getent`), and `rc N`.
fn parse(output: &str) -> BTreeMap<String, Got> {
    let mut all = BTreeMap::new();
    let mut current: Option<(String, Got)> = None;
    for line in output.lines() {
        if let Some(key) = line.strip_prefix("== ") {
            if let Some((key, got)) = current.take() {
                all.insert(key, got);
            }
            current = Some((
                key.to_owned(),
                Got {
                    found: false,
                    canonical: None,
                    addresses: BTreeSet::new(),
                    name: None,
                    srv: BTreeSet::new(),
                    text: String::new(),
                },
            ));
            continue;
        }
        let Some((_, got)) = current.as_mut() else {
            continue;
        };
        let _ = writeln!(got.text, "{line}");
        let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
        match word {
            "rc" => got.found = rest == "0",
            "canonical" => got.canonical = Some(rest.to_owned()),
            "address" => {
                got.addresses.insert(rest.parse().unwrap());
            }
            "name" => got.name = Some(rest.to_owned()),
            "srv" => {
                got.srv.insert(rest.trim_end_matches('.').to_owned());
            }
            // `getent ahosts`: ADDRESS TYPE [CANONICAL], once per socket type.
            "getent" => {
                let fields: Vec<&str> = rest.split_whitespace().collect();
                if let Some(address) = fields.first() {
                    got.addresses.insert(address.parse().unwrap());
                }
                if let (Some(canonical), None) = (fields.get(2), &got.canonical) {
                    got.canonical = Some((*canonical).to_owned());
                }
            }
            _ => {}
        }
    }
    if let Some((key, got)) = current {
        all.insert(key, got);
    }
    all
}

/// How `got` differs from `expect`, if it does.
fn differs(expect: &Expect, got: &Got) -> Option<String> {
    match expect {
        Expect::NotFound => got
            .found
            .then(|| "found, where nothing should be".to_owned()),
        _ if !got.found => Some(format!("not found; expected {expect:?}")),
        Expect::Addresses {
            canonical,
            addresses,
        } => {
            if &got.addresses != addresses {
                Some(format!(
                    "addresses {:?}, expected {addresses:?}",
                    got.addresses
                ))
            } else if got.canonical.as_deref() != Some(canonical.as_str()) {
                Some(format!(
                    "canonical name {:?}, expected {canonical:?}",
                    got.canonical
                ))
            } else {
                None
            }
        }
        Expect::Name(name) => (got.name.as_deref() != Some(name.as_str()))
            .then(|| format!("name {:?}, expected {name:?}", got.name)),
        Expect::Srv(records) => {
            (&got.srv != records).then(|| format!("SRV {:?}, expected {records:?}", got.srv))
        }
    }
}
