//! What the bench reads from the tools and files beside it, typed: the API server's audit log
//! (the service accounts' requests), `ss -tinpH`'s connections (bytes to and from the API
//! server), `cargo xtask load` and `cargo xtask dump`'s lines, and the percentiles of the
//! prober's samples.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

/// One account's requests in a stretch of the audit log.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Requests {
    pub lists: u64,
    pub watches: u64,
    /// Every request neither a list nor a watch.
    pub others: u64,
    /// The requests that read the whole state: the lists, and the watches that begin with it
    /// (`sendInitialEvents=true`, a WatchList: client-go's reflectors stream their lists so).
    pub initial: u64,
}

impl Requests {
    pub fn total(&self) -> u64 {
        self.lists + self.watches + self.others
    }
}

/// The fields of an audit event (audit.k8s.io/v1 `Event`, one JSON object a line) the bench
/// reads.
#[derive(Debug, Deserialize)]
struct AuditEvent {
    #[serde(rename = "auditID")]
    audit_id: String,
    #[serde(default)]
    verb: String,
    #[serde(rename = "requestURI", default)]
    request_uri: String,
    #[serde(default)]
    user: AuditUser,
}

#[derive(Debug, Default, Deserialize)]
struct AuditUser {
    #[serde(default)]
    username: String,
}

/// The service account kube-system/`account`'s username, as the audit log names it.
pub fn service_account(account: &str) -> String {
    format!("system:serviceaccount:kube-system:{account}")
}

/// The requests of user `username` in audit log lines `text`: each request counted once
/// (a watch has two events, ResponseStarted and ResponseComplete, with one audit ID); lines
/// that are not an event (a line cut short) are skipped.
pub fn audit_requests(text: &str, username: &str) -> Requests {
    let mut seen: HashMap<String, (String, bool)> = HashMap::new();
    for line in text.lines() {
        let Ok(event) = serde_json::from_str::<AuditEvent>(line) else {
            continue;
        };
        if event.user.username != username {
            continue;
        }
        let initial = event.request_uri.contains("sendInitialEvents=true");
        seen.insert(event.audit_id, (event.verb, initial));
    }
    let mut requests = Requests::default();
    for (verb, initial) in seen.values() {
        match verb.as_str() {
            "list" => requests.lists += 1,
            "watch" => requests.watches += 1,
            _ => requests.others += 1,
        }
        if verb == "list" || *initial {
            requests.initial += 1;
        }
    }
    requests
}

