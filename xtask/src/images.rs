//! The images clusterdns is tested and measured in, each from this machine's files:
//!
//! - [`clusterdns`]: what the Dockerfile builds (its last stage on distroless `cc-debian12:nonroot`),
//!   from a clusterdns binary: the binary without its debug sections at
//!   `/usr/local/bin/clusterdns` carrying `cap_net_bind_service=+ep`, the C and GCC runtime
//!   libraries it links, user 65532, kubeadm's args (`-conf /etc/coredns/Corefile`);
//! - [`coredns`]: CoreDNS's own image recipe (its Dockerfile on distroless
//!   `static-debian12:nonroot`) around the coredns peer, for sizes measured the same way;
//! - [`node_cache`]: NodeLocal DNSCache's node-cache image (`k8s-dns-node-cache`, on
//!   `debian-iptables`) from a clusterdns binary: `clusterdns node-cache` as the entrypoint,
//!   run as root, with the tools it runs on the node — iptables (both xtables multi binaries,
//!   their commands and extensions), iproute2's `ip` and `nft` — and every library they load,
//!   on the same base;
//! - [`pause`]: the pod sandbox (xtask/programs/pause.c), which containerd's CRI names
//!   `sandbox_image`, so that the kubelet never pulls one;
//! - [`client`]: a pod that looks names up as applications do: busybox (`nslookup`, a shell,
//!   `httpd`, `nc`), Debian's `getent` with glibc, and xtask/programs/lookup.c and load.c
//!   built against glibc and musl.
//!
//! The distroless bases are reproduced from what they hold that the programs use: root,
//! `nonroot` (65532) and `nobody` in /etc/passwd and /etc/group, /etc/nsswitch.conf, the CA
//! bundle, /tmp and /home/nonroot.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail, ensure};

use crate::image::{Config, Content, Image, NONROOT, file_capability};

/// The name deploy/deployment.yaml runs.
pub const CLUSTERDNS: &str = "clusterdns:dev";
/// The name the coredns peer's image is imported as.
pub const COREDNS: &str = "coredns/coredns:peer";
/// The sandbox image containerd's CRI is told to use (and never pulls: it is imported).
pub const PAUSE: &str = "registry.k8s.io/pause:3.10";
/// The name of the client image.
pub const CLIENT: &str = "clusterdns-client:dev";
/// The name of the node-cache image (the node-local-dns DaemonSet's).
pub const NODE_CACHE: &str = "clusterdns-node-cache:dev";
/// Where Debian's iptables keeps its extensions, which libxtables loads by name.
const XTABLES: &str = "/usr/lib/x86_64-linux-gnu/xtables";

/// CAP_NET_BIND_SERVICE in linux/capability.h.
const CAP_NET_BIND_SERVICE: u32 = 10;
/// distroless's PATH.
const PATH: &str = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/// Where Debian's ca-certificates keeps the bundle, and where distroless has it.
const CA_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

/// The clusterdns image from `binary`, as the Dockerfile builds it.
pub fn clusterdns(binary: &Path, work: &Path) -> Result<Image> {
    let stripped = strip_debug(binary, work)?;
    let mut image = Image::new(
        CLUSTERDNS,
        Config {
            user: format!("{NONROOT}:{NONROOT}"),
            entrypoint: vec!["/usr/local/bin/clusterdns".into()],
            cmd: vec!["-conf".into(), "/etc/coredns/Corefile".into()],
            env: vec![PATH.into(), format!("SSL_CERT_FILE={CA_BUNDLE}")],
            exposed_ports: ["53/udp", "53/tcp", "8080/tcp", "8181/tcp", "9153/tcp"]
                .map(String::from)
                .to_vec(),
            working_dir: "/home/nonroot".into(),
            ..Config::default()
        },
    );
    distroless(&mut image)?;
    image
        .program("/usr/local/bin/clusterdns", &stripped)?
        .xattrs
        .push((
            "security.capability".into(),
            file_capability(&[CAP_NET_BIND_SERVICE]),
        ));
    Ok(image)
}

/// CoreDNS's image from the `coredns` binary, as CoreDNS's Dockerfile builds it.
pub fn coredns(binary: &Path) -> Result<Image> {
    let mut image = Image::new(
        COREDNS,
        Config {
            user: "nonroot:nonroot".into(),
            entrypoint: vec!["/coredns".into()],
            env: vec![PATH.into(), format!("SSL_CERT_FILE={CA_BUNDLE}")],
            exposed_ports: vec!["53/tcp".into(), "53/udp".into()],
            working_dir: "/".into(),
            ..Config::default()
        },
    );
    distroless(&mut image)?;
    ensure!(
        crate::image::shared_libraries(binary)?.is_empty(),
        "{} is not static: CoreDNS's image has no C library",
        binary.display()
    );
    image
        .file("/coredns", Content::Host(binary.to_path_buf()), 0o755)
        .xattrs
        .push((
            "security.capability".into(),
            file_capability(&[CAP_NET_BIND_SERVICE]),
        ));
    Ok(image)
}

