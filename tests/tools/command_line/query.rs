//! `query` with dig's habits: `+short` (anywhere after `query`, as dig takes it) prints the
//! answer's data alone, an unknown `+WORD` is refused naming those it takes, and `--output
//! json|yaml` prints the reply as typed fields. Against the bundled fixtures.

use serde_json::{Value, json};

use super::{binary, run};

/// Runs `clusterdns query ARGS...` and returns its exit status, stdout and stderr.
fn query(args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["query"];
    all.extend(args);
    let ran = run(binary(), &all);
    (ran.code, ran.stdout, ran.stderr)
}

#[test]
fn short_prints_the_answers_data_one_per_line() {
    let shop = ["--objects", "fixtures/shop.json"];
    for (args, shown) in [
        // After the name, as dig users type it.
        (vec!["web.shop.svc.cluster.local", "+short"], "10.96.0.20\n"),
        // Before it, and with a type.
        (
            vec![
                "+short",
                "-t",
                "SRV",
                "_http._tcp.web.shop.svc.cluster.local",
            ],
            "0 100 80 web.shop.svc.cluster.local.\n",
        ),
        // The flag's own spelling; a headless Service's endpoints, one a line (in the order
        // loadbalance rotates them to: sorted here).
        (
            vec!["db.shop.svc.cluster.local", "--short"],
            "10.244.1.11\n10.244.2.12\n",
        ),
        // NXDOMAIN: no answer, nothing printed (as dig), and exit 0 as without +short.
        (vec!["nope.shop.svc.cluster.local", "+short"], ""),
    ] {
        let mut all = args.clone();
        all.extend(shop);
        let (code, stdout, stderr) = query(&all);
        assert_eq!((code, stderr.as_str()), (0, ""), "{all:?}");
        let mut lines: Vec<&str> = stdout.lines().collect();
        lines.sort_unstable();
        let sorted: String = lines.iter().map(|line| format!("{line}\n")).collect();
        assert_eq!(sorted, shown, "{all:?}");
    }
    // After `--objects FILE...`, which would otherwise take it for a file.
    let (code, stdout, _) = query(&[
        "web.shop.svc.cluster.local",
        "--objects",
        "fixtures/shop.json",
        "+short",
    ]);
    assert_eq!((code, stdout.as_str()), (0, "10.96.0.20\n"));
    // An ExternalName: its CNAME's target on stdout, what query did not ask on stderr.
    let (code, stdout, stderr) = query(&[
        "ext.rules.svc.cluster.local",
        "+short",
        "--objects",
        "fixtures/rules.json",
    ]);
    assert_eq!((code, stdout.as_str()), (0, "www.example.com.\n"));
    assert_eq!(
        stderr,
        "clusterdns: www.example.com. is outside the cluster zone: the server asks it upstream \
         (forward) and puts its records after the CNAME; query does not ask upstream.\n"
    );
    // A short name is still not in the zone: exit 1, said on stderr.
    let (code, stdout, stderr) = query(&["web.shop", "+short", "--objects", "fixtures/shop.json"]);
    assert_eq!((code, stdout.as_str()), (1, ""));
    assert!(
        stderr.contains("reaches web.shop.svc.cluster.local"),
        "{stderr}"
    );
}

#[test]
fn unknown_plus_words_are_refused_naming_the_ones_taken() {
    let (code, stdout, stderr) = query(&[
        "web.shop.svc.cluster.local",
        "+shrt",
        "--objects",
        "fixtures/shop.json",
    ]);
    assert_eq!((code, stdout.as_str()), (2, ""));
    assert_eq!(
        stderr,
        "clusterdns: +shrt is not an option of query; did you mean +short? Of dig's +options it \
         takes +short (-t TYPE gives the record type, -o json|yaml prints the reply as data)\n"
    );
    let (code, _, stderr) = query(&["web.shop.svc.cluster.local", "+noall", "+answer"]);
    assert_eq!(code, 2);
    assert_eq!(
        stderr,
        "clusterdns: +noall is not an option of query. Of dig's +options it takes +short (-t \
         TYPE gives the record type, -o json|yaml prints the reply as data)\n"
    );
    let (code, _, stderr) = query(&[
        "web.shop.svc.cluster.local",
        "+short",
        "-o",
        "json",
        "--objects",
        "fixtures/shop.json",
    ]);
    assert_eq!(code, 2);
    assert_eq!(
        stderr,
        "clusterdns: +short (--short) prints the answers' data as text: it does not go with \
         --output json or yaml, which hold it as the answer's \"data\" fields\n"
    );
}

