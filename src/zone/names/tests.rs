#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use super::*;
use crate::config::PodMode;
use crate::name::WireName;
use crate::source::read_objects;
use crate::wire::{Request, write_answer};
use crate::zone::{BuildContext, Snapshot, dashed_ip};

impl Names {
    /// Every name of `names` as a node, none kept as an address: the zone as it was.
    fn plain(names: &Self) -> Self {
        let nodes: Vec<Node> = names.nodes().map(Cow::into_owned).collect();
        Self {
            nodes: Sharded::from_entries(nodes.into_iter()),
            ptrs: ByAddress::default(),
            addresses: ByAddress::default(),
            ttl: names.ttl,
            suffixes: Arc::default(),
        }
    }
}

fn built(file: &str) -> Snapshot {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(file);
    let loaded = read_objects(&[path]).unwrap();
    let mut config = crate::zone::tests::config(&["cluster.local.", "in-addr.arpa.", "ip6.arpa."]);
    config.pods = PodMode::Insecure;
    let ctx = BuildContext {
        local_ips: vec!["127.0.0.1".parse().unwrap()],
        serial: 1_700_000_000,
    };
    crate::zone::build(&loaded.cluster, &config, &ctx)
}

/// The whole reply to `qtype` at `name` (lower-case wire), as the server writes it.
fn reply(snapshot: &Snapshot, name: &[u8], qtype: u16) -> Vec<u8> {
    let mut packet = vec![0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0];
    packet.extend_from_slice(name);
    packet.extend_from_slice(&qtype.to_be_bytes());
    packet.extend_from_slice(&1u16.to_be_bytes());
    let request = Request::parse(&packet).unwrap();
    let answer = snapshot.lookup(name, qtype).unwrap();
    let mut out = Vec::new();
    write_answer(
        &request,
        &answer,
        &snapshot.zones()[answer.zone],
        4096,
        false,
        &mut out,
    );
    out
}

fn v4(text: &str) -> IpAddr {
    text.parse().unwrap()
}

/// A PTR node at `ip`'s reverse name with the given targets and TTL.
fn ptr_node(ip: IpAddr, targets: &[&str], ttl: u32) -> Node {
    let mut set = RrSetBuilder::new(rtype::PTR, ttl);
    for target in targets {
        let target = WireName::from_dotted(target).unwrap();
        let mut record = Vec::new();
        rrset::write_rr_header(&mut record, rtype::PTR, ttl, target.as_bytes().len());
        record.extend_from_slice(target.as_bytes());
        set.push_record(&record);
    }
    Node::pack(rrset::reverse_name(ip).as_bytes(), None, &[set])
}

/// `names` lists exactly `expected`: as nodes (those kept as addresses made again), and as
/// names.
fn assert_listed_as<'n>(names: &Names, expected: impl Iterator<Item = &'n Node>) {
    let mut listed: Vec<Node> = names.nodes().map(Cow::into_owned).collect();
    let mut all: Vec<Node> = expected.cloned().collect();
    listed.sort_by(|a, b| a.name().cmp(b.name()));
    all.sort_by(|a, b| a.name().cmp(b.name()));
    assert_eq!(listed, all);
    let mut listed_names: Vec<Vec<u8>> = names.names().map(Cow::into_owned).collect();
    listed_names.sort();
    let all_names: Vec<Vec<u8>> = all.iter().map(|node| node.name().to_vec()).collect();
    assert_eq!(listed_names, all_names);
}

