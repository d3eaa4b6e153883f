//! A node for the real kube-proxy: a network namespace with the node's addresses and a veth
//! to the root namespace, a TCP relay on the root side of the veth to the API server (which
//! listens on the root namespace's 127.0.0.1 only), and kube-proxy running inside, so its
//! rules land in the namespace and never on this machine.

use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use super::render::{CLUSTER_CIDRS, NODE};
use crate::common::cluster::Cluster;

/// Runs `program ARGS`, panicking with its stderr if it fails; its stdout.
fn run(program: &str, args: &[&str]) -> String {
    let output = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(
        output.status.success(),
        "{program} {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A network namespace holding the node's addresses, with a veth to the root namespace;
/// deleted (its veth with it) when dropped.
pub struct Netns {
    /// The namespace's name.
    pub name: String,
    /// The root side of the veth.
    pub host: Ipv4Addr,
}

/// The node's addresses inside the namespace (kwok-node-0's InternalIPs).
pub const NODE_ADDRESSES: [&str; 2] = ["10.0.0.10/24", "fd00:10::10/64"];

impl Netns {
    /// Namespace number `index` of this process, with a veth in 169.254.(210+index).0/30.
    pub fn create(index: u8) -> Self {
        let pid = std::process::id();
        let name = format!("clusterdns-kp{index}-{pid}");
        let (host_if, node_if) = (
            format!("kp{index}h{}", pid % 100_000),
            format!("kp{index}n"),
        );
        let subnet = 210 + index;
        let host = Ipv4Addr::new(169, 254, subnet, 1);
        run("ip", &["netns", "add", &name]);
        let netns = Self { name, host };
        let name = netns.name.as_str();
        run(
            "ip",
            &[
                "link", "add", &host_if, "type", "veth", "peer", "name", &node_if, "netns", name,
            ],
        );
        run(
            "ip",
            &["addr", "add", &format!("{host}/30"), "dev", &host_if],
        );
        run("ip", &["link", "set", &host_if, "up"]);
        let node_side = format!("169.254.{subnet}.2/30");
        for address in [node_side.as_str(), NODE_ADDRESSES[0]] {
            run("ip", &["-n", name, "addr", "add", address, "dev", &node_if]);
        }
        run(
            "ip",
            &[
                "-n",
                name,
                "addr",
                "add",
                NODE_ADDRESSES[1],
                "dev",
                &node_if,
                "nodad",
            ],
        );
        for link in [node_if.as_str(), "lo"] {
            run("ip", &["-n", name, "link", "set", link, "up"]);
        }
        netns
    }

    /// `PROGRAM ARGS` inside the namespace: its stdout, or empty if it fails (the table
    /// kube-proxy has not created yet).
    pub fn exec(&self, program: &str, args: &[&str]) -> String {
        Command::new("ip")
            .args(["netns", "exec", &self.name, program])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    }
}

impl Drop for Netns {
    /// Ends the processes left in the namespace (ours: kube-proxy, if `ip netns exec` left it
    /// behind), by their ids, then deletes it.
    fn drop(&mut self) {
        let pids = Command::new("ip")
            .args(["netns", "pids", &self.name])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        for pid in pids.split_whitespace() {
            let _ = Command::new("kill").arg(pid).status();
        }
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
    }
}

/// Relays every TCP connection to `listen` (a free port on `host`) to 127.0.0.1:`to`, in
/// threads that live as long as the test process.
pub fn relay(host: Ipv4Addr, to: u16) -> SocketAddr {
    let listener = TcpListener::bind((host, 0)).unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let Ok(server) = TcpStream::connect((Ipv4Addr::LOCALHOST, to)) else {
                continue;
            };
            let (Ok(mut client_read), Ok(mut server_read)) =
                (client.try_clone(), server.try_clone())
            else {
                continue;
            };
            let (mut client_write, mut server_write) = (client, server);
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut client_read, &mut server_write);
                let _ = server_write.shutdown(std::net::Shutdown::Write);
            });
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut server_read, &mut client_write);
                let _ = client_write.shutdown(std::net::Shutdown::Write);
            });
        }
    });
    addr
}

/// The admin kubeconfig, its server the relay at `server`, the certificate checked for the
/// name it carries (`localhost`, xtask::cluster).
pub fn kubeconfig(cluster: &Cluster, server: SocketAddr, path: &Path) {
    let admin = std::fs::read_to_string(&cluster.kubeconfig).unwrap();
    let from = format!("server: {}", cluster.url());
    assert!(admin.contains(&from), "no {from:?} in the admin kubeconfig");
    let to = format!("server: https://{server}\n    tls-server-name: localhost");
    std::fs::write(path, admin.replacen(&from, &to, 1)).unwrap();
}

/// kube-proxy running in a namespace; killed (by its pid) when dropped.
pub struct KubeProxy {
    child: Child,
    /// Its log (stderr, V(9): the restore input and the nft transactions).
    pub log: PathBuf,
}

impl KubeProxy {
    /// kube-proxy `mode` in `netns` as the node, with `kubeconfig`, logging to `log`.
    pub fn start(binary: &Path, netns: &Netns, mode: &str, kubeconfig: &Path, log: &Path) -> Self {
        let file = std::fs::File::create(log).unwrap();
        let child = Command::new("ip")
            .args(["netns", "exec", &netns.name])
            .arg(binary)
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["--hostname-override", NODE, "--proxy-mode", mode])
            .args(["--cluster-cidr", CLUSTER_CIDRS])
            // Nothing outside the namespace: no conntrack sysctls (the table size is global).
            .args(["--conntrack-max-per-core=0", "--conntrack-min=0"])
            .args(["--conntrack-tcp-timeout-established=0"])
            .args([
                "--conntrack-tcp-timeout-close-wait=0",
                "--oom-score-adj",
                "0",
            ])
            // The namespace's own loopback: these ports are free there.
            .args(["--metrics-bind-address", "127.0.0.1:10249"])
            .args(["--healthz-bind-address", "127.0.0.1:10256", "--v=9"])
            .stdin(Stdio::null())
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .spawn()
            .unwrap();
        Self {
            child,
            log: log.to_path_buf(),
        }
    }

    /// Whether it is still running.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for KubeProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
