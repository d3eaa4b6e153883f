//! Every way a test gets a namespace of its own, and the one rule for a test that cannot:
//!
//! - a *named* network namespace ([`Netns`]: `ip netns add`, removed on drop with its
//!   interfaces and whatever still runs in it), commands run inside one (`ip netns exec`),
//!   veths between two or to the root namespace, sysctls, nfacct counters;
//! - a *fresh* namespace made by `unshare(1)` around one command ([`unshared`]) or around a
//!   re-run of the test itself ([`in_fresh`]), which then runs its body inside: as root
//!   plainly (then in a user namespace, for a root that may not), otherwise in a user
//!   namespace of its own ([`unshare_prefixes`]); `unshare` saying it could not is a
//!   refusal ([`verdict`]), whatever the command inside says is the test's;
//! - [`unavailable`]: what a test does where the machine refuses its namespace or lacks its
//!   tools — skip, skip unless [`REQUIRE`] is set, or fail ([`Missing`]) — and [`skip`],
//!   that rule for the tests that need every netfilter tool and named namespaces.
//!
//! Inside a named namespace, a prober opens sockets (a small Python program started there,
//! which connects many sockets at once and says what each got), and a listener reads the
//! conntrack table's events (what `conntrack -E` reads), which sees every connection the
//! kernel confirmed, with its NAT, even one a RST ended at once (conntrack deletes a
//! connection whose only reply is a RST, so `conntrack -L` no longer lists it). Both are
//! long-lived `python3` processes, one start-up per topology, not one per connection.
//!
//! This lives with the tests, not in xtask: what it holds — the skip rule and its
//! environment, re-running the test binary, the prober — is about tests only. The real
//! nodes' namespaces stay in `xtask::netns` (`Holder`: namespaces that die with the process
//! that made them, entered with `nsenter`, or with `setns` by `in_netns`), as `cargo xtask
//! nodes` makes them for people as well as for tests/deploy/real_node/, which reaches them through
//! `xtask::nodes` and `xtask::netns::in_netns`.

use std::ffi::OsStr;
use std::fmt;
use std::io::{BufRead, BufReader, Write};
use std::net::IpAddr;
use std::process::{Child, ChildStdin, ChildStdout, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The environment variable that turns a skip into a failure (CI sets it) for the tests
/// whose rule is [`Missing::SkipUnlessRequired`].
pub const REQUIRE: &str = "CLUSTERDNS_REQUIRE_NETFILTER";

/// The programs the netfilter tests run (tests/kube_proxy/netfilter/, tests/cluster/kube_proxy.rs).
const TOOLS: &[&str] = &[
    "ip",
    "unshare",
    "iptables-restore",
    "iptables-save",
    "ip6tables-restore",
    "ip6tables-save",
    "nft",
    "python3",
];

/// Namespaces made by this process so far: the counter in their names.
static MADE: AtomicUsize = AtomicUsize::new(0);

/// What a test does where it cannot have its namespace or its tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Missing {
    /// Says so on stderr and passes.
    Skip,
    /// Says so and passes, unless [`REQUIRE`] is set: then fails.
    SkipUnlessRequired,
    /// Fails: the machine is expected to give it what it needs.
    Fail,
}

impl Missing {
    /// Whether the test fails, [`REQUIRE`] being set or not.
    pub fn fails(self, required: bool) -> bool {
        match self {
            Missing::Skip => false,
            Missing::SkipUnlessRequired => required,
            Missing::Fail => true,
        }
    }
}

/// The one rule for test `test`, which cannot run here because of `problem`: panics when
/// `missing` says it fails, else says on stderr that it is skipped (the caller returns).
pub fn unavailable(test: &str, problem: &str, missing: Missing) {
    let required = std::env::var_os(REQUIRE).is_some();
    if missing.fails(required) {
        let why = if required {
            format!(", and {REQUIRE} is set")
        } else {
            String::new()
        };
        panic!("{test} DID NOT RUN: {problem}{why}");
    }
    if missing == Missing::SkipUnlessRequired {
        eprintln!("skipping {test}: {problem} (set {REQUIRE} to make this a failure)");
    } else {
        eprintln!("skipping {test}: {problem}");
    }
}