#[test]
fn the_dashed_label_and_the_reverse_name_are_spelled_as_before_without_allocating() {
    for (text, dashed) in [
        ("10.244.1.5", "10-244-1-5"),
        ("0.0.0.0", "0-0-0-0"),
        ("255.255.255.255", "255-255-255-255"),
        ("::", "--0"),
        ("::1", "--1"),
        ("1::", "1--0"),
        ("fd00:10:244::5", "fd00-10-244--5"),
        ("2001:db8::", "2001-db8--0"),
        ("2001:db8:0:0:1:0:0:1", "2001-db8--1-0-0-1"),
        ("1:2:3:4:5:6:7:8", "1-2-3-4-5-6-7-8"),
        (
            "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
            "ffff-ffff-ffff-ffff-ffff-ffff-ffff-ffff",
        ),
        ("::ffff:10.1.2.3", "--ffff-10.1.2.3"),
        ("64:ff9b::a01:203", "64-ff9b--a01-203"),
    ] {
        let ip: IpAddr = text.parse().unwrap();
        assert_eq!(Dashed::of(ip).as_str(), dashed, "{text}");
        assert_eq!(dashed_ip(ip), dashed, "{text}");
        assert_eq!(
            ReverseName::of(ip).as_bytes(),
            rrset::reverse_name(ip).as_bytes(),
            "{text}"
        );
    }
}

#[test]
fn only_a_ptr_to_the_dashed_address_with_the_zone_ttl_is_kept_as_an_address() {
    let mut names = Names::sized(Sizes::default(), 30);
    let ip = v4("10.244.1.9");
    let kept = [
        ptr_node(ip, &["10-244-1-9.checkout.shop.svc.cluster.local."], 30),
        ptr_node(
            "fd00::9".parse().unwrap(),
            &["fd00--9.checkout.shop.svc.cluster.local."],
            30,
        ),
    ];
    let nodes = [
        // A ClusterIP's: the Service's name.
        ptr_node(v4("10.96.0.30"), &["checkout.shop.svc.cluster.local."], 30),
        // An endpoint with a hostname.
        ptr_node(v4("10.244.1.11"), &["db-0.db.shop.svc.cluster.local."], 30),
        // An address two Services' endpoints share.
        ptr_node(
            v4("10.244.1.5"),
            &[
                "10-244-1-5.web.shop.svc.cluster.local.",
                "10-244-1-5.web-headless.shop.svc.cluster.local.",
            ],
            30,
        ),
        // Another TTL.
        ptr_node(v4("10.244.1.7"), &["10-244-1-7.a.b.svc.cluster.local."], 5),
        // Another address's label.
        ptr_node(v4("10.244.1.8"), &["10-244-1-9.a.b.svc.cluster.local."], 30),
        // A name that is not an address's.
        Node::empty(
            WireName::from_dotted("1.244.10.in-addr.arpa.")
                .unwrap()
                .as_bytes(),
        ),
    ];
    for node in kept.iter().chain(&nodes) {
        assert!(!names.insert(node.clone()));
        assert!(names.holds(node), "{node:?}");
        assert!(names.contains_key(node.name()));
    }
    assert_eq!(names.len(), kept.len() + nodes.len());
    assert_eq!(names.ptr_count(), kept.len());
    for node in &kept {
        assert_eq!(names.get(node.name()), None, "{node:?} is kept as a node");
        assert!(names.is_ptr(node.name()));
    }
    // Other spellings of the address are other names (an octet's `+` reads as a number).
    for other in ["+9.1.244.10.in-addr.arpa.", "09.1.244.10.in-addr.arpa."] {
        let other = WireName::from_dotted(other).unwrap();
        assert!(!names.contains_key(other.as_bytes()), "{other}");
        assert!(names.ptr_answer(other.as_bytes()).is_none(), "{other}");
    }
    for node in &nodes {
        assert_eq!(names.get(node.name()), Some(node));
    }
    assert_listed_as(&names, kept.iter().chain(&nodes));

    // A name moves between the two as its node changes, and goes.
    let shared = ptr_node(
        ip,
        &[
            "10-244-1-9.checkout.shop.svc.cluster.local.",
            "10-244-1-9.other.shop.svc.cluster.local.",
        ],
        30,
    );
    assert!(names.insert(shared.clone()));
    assert_eq!(names.get(shared.name()), Some(&shared));
    assert!(!names.holds(&kept[0]));
    assert_eq!(names.len(), kept.len() + nodes.len());
    assert!(names.insert(kept[0].clone()));
    assert_eq!(names.get(shared.name()), None);
    assert!(names.holds(&kept[0]));
    assert!(names.remove(kept[0].name()));
    assert!(!names.remove(kept[0].name()));
    assert!(!names.contains_key(kept[0].name()));
    assert_eq!(names.len(), kept.len() + nodes.len() - 1);
}