/// Where the audit log ends now, at the end of its last whole line (0 if there is none yet):
/// the mark a stretch of it begins or ends at.
pub fn audit_mark(path: &Path) -> Result<u64> {
    let mut file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e).with_context(|| format!("opening {}", path.display())),
    };
    let mut end = file.metadata()?.len();
    // Back from the end, a block at a time, to the last newline.
    while end > 0 {
        let start = end.saturating_sub(65536);
        let mut block = vec![0; usize::try_from(end - start)?];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut block)?;
        if let Some(at) = block.iter().rposition(|&b| b == b'\n') {
            return Ok(start + at as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

/// The audit log's text between two marks.
pub fn audit_between(path: &Path, from: u64, to: u64) -> Result<String> {
    if to <= from {
        return Ok(String::new());
    }
    let mut file =
        std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    file.seek(SeekFrom::Start(from))?;
    let mut bytes = vec![0; usize::try_from(to - from)?];
    file.read_exact(&mut bytes)
        .with_context(|| format!("reading {}", path.display()))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// One reading of one connection: the process, its local port, what it has received and sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SocketReading {
    pub pid: u32,
    pub port: u16,
    pub received: u64,
    pub sent: u64,
}

/// The connections of `pids` in `ss -tinpH state established` output: a line with the
/// addresses and the process (`users:(("clusterdns",pid=42,fd=9))`), then a line of TCP
/// information with `bytes_received:` and `bytes_sent:` (absent when none were).
pub fn socket_readings(ss: &str, pids: &BTreeSet<u32>) -> Vec<SocketReading> {
    let mut readings = Vec::new();
    let mut current: Option<(u32, u16)> = None;
    for line in ss.lines() {
        if let Some(pid) = first_pid(line) {
            // With a state filter the columns are Recv-Q Send-Q Local Peer Process.
            let port = line
                .split_whitespace()
                .nth(2)
                .and_then(|local| local.rsplit_once(':'))
                .and_then(|(_, port)| port.parse().ok());
            current = match port {
                Some(port) if pids.contains(&pid) => Some((pid, port)),
                _ => None,
            };
            continue;
        }
        let Some((pid, port)) = current.take() else {
            continue;
        };
        let field = |name: &str| {
            line.split_whitespace()
                .find_map(|word| word.strip_prefix(name)?.parse::<u64>().ok())
                .unwrap_or(0)
        };
        readings.push(SocketReading {
            pid,
            port,
            received: field("bytes_received:"),
            sent: field("bytes_sent:"),
        });
    }
    readings
}

/// The first `pid=N,` of a line.
fn first_pid(line: &str) -> Option<u32> {
    let (_, rest) = line.split_once("pid=")?;
    let (digits, _) = rest.split_once(',')?;
    digits.parse().ok()
}

/// Bytes received and sent over every connection read: the largest reading of each
/// connection (process and local port), summed.
pub fn socket_totals(readings: &[SocketReading]) -> (u64, u64) {
    let mut largest: BTreeMap<(u32, u16), (u64, u64)> = BTreeMap::new();
    for r in readings {
        let entry = largest.entry((r.pid, r.port)).or_default();
        entry.0 = entry.0.max(r.received);
        entry.1 = entry.1.max(r.sent);
    }
    largest
        .values()
        .fold((0, 0), |(rx, tx), (r, s)| (rx + r, tx + s))
}

/// What `cargo xtask load --wait` prints on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LoadLines {
    pub namespaces: u64,
    pub services: u64,
    pub pods: u64,
    pub failures: u64,
    pub created_s: f64,
    pub loaded_s: f64,
    pub endpoints: u64,
}

/// `namespaces services pods failures`, then `created_s loaded_s endpoints`.
pub fn load_lines(stdout: &str) -> Result<LoadLines> {
    let mut lines = stdout.lines().filter(|line| !line.trim().is_empty());
    let words = |line: Option<&str>, n: usize, what: &str| -> Result<Vec<String>> {
        let line = line.with_context(|| format!("no line of {what} from cargo xtask load"))?;
        let words: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
        if words.len() != n {
            bail!("cargo xtask load: {line:?} is not {what}");
        }
        Ok(words)
    };
    let counts = words(lines.next(), 4, "`namespaces services pods failures`")?;
    let times = words(lines.next(), 3, "`created_s loaded_s endpoints`")?;
    let int = |w: &str| -> Result<u64> { w.parse().with_context(|| format!("{w:?}")) };
    let float = |w: &str| -> Result<f64> { w.parse().with_context(|| format!("{w:?}")) };
    Ok(LoadLines {
        namespaces: int(&counts[0])?,
        services: int(&counts[1])?,
        pods: int(&counts[2])?,
        failures: int(&counts[3])?,
        created_s: float(&times[0])?,
        loaded_s: float(&times[1])?,
        endpoints: int(&times[2])?,
    })
}

/// What `cargo xtask dump` prints: `namespaces services endpointslices pods`.
pub fn dump_line(stdout: &str) -> Result<[u64; 4]> {
    let line = stdout
        .lines()
        .find(|line| !line.trim().is_empty())
        .context("no line from cargo xtask dump")?;
    let numbers: Vec<u64> = line
        .split_whitespace()
        .map(str::parse)
        .collect::<std::result::Result<_, _>>()
        .with_context(|| format!("cargo xtask dump: {line:?}"))?;
    numbers
        .try_into()
        .map_err(|_| anyhow::anyhow!("cargo xtask dump: {line:?} is not four numbers"))
}

/// p50 and p99 of the samples that did not time out, and how many did (none is a timeout).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Percentiles {
    pub p50: Option<f64>,
    pub p99: Option<f64>,
    pub timeouts: usize,
}