/// Whether namespaces can be made with `ip netns` here and every netfilter tool is
/// installed: `Ok`, or why not.
pub fn available() -> Result<(), String> {
    if let Some(problem) = missing_tools(TOOLS) {
        return Err(problem);
    }
    Netns::new("check").map(drop)
}

/// Whether the test `test`, which needs [`available`], must stop: says so on stderr and
/// returns true, or panics when [`REQUIRE`] is set ([`Missing::SkipUnlessRequired`]).
pub fn skip(test: &str) -> bool {
    let Err(problem) = available() else {
        return false;
    };
    unavailable(test, &problem, Missing::SkipUnlessRequired);
    true
}

/// Which of `tools` are not installed, said as a problem; `None` when all are.
pub fn missing_tools(tools: &[&str]) -> Option<String> {
    let missing: Vec<&str> = tools.iter().copied().filter(|t| !on_path(t)).collect();
    (!missing.is_empty()).then(|| format!("{} not installed", missing.join(", ")))
}

/// Whether `program` is an executable file in a directory of `$PATH`.
fn on_path(program: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).any(|dir| dir.join(program).is_file())
}

/// Whether this process runs as root (`id -u` says 0); asked once.
pub fn is_root() -> bool {
    static ROOT: OnceLock<bool> = OnceLock::new();
    *ROOT.get_or_init(|| {
        Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
    })
}

/// The namespaces `unshare` makes for [`unshared`] and [`in_fresh`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fresh {
    /// A network namespace (`-n`).
    Net,
    /// A mount namespace (`-m`; its mounts private, unshare's default).
    Mount,
    /// A network and a mount namespace (`-mn`).
    NetMount,
}

impl Fresh {
    /// unshare's flags for these namespaces, without the dash.
    fn flags(self) -> &'static str {
        match self {
            Fresh::Net => "n",
            Fresh::Mount => "m",
            Fresh::NetMount => "mn",
        }
    }

    /// The namespace a re-run child compares with its parent's (/proc/self/ns/KIND).
    fn kind(self) -> &'static str {
        match self {
            Fresh::Mount => "mnt",
            Fresh::Net | Fresh::NetMount => "net",
        }
    }
}

/// The unshare command lines to try for `fresh`, in order. As root, the namespaces alone
/// (`unshare -n`), then inside a user namespace (`unshare -rn`) where root may not make
/// them plainly (a container); otherwise only inside a user namespace, as an unprivileged
/// process cannot make the others.
pub fn unshare_prefixes(fresh: Fresh, root: bool) -> Vec<[String; 2]> {
    let flags = fresh.flags();
    let plain = ["unshare".to_owned(), format!("-{flags}")];
    let user = ["unshare".to_owned(), format!("-r{flags}")];
    if root { vec![plain, user] } else { vec![user] }
}

/// What became of a command run under unshare.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The command ran in its namespaces: its status and output are its own.
    Ran,
    /// unshare could not make the namespaces; it says so on stderr (`unshare: ...`) and
    /// exits 1, where a test binary exits 0 or 101.
    Refused,
    /// unshare made them but could not start the command (`unshare: failed to execute`, as
    /// for a test binary rebuilt meanwhile): no refusal, a failure of the test.
    NotStarted,
}

/// The verdict on an unshare that exited successfully or not (`success`) with `stderr`.
pub fn verdict(success: bool, stderr: &str) -> Verdict {
    match stderr.strip_prefix("unshare:") {
        Some(rest) if rest.trim_start().starts_with("failed to execute") => Verdict::NotStarted,
        Some(_) if !success => Verdict::Refused,
        _ => Verdict::Ran,
    }
}

/// Why no fresh namespace could be had: each unshare tried, and what it said.
#[derive(Debug)]
pub struct Refused {
    fresh: Fresh,
    tried: Vec<String>,
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "this machine refuses a fresh namespace (unshare -{}, as root or from an \
             unprivileged user namespace):\n{}\nEnable user namespaces (sysctl \
             kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0) or run the \
             tests as root.",
            self.fresh.flags(),
            self.tried.join("\n")
        )
    }
}