/// A node at `name` holding the address records of `ips` with `ttl`.
fn address_node_at(name: &str, ips: &[&str], ttl: u32) -> Node {
    let mut sets: Vec<RrSetBuilder> = Vec::new();
    for ip in ips {
        let (rtype, rdata) = rrset::address_rdata(ip.parse().unwrap());
        let mut record = Vec::new();
        rrset::write_rr_header(&mut record, rtype, ttl, rdata.len());
        record.extend_from_slice(&rdata);
        match sets.iter_mut().find(|set| set.rtype() == rtype) {
            Some(set) => set.push_record(&record),
            None => {
                let mut set = RrSetBuilder::new(rtype, ttl);
                set.push_record(&record);
                sets.push(set);
            }
        }
    }
    Node::pack(WireName::from_dotted(name).unwrap().as_bytes(), None, &sets)
}

#[test]
fn only_an_address_name_of_its_own_dashed_address_with_the_zone_ttl_is_kept_as_an_address() {
    let mut names = Names::sized(Sizes::default(), 30);
    let kept = [
        address_node_at(
            "10-244-1-9.web.shop.svc.cluster.local.",
            &["10.244.1.9"],
            30,
        ),
        address_node_at("fd00--9.web.shop.svc.cluster.local.", &["fd00::9"], 30),
        address_node_at(
            "10-244-1-10.api.shop.svc.cluster.local.",
            &["10.244.1.10"],
            30,
        ),
    ];
    let nodes = [
        // A hostname.
        address_node_at("db-0.db.shop.svc.cluster.local.", &["10.244.1.11"], 30),
        // Another address's label.
        address_node_at(
            "10-244-1-9.other.shop.svc.cluster.local.",
            &["10.244.1.8"],
            30,
        ),
        // Two addresses.
        address_node_at(
            "10-244-1-12.web.shop.svc.cluster.local.",
            &["10.244.1.12", "10.244.1.13"],
            30,
        ),
        // Another TTL.
        address_node_at(
            "10-244-1-14.web.shop.svc.cluster.local.",
            &["10.244.1.14"],
            5,
        ),
        // Another spelling of the address (a leading zero; an IPv6 address uncompressed).
        address_node_at(
            "010-244-1-15.web.shop.svc.cluster.local.",
            &["10.244.1.15"],
            30,
        ),
        address_node_at(
            "fd00-0-0-0-0-0-0-16.web.shop.svc.cluster.local.",
            &["fd00::16"],
            30,
        ),
        // An IPv4-mapped IPv6 address, which its dashed label reads back as IPv4.
        address_node_at(
            "--ffff-a01-203.web.shop.svc.cluster.local.",
            &["::ffff:10.1.2.3"],
            30,
        ),
        // The same address under another Service, after the first: a node.
        address_node_at(
            "10-244-1-10.web.shop.svc.cluster.local.",
            &["10.244.1.10"],
            30,
        ),
    ];
    for node in kept.iter().chain(&nodes) {
        assert!(!names.insert(node.clone()), "{node:?}");
        assert!(names.holds(node), "{node:?}");
        assert!(names.contains_key(node.name()));
    }
    assert_eq!(names.len(), kept.len() + nodes.len());
    assert_eq!(names.address_count(), kept.len());
    for node in &kept {
        assert_eq!(names.get(node.name()), None, "{node:?} is kept as a node");
        assert!(names.address(node.name()).is_some());
    }
    for node in &nodes {
        assert_eq!(names.get(node.name()), Some(node));
        assert!(names.address(node.name()).is_none());
    }
    assert_listed_as(&names, kept.iter().chain(&nodes));

    // A name moves between the two as its node changes, and goes.
    let two = address_node_at(
        "10-244-1-9.web.shop.svc.cluster.local.",
        &["10.244.1.9", "fd00::9"],
        30,
    );
    assert!(names.insert(two.clone()));
    assert_eq!(names.get(two.name()), Some(&two));
    assert!(!names.holds(&kept[0]));
    assert_eq!(names.address_count(), kept.len() - 1);
    assert!(names.insert(kept[0].clone()));
    assert_eq!(names.get(two.name()), None);
    assert!(names.holds(&kept[0]));
    // The same name with SRV records (its slice has ports now) is still kept as an address,
    // in place of the one it was.
    let rest = &kept[0].name()[1 + b"10-244-1-9".len()..];
    for ports in [&[8080][..], &[80, 443]] {
        let shape = Shape::bytes((100 / ports.len()) as u16, ports, rest).unwrap();
        let with_srv = address_node(v4("10.244.1.9"), &shape, 30);
        assert!(names.insert(with_srv.clone()));
        assert!(names.holds(&with_srv));
        assert!(!names.holds(&kept[0]));
        assert_eq!(names.get(with_srv.name()), None);
        assert_eq!(names.address_count(), kept.len());
        assert_eq!(names.nodes().filter(|node| **node == with_srv).count(), 1);
    }
    assert!(names.insert(kept[0].clone()));
    assert!(names.remove(kept[0].name()));
    assert!(!names.remove(kept[0].name()));
    assert!(!names.contains_key(kept[0].name()));
    // The address held for one Service; the other Service's name is a node, and stays one
    // when the first goes.
    let shared = nodes.last().unwrap();
    assert!(names.remove(kept[2].name()));
    assert!(!names.contains_key(kept[2].name()));
    assert_eq!(names.get(shared.name()), Some(shared));
    assert!(names.holds(shared));
    assert_eq!(names.len(), kept.len() + nodes.len() - 2);
}

