//! A node for the real kube-proxy: a network namespace with the node's addresses and a veth
//! to the root namespace, a TCP relay on the root side of the veth to the API server (which
//! listens on the root namespace's 127.0.0.1 only), and kube-proxy running inside, so its
//! rules land in the namespace and never on this machine.

use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use super::render::{CLUSTER_CIDRS, NODE};
use crate::common::cluster::Cluster;
use crate::common::netns::Netns;

/// A node: a network namespace holding the node's addresses, with a veth to the root
/// namespace; deleted (its veth with it, and kube-proxy if still there) when dropped.
pub struct Node {
    pub netns: Netns,
    /// The root side of the veth.
    pub host: Ipv4Addr,
}

/// The node's addresses inside the namespace (kwok-node-0's InternalIPs).
pub const NODE_ADDRESSES: [&str; 2] = ["10.0.0.10/24", "fd00:10::10/64"];

impl Node {
    /// Node number `index` of this process, with a veth in 169.254.(210+index).0/30.
    pub fn create(index: u8) -> Self {
        let pid = std::process::id();
        let netns =
            Netns::new(&format!("kp{index}")).unwrap_or_else(|e| panic!("node {index}: {e}"));
        let (host_if, node_if) = (
            format!("kp{index}h{}", pid % 100_000),
            format!("kp{index}n"),
        );
        let subnet = 210 + index;
        let host = Ipv4Addr::new(169, 254, subnet, 1);
        netns.veth_to_root(&host_if, &node_if);
        let out = Command::new("ip")
            .args(["addr", "add", &format!("{host}/30"), "dev", &host_if])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "ip addr add {host}/30 dev {host_if}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        netns.ip(&[
            &format!("addr add 169.254.{subnet}.2/30 dev {node_if}"),
            &format!("addr add {} dev {node_if}", NODE_ADDRESSES[0]),
            &format!("addr add {} dev {node_if} nodad", NODE_ADDRESSES[1]),
        ]);
        Self { netns, host }
    }

    /// `PROGRAM ARGS` inside the namespace: its stdout, or empty if it fails (the table
    /// kube-proxy has not created yet).
    pub fn exec(&self, program: &str, args: &[&str]) -> String {
        let out = self.netns.exec(program, args);
        if out.status.success() {
            String::from_utf8_lossy(&out.stdout).into_owned()
        } else {
            String::new()
        }
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
    /// kube-proxy `mode` in `node`'s namespace as the node, with `kubeconfig`, logging to `log`.
    pub fn start(binary: &Path, node: &Node, mode: &str, kubeconfig: &Path, log: &Path) -> Self {
        let file = std::fs::File::create(log).unwrap();
        let child = node
            .netns
            .command(binary, &[])
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