/// A command that ran under unshare: the command line that made its namespaces, and its
/// output.
#[derive(Debug)]
pub struct Unshared {
    /// `unshare -FLAGS`.
    pub prefix: String,
    pub output: Output,
}

/// Runs `inner` (its program, arguments, environment and directory; stdin empty, output
/// captured) inside fresh namespaces `fresh`, under the first of [`unshare_prefixes`] this
/// machine allows; [`Refused`] when it allows none. Panics when unshare cannot start the
/// program.
pub fn unshared(fresh: Fresh, inner: &Command) -> Result<Unshared, Refused> {
    let mut tried = Vec::new();
    for [program, flags] in unshare_prefixes(fresh, is_root()) {
        let prefix = format!("{program} {flags}");
        let mut command = Command::new(&program);
        command
            .arg(&flags)
            .arg(inner.get_program())
            .args(inner.get_args())
            .stdin(Stdio::null());
        for (key, value) in inner.get_envs() {
            match value {
                Some(value) => command.env(key, value),
                None => command.env_remove(key),
            };
        }
        if let Some(dir) = inner.get_current_dir() {
            command.current_dir(dir);
        }
        let output = match command.output() {
            Ok(output) => output,
            Err(error) => {
                tried.push(format!("{prefix}: {error}"));
                continue;
            }
        };
        let stderr = String::from_utf8_lossy(&output.stderr);
        match verdict(output.status.success(), &stderr) {
            Verdict::Ran => return Ok(Unshared { prefix, output }),
            Verdict::Refused => tried.push(format!("{prefix}: {}", stderr.trim())),
            Verdict::NotStarted => panic!("{prefix}: {}", stderr.trim()),
        }
    }
    Err(Refused { fresh, tried })
}

/// Set in a test binary that [`in_fresh`] re-runs, to the parent's namespace
/// (`/proc/self/ns/net` or `mnt` as read there), so that the child refuses to run in it.
const PARENT: &str = "CLUSTERDNS_TEST_PARENT_NS";

/// This process's namespace of `kind` (`net`, `mnt`): `net:[4026531840]`.
fn namespace(kind: &str) -> String {
    std::fs::read_link(format!("/proc/self/ns/{kind}"))
        .map(|path| path.display().to_string())
        .unwrap_or_default()
}

/// Runs `inside` in fresh namespaces `fresh`: this test binary re-runs `test` (its whole
/// name, `module::test`) under [`unshared`], and there, `inside` runs. The re-run must pass;
/// where the machine refuses the namespaces, `missing` decides.
pub fn in_fresh(test: &str, fresh: Fresh, missing: Missing, inside: fn()) {
    if let Some(parent) = std::env::var_os(PARENT) {
        assert_ne!(
            parent.to_string_lossy(),
            namespace(fresh.kind()),
            "{PARENT} is set but this is the parent's namespace: refusing to run {test} in it"
        );
        inside();
        return;
    }
    let mut rerun = Command::new(std::env::current_exe().unwrap());
    rerun
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(PARENT, namespace(fresh.kind()));
    let Unshared { prefix, output } = match unshared(fresh, &rerun) {
        Ok(ran) => ran,
        Err(refused) => {
            unavailable(test, &refused.to_string(), missing);
            return;
        }
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    eprint!("{stdout}{}", String::from_utf8_lossy(&output.stderr));
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "{test} failed inside `{prefix}` (its output is above)"
    );
}

/// A network namespace, `cdns-PID-N-ROLE`, deleted (with its interfaces, and the processes
/// left in it ended) on drop.
pub struct Netns {
    /// The name under /run/netns.
    pub name: String,
}