#[test]
fn the_endpoints_of_a_service_share_one_target_rest() {
    let mut names = Names::sized(Sizes::default(), 30);
    for n in 1..=200u8 {
        let ip = IpAddr::from([10, 244, 3, n]);
        let target = format!("{}.web.shop.svc.cluster.local.", dashed_ip(ip));
        names.insert(ptr_node(ip, &[&target], 30));
    }
    let first = names.ptrs.get(v4("10.244.3.1")).unwrap().clone();
    // 200 names and this one.
    assert_eq!(Arc::strong_count(&first), 201);
    // A rest nothing holds any more is dropped from the table in time.
    for n in 1..=200u8 {
        names.remove(rrset::reverse_name(IpAddr::from([10, 244, 3, n])).as_bytes());
    }
    drop(first);
    for n in 0..2000u32 {
        let ip = IpAddr::from(std::net::Ipv4Addr::from(0x0a10_0000 + n));
        let target = format!("{}.svc-{n}.shop.svc.cluster.local.", dashed_ip(ip));
        names.insert(ptr_node(ip, &[&target], 30));
    }
    let table = names.suffixes.held.lock().unwrap();
    assert!(table.by_name.len() < 2000 + 200, "{}", table.by_name.len());
}

/// Every name of the fixtures, asked every type a reverse name can hold and a few more,
/// answers byte for byte as it did when every name was a node; so does a name just past
/// each (a miss), and the zone lists the same records.
#[test]
fn answers_and_listings_are_what_the_nodes_gave() {
    for file in ["fixtures/shop.json", "fixtures/dualstack.json"] {
        let snapshot = built(file);
        let mut plain = snapshot.clone();
        plain.names = Names::plain(&snapshot.names);
        assert!(snapshot.names.ptr_count() >= 3, "{file}");
        assert!(snapshot.names.address_count() >= 3, "{file}");
        assert_eq!(plain.names.ptr_count() + plain.names.address_count(), 0);
        assert_eq!(snapshot.name_count(), plain.name_count());
        let names: Vec<Vec<u8>> = snapshot.names.names().map(Cow::into_owned).collect();
        for name in &names {
            let mut miss = vec![1, b'x'];
            miss.extend_from_slice(name);
            for qtype in [
                rtype::PTR,
                rtype::A,
                rtype::AAAA,
                rtype::TXT,
                rtype::SRV,
                rtype::ANY,
            ] {
                for asked in [name, &miss] {
                    assert_eq!(
                        reply(&snapshot, asked, qtype),
                        reply(&plain, asked, qtype),
                        "{file}: {} type {qtype}",
                        WireName::from_wire_unchecked(asked.clone())
                    );
                }
            }
        }
        for zone in 0..snapshot.zones().len() {
            assert_eq!(
                crate::zone::zonefile::zone_records(&snapshot, zone),
                crate::zone::zonefile::zone_records(&plain, zone),
                "{file}"
            );
        }
    }
}

