//! Tests of `dns`.

use super::*;

fn observation() -> Observation {
    Observation {
        proto: Proto::Udp,
        family: Family::V4,
        qtype: 1,
        rcode: 0,
        plugin: Plugin::Kubernetes.into(),
        request_size: 57,
        response_size: 120,
        duration: Duration::from_micros(300),
        dnssec_ok: false,
    }
}

#[test]
fn common_types_are_named_and_the_rest_are_other() {
    for (qtype, label) in [
        (1, "A"),
        (28, "AAAA"),
        (5, "CNAME"),
        (48, "DNSKEY"),
        (43, "DS"),
        (15, "MX"),
        (50, "NSEC3"),
        (47, "NSEC"),
        (2, "NS"),
        (12, "PTR"),
        (46, "RRSIG"),
        (6, "SOA"),
        (33, "SRV"),
        (16, "TXT"),
        (65, "HTTPS"),
        (251, "IXFR"),
        (252, "AXFR"),
        (255, "ANY"),
        (13, "other"),
        (64, "other"),
        (99, "other"),
        (0, "other"),
        (65535, "other"),
    ] {
        assert_eq!(type_label(qtype), label, "type {qtype}");
    }
    let mut sorted = TYPE_LABELS;
    sorted.sort_unstable();
    assert_eq!(sorted, TYPE_LABELS, "labels are in the Go client's order");
}

#[test]
fn rcodes_are_named_as_miekg_dns_names_them() {
    for (rcode, label) in [
        (0, "NOERROR"),
        (1, "FORMERR"),
        (2, "SERVFAIL"),
        (3, "NXDOMAIN"),
        (4, "NOTIMP"),
        (5, "REFUSED"),
        (9, "NOTAUTH"),
        (11, "DSOTYPENI"),
        (12, "RCODE12"),
        (16, "BADSIG"),
        (23, "BADCOOKIE"),
        (24, "RCODE24"),
        (4095, "RCODE4095"),
    ] {
        assert_eq!(rcode_label(rcode), label);
    }
}

#[test]
fn server_labels_look_like_coredns_ones() {
    assert_eq!(server_label(None, 53), "dns://:53");
    assert_eq!(
        server_label(Some([127, 0, 0, 1].into()), 1053),
        "dns://127.0.0.1:1053"
    );
    assert_eq!(
        server_label(Some("::1".parse().expect("ip")), 53),
        "dns://[::1]:53"
    );
}

#[test]
fn families_follow_go_to4() {
    assert_eq!(Family::of([10, 0, 0, 1].into()), Family::V4);
    assert_eq!(
        Family::of("::ffff:10.0.0.1".parse().expect("ip")),
        Family::V4
    );
    assert_eq!(Family::of("fd00::1".parse().expect("ip")), Family::V6);
}

