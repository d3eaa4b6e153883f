//! `records`: the zone file is golden, loadable by a generic authoritative server, and
//! that server answers every name in it the way clusterdns does.

use std::collections::{BTreeMap, BTreeSet};
use std::net::UdpSocket;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use hickory_proto::rr::Name;
use hickory_proto::serialize::txt::Parser;
use hickory_server::net::runtime::TokioRuntimeProvider;
use hickory_server::store::in_memory::InMemoryZoneHandler;
use hickory_server::zone_handler::{AxfrPolicy, Catalog, ZoneType};

use crate::common::binary::TestServer;
use crate::common::{Reply, TempCorefile, query, read, root};

const KUBEADM: &str = ".:0 {\n bind 127.0.0.1\n kubernetes cluster.local in-addr.arpa ip6.arpa {\n  pods insecure\n  ttl 30\n  objects {FIXTURES}/@OBJECTS@\n }\n}\n";

fn corefile(fixture: &str) -> TempCorefile {
    TempCorefile::new(&KUBEADM.replace("@OBJECTS@", fixture))
}

fn records(corefile: &TempCorefile, args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_clusterdns"))
        .args(["records", "--corefile", corefile.path.to_str().unwrap()])
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// The zone file with the SOA serials (a file time) replaced, for comparing with goldens.
fn without_serials(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let mut fields: Vec<String> = line.split('\t').map(str::to_owned).collect();
        if fields.get(3).is_some_and(|t| t == "SOA") {
            let mut rdata: Vec<&str> = fields[4].split(' ').collect();
            rdata[2] = "SERIAL";
            fields[4] = rdata.join(" ");
        }
        out.push_str(&fields.join("\t"));
        out.push('\n');
    }
    out
}

/// `CLUSTERDNS_BLESS=1 cargo test` rewrites the goldens from the current output.
fn assert_golden(path: &str, got: &str) {
    if std::env::var_os("CLUSTERDNS_BLESS").is_some() {
        std::fs::write(root().join(path), got).unwrap();
        return;
    }
    let want = read(path);
    assert!(
        want == got,
        "{path} differs (CLUSTERDNS_BLESS=1 to accept)\n~~~ want\n{want}~~~ got\n{got}~~~"
    );
}

#[test]
fn records_zone_files_are_golden() {
    for fixture in ["shop", "rules", "dualstack"] {
        let text = records(&corefile(&format!("{fixture}.json")), &[]);
        assert_golden(
            &format!("tests/golden/records/{fixture}.zone"),
            &without_serials(&text),
        );
    }
}