impl Netns {
    /// Makes a namespace named for this process, a counter and `role`, with `lo` up.
    pub fn new(role: &str) -> Result<Self, String> {
        let n = MADE.fetch_add(1, Ordering::Relaxed);
        let name = format!("cdns-{}-{n}-{role}", std::process::id());
        let out = run(Command::new("ip").args(["netns", "add", &name]))?;
        if !out.status.success() {
            return Err(format!(
                "`ip netns add {name}` failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        let ns = Self { name };
        ns.ip(&["link set lo up"]);
        Ok(ns)
    }

    /// Runs `ip -n NAME -batch -` with `commands` (one `ip` command line each, without `ip`);
    /// panics with the failing command's error.
    pub fn ip(&self, commands: &[&str]) {
        let mut child = Command::new("ip")
            .args(["-n", &self.name, "-batch", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start ip -batch");
        let mut stdin = child.stdin.take().expect("ip's stdin");
        stdin
            .write_all(commands.join("\n").as_bytes())
            .expect("write ip's commands");
        drop(stdin);
        let out = child.wait_with_output().expect("wait for ip -batch");
        assert!(
            out.status.success(),
            "in {}: ip -batch failed: {}\ncommands:\n{}",
            self.name,
            String::from_utf8_lossy(&out.stderr).trim(),
            commands.join("\n")
        );
    }

    /// `ip netns exec NAME PROGRAM ARGS...`, its output (whatever its status).
    pub fn exec(&self, program: &str, args: &[&str]) -> Output {
        run(&mut self.command(program, args))
            .unwrap_or_else(|e| panic!("in {}: {program} {args:?}: {e}", self.name))
    }

    /// [`exec`](Self::exec), panicking unless it exits 0.
    pub fn exec_ok(&self, program: &str, args: &[&str]) -> String {
        let out = self.exec(program, args);
        assert!(
            out.status.success(),
            "in {}: {program} {args:?} failed: {}",
            self.name,
            String::from_utf8_lossy(&out.stderr).trim()
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A command that runs `program args...` inside the namespace.
    pub fn command(&self, program: impl AsRef<OsStr>, args: &[&str]) -> Command {
        let mut command = Command::new("ip");
        command
            .args(["netns", "exec", &self.name])
            .arg(program)
            .args(args);
        command
    }

    /// Sets sysctls (`key=value`) inside the namespace; panics when one is refused.
    pub fn sysctl(&self, settings: &[&str]) {
        let mut args = vec!["-qw"];
        args.extend_from_slice(settings);
        self.exec_ok("sysctl", &args);
    }

    /// Creates nfacct counters (what `nfacct add NAME` does, over netlink): iptables rules
    /// with `-m nfacct --nfacct-name NAME` load only when the counter exists, and kube-proxy
    /// makes its own before it writes them.
    pub fn nfacct(&self, names: &[&str]) {
        let mut args = vec!["-c", NFACCT];
        args.extend_from_slice(names);
        self.exec_ok("python3", &args);
    }

    /// A veth pair: `here` in this namespace, `there` in `peer`, both up.
    pub fn veth(&self, here: &str, peer: &Netns, there: &str) {
        let add = format!(
            "link add {here} netns {} type veth peer name {there} netns {}",
            self.name, peer.name
        );
        let out = run(Command::new("ip").args(add.split(' ')))
            .unwrap_or_else(|e| panic!("ip {add}: {e}"));
        assert!(
            out.status.success(),
            "ip {add}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        self.ip(&[&format!("link set {here} up")]);
        peer.ip(&[&format!("link set {there} up")]);
    }

    /// A veth pair: `root` in the root namespace (this process's), `here` in this one, both
    /// up. `root` must be unique on the machine (interface names are at most 15 bytes).
    pub fn veth_to_root(&self, root: &str, here: &str) {
        let add = format!(
            "link add {root} type veth peer name {here} netns {}",
            self.name
        );
        for args in [add, format!("link set {root} up")] {
            let out = run(Command::new("ip").args(args.split(' ')))
                .unwrap_or_else(|e| panic!("ip {args}: {e}"));
            assert!(
                out.status.success(),
                "ip {args}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        self.ip(&[&format!("link set {here} up")]);
    }
}

impl Drop for Netns {
    /// Ends the processes still in the namespace (a daemon `ip netns exec` started), by
    /// their ids, then deletes it.
    fn drop(&mut self) {
        let pids = Command::new("ip")
            .args(["netns", "pids", &self.name])
            .stderr(Stdio::null())
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        for pid in pids.split_whitespace() {
            let _ = Command::new("kill").arg(pid).status();
        }
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .stderr(Stdio::null())
            .status();
    }
}

/// Sends NFNL_MSG_ACCT_NEW (NFNL_SUBSYS_ACCT) with NFACCT_NAME for each name in argv; an
/// existing counter (EEXIST) is fine.
const NFACCT: &str = r#"
import socket, struct, sys
NETLINK_NETFILTER, NFNL_SUBSYS_ACCT, NFACCT_NAME = 12, 7, 1
NLM_F_REQUEST, NLM_F_ACK, NLM_F_CREATE, EEXIST = 1, 4, 0x400, 17
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
s.bind((0, 0))
for seq, name in enumerate(sys.argv[1:], 1):
    value = name.encode() + b'\0'
    attribute = struct.pack('=HH', 4 + len(value), NFACCT_NAME) + value
    attribute += b'\0' * (-len(attribute) % 4)
    body = struct.pack('=BBH', socket.AF_UNSPEC, 0, 0) + attribute
    flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE
    s.send(struct.pack('=IHHII', 16 + len(body), NFNL_SUBSYS_ACCT << 8, flags, seq, 0) + body)
    error = struct.unpack_from('=i', s.recv(4096), 16)[0]
    if error not in (0, -EEXIST):
        sys.exit('nfacct add %s: errno %d' % (name, -error))
"#;

/// Runs a command to completion, its output captured; the error says what could not start.
fn run(command: &mut Command) -> Result<Output, String> {
    command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("could not run {:?}: {e}", command.get_program()))
}

/// The transport of a probe connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Proto {
    Tcp,
    Udp,
}

impl Proto {
    /// The name the listener and `proxy trace --proto` use.
    pub fn name(self) -> &'static str {
        match self {
            Proto::Tcp => "tcp",
            Proto::Udp => "udp",
        }
    }
}

/// One connection to open: a TCP SYN (connect) or a UDP datagram, from `src:sport`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Conn {
    pub proto: Proto,
    pub src: IpAddr,
    pub sport: u16,
    pub dst: IpAddr,
    pub dport: u16,
}

/// What the sending socket saw of one connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seen {
    /// TCP: the handshake completed; UDP: a datagram came back.
    Answered,
    /// Nothing came back before the timeout (dropped, or lost beyond the node).
    Silent,
    /// The socket's error, by errno name (`ECONNREFUSED` for a RST or an ICMP port
    /// unreachable, `EHOSTUNREACH`, `ENETUNREACH`, ...).
    Error(String),
}

/// The prober: it binds each socket to its source address and port, connects them all at
/// once (non-blocking, in one epoll loop), and answers with one word per connection.
const PROBER: &str = r#"
import errno, json, resource, selectors, socket, sys, time
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
def name(code):
    return errno.errorcode.get(code, str(code))
def start(proto, src, sport, dst, dport):
    family = socket.AF_INET6 if ':' in dst else socket.AF_INET
    s = socket.socket(family, socket.SOCK_STREAM if proto == 'tcp' else socket.SOCK_DGRAM)
    s.setblocking(False)
    try:
        s.bind((src, sport))
    except OSError as e:
        s.close()
        raise RuntimeError('bind %s:%d: %s' % (src, sport, name(e.errno)))
    try:
        if proto == 'tcp':
            code = s.connect_ex((dst, dport))
            return s, None if code in (0, errno.EINPROGRESS) else name(code)
        s.connect((dst, dport))
        s.send(b'clusterdns probe')
        return s, None
    except OSError as e:
        return s, name(e.errno)
def probe(request):
    conns, out, socks = request['conns'], {}, []
    sel = selectors.DefaultSelector()
    for i, c in enumerate(conns):
        s, done = start(*c)
        socks.append(s)
        if done:
            out[i] = done
        else:
            sel.register(s, selectors.EVENT_WRITE if c[0] == 'tcp' else selectors.EVENT_READ, i)
    deadline = time.monotonic() + request['timeout']
    while len(out) < len(conns) and deadline > time.monotonic():
        for key, _ in sel.select(deadline - time.monotonic()):
            i, s = key.data, key.fileobj
            if conns[i][0] == 'tcp':
                code = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                out[i] = 'answered' if code == 0 else name(code)
            else:
                try:
                    s.recv(512)
                    out[i] = 'answered'
                except OSError as e:
                    out[i] = name(e.errno)
            sel.unregister(s)
    for s in socks:
        s.close()
    return [out.get(i, 'silent') for i in range(len(conns))]
for line in sys.stdin:
    try:
        reply = {'seen': probe(json.loads(line))}
    except Exception as e:
        reply = {'error': str(e)}
    print(json.dumps(reply), flush=True)
"#;

/// A prober running inside a namespace, asked over its stdin and stdout.
pub struct Prober {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// The namespace it runs in, for messages.
    ns: String,
}

impl Prober {
    /// Starts the prober in `ns`.
    pub fn start(ns: &Netns) -> Self {
        let mut child = ns
            .command("python3", &["-c", PROBER])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("start the prober in {}: {e}", ns.name));
        let stdin = child.stdin.take().expect("the prober's stdin");
        let stdout = BufReader::new(child.stdout.take().expect("the prober's stdout"));
        Self {
            child,
            stdin,
            stdout,
            ns: ns.name.clone(),
        }
    }

    /// Opens every connection in `conns` at once and waits up to `timeout` for answers:
    /// what each saw, in order.
    pub fn probe(&mut self, conns: &[Conn], timeout: Duration) -> Vec<Seen> {
        let list: Vec<serde_json::Value> = conns
            .iter()
            .map(|c| serde_json::json!([c.proto.name(), c.src, c.sport, c.dst, c.dport]))
            .collect();
        let request = serde_json::json!({"conns": list, "timeout": timeout.as_secs_f64()});
        writeln!(self.stdin, "{request}")
            .unwrap_or_else(|e| panic!("the prober in {} is gone: {e}", self.ns));
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .unwrap_or_else(|e| panic!("read the prober in {}: {e}", self.ns));
        let reply: serde_json::Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("the prober in {} said {line:?}: {e}", self.ns));
        let seen = reply["seen"].as_array().unwrap_or_else(|| {
            panic!("the prober in {} failed: {}", self.ns, reply["error"]);
        });
        seen.iter()
            .map(|s| parse_seen(s.as_str().unwrap_or("")))
            .collect()
    }
}

/// One of the prober's words as a [`Seen`].
fn parse_seen(word: &str) -> Seen {
    match word {
        "answered" => Seen::Answered,
        "silent" => Seen::Silent,
        other => Seen::Error(other.to_owned()),
    }
}

impl Drop for Prober {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Four fields of a conntrack tuple: addresses and ports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tuple {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub sport: u16,
    pub dport: u16,
}

/// A connection conntrack confirmed: its protocol, original and reply tuples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub proto: Proto,
    pub original: Tuple,
    pub reply: Tuple,
}

impl Entry {
    /// Where the kernel sent the connection when it rewrote the destination: the reply's
    /// source; `None` when the destination was kept.
    pub fn dnat(&self) -> Option<(IpAddr, u16)> {
        let to = (self.reply.src, self.reply.sport);
        (to != (self.original.dst, self.original.dport)).then_some(to)
    }

    /// Whether the source was rewritten (SNAT or masquerade): the reply goes to another
    /// address or port than the one that sent. `MASQUERADE --random-fully` to the sender's
    /// own address (a node calling itself over `lo`) changes only the port.
    pub fn snat(&self) -> bool {
        (self.reply.dst, self.reply.dport) != (self.original.src, self.original.sport)
    }
}

/// The listener: a netlink socket subscribed to ctnetlink's NEW group (what
/// `conntrack -E -e NEW` reads), with a 64 MiB buffer forced on it. `conntrack -E -b` does
/// not enlarge the socket it reads events from (conntrack-tools 1.4.7), so under load the
/// kernel's default (~166 events) overflows and events are lost. One line per confirmed
/// connection: `PROTO SRC DST SPORT DPORT RSRC RDST RSPORT RDPORT` (original, then reply
/// tuple); `lost ERRNO` when the kernel still could not deliver some; `ready` once
/// subscribed.
const LISTENER: &str = r#"
import socket, struct, sys
NETLINK_NETFILTER, SO_RCVBUFFORCE, NFNLGRP_CONNTRACK_NEW = 12, 33, 1
CT_NEW = 1 << 8  # NFNL_SUBSYS_CTNETLINK << 8 | IPCTNL_MSG_CT_NEW
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 64 << 20)
s.bind((0, 1 << (NFNLGRP_CONNTRACK_NEW - 1)))
print('ready', flush=True)
def attributes(data):
    out, i = {}, 0
    while i + 4 <= len(data):
        size, kind = struct.unpack_from('=HH', data, i)
        if size < 4:
            break
        out[kind & 0x3fff] = data[i + 4:i + size]
        i += (size + 3) & ~3
    return out
def tuple_of(data):
    t = attributes(data)
    ip, proto = attributes(t[1]), attributes(t[2])  # CTA_TUPLE_IP, CTA_TUPLE_PROTO
    if 1 in ip:  # CTA_IP_V4_SRC, _DST
        src, dst = socket.inet_ntop(socket.AF_INET, ip[1]), socket.inet_ntop(socket.AF_INET, ip[2])
    else:  # CTA_IP_V6_SRC, _DST
        src, dst = socket.inet_ntop(socket.AF_INET6, ip[3]), socket.inet_ntop(socket.AF_INET6, ip[4])
    ports = struct.unpack('!H', proto[2])[0], struct.unpack('!H', proto[3])[0]
    return proto[1][0], [src, dst, str(ports[0]), str(ports[1])]
while True:
    try:
        data = s.recv(1 << 16)
    except OSError as e:
        print('lost', e.errno, flush=True)
        continue
    i = 0
    while i + 16 <= len(data):
        size, kind = struct.unpack_from('=IH', data, i)
        if size < 16:
            break
        if kind == CT_NEW:
            a = attributes(data[i + 20:i + size])  # after nlmsghdr and nfgenmsg
            try:
                number, original = tuple_of(a[1])  # CTA_TUPLE_ORIG
                _, reply = tuple_of(a[2])  # CTA_TUPLE_REPLY
                name = {6: 'tcp', 17: 'udp'}.get(number, str(number))
                print(name, ' '.join(original + reply), flush=True)
            except (KeyError, IndexError, ValueError, struct.error):
                pass
        i += (size + 3) & ~3
"#;

/// A listener line as an [`Entry`] (`None` for other lines and protocols).
pub fn parse_event(line: &str) -> Option<Entry> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let [proto, fields @ ..] = words.as_slice() else {
        return None;
    };
    let proto = match *proto {
        "tcp" => Proto::Tcp,
        "udp" => Proto::Udp,
        _ => return None,
    };
    let tuple = |f: &[&str]| -> Option<Tuple> {
        Some(Tuple {
            src: f.first()?.parse().ok()?,
            dst: f.get(1)?.parse().ok()?,
            sport: f.get(2)?.parse().ok()?,
            dport: f.get(3)?.parse().ok()?,
        })
    };
    (fields.len() == 8).then_some(())?;
    Some(Entry {
        proto,
        original: tuple(&fields[..4])?,
        reply: tuple(&fields[4..])?,
    })
}

/// The conntrack events of a namespace: every connection the kernel confirmed there (with
/// its NAT), kept, even one a RST ended at once and `conntrack -L` no longer lists. When the
/// kernel could not deliver some events, [`lost`](Self::lost) says so.
pub struct Events {
    child: Child,
    seen: Arc<Mutex<Vec<Entry>>>,
    lost: Arc<AtomicBool>,
}

impl Events {
    /// Starts listening in `ns` and waits until the listener is subscribed.
    pub fn start(ns: &Netns) -> Self {
        let mut child = ns
            .command("python3", &["-c", LISTENER])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("start the conntrack listener in {}: {e}", ns.name));
        let mut lines = BufReader::new(child.stdout.take().expect("the listener's stdout")).lines();
        let first = lines.next().and_then(Result::ok);
        assert_eq!(
            first.as_deref(),
            Some("ready"),
            "the conntrack listener in {} did not start",
            ns.name
        );
        let seen = Arc::new(Mutex::new(Vec::new()));
        let lost = Arc::new(AtomicBool::new(false));
        let (sink, flag) = (Arc::clone(&seen), Arc::clone(&lost));
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                if let Some(entry) = parse_event(&line) {
                    sink.lock().expect("the events").push(entry);
                } else if line.starts_with("lost") {
                    flag.store(true, Ordering::SeqCst);
                }
            }
        });
        Self { child, seen, lost }
    }

    /// Whether events were lost since the last call (and forgets it).
    pub fn lost(&self) -> bool {
        self.lost.swap(false, Ordering::SeqCst)
    }

    /// The entry whose original tuple is `conn`'s, if the kernel confirmed one.
    pub fn find(&self, conn: &Conn) -> Option<Entry> {
        let seen = self.seen.lock().expect("the events");
        seen.iter().copied().find(|e| {
            e.proto == conn.proto
                && e.original
                    == Tuple {
                        src: conn.src,
                        dst: conn.dst,
                        sport: conn.sport,
                        dport: conn.dport,
                    }
        })
    }

    /// Waits up to `timeout` for `conn`'s entry: whether it came.
    pub fn wait_for(&self, conn: &Conn, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if self.find(conn).is_some() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    }
}

