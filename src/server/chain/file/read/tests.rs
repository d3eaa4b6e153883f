//! The zone-file reader: what each entry becomes, and errors naming the line.

#![allow(clippy::unwrap_used)]

use std::path::Path;

use super::*;

fn origin() -> Name {
    Name::from_ascii("example.org.").unwrap()
}

fn parsed(text: &str) -> Vec<String> {
    parse_zone(text, Path::new("db.example.org"), &origin())
        .unwrap_or_else(|e| panic!("{e}"))
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn entries() {
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "owner carried over, $TTL, parentheses and comments",
            "$TTL 30M\n$ORIGIN example.org.\n@ IN SOA ns admin (\n  7 ; serial\n  4H 1H 7D 4H )\n  IN NS ns\nns 60 IN A 192.0.2.1\n",
            &[
                "example.org. 1800 IN SOA ns.example.org. admin.example.org. 7 14400 3600 604800 14400",
                "example.org. 1800 IN NS ns.example.org.",
                "ns.example.org. 60 IN A 192.0.2.1",
            ],
        ),
        (
            "TTL from the last record without $TTL; class before TTL",
            "a IN 300 A 192.0.2.1\nb A 192.0.2.2\n",
            &[
                "a.example.org. 300 IN A 192.0.2.1",
                "b.example.org. 300 IN A 192.0.2.2",
            ],
        ),
        (
            "$TTL wins over the last record's",
            "$TTL 60\na 300 A 192.0.2.1\nb A 192.0.2.2\n",
            &[
                "a.example.org. 300 IN A 192.0.2.1",
                "b.example.org. 60 IN A 192.0.2.2",
            ],
        ),
        (
            "3600 when nothing says",
            "a A 192.0.2.1",
            &["a.example.org. 3600 IN A 192.0.2.1"],
        ),
        (
            "names upper case become lower case; absolute names stay",
            "WWW CNAME Web\nmail.other.net. A 192.0.2.9\n",
            &[
                "www.example.org. 3600 IN CNAME web.example.org.",
                "mail.other.net. 3600 IN A 192.0.2.9",
            ],
        ),
        (
            "$ORIGIN changes relative names after it",
            "$ORIGIN sub.example.org.\nx A 192.0.2.3\n",
            &["x.sub.example.org. 3600 IN A 192.0.2.3"],
        ),
        (
            "wildcards and SRV",
            "*.w A 192.0.2.4\n_http._tcp SRV 10 5 80 host\n",
            &[
                "*.w.example.org. 3600 IN A 192.0.2.4",
                "_http._tcp.example.org. 3600 IN SRV 10 5 80 host.example.org.",
            ],
        ),
    ];
    for (name, text, want) in cases {
        assert_eq!(parsed(text), *want, "{name}");
    }
}

#[test]
fn quoted_text_keeps_its_semicolons_parentheses_and_spaces() {
    let records = parse_zone(
        "t TXT \"v=spf1 (a) ; mx\" \"two\" ; a comment\n",
        Path::new("db"),
        &origin(),
    )
    .unwrap();
    let hickory_proto::rr::RData::TXT(txt) = &records[0].data else {
        panic!("{records:?}");
    };
    let strings: Vec<&[u8]> = txt.txt_data.iter().map(AsRef::as_ref).collect();
    assert_eq!(strings, [&b"v=spf1 (a) ; mx"[..], b"two"]);
}

#[test]
fn errors_name_the_line() {
    let cases: &[(&str, &str, usize, &str)] = &[
        (
            "bad address",
            "a A 192.0.2.1\nb A 300.1.1.1\n",
            2,
            "bad A record",
        ),
        (
            "unknown type",
            "\n\na FOO 1\n",
            3,
            "unknown record type 'FOO'",
        ),
        ("no owner", "  A 192.0.2.1\n", 1, "without an owner"),
        (
            "unclosed (",
            "a A 192.0.2.1\n@ SOA ns admin ( 1 2\n 3 4 5\n",
            2,
            "'(' is not closed",
        ),
        ("stray )", "a A 192.0.2.1 )\n", 1, "')' without its '('"),
        ("unclosed quote", "t TXT \"abc\n", 1, "quoted string"),
        (
            "class",
            "a CH A 192.0.2.1\n",
            1,
            "class CH is not supported",
        ),
        ("DNAME", "d DNAME x y\n", 1, "a DNAME record takes one name"),
        (
            "DNSSEC",
            "@ DS 1 2 3 abcd\n",
            1,
            "DS records are not supported (DNSSEC)",
        ),
        (
            "$GENERATE",
            "$GENERATE 1-2 a$ A 192.0.2.$\n",
            1,
            "$GENERATE is not supported",
        ),
        ("bad $TTL", "$TTL soon\n", 1, "bad $TTL 'soon'"),
        (
            "unknown directive",
            "$FOO x\n",
            1,
            "unknown directive '$FOO'",
        ),
        ("no type", "a 300\n", 1, "without a type"),
        ("bad name", "a..b A 192.0.2.1\n", 1, "bad name"),
        ("missing include", "$INCLUDE nowhere.db\n", 0, "nowhere.db"),
    ];
    for (name, text, line, want) in cases {
        let error = parse_zone(text, Path::new("/zones/db.example.org"), &origin()).unwrap_err();
        assert_eq!(error.line, *line, "{name}: {error}");
        assert!(error.to_string().contains(want), "{name}: {error}");
        if *line > 0 {
            assert!(
                error
                    .to_string()
                    .starts_with(&format!("/zones/db.example.org:{line}: ")),
                "{name}: {error}"
            );
        }
    }
}

#[test]
fn include_is_relative_to_the_including_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("hosts.db"), "h A 192.0.2.7\n").unwrap();
    std::fs::write(dir.path().join("broken.db"), "ok A 192.0.2.1\nbad A x\n").unwrap();
    let main = dir.path().join("db");
    let records = parse_zone(
        "$INCLUDE hosts.db\n$INCLUDE hosts.db sub.example.org.\nafter A 192.0.2.8\n",
        &main,
        &origin(),
    )
    .unwrap();
    let text: Vec<String> = records.iter().map(ToString::to_string).collect();
    assert_eq!(
        text,
        [
            "h.example.org. 3600 IN A 192.0.2.7",
            "h.sub.example.org. 3600 IN A 192.0.2.7",
            "after.example.org. 3600 IN A 192.0.2.8",
        ]
    );
    // An error in an included file names that file and its line.
    let error = parse_zone("$INCLUDE broken.db\n", &main, &origin()).unwrap_err();
    assert_eq!(error.file, dir.path().join("broken.db"));
    assert_eq!(error.line, 2);
}