/// The node-cache image from a clusterdns `binary`: `clusterdns node-cache` with the tools its
/// interface and rules are made with, taken from this machine (Debian's iptables, iproute2
/// and nftables). `iptables`, `ip6tables` and their `-save`/`-restore` are the backend this
/// machine's alternatives name (Debian 12's default: nft), as kube-proxy's `iptables` on the
/// nodes is; `iptables-legacy`/`iptables-nft` and the ip6 ones name theirs explicitly.
pub fn node_cache(binary: &Path, work: &Path) -> Result<Image> {
    let stripped = strip_debug(binary, work)?;
    let mut image = Image::new(
        NODE_CACHE,
        Config {
            // node-cache makes links and writes rules: root, with the NET_ADMIN the
            // DaemonSet adds.
            user: "0:0".into(),
            entrypoint: vec!["/usr/local/bin/clusterdns".into(), "node-cache".into()],
            env: vec![PATH.into(), format!("SSL_CERT_FILE={CA_BUNDLE}")],
            exposed_ports: ["53/udp", "53/tcp", "8080/tcp", "9253/tcp", "9353/tcp"]
                .map(String::from)
                .to_vec(),
            working_dir: "/".into(),
            ..Config::default()
        },
    );
    distroless(&mut image)?;
    image.program("/usr/local/bin/clusterdns", &stripped)?;
    let sbin = Path::new("/usr/sbin");
    for multi in ["xtables-nft-multi", "xtables-legacy-multi"] {
        image
            .program(&format!("/usr/sbin/{multi}"), &sbin.join(multi))
            .with_context(|| format!("{multi} (install Debian's iptables)"))?;
    }
    for family in ["iptables", "ip6tables"] {
        for suffix in ["", "-save", "-restore"] {
            image.symlink(
                &format!("/usr/sbin/{family}-nft{suffix}"),
                "xtables-nft-multi",
            );
            image.symlink(
                &format!("/usr/sbin/{family}-legacy{suffix}"),
                "xtables-legacy-multi",
            );
            let command = format!("{family}{suffix}");
            let chosen = std::fs::canonicalize(sbin.join(&command))
                .with_context(|| format!("/usr/sbin/{command} (install Debian's iptables)"))?;
            let chosen = chosen
                .file_name()
                .and_then(|name| name.to_str())
                .with_context(|| format!("/usr/sbin/{command}: {}", chosen.display()))?;
            ensure!(
                chosen.starts_with("xtables-"),
                "/usr/sbin/{command} is {chosen}, not an xtables multi binary"
            );
            // The command as its alternative resolves (iptables-nft -> xtables-nft-multi).
            image.symlink(&format!("/usr/sbin/{command}"), chosen);
        }
    }
    let mut extensions: Vec<PathBuf> = std::fs::read_dir(XTABLES)
        .with_context(|| format!("{XTABLES} (install Debian's iptables)"))?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<std::io::Result<_>>()?;
    extensions.retain(|path| path.extension().is_some_and(|ext| ext == "so"));
    extensions.sort();
    ensure!(!extensions.is_empty(), "{XTABLES} holds no extensions");
    for extension in &extensions {
        let name = extension
            .file_name()
            .with_context(|| format!("{}: no file name", extension.display()))?
            .to_string_lossy();
        image.program(&format!("{XTABLES}/{name}"), extension)?;
    }
    image
        .program("/usr/bin/ip", &which("ip").context("iproute2's ip")?)
        .context("ip (install Debian's iproute2)")?;
    image.symlink("/usr/sbin/ip", "../bin/ip");
    image
        .program("/usr/sbin/nft", &sbin.join("nft"))
        .context("nft (install Debian's nftables)")?;
    // What iptables reads to name protocols and ethertypes (Debian's netbase, iptables).
    for file in ["/etc/protocols", "/etc/ethertypes"] {
        if Path::new(file).is_file() {
            image.file(file, Content::Host(file.into()), 0o644);
        }
    }
    // /run/xtables.lock is the DaemonSet's hostPath mount; the directory is the image's.
    image.dir("/run", 0o755, 0);
    Ok(image)
}

/// The pod sandbox image: pause.c, built static against musl.
pub fn pause(work: &Path) -> Result<Image> {
    let binary = compile("musl-gcc", &["-static", "-Os"], "pause.c", work, "pause")?;
    let mut image = Image::new(
        PAUSE,
        Config {
            user: "65535:65535".into(),
            entrypoint: vec!["/pause".into()],
            env: vec![PATH.into()],
            working_dir: "/".into(),
            ..Config::default()
        },
    );
    image.file("/pause", Content::Host(binary), 0o755);
    Ok(image)
}