/// The build holds an endpoint PTR as an address from the start; a second target, a
/// hostname's or any other record at the name make it a name being built, with its records
/// in the order they came, exactly as if it had been one all along.
#[test]
fn the_writer_holds_an_endpoint_ptr_as_an_address_until_the_name_needs_more() {
    use crate::zone::writer::NameWriter;
    let web = WireName::from_dotted("web.shop.svc.cluster.local.").unwrap();
    let api = WireName::from_dotted("api.shop.svc.cluster.local.").unwrap();
    let ptr_at = |ip: &str| {
        let ip: IpAddr = ip.parse().unwrap();
        (ip, ReverseName::of(ip).as_bytes().to_vec())
    };
    let mut b = NameWriter::new(30);
    let (web_rest, api_rest) = (b.suffix(&web), b.suffix(&api));
    // Kept as an address: one target, written twice.
    let (one, one_name) = ptr_at("10.244.1.9");
    b.endpoint_ptr(&one_name, one, "10-244-1-9", &web_rest);
    b.endpoint_ptr(&one_name, one, "10-244-1-9", &web_rest);
    // Two Services' endpoints.
    let (two, two_name) = ptr_at("10.244.1.5");
    b.endpoint_ptr(&two_name, two, "10-244-1-5", &web_rest);
    b.endpoint_ptr(&two_name, two, "10-244-1-5", &api_rest);
    // A hostname after the dashed address.
    let (host, host_name) = ptr_at("10.244.1.11");
    b.endpoint_ptr(&host_name, host, "10-244-1-11", &web_rest);
    b.endpoint_ptr(&host_name, host, "db-0", &web_rest);
    // Another record at the name after it.
    let (other, other_name) = ptr_at("10.244.1.12");
    b.endpoint_ptr(&other_name, other, "10-244-1-12", &web_rest);
    b.set(
        &WireName::from_wire_unchecked(other_name.clone()),
        rtype::TXT,
        30,
    )
    .push(b"\x01x");
    let expected = [
        ptr_node(one, &["10-244-1-9.web.shop.svc.cluster.local."], 30),
        ptr_node(
            two,
            &[
                "10-244-1-5.web.shop.svc.cluster.local.",
                "10-244-1-5.api.shop.svc.cluster.local.",
            ],
            30,
        ),
        ptr_node(
            host,
            &[
                "10-244-1-11.web.shop.svc.cluster.local.",
                "db-0.web.shop.svc.cluster.local.",
            ],
            30,
        ),
    ];
    let mut nodes = b.finish();
    nodes.sort_by(|a, b| a.name().cmp(b.name()));
    let texts: Vec<String> = nodes.iter().map(|node| format!("{node:?}")).collect();
    for node in &expected {
        assert!(nodes.contains(node), "{node:?} not in {texts:#?}");
    }
    let with_txt = nodes.iter().find(|node| node.name() == other_name).unwrap();
    let types: Vec<u16> = with_txt.rrsets().map(|set| set.rtype).collect();
    assert_eq!(types, [rtype::PTR, rtype::TXT], "{with_txt:?}");
    assert_eq!(nodes.len(), 4, "{texts:#?}");

    // The same names through into_names: only the first is kept as an address.
    let mut b = NameWriter::new(30);
    let web_rest = b.suffix(&web);
    b.endpoint_ptr(&one_name, one, "10-244-1-9", &web_rest);
    b.endpoint_ptr(&two_name, two, "10-244-1-5", &web_rest);
    b.endpoint_ptr(&two_name, two, "10-244-1-5", &b.suffix(&api));
    let names = b.into_names();
    assert_eq!(names.ptr_count(), 1);
    assert!(names.holds(&expected[0]));
    assert_eq!(names.get(&two_name), Some(&expected[1]));
    assert!(Arc::ptr_eq(names.ptrs.get(one).unwrap(), &web_rest));
}