impl Drop for Events {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unshare_is_plain_for_root_and_in_a_user_namespace_otherwise() {
        let shown = |fresh, root| -> Vec<String> {
            unshare_prefixes(fresh, root)
                .iter()
                .map(|p| p.join(" "))
                .collect()
        };
        assert_eq!(shown(Fresh::Net, true), ["unshare -n", "unshare -rn"]);
        assert_eq!(shown(Fresh::Net, false), ["unshare -rn"]);
        assert_eq!(shown(Fresh::Mount, true), ["unshare -m", "unshare -rm"]);
        assert_eq!(
            shown(Fresh::NetMount, true),
            ["unshare -mn", "unshare -rmn"]
        );
        assert_eq!(shown(Fresh::NetMount, false), ["unshare -rmn"]);
    }

    #[test]
    fn only_unshares_own_failure_is_a_refusal() {
        let refusals = [
            "unshare: unshare failed: Operation not permitted\n",
            "unshare: write failed /proc/self/uid_map: Operation not permitted\n",
        ];
        for stderr in refusals {
            assert_eq!(verdict(false, stderr), Verdict::Refused, "{stderr}");
        }
        let not_started = "unshare: failed to execute /gone/main: No such file or directory\n";
        assert_eq!(verdict(false, not_started), Verdict::NotStarted);
        // The command's own failure, or a success whatever it printed, is the command's.
        for (success, stderr) in [
            (false, ""),
            (
                false,
                "thread 'x' panicked at tests/x.rs:1:1:\nunshare: no\n",
            ),
            (false, "mount: /run: permission denied.\n"),
            (true, ""),
            (true, "unshare: a line the command printed\n"),
        ] {
            assert_eq!(verdict(success, stderr), Verdict::Ran, "{stderr}");
        }
    }

    #[test]
    fn a_skip_fails_only_where_the_rule_says() {
        for required in [false, true] {
            assert!(!Missing::Skip.fails(required));
            assert!(Missing::Fail.fails(required));
            assert_eq!(Missing::SkipUnlessRequired.fails(required), required);
        }
    }
}