#[test]
fn output_json_is_the_reply_in_typed_fields() {
    let (code, stdout, stderr) = query(&[
        "web.shop.svc.cluster.local",
        "-o",
        "json",
        "--objects",
        "fixtures/shop.json",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        stdout,
        r#"{
  "status": "NOERROR",
  "rcode": 0,
  "opcode": "QUERY",
  "id": 0,
  "flags": [
    "qr",
    "aa",
    "rd"
  ],
  "question": [
    {
      "name": "web.shop.svc.cluster.local.",
      "class": "IN",
      "type": "A"
    }
  ],
  "answer": [
    {
      "name": "web.shop.svc.cluster.local.",
      "ttl": 30,
      "class": "IN",
      "type": "A",
      "data": "10.96.0.20"
    }
  ],
  "authority": [],
  "additional": [],
  "edns": {
    "version": 0,
    "flags": [],
    "udp": 1232
  }
}
"#
    );
}

/// Parses `query ARGS... --output json`, which exits 0.
fn json_of(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["--output", "json"]);
    let (code, stdout, stderr) = query(&all);
    assert_eq!(code, 0, "{all:?}: {stderr}");
    serde_json::from_str(&stdout).unwrap()
}

#[test]
fn output_json_holds_why_and_what_query_did_not_ask() {
    // `--why` is a field; an NXDOMAIN's SOA is in the authority section.
    // The SOA serial follows the objects file's time: the file's checkout, here.
    let mut nxdomain = json_of(&[
        "nope.shop.svc.cluster.local",
        "--why",
        "--objects",
        "fixtures/shop.json",
    ]);
    let soa = nxdomain["authority"][0]["data"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut fields: Vec<&str> = soa.split(' ').collect();
    assert!(fields[2].parse::<u32>().is_ok(), "{soa}");
    fields[2] = "SERIAL";
    nxdomain["authority"][0]["data"] = fields.join(" ").into();
    assert_eq!(
        nxdomain,
        json!({
            "status": "NXDOMAIN",
            "rcode": 3,
            "opcode": "QUERY",
            "id": 0,
            "flags": ["qr", "aa", "rd"],
            "question": [{"name": "nope.shop.svc.cluster.local.", "class": "IN", "type": "A"}],
            "answer": [],
            "authority": [{
                "name": "cluster.local.",
                "ttl": 30,
                "class": "IN",
                "type": "SOA",
                "data": "ns.dns.cluster.local. hostmaster.cluster.local. SERIAL 7200 1800 86400 30"
            }],
            "additional": [],
            "edns": {"version": 0, "flags": [], "udp": 1232},
            "why": {
                "name": "nope.shop.svc.cluster.local.",
                "type": "A",
                "plugin": "kubernetes",
                "zone": "cluster.local.",
                "reasons": ["no such Service shop/nope: NXDOMAIN"]
            }
        })
    );
    // An ExternalName's CNAME, and the note that its target goes upstream.
    let external = json_of(&[
        "ext.rules.svc.cluster.local",
        "--objects",
        "fixtures/rules.json",
    ]);
    assert_eq!(
        external["answer"],
        json!([{
            "name": "ext.rules.svc.cluster.local.",
            "ttl": 30,
            "class": "IN",
            "type": "CNAME",
            "data": "www.example.com."
        }])
    );
    assert_eq!(
        external["note"],
        "www.example.com. is outside the cluster zone: the server asks it upstream (forward) \
         and puts its records after the CNAME; query does not ask upstream."
    );
    // A name the server forwards: no reply, only the question, the note and why.
    assert_eq!(
        json_of(&[
            "example.com",
            "--why",
            "--corefile",
            "fixtures/plugins/Corefile"
        ]),
        json!({
            "question": [{"name": "example.com.", "class": "IN", "type": "A"}],
            "note": "example.com is not in the cluster zone: the server forwards it upstream, \
                     which query does not do.",
            "why": {
                "name": "example.com.",
                "type": "A",
                "plugin": "forward",
                "zone": ".",
                "reasons": [
                    "outside the cluster zone: forwarded upstream to 192.0.2.53:53",
                    "not in the cache: the next query goes upstream"
                ]
            }
        })
    );
}