#[test]
fn one_query_writes_every_family_with_coredns_labels() {
    let metrics = ServerMetrics::new("dns://:53", ".", "");
    metrics.record(&observation());
    let mut out = Exposition::new();
    metrics.collect(&mut out);
    let text = out.finish();
    let expected = "\
# HELP coredns_dns_requests_total Counter of DNS requests made per zone, protocol and family.
# TYPE coredns_dns_requests_total counter
coredns_dns_requests_total{family=\"1\",proto=\"udp\",server=\"dns://:53\",type=\"A\",view=\"\",zone=\".\"} 1
# HELP coredns_dns_request_duration_seconds Histogram of the time (in seconds) each request took per zone.
# TYPE coredns_dns_request_duration_seconds histogram
coredns_dns_request_duration_seconds_bucket{server=\"dns://:53\",view=\"\",zone=\".\",le=\"0.00025\"} 0
coredns_dns_request_duration_seconds_bucket{server=\"dns://:53\",view=\"\",zone=\".\",le=\"0.0005\"} 1
coredns_dns_request_duration_seconds_bucket{server=\"dns://:53\",view=\"\",zone=\".\",le=\"0.001\"} 1
coredns_dns_request_duration_seconds_bucket{server=\"dns://:53\",view=\"\",zone=\".\",le=\"0.002\"} 1
coredns_dns_request_duration_seconds_bucket{server=\"dns://:53\",view=\"\",zone=\".\",le=\"0.004\"} 1
coredns_dns_request_duration_seconds_bucket{server=\"dns://:53\",view=\"\",zone=\".\",le=\"0.008\"} 1
coredns_dns_request_duration_seconds_bucket{server=\"dns://:53\",view=\"\",zone=\".\",le=\"0.016\"} 1
coredns_dns_request_duration_seconds_bucket{server=\"dns://:53\",view=\"\",zone=\".\",le=\"0.032\"} 1
coredns_dns_request_duration_seconds_bucket{server=\"dns://:53\",view=\"\",zone=\".\",le=\"0.064\"} 1
coredns_dns_request_duration_seconds_bucket{server=\"dns://:53\",view=\"\",zone=\".\",le=\"0.128\"} 1
coredns_dns_request_duration_seconds_bucket{server=\"dns://:53\",view=\"\",zone=\".\",le=\"0.256\"} 1
coredns_dns_request_duration_seconds_bucket{server=\"dns://:53\",view=\"\",zone=\".\",le=\"0.512\"} 1
coredns_dns_request_duration_seconds_bucket{server=\"dns://:53\",view=\"\",zone=\".\",le=\"1.024\"} 1
coredns_dns_request_duration_seconds_bucket{server=\"dns://:53\",view=\"\",zone=\".\",le=\"2.048\"} 1
coredns_dns_request_duration_seconds_bucket{server=\"dns://:53\",view=\"\",zone=\".\",le=\"4.096\"} 1
coredns_dns_request_duration_seconds_bucket{server=\"dns://:53\",view=\"\",zone=\".\",le=\"8.192\"} 1
coredns_dns_request_duration_seconds_bucket{server=\"dns://:53\",view=\"\",zone=\".\",le=\"+Inf\"} 1
coredns_dns_request_duration_seconds_sum{server=\"dns://:53\",view=\"\",zone=\".\"} 0.0003
coredns_dns_request_duration_seconds_count{server=\"dns://:53\",view=\"\",zone=\".\"} 1
# HELP coredns_dns_request_size_bytes Size of the EDNS0 UDP buffer in bytes (64K for TCP) per zone and protocol.
# TYPE coredns_dns_request_size_bytes histogram
coredns_dns_request_size_bytes_bucket{proto=\"udp\",server=\"dns://:53\",view=\"\",zone=\".\",le=\"0\"} 0
coredns_dns_request_size_bytes_bucket{proto=\"udp\",server=\"dns://:53\",view=\"\",zone=\".\",le=\"100\"} 1
coredns_dns_request_size_bytes_bucket{proto=\"udp\",server=\"dns://:53\",view=\"\",zone=\".\",le=\"200\"} 1
coredns_dns_request_size_bytes_bucket{proto=\"udp\",server=\"dns://:53\",view=\"\",zone=\".\",le=\"300\"} 1
coredns_dns_request_size_bytes_bucket{proto=\"udp\",server=\"dns://:53\",view=\"\",zone=\".\",le=\"400\"} 1
coredns_dns_request_size_bytes_bucket{proto=\"udp\",server=\"dns://:53\",view=\"\",zone=\".\",le=\"511\"} 1
coredns_dns_request_size_bytes_bucket{proto=\"udp\",server=\"dns://:53\",view=\"\",zone=\".\",le=\"1023\"} 1
coredns_dns_request_size_bytes_bucket{proto=\"udp\",server=\"dns://:53\",view=\"\",zone=\".\",le=\"2047\"} 1
coredns_dns_request_size_bytes_bucket{proto=\"udp\",server=\"dns://:53\",view=\"\",zone=\".\",le=\"4095\"} 1
coredns_dns_request_size_bytes_bucket{proto=\"udp\",server=\"dns://:53\",view=\"\",zone=\".\",le=\"8291\"} 1
coredns_dns_request_size_bytes_bucket{proto=\"udp\",server=\"dns://:53\",view=\"\",zone=\".\",le=\"16000\"} 1
coredns_dns_request_size_bytes_bucket{proto=\"udp\",server=\"dns://:53\",view=\"\",zone=\".\",le=\"32000\"} 1
coredns_dns_request_size_bytes_bucket{proto=\"udp\",server=\"dns://:53\",view=\"\",zone=\".\",le=\"48000\"} 1
coredns_dns_request_size_bytes_bucket{proto=\"udp\",server=\"dns://:53\",view=\"\",zone=\".\",le=\"64000\"} 1
coredns_dns_request_size_bytes_bucket{proto=\"udp\",server=\"dns://:53\",view=\"\",zone=\".\",le=\"+Inf\"} 1
coredns_dns_request_size_bytes_sum{proto=\"udp\",server=\"dns://:53\",view=\"\",zone=\".\"} 57
coredns_dns_request_size_bytes_count{proto=\"udp\",server=\"dns://:53\",view=\"\",zone=\".\"} 1
# HELP coredns_dns_response_size_bytes Size of the returned response in bytes.
# TYPE coredns_dns_response_size_bytes histogram
coredns_dns_response_size_bytes_bucket{proto=\"udp\",server=\"dns://:53\",view=\"\",zone=\".\",le=\"0\"} 0
coredns_dns_response_size_bytes_bucket{proto=\"udp\",server=\"dns://:53\",view=\"\",zone=\".\",le=\"100\"} 0
coredns_dns_response_size_bytes_bucket{proto=\"udp\",server=\"dns://:53\",view=\"\",zone=\".\",le=\"200\"} 1
coredns_dns_response_size_bytes_bucket{proto=\"udp\",server=\"dns://:53\",view=\"\",zone=\".\",le=\"300\"} 1
coredns_dns_response_size_bytes_bucket{proto=\"udp\",server=\"dns://:53\",view=\"\",zone=\".\",le=\"400\"} 1
coredns_dns_response_size_bytes_bucket{proto=\"udp\",server=\"dns://:53\",view=\"\",zone=\".\",le=\"511\"} 1
coredns_dns_response_size_bytes_bucket{proto=\"udp\",server=\"dns://:53\",view=\"\",zone=\".\",le=\"1023\"} 1
coredns_dns_response_size_bytes_bucket{proto=\"udp\",server=\"dns://:53\",view=\"\",zone=\".\",le=\"2047\"} 1
coredns_dns_response_size_bytes_bucket{proto=\"udp\",server=\"dns://:53\",view=\"\",zone=\".\",le=\"4095\"} 1
coredns_dns_response_size_bytes_bucket{proto=\"udp\",server=\"dns://:53\",view=\"\",zone=\".\",le=\"8291\"} 1
coredns_dns_response_size_bytes_bucket{proto=\"udp\",server=\"dns://:53\",view=\"\",zone=\".\",le=\"16000\"} 1
coredns_dns_response_size_bytes_bucket{proto=\"udp\",server=\"dns://:53\",view=\"\",zone=\".\",le=\"32000\"} 1
coredns_dns_response_size_bytes_bucket{proto=\"udp\",server=\"dns://:53\",view=\"\",zone=\".\",le=\"48000\"} 1
coredns_dns_response_size_bytes_bucket{proto=\"udp\",server=\"dns://:53\",view=\"\",zone=\".\",le=\"64000\"} 1
coredns_dns_response_size_bytes_bucket{proto=\"udp\",server=\"dns://:53\",view=\"\",zone=\".\",le=\"+Inf\"} 1
coredns_dns_response_size_bytes_sum{proto=\"udp\",server=\"dns://:53\",view=\"\",zone=\".\"} 120
coredns_dns_response_size_bytes_count{proto=\"udp\",server=\"dns://:53\",view=\"\",zone=\".\"} 1
# HELP coredns_dns_responses_total Counter of response status codes.
# TYPE coredns_dns_responses_total counter
coredns_dns_responses_total{plugin=\"kubernetes\",rcode=\"NOERROR\",server=\"dns://:53\",view=\"\",zone=\".\"} 1
";
    assert_eq!(text, expected);
}

#[test]
fn counts_land_on_their_labels() {
    let metrics = ServerMetrics::new("dns://127.0.0.1:1053", "cluster.local.", "");
    let base = observation();
    let queries = [
        base,
        Observation {
            qtype: 28,
            rcode: 3,
            ..base
        },
        Observation {
            proto: Proto::Tcp,
            family: Family::V6,
            qtype: 33,
            dnssec_ok: true,
            ..base
        },
        Observation {
            qtype: 99,
            rcode: 5,
            plugin: Writer::Server,
            ..base
        },
        Observation {
            rcode: 2,
            plugin: Plugin::Forward.into(),
            ..base
        },
        Observation {
            rcode: 2,
            plugin: Plugin::Forward.into(),
            ..base
        },
        Observation {
            rcode: 3841,
            plugin: Plugin::Forward.into(),
            ..base
        },
    ];
    for query in &queries {
        metrics.record(query);
    }
    assert_eq!(metrics.requests(Proto::Udp, Family::V4, 1), 4);
    assert_eq!(metrics.requests(Proto::Udp, Family::V4, 28), 1);
    assert_eq!(metrics.requests(Proto::Tcp, Family::V6, 33), 1);
    assert_eq!(metrics.requests(Proto::Udp, Family::V4, 12345), 1);
    assert_eq!(metrics.responses(2, Plugin::Forward.into()), 2);
    assert_eq!(metrics.responses(3841, Plugin::Forward.into()), 1);
    assert_eq!(metrics.responses(5, Writer::Server), 1);

    let mut out = Exposition::new();
    metrics.collect(&mut out);
    let text = out.finish();
    let lines: Vec<&str> = text
        .lines()
        .filter(|line| {
            line.starts_with("coredns_dns_requests_total")
                || line.starts_with("coredns_dns_do_requests_total")
                || line.starts_with("coredns_dns_responses_total")
                || line.starts_with("coredns_dns_request_size_bytes_count")
        })
        .collect();
    let zone = "cluster.local.";
    let common = format!("server=\"dns://127.0.0.1:1053\",view=\"\",zone=\"{zone}\"");
    assert_eq!(
        lines,
        [
            format!(
                "coredns_dns_requests_total{{family=\"1\",proto=\"udp\",server=\"dns://127.0.0.1:1053\",type=\"A\",view=\"\",zone=\"{zone}\"}} 4"
            ),
            format!(
                "coredns_dns_requests_total{{family=\"1\",proto=\"udp\",server=\"dns://127.0.0.1:1053\",type=\"AAAA\",view=\"\",zone=\"{zone}\"}} 1"
            ),
            format!(
                "coredns_dns_requests_total{{family=\"1\",proto=\"udp\",server=\"dns://127.0.0.1:1053\",type=\"other\",view=\"\",zone=\"{zone}\"}} 1"
            ),
            format!(
                "coredns_dns_requests_total{{family=\"2\",proto=\"tcp\",server=\"dns://127.0.0.1:1053\",type=\"SRV\",view=\"\",zone=\"{zone}\"}} 1"
            ),
            format!("coredns_dns_do_requests_total{{{common}}} 1"),
            format!("coredns_dns_request_size_bytes_count{{proto=\"tcp\",{common}}} 1"),
            format!("coredns_dns_request_size_bytes_count{{proto=\"udp\",{common}}} 6"),
            format!("coredns_dns_responses_total{{plugin=\"\",rcode=\"REFUSED\",{common}}} 1"),
            format!(
                "coredns_dns_responses_total{{plugin=\"forward\",rcode=\"SERVFAIL\",{common}}} 2"
            ),
            format!(
                "coredns_dns_responses_total{{plugin=\"forward\",rcode=\"RCODE3841\",{common}}} 1"
            ),
            format!(
                "coredns_dns_responses_total{{plugin=\"kubernetes\",rcode=\"NOERROR\",{common}}} 2"
            ),
            format!(
                "coredns_dns_responses_total{{plugin=\"kubernetes\",rcode=\"NXDOMAIN\",{common}}} 1"
            ),
        ]
    );
}

#[test]
fn counts_from_many_threads_add_up() {
    let metrics = ServerMetrics::new("dns://:53", ".", "");
    std::thread::scope(|scope| {
        for _ in 0..(SHARDS + 3) {
            scope.spawn(|| {
                for _ in 0..1000 {
                    metrics.record(&observation());
                }
            });
        }
    });
    let total = (SHARDS as u64 + 3) * 1000;
    assert_eq!(metrics.requests(Proto::Udp, Family::V4, 1), total);
    assert_eq!(metrics.responses(0, Plugin::Kubernetes.into()), total);
    let mut out = Exposition::new();
    metrics.collect(&mut out);
    let text = out.finish();
    assert!(text.contains(&format!(
            "coredns_dns_request_duration_seconds_count{{server=\"dns://:53\",view=\"\",zone=\".\"}} {total}\n"
        )));
    assert!(text.contains(&format!(
            "coredns_dns_request_size_bytes_sum{{proto=\"udp\",server=\"dns://:53\",view=\"\",zone=\".\"}} {}\n",
            total * 57
        )));
}

#[test]
fn nothing_counted_writes_nothing() {
    let metrics = ServerMetrics::new("dns://:53", ".", "");
    let mut out = Exposition::new();
    metrics.collect(&mut out);
    assert_eq!(out.finish(), "");
}

#[test]
fn the_set_hands_out_one_metrics_per_server_zone_and_view() {
    let set = DnsMetrics::new();
    let first = set.server_zone("dns://:53", ".", "");
    let again = set.server_zone("dns://:53", ".", "");
    assert!(Arc::ptr_eq(&first, &again));
    let other = set.server_zone("dns://:53", "cluster.local.", "");
    assert!(!Arc::ptr_eq(&first, &other));
    let dropped = set.dropped("dns://:53");
    assert_eq!(dropped.zone(), DROPPED);
    assert_eq!(set.len(), 3);

    first.record(&observation());
    dropped.record(&Observation {
        rcode: 5,
        plugin: Writer::Server,
        duration: Duration::ZERO,
        ..observation()
    });
    let mut out = Exposition::new();
    set.collect(&mut out);
    let text = out.finish();
    assert_eq!(text.matches("# TYPE coredns_dns_requests_total").count(), 1);
    assert!(text.contains(
            "coredns_dns_responses_total{plugin=\"\",rcode=\"REFUSED\",server=\"dns://:53\",view=\"\",zone=\"dropped\"} 1"
        ));
    assert!(text.contains(
            "coredns_dns_requests_total{family=\"1\",proto=\"udp\",server=\"dns://:53\",type=\"A\",view=\"\",zone=\".\"} 1"
        ));
}
