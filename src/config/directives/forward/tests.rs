//! Tests of `forward`.

use super::*;
use crate::config::ServerBlock;
use crate::config::test_support::{Invalid, Valid, block, check_invalid, check_valid};

/// The upstreams' names.
fn to(server: &ServerBlock) -> Vec<String> {
    server.plugins.forward[0]
        .to
        .iter()
        .map(|u| u.name.clone())
        .collect()
}

fn first(server: &ServerBlock) -> &ForwardConfig {
    &server.plugins.forward[0]
}

fn name(text: &str) -> Name {
    Name::from_ascii(text).unwrap()
}

#[test]
fn defaults() {
    let server = block(" forward . 10.0.0.1").unwrap();
    let want = ForwardConfig {
        from: Name::root(),
        to: vec![Upstream {
            addr: "10.0.0.1:53".parse().unwrap(),
            name: "10.0.0.1:53".into(),
            from_file: None,
            transport: UpstreamTransport::Dns,
        }],
        except: vec![],
        force_tcp: false,
        prefer_udp: false,
        expire: Duration::from_secs(10),
        max_idle_conns: 0,
        max_fails: 2,
        max_connect_attempts: 0,
        policy: ForwardPolicy::Random,
        health_check: Duration::from_millis(500),
        health_check_no_rec: false,
        health_check_domain: Name::root(),
        max_concurrent: None,
        next: vec![],
        failover: vec![],
        failfast_all_unhealthy_upstreams: false,
        tls: None,
    };
    assert_eq!(server.plugins.forward, [want]);
}