#[test]
fn records_json_lists_the_same_records() {
    let file = corefile("shop.json");
    let zone_lines = records(&file, &[])
        .lines()
        .filter(|line| !line.starts_with('$') && !line.is_empty())
        .count();
    let json: serde_json::Value =
        serde_json::from_str(&records(&file, &["--format", "json"])).unwrap();
    let zones = json.as_array().unwrap();
    assert_eq!(
        zones
            .iter()
            .map(|z| z["zone"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["cluster.local.", "in-addr.arpa.", "ip6.arpa."]
    );
    let count: usize = zones
        .iter()
        .map(|z| z["records"].as_array().unwrap().len())
        .sum();
    assert_eq!(count, zone_lines);
    let first = &zones[0]["records"][0];
    assert_eq!(
        (first["type"].as_str(), first["class"].as_str()),
        (Some("SOA"), Some("IN"))
    );
}

/// Serves `text` (one zone of a `records` listing) from hickory's in-memory zone on a
/// loopback port. The runtime must outlive the queries.
fn generic_server(text: &str) -> (tokio::runtime::Runtime, std::net::SocketAddr, Name) {
    let (origin, records) = Parser::new(text, None, None)
        .parse()
        .expect("hickory parses the zone file");
    let handler: InMemoryZoneHandler<TokioRuntimeProvider> =
        InMemoryZoneHandler::new(origin.clone(), records, ZoneType::Primary, AxfrPolicy::Deny)
            .expect("hickory loads the zone");
    let mut catalog = Catalog::new();
    catalog.upsert(origin.clone().into(), vec![Arc::new(handler)]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let addr = runtime.block_on(async {
        let socket = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let addr = socket.local_addr().unwrap();
        let mut server = hickory_server::Server::new(catalog);
        server.register_socket(socket);
        tokio::spawn(async move { server.block_until_done().await });
        addr
    });
    (runtime, addr, origin)
}

fn ask(addr: std::net::SocketAddr, name: &str, qtype: &str) -> Reply {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    socket
        .send_to(&query(name, qtype, Some(4096)), addr)
        .unwrap();
    let mut buf = vec![0u8; 65535];
    let (len, _) = socket.recv_from(&mut buf).unwrap();
    Reply::decode(&buf[..len])
}

/// Every name of every zone `records` prints, asked of clusterdns and of hickory serving
/// the printed zone: the same rcode and answer (and SOA when negative) for each type the name holds, for
/// a type it does not hold, and for the empty non-terminals between names. Names that own
/// a CNAME are asked only for the types they hold: CoreDNS's ExternalName answers for other
/// types (NODATA, no CNAME) are its own, not a generic server's.
#[test]
fn a_generic_server_answers_like_clusterdns() {
    for fixture in ["shop.json", "rules.json", "dualstack.json"] {
        let file = corefile(fixture);
        let clusterdns = TestServer::start(&["serve", "--corefile", file.path.to_str().unwrap()]);
        let mut asked = 0;
        let mut failures = Vec::new();
        for zone in ["cluster.local", "in-addr.arpa", "ip6.arpa"] {
            let text = records(&file, &["--zone", zone]);
            let (_runtime, generic, origin) = generic_server(&text);
            let mut by_name: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
            for line in text
                .lines()
                .filter(|l| !l.starts_with('$') && !l.is_empty())
            {
                let mut fields = line.split('\t');
                let (name, rtype) = (fields.next().unwrap(), fields.nth(2).unwrap());
                by_name
                    .entry(name.to_owned())
                    .or_default()
                    .insert(rtype.to_owned());
            }
            let mut questions: Vec<(String, String)> = Vec::new();
            let mut ents = BTreeSet::new();
            for (name, types) in &by_name {
                questions.extend(types.iter().map(|t| (name.clone(), t.clone())));
                if !types.contains("CNAME") {
                    let missing = if types.contains("TXT") { "MX" } else { "TXT" };
                    questions.push((name.clone(), missing.to_owned()));
                }
                let mut parent = Name::from_ascii(name).unwrap().base_name();
                while parent.num_labels() > origin.num_labels() {
                    let text = parent.to_string();
                    if !by_name.contains_key(&text) {
                        ents.insert(text);
                    }
                    parent = parent.base_name();
                }
            }
            questions.extend(ents.into_iter().map(|name| (name, "A".to_owned())));
            questions.push((format!("no-such-name.{origin}"), "A".to_owned()));
            for (name, qtype) in questions {
                let ours = clusterdns.ask_udp(&name, &qtype);
                let theirs = ask(generic, &name, &qtype);
                asked += 1;
                // The authority section is compared for negative answers (the SOA); in a
                // positive one it is server policy (hickory adds the apex NS to SOA answers,
                // CoreDNS adds nothing).
                let view = |r: &Reply| {
                    let authority = if r.answer.is_empty() {
                        r.authority.clone()
                    } else {
                        Vec::new()
                    };
                    (r.rcode.clone(), r.answer.clone(), authority)
                };
                if view(&ours) != view(&theirs) {
                    failures.push(format!(
                        "{name} {qtype}\n  clusterdns {:?}\n  hickory    {:?}",
                        view(&ours),
                        view(&theirs)
                    ));
                }
            }
        }
        assert!(
            failures.is_empty(),
            "{fixture}: {} of {asked} questions differ:\n{}",
            failures.len(),
            failures.join("\n")
        );
    }
}

/// A dump without Namespace objects and without the EndpointSlices the controller writes
/// (what `kubectl get svc,pods -o json` gives) serves the same zone: namespaces come from
/// the objects, slices are computed from the Pods.
#[test]
fn a_dump_without_namespaces_and_slices_gives_the_same_zone() {
    for fixture in ["shop.json", "dualstack.json"] {
        let full: serde_json::Value =
            serde_json::from_str(&read(format!("fixtures/{fixture}"))).unwrap();
        let mut trimmed = full.clone();
        let items = trimmed["items"].as_array_mut().unwrap();
        items.retain(|item| match item["kind"].as_str() {
            Some("Namespace") => false,
            // Slices of Services without a selector are user-made: the controller would not
            // write them, so they stay.
            Some("EndpointSlice") => {
                item["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"]
                    != "endpointslice-controller.k8s.io"
            }
            _ => true,
        });
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(fixture);
        std::fs::write(&path, serde_json::to_string(&trimmed).unwrap()).unwrap();
        let from_full = without_serials(&records(&corefile(fixture), &[]));
        let from_trimmed = without_serials(&records(
            &TempCorefile::new(&KUBEADM.replace("{FIXTURES}/@OBJECTS@", path.to_str().unwrap())),
            &[],
        ));
        assert_eq!(from_full, from_trimmed, "{fixture}");
    }
}