/// The client image: busybox (every applet), glibc's getent, and the lookup and load programs
/// against glibc and musl.
/// It sleeps until it is told to stop.
pub fn client(work: &Path) -> Result<Image> {
    let glibc = compile("gcc", &["-O1"], "lookup.c", work, "lookup-glibc")?;
    let musl = compile(
        "musl-gcc",
        &["-static", "-O1"],
        "lookup.c",
        work,
        "lookup-musl",
    )?;
    let load_glibc = compile("gcc", &["-O1"], "load.c", work, "load-glibc")?;
    let load_musl = compile("musl-gcc", &["-static", "-O1"], "load.c", work, "load-musl")?;
    let busybox = which("busybox")?;
    ensure!(
        crate::image::shared_libraries(&busybox)?.is_empty(),
        "{} is not static (install Debian's busybox-static)",
        busybox.display()
    );
    let mut image = Image::new(
        CLIENT,
        Config {
            user: "0:0".into(),
            cmd: [
                "/bin/sh",
                "-c",
                "trap 'exit 0' TERM INT; sleep 2147483647 & wait",
            ]
            .map(String::from)
            .to_vec(),
            env: vec![PATH.into()],
            working_dir: "/".into(),
            ..Config::default()
        },
    );
    distroless(&mut image)?;
    image.file("/bin/busybox", Content::Host(busybox.clone()), 0o755);
    let applets = Command::new(&busybox)
        .arg("--list")
        .output()
        .context("busybox --list")?;
    for applet in String::from_utf8_lossy(&applets.stdout).split_whitespace() {
        if applet != "busybox" {
            image.symlink(&format!("/bin/{applet}"), "busybox");
        }
    }
    image.program("/usr/bin/getent", &which("getent")?)?;
    image.program("/usr/local/bin/lookup-glibc", &glibc)?;
    image.file("/usr/local/bin/lookup-musl", Content::Host(musl), 0o755);
    image.program("/usr/local/bin/load-glibc", &load_glibc)?;
    image.file("/usr/local/bin/load-musl", Content::Host(load_musl), 0o755);
    Ok(image)
}

/// What the distroless bases hold that a program uses.
fn distroless(image: &mut Image) -> Result<()> {
    let passwd = "root:x:0:0:root:/root:/sbin/nologin\n\
                  nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n\
                  nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n";
    let group = "root:x:0:\nnobody:x:65534:\ntty:x:5:\nstaff:x:50:\nnonroot:x:65532:\n";
    image.file("/etc/passwd", Content::Bytes(passwd.into()), 0o644);
    image.file("/etc/group", Content::Bytes(group.into()), 0o644);
    image.file(
        "/etc/nsswitch.conf",
        Content::Bytes(b"passwd: files\ngroup: files\nhosts: files dns\n".to_vec()),
        0o644,
    );
    let bundle = PathBuf::from(CA_BUNDLE);
    ensure!(
        bundle.is_file(),
        "{CA_BUNDLE} is missing (install Debian's ca-certificates)"
    );
    image.file(CA_BUNDLE, Content::Host(bundle), 0o644);
    image.dir("/tmp", 0o1777, 0);
    image.dir("/home/nonroot", 0o700, NONROOT);
    Ok(())
}

/// A copy of `binary` in `work` without its debug sections (`strip --strip-debug`, as the
/// Dockerfile does): the symbols stay, so link/hot-text.ld's layout is the same.
fn strip_debug(binary: &Path, work: &Path) -> Result<PathBuf> {
    let out = work.join("clusterdns");
    run(Command::new("strip")
        .arg("--strip-debug")
        .arg("-o")
        .arg(&out)
        .arg(binary))
    .context("strip (binutils)")?;
    Ok(out)
}

/// `compiler FLAGS -o work/out xtask/programs/SOURCE`: the program.
fn compile(
    compiler: &str,
    flags: &[&str],
    source: &str,
    work: &Path,
    out: &str,
) -> Result<PathBuf> {
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("programs")
        .join(source);
    let binary = work.join(out);
    run(Command::new(compiler)
        .args(flags)
        .args(["-Wall", "-o"])
        .arg(&binary)
        .arg(&source))
    .with_context(|| format!("{compiler} (Debian's gcc and musl-tools)"))?;
    Ok(binary)
}

fn run(command: &mut Command) -> Result<()> {
    let output = command
        .output()
        .with_context(|| format!("cannot run {:?}", command.get_program()))?;
    if !output.status.success() {
        bail!(
            "{:?} failed: {}",
            command.get_program(),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}

/// `program`'s path on `$PATH`.
pub fn which(program: &str) -> Result<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
        .with_context(|| format!("{program} is not installed"))
}