#[test]
fn valid() {
    let cases: &[Valid<'_>] = &[
        // TO.
        ("port", " forward . 10.0.0.1:5353", |s| {
            to(s) == ["10.0.0.1:5353"]
        }),
        ("v6", " forward . fd00::1", |s| to(s) == ["[fd00::1]:53"]),
        ("v6 port", " forward . [fd00::1]:5353", |s| {
            to(s) == ["[fd00::1]:5353"]
        }),
        (
            "dns prefix",
            " forward . dns://10.0.0.1 DNS://[fd00::1]:5353",
            |s| to(s) == ["10.0.0.1:53", "[fd00::1]:5353"],
        ),
        ("resolv.conf", " forward . /etc/resolv.conf", |s| {
            to(s) == ["192.0.2.53:53", "[2001:db8::53]:53"]
                && s.plugins.forward[0]
                    .to
                    .iter()
                    .all(|u| u.from_file.as_deref() == Some(Path::new("/etc/resolv.conf")))
        }),
        (
            "mixed, in order",
            " forward . 10.0.0.1 /etc/resolv.conf 10.0.0.2",
            |s| {
                to(s)
                    == [
                        "10.0.0.1:53",
                        "192.0.2.53:53",
                        "[2001:db8::53]:53",
                        "10.0.0.2:53",
                    ]
                    && s.plugins.forward[0].to[0].from_file.is_none()
            },
        ),
        (
            "link-local nameserver skipped",
            " forward . /fixed/mixed-resolv.conf",
            |s| to(s) == ["192.0.2.1:53"],
        ),
        ("duplicates kept", " forward . 10.0.0.1 10.0.0.1", |s| {
            to(s).len() == 2
        }),
        (
            "fifteen",
            " forward . 10.0.0.1 10.0.0.2 10.0.0.3 10.0.0.4 10.0.0.5 10.0.0.6 10.0.0.7 10.0.0.8 10.0.0.9 10.0.0.10 10.0.0.11 10.0.0.12 10.0.0.13 10.0.0.14 10.0.0.15",
            |s| to(s).len() == 15,
        ),
        // FROM.
        ("from zone", " forward Example.ORG. 10.0.0.1", |s| {
            first(s).from == name("example.org.")
        }),
        ("from cidr", " forward 10.0.0.0/8 10.0.0.1", |s| {
            first(s).from == name("10.in-addr.arpa.")
        }),
        (
            "from cidr keeps the first zone",
            " forward 10.0.0.0/23 10.0.0.1",
            |s| first(s).from == name("0.0.10.in-addr.arpa."),
        ),
        (
            "several",
            " forward example.org 10.0.0.1\n forward . 10.0.0.2",
            |s| {
                s.plugins.forward.len() == 2
                    && s.plugins.forward[0].from == name("example.org.")
                    && s.plugins.forward[1].from == name(".")
            },
        ),
        // Options.
        (
            "except",
            " forward . 10.0.0.1 {\n  except a.org B.org.\n  except 10.0.0.0/8 a.org\n }",
            |s| first(s).except == [name("a.org."), name("b.org."), name("10.in-addr.arpa.")],
        ),
        ("force_tcp", " forward . 10.0.0.1 {\n  force_tcp\n }", |s| {
            first(s).force_tcp
        }),
        (
            "prefer_udp",
            " forward . 10.0.0.1 {\n  prefer_udp\n }",
            |s| first(s).prefer_udp,
        ),
        ("expire", " forward . 10.0.0.1 {\n  expire 1m30s\n }", |s| {
            first(s).expire == Duration::from_secs(90)
        }),
        (
            "expire zero",
            " forward . 10.0.0.1 {\n  expire 0\n }",
            |s| first(s).expire.is_zero(),
        ),
        (
            "max_idle_conns",
            " forward . 10.0.0.1 {\n  max_idle_conns 20\n }",
            |s| first(s).max_idle_conns == 20,
        ),
        (
            "max_fails zero",
            " forward . 10.0.0.1 {\n  max_fails 0\n }",
            |s| first(s).max_fails == 0,
        ),
        (
            "max_connect_attempts",
            " forward . 10.0.0.1 {\n  max_connect_attempts 3\n }",
            |s| first(s).max_connect_attempts == 3,
        ),
        (
            "policy random",
            " forward . 10.0.0.1 {\n  policy random\n }",
            |s| first(s).policy == ForwardPolicy::Random,
        ),
        (
            "policy round_robin",
            " forward . 10.0.0.1 {\n  policy round_robin\n }",
            |s| first(s).policy == ForwardPolicy::RoundRobin,
        ),
        (
            "policy sequential",
            " forward . 10.0.0.1 {\n  policy sequential\n }",
            |s| first(s).policy == ForwardPolicy::Sequential,
        ),
        (
            "health_check",
            " forward . 10.0.0.1 {\n  health_check 5s\n }",
            |s| {
                first(s).health_check == Duration::from_secs(5)
                    && !first(s).health_check_no_rec
                    && first(s).health_check_domain == Name::root()
            },
        ),
        (
            "health_check no_rec",
            " forward . 10.0.0.1 {\n  health_check 1s no_rec\n }",
            |s| first(s).health_check_no_rec,
        ),
        (
            "health_check domain",
            " forward . 10.0.0.1 {\n  health_check 1s domain Example.org no_rec\n }",
            |s| {
                first(s).health_check_domain == name("example.org.") && first(s).health_check_no_rec
            },
        ),
        (
            "health_check resets the domain",
            " forward . 10.0.0.1 {\n  health_check 1s domain example.org\n  health_check 2s\n }",
            |s| first(s).health_check_domain == Name::root(),
        ),
        (
            "health_check zero",
            " forward . 10.0.0.1 {\n  health_check 0s\n }",
            |s| first(s).health_check.is_zero(),
        ),
        (
            "max_concurrent",
            " forward . 10.0.0.1 {\n  max_concurrent 1000\n }",
            |s| first(s).max_concurrent == Some(1000),
        ),
        (
            "max_concurrent zero",
            " forward . 10.0.0.1 {\n  max_concurrent 0\n }",
            |s| first(s).max_concurrent.is_none(),
        ),
        (
            "next",
            " forward . 10.0.0.1 {\n  next NXDOMAIN servfail nxdomain\n }",
            |s| first(s).next == [3, 2],
        ),
        (
            "next noerror",
            " forward . 10.0.0.1 {\n  next NOERROR\n }",
            |s| first(s).next == [0],
        ),
        (
            "failover",
            " forward . 10.0.0.1 {\n  failover SERVFAIL REFUSED NOTIMPL\n }",
            |s| first(s).failover == [2, 5, 4],
        ),
        (
            "failfast",
            " forward . 10.0.0.1 {\n  failfast_all_unhealthy_upstreams\n }",
            |s| first(s).failfast_all_unhealthy_upstreams,
        ),
        (
            "last value wins",
            " forward . 10.0.0.1 {\n  max_fails 3\n  max_fails 4\n }",
            |s| first(s).max_fails == 4,
        ),
    ];
    check_valid(cases);
}