/// The p-th of the sorted values is the one at rank floor(n × p + 0.5) (at least the first,
/// at most the last), as the prober's samples have always been read.
pub fn sample_percentiles(values: impl IntoIterator<Item = Option<f64>>) -> Percentiles {
    let mut timeouts = 0;
    let mut sorted: Vec<f64> = Vec::new();
    for value in values {
        match value {
            Some(v) => sorted.push(v),
            None => timeouts += 1,
        }
    }
    sorted.sort_by(f64::total_cmp);
    let at = |p: f64| -> Option<f64> {
        let n = sorted.len();
        if n == 0 {
            return None;
        }
        let rank = ((n as f64 * p + 0.5) as usize).clamp(1, n);
        Some(sorted[rank - 1])
    };
    Percentiles {
        p50: at(0.50),
        p99: at(0.99),
        timeouts,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Audit events as the local control plane's API server writes them (Metadata level,
    /// RequestReceived omitted): a list and a WatchList of CoreDNS's (the watch twice, at
    /// ResponseStarted and ResponseComplete), clusterdns's list and plain watch, a get, an
    /// admin's request and a line cut short.
    const AUDIT: &str = include_str!("../../../fixtures/vs-coredns-audit.log");

    #[test]
    fn audit_requests_are_counted_once_per_audit_id() {
        let coredns = audit_requests(AUDIT, &service_account("coredns"));
        assert_eq!(
            coredns,
            Requests {
                lists: 0,
                watches: 2,
                others: 0,
                initial: 1
            }
        );
        let clusterdns = audit_requests(AUDIT, &service_account("clusterdns"));
        assert_eq!(
            clusterdns,
            Requests {
                lists: 1,
                watches: 1,
                others: 1,
                initial: 1
            }
        );
        assert_eq!(clusterdns.total(), 3);
        assert_eq!(audit_requests(AUDIT, "admin"), Requests::default());
        assert_eq!(audit_requests("", "x"), Requests::default());
    }

    #[test]
    fn the_audit_log_is_read_between_whole_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        assert_eq!(audit_mark(&path).unwrap(), 0);
        std::fs::write(&path, "{\"a\":1}\n{\"b\":2}\n{\"c\":").unwrap();
        let mark = audit_mark(&path).unwrap();
        assert_eq!(mark, 16);
        assert_eq!(audit_between(&path, 8, mark).unwrap(), "{\"b\":2}\n");
        assert_eq!(audit_between(&path, mark, mark).unwrap(), "");
        std::fs::write(&path, "no newline").unwrap();
        assert_eq!(audit_mark(&path).unwrap(), 0);
    }

    /// `ss -tinpH state established '( dport = :6443 )'` with two servers and another process
    /// connected (lines as ss 6.1 prints them).
    const SS: &str = "0      0      127.0.0.1:48248 127.0.0.1:6443 users:((\"coredns\",pid=952,fd=4))
\t cubic wscale:10,10 rto:204 rtt:0.057/0.032 mss:32768 pmtu:65535 rcvmss:536 advmss:65483 cwnd:11 bytes_sent:1205 bytes_acked:1206 bytes_received:90210 segs_out:3 segs_in:2 data_segs_out:1 send 50589192982bps lastsnd:40 lastrcv:40 lastack:40 pacing_rate 116961147504bps delivery_rate 29127111104bps delivered:2 app_limited rcv_space:65495 rcv_ssthresh:65495 minrtt:0.009 snd_wnd:65536
0      0      127.0.0.1:48250 127.0.0.1:6443 users:((\"kube-controller\",pid=77,fd=9))
\t cubic wscale:10,10 rto:204 rtt:0.05/0.02 mss:32768 bytes_sent:999 bytes_received:999
0      0      127.0.0.1:48260 127.0.0.1:6443 users:((\"clusterdns\",pid=953,fd=12),(\"clusterdns\",pid=953,fd=13))
\t cubic wscale:10,10 rto:204 rtt:0.05/0.02 mss:32768 bytes_sent:800 bytes_acked:801 bytes_received:40000
0      0      127.0.0.1:48262 127.0.0.1:6443 users:((\"clusterdns\",pid=953,fd=14))
\t cubic wscale:10,10 rto:204 rtt:0.05/0.02 mss:32768 segs_out:1
";

    #[test]
    fn connections_are_read_for_the_servers_only() {
        let pids: BTreeSet<u32> = [952, 953].into_iter().collect();
        let readings = socket_readings(SS, &pids);
        assert_eq!(
            readings,
            vec![
                SocketReading {
                    pid: 952,
                    port: 48248,
                    received: 90210,
                    sent: 1205
                },
                SocketReading {
                    pid: 953,
                    port: 48260,
                    received: 40000,
                    sent: 800
                },
                SocketReading {
                    pid: 953,
                    port: 48262,
                    received: 0,
                    sent: 0
                },
            ]
        );
        assert!(socket_readings(SS, &BTreeSet::new()).is_empty());
    }

    #[test]
    fn socket_totals_sum_each_connections_largest_reading() {
        let reading = |pid, port, received, sent| SocketReading {
            pid,
            port,
            received,
            sent,
        };
        let readings = [
            reading(1, 100, 10, 5),
            reading(1, 100, 30, 4),
            reading(1, 101, 7, 7),
            reading(2, 100, 1, 1),
        ];
        assert_eq!(socket_totals(&readings), (30 + 7 + 1, 5 + 7 + 1));
        assert_eq!(socket_totals(&[]), (0, 0));
    }

    #[test]
    fn the_loaders_and_the_dumps_lines_are_read() {
        let load = load_lines("12 100 1500 0\n9.8 11.2 1500\n").unwrap();
        assert_eq!(
            load,
            LoadLines {
                namespaces: 12,
                services: 100,
                pods: 1500,
                failures: 0,
                created_s: 9.8,
                loaded_s: 11.2,
                endpoints: 1500
            }
        );
        assert!(load_lines("12 100 1500 0\n").is_err());
        assert!(load_lines("12 100 1500\n1 2 3\n").is_err());
        assert_eq!(
            dump_line("14 106 107 1523\n").unwrap(),
            [14, 106, 107, 1523]
        );
        assert!(dump_line("14 106 107\n").is_err());
        assert!(dump_line("").is_err());
    }

    #[test]
    fn sample_percentiles_round_their_rank_and_count_timeouts() {
        // 1..=20 ms and two timeouts: p50 at rank floor(10.5) = 10, p99 at floor(20.3) = 20.
        let mut values: Vec<Option<f64>> = (1..=20).rev().map(|v| Some(f64::from(v))).collect();
        values.push(None);
        values.insert(3, None);
        let p = sample_percentiles(values);
        assert_eq!(
            p,
            Percentiles {
                p50: Some(10.0),
                p99: Some(20.0),
                timeouts: 2
            }
        );
        // Ten samples: p50 at floor(5.5) = 5, p99 at floor(10.4) = 10; three: 2 and 3.
        let p = sample_percentiles((1..=10).map(|v| Some(f64::from(v))));
        assert_eq!((p.p50, p.p99), (Some(5.0), Some(10.0)));
        let p = sample_percentiles((1..=3).map(|v| Some(f64::from(v))));
        assert_eq!((p.p50, p.p99), (Some(2.0), Some(3.0)));
        let one = sample_percentiles([Some(-0.5)]);
        assert_eq!((one.p50, one.p99), (Some(-0.5), Some(-0.5)));
        let none = sample_percentiles([None, None]);
        assert_eq!((none.p50, none.p99, none.timeouts), (None, None, 2));
    }
}