/// The build holds an endpoint's address name as an address once written; writing to the
/// name again makes it a name being built, with the records it had; the nodes a writer
/// gives are those it gives without holding any name so, and so are the names.
#[test]
fn the_writer_holds_an_endpoint_name_as_an_address_until_it_is_written_again() {
    use crate::zone::records::{Entry, add_entries};
    use crate::zone::writer::NameWriter;
    let name = |text: &str| WireName::from_dotted(text).unwrap();
    let write = |settle: bool| {
        let mut b = NameWriter::new(30);
        let names = [
            (
                "10-244-1-9.web.shop.svc.cluster.local.",
                "10.244.1.9",
                &[Some(8080)][..],
            ),
            (
                "10-244-1-10.web.shop.svc.cluster.local.",
                "10.244.1.10",
                &[Some(80), Some(443), Some(80)],
            ),
            (
                "10-244-1-11.web.shop.svc.cluster.local.",
                "10.244.1.11",
                &[None],
            ),
            // The same address under another Service: a name being built.
            (
                "10-244-1-9.api.shop.svc.cluster.local.",
                "10.244.1.9",
                &[Some(8080)],
            ),
            // Written again below.
            (
                "10-244-1-12.web.shop.svc.cluster.local.",
                "10.244.1.12",
                &[Some(8080)],
            ),
        ];
        for (owner, ip, ports) in names {
            let owner = name(owner);
            let entries: Vec<Entry<'_>> = ports
                .iter()
                .map(|&port| Entry {
                    ip: ip.parse().unwrap(),
                    target: &owner,
                    port,
                })
                .collect();
            add_entries(&mut b, &owner, &entries);
            if settle {
                b.settle_endpoint_name(&owner);
            }
        }
        b.set(
            &name("10-244-1-12.web.shop.svc.cluster.local."),
            rtype::TXT,
            30,
        )
        .push(b"\x01x");
        b
    };
    let sorted = |mut nodes: Vec<Node>| {
        nodes.sort_by(|a, b| a.name().cmp(b.name()));
        nodes
    };
    let plain = sorted(write(false).finish());
    assert_eq!(sorted(write(true).finish()), plain);
    let names = write(true).into_names();
    assert_eq!(names.address_count(), 3);
    assert_eq!(sorted(names.nodes().map(Cow::into_owned).collect()), plain);
    let with_txt = plain
        .iter()
        .find(|node| node.name() == name("10-244-1-12.web.shop.svc.cluster.local.").as_bytes())
        .unwrap();
    let types: Vec<u16> = with_txt.rrsets().map(|set| set.rtype).collect();
    assert_eq!(types, [rtype::A, rtype::TXT, rtype::SRV], "{with_txt:?}");
    assert_eq!(with_txt.rrset(rtype::SRV).unwrap().extra_count, 1);
}