#[test]
fn invalid() {
    let cases: &[Invalid<'_>] = &[
        Invalid {
            name: "nothing",
            input: " forward",
            line: 2,
            kind: "Invalid",
            message: "forward: expected at least 2 arguments, got 0",
        },
        Invalid {
            name: "no TO",
            input: " forward .",
            line: 2,
            kind: "Invalid",
            message: "expected at least 2 arguments, got 1",
        },
        Invalid {
            name: "bad FROM",
            input: " forward ex%ample 10.0.0.1",
            line: 2,
            kind: "Invalid",
            message: "forward: zone 'ex%ample' has an invalid character",
        },
        Invalid {
            name: "FROM with port",
            input: " forward .:53 10.0.0.1",
            line: 2,
            kind: "Invalid",
            message: "must not have a port",
        },
        Invalid {
            name: "https",
            input: " forward . https://dns.google/dns-query",
            line: 2,
            kind: "Invalid",
            message: "DNS over HTTPS is not supported",
        },
        Invalid {
            name: "grpc",
            input: " forward . grpc://10.0.0.1",
            line: 2,
            kind: "Invalid",
            message: "'grpc' is not supported",
        },
        Invalid {
            name: "unknown scheme",
            input: " forward . foo://10.0.0.1",
            line: 2,
            kind: "Invalid",
            message: "unknown transport 'foo://'",
        },
        Invalid {
            name: "empty after scheme",
            input: " forward . dns://",
            line: 2,
            kind: "Invalid",
            message: "names no upstream",
        },
        Invalid {
            name: "host name",
            input: " forward . dns.google",
            line: 2,
            kind: "Invalid",
            message: "'dns.google' is not an IP address, and host names are not supported",
        },
        Invalid {
            name: "host name and port",
            input: " forward . dns.google:53",
            line: 2,
            kind: "Invalid",
            message: "host names are not supported",
        },
        Invalid {
            name: "missing file",
            input: " forward . /nonexistent/resolv.conf",
            line: 2,
            kind: "Invalid",
            message: "cannot read the resolv.conf /nonexistent/resolv.conf",
        },
        Invalid {
            name: "directory",
            input: " forward . /",
            line: 2,
            kind: "Invalid",
            message: "cannot read the resolv.conf /",
        },
        Invalid {
            name: "bad resolv.conf",
            input: " forward . /fixed/bad-resolv.conf",
            line: 2,
            kind: "Invalid",
            message: "bad resolv.conf: /fixed/bad-resolv.conf:2: nameserver 'dns.google' is not an IP address",
        },
        Invalid {
            name: "no nameserver",
            input: " forward . /fixed/empty-resolv.conf",
            line: 2,
            kind: "Invalid",
            message: "the resolv.conf /fixed/empty-resolv.conf has no usable nameserver line",
        },
        Invalid {
            name: "only link-local",
            input: " forward . /fixed/link-local-resolv.conf",
            line: 2,
            kind: "Invalid",
            message: "no usable nameserver",
        },
        Invalid {
            name: "sixteen",
            input: " forward . /fixed/sixteen-resolv.conf",
            line: 2,
            kind: "Invalid",
            message: "forward: more than 15 TOs configured: 16",
        },
        Invalid {
            name: "sixteen across arguments",
            input: " forward . /etc/resolv.conf /fixed/sixteen-resolv.conf",
            line: 2,
            kind: "Invalid",
            message: "more than 15 TOs configured: 18",
        },
        Invalid {
            name: "port zero",
            input: " forward . 10.0.0.1:0",
            line: 2,
            kind: "Invalid",
            message: "'10.0.0.1:0' has port 0",
        },
        Invalid {
            name: "big port",
            input: " forward . 10.0.0.1:65536",
            line: 2,
            kind: "Invalid",
            message: "bad port '65536'",
        },
        Invalid {
            name: "link-local",
            input: " forward . fe80::1",
            line: 2,
            kind: "Invalid",
            message: "link-local",
        },
        Invalid {
            name: "scope",
            input: " forward . fe80::1%eth0",
            line: 2,
            kind: "Invalid",
            message: "scope",
        },
        // Options.
        Invalid {
            name: "tls without tls://",
            input: " forward . 10.0.0.1 {\n  tls\n }",
            line: 3,
            kind: "Invalid",
            message: "forward: tls: no upstream of this forward is tls://",
        },
        Invalid {
            name: "tls_servername without tls://",
            input: " forward . 10.0.0.1 {\n  tls_servername dns.google\n }",
            line: 3,
            kind: "Invalid",
            message: "forward: tls_servername: no upstream of this forward is tls://",
        },
        Invalid {
            name: "max_age",
            input: " forward . 10.0.0.1 {\n  max_age 30s\n }",
            line: 3,
            kind: "UnsupportedProperty",
            message: "'max_age'",
        },
        Invalid {
            name: "doh_method",
            input: " forward . 10.0.0.1 {\n  doh_method GET\n }",
            line: 3,
            kind: "UnsupportedProperty",
            message: "'doh_method'",
        },
        Invalid {
            name: "unknown",
            input: " forward . 10.0.0.1 {\n  max_requests 5\n }",
            line: 3,
            kind: "UnknownProperty",
            message: "unknown property 'max_requests' in forward",
        },
        Invalid {
            name: "option block",
            input: " forward . 10.0.0.1 {\n  force_tcp {\n  }\n }",
            line: 3,
            kind: "Invalid",
            message: "force_tcp: takes no '{ ... }' block",
        },
        Invalid {
            name: "flag argument",
            input: " forward . 10.0.0.1 {\n  prefer_udp yes\n }",
            line: 3,
            kind: "Invalid",
            message: "prefer_udp: expected exactly 0 arguments, got 1",
        },
        Invalid {
            name: "except nothing",
            input: " forward . 10.0.0.1 {\n  except\n }",
            line: 3,
            kind: "Invalid",
            message: "except: expected at least 1 argument",
        },
        Invalid {
            name: "except bad",
            input: " forward . 10.0.0.1 {\n  except a..b\n }",
            line: 3,
            kind: "Invalid",
            message: "except: zone 'a..b' has an empty label",
        },
        Invalid {
            name: "expire missing",
            input: " forward . 10.0.0.1 {\n  expire\n }",
            line: 3,
            kind: "Invalid",
            message: "expire: expected exactly 1 argument, got 0",
        },
        Invalid {
            name: "expire unit",
            input: " forward . 10.0.0.1 {\n  expire 10\n }",
            line: 3,
            kind: "Invalid",
            message: "expire: missing unit in duration '10'",
        },
        Invalid {
            name: "expire negative",
            input: " forward . 10.0.0.1 {\n  expire -1s\n }",
            line: 3,
            kind: "Invalid",
            message: "must not be negative",
        },
        Invalid {
            name: "max_fails negative",
            input: " forward . 10.0.0.1 {\n  max_fails -1\n }",
            line: 3,
            kind: "Invalid",
            message: "max_fails: '-1' must not be negative",
        },
        Invalid {
            name: "max_fails word",
            input: " forward . 10.0.0.1 {\n  max_fails two\n }",
            line: 3,
            kind: "Invalid",
            message: "'two' is not a non-negative integer",
        },
        Invalid {
            name: "max_fails too big",
            input: " forward . 10.0.0.1 {\n  max_fails 4294967296\n }",
            line: 3,
            kind: "Invalid",
            message: "too large",
        },
        Invalid {
            name: "max_idle_conns negative",
            input: " forward . 10.0.0.1 {\n  max_idle_conns -2\n }",
            line: 3,
            kind: "Invalid",
            message: "max_idle_conns: '-2' must not be negative",
        },
        Invalid {
            name: "max_concurrent negative",
            input: " forward . 10.0.0.1 {\n  max_concurrent -1\n }",
            line: 3,
            kind: "Invalid",
            message: "max_concurrent: '-1' must not be negative",
        },
        Invalid {
            name: "max_connect_attempts",
            input: " forward . 10.0.0.1 {\n  max_connect_attempts 1 2\n }",
            line: 3,
            kind: "Invalid",
            message: "expected exactly 1 argument, got 2",
        },
        Invalid {
            name: "policy",
            input: " forward . 10.0.0.1 {\n  policy fastest\n }",
            line: 3,
            kind: "Invalid",
            message: "policy: unknown policy 'fastest'",
        },
        Invalid {
            name: "health_check missing",
            input: " forward . 10.0.0.1 {\n  health_check\n }",
            line: 3,
            kind: "Invalid",
            message: "health_check: expected at least 1 argument",
        },
        Invalid {
            name: "health_check option",
            input: " forward . 10.0.0.1 {\n  health_check 1s rec\n }",
            line: 3,
            kind: "Invalid",
            message: "health_check: unknown option 'rec'",
        },
        Invalid {
            name: "health_check domain missing",
            input: " forward . 10.0.0.1 {\n  health_check 1s domain\n }",
            line: 3,
            kind: "Invalid",
            message: "'domain' needs a domain name",
        },
        Invalid {
            name: "health_check domain bad",
            input: " forward . 10.0.0.1 {\n  health_check 1s domain a..b\n }",
            line: 3,
            kind: "Invalid",
            message: "invalid domain name 'a..b'",
        },
        Invalid {
            name: "next nothing",
            input: " forward . 10.0.0.1 {\n  next\n }",
            line: 3,
            kind: "Invalid",
            message: "next: expected at least 1 argument",
        },
        Invalid {
            name: "next bad",
            input: " forward . 10.0.0.1 {\n  next NXDOMAN\n }",
            line: 3,
            kind: "Invalid",
            message: "next: 'NXDOMAN' is not a valid rcode",
        },
        Invalid {
            name: "failover noerror",
            input: " forward . 10.0.0.1 {\n  failover SERVFAIL NoError\n }",
            line: 3,
            kind: "Invalid",
            message: "failover: NOERROR cannot be used in failover",
        },
        Invalid {
            name: "failfast argument",
            input: " forward . 10.0.0.1 {\n  failfast_all_unhealthy_upstreams 1\n }",
            line: 3,
            kind: "Invalid",
            message: "expected exactly 0 arguments",
        },
        Invalid {
            name: "second line",
            input: " forward . 10.0.0.1 {\n  force_tcp\n  expire x\n }",
            line: 4,
            kind: "Invalid",
            message: "expire",
        },
    ];
    check_invalid(cases);
}

#[test]
fn relative_resolv_conf() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("upstreams.conf"), "nameserver 192.0.2.7\n").unwrap();
    let corefile = dir.path().join("Corefile");
    std::fs::write(&corefile, ". {\n forward . upstreams.conf\n}\n").unwrap();
    let config = crate::config::read_corefile(&corefile).unwrap();
    let upstream = &config.servers[0].plugins.forward[0].to[0];
    assert_eq!(upstream.name, "192.0.2.7:53");
    assert_eq!(upstream.from_file, Some(dir.path().join("upstreams.conf")));
}

#[test]
fn addresses() {
    let addr = |text: &str| Some(text.parse::<SocketAddr>().unwrap());
    let cases = [
        ("v4", "10.0.0.1", addr("10.0.0.1:53")),
        ("v4 port", "10.0.0.1:5353", addr("10.0.0.1:5353")),
        ("v6", "fd00::53", addr("[fd00::53]:53")),
        ("v6 brackets", "[fd00::53]", addr("[fd00::53]:53")),
        ("v6 port", "[fd00::53]:5353", addr("[fd00::53]:5353")),
        ("path", "/etc/resolv.conf", None),
        ("relative path", "resolv.conf", None),
        ("host", "dns.google", None),
        ("host port", "dns.google:53", None),
    ];
    for (name, text, want) in cases {
        assert_eq!(socket_address(text), Ok(want), "{name}");
    }
    let bad = [
        ("port zero", "10.0.0.1:0", "port 0"),
        ("port range", "10.0.0.1:65536", "bad port"),
        ("empty port", "10.0.0.1:", "bad port"),
        ("no bracket", "[fd00::1:53", "closing"),
        ("v4 in brackets", "[10.0.0.1]:53", "not an IPv6"),
        ("after bracket", "[fd00::1]53", "':PORT'"),
        ("scope", "fe80::1%eth0", "scope"),
        ("bracket scope", "[fe80::1%eth0]:53", "scope"),
        ("link-local", "fe80::1", "link-local"),
    ];
    for (name, text, want) in bad {
        let error = socket_address(text).unwrap_err();
        assert!(error.contains(want), "{name}: {error}");
    }
}

#[test]
fn rcode_names() {
    assert_eq!(rcode("servfail"), Some(2));
    assert_eq!(rcode("NOTIMPL"), Some(4));
    assert_eq!(rcode("BADCOOKIE"), Some(23));
    assert_eq!(rcode("BADVERS"), None);
    assert_eq!(rcode("2"), None);
}

#[test]
fn hosts() {
    assert!(looks_like_host("dns.google"));
    assert!(looks_like_host("ns1:53"));
    assert!(!looks_like_host("/etc/resolv.conf"));
    assert!(!looks_like_host("a b"));
}
