//! The image the Deployment runs: the Dockerfile's binary, user and args, the allocator options
//! its sizing was measured with, and the README's steps that build, load and apply it.

use std::process::Command;

use super::{
    AUTOSCALER, applied, container, coredns_deployment, image, kind_section, readme_kind_steps,
};
use crate::common::read;

#[test]
fn the_image_runs_the_binary_as_the_deployments_user() {
    let image = image();
    let manifests = applied();
    let deployment = coredns_deployment(&manifests);
    let security = container(deployment).security_context.clone().unwrap();
    let [binary] = image.entrypoint.as_slice() else {
        panic!("the entrypoint is the binary alone: {:?}", image.entrypoint)
    };
    assert_eq!(
        image.user,
        format!(
            "{}:{}",
            security.run_as_user.unwrap(),
            security.run_as_group.unwrap()
        )
    );
    assert_eq!(
        image.copied,
        [format!("--from=build {binary} {binary}")],
        "the binary is copied to where the entrypoint runs it"
    );
    assert_eq!(
        image.setcap,
        [format!("cap_net_bind_service=+ep {binary}")],
        "port 53 as a non-root user needs the file capability"
    );
    assert_eq!(image.cmd, container(deployment).args.clone().unwrap());
    let cargo = read("Cargo.toml");
    assert!(
        cargo.contains(&format!("rust-version = \"{}\"", image.rust)),
        "the build image's Rust ({}) is the crate's rust-version",
        image.rust
    );
}

#[test]
fn the_binary_takes_the_deployments_args() {
    // The entrypoint and the Deployment's args, with the Corefile path pointing at a file
    // that does not parse: the binary must read it as `serve --corefile` and report it.
    let manifests = applied();
    let args = container(coredns_deployment(&manifests))
        .args
        .clone()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let corefile = dir.path().join("Corefile");
    std::fs::write(&corefile, ".:53 {\n    no_such_plugin\n}\n").unwrap();
    let args: Vec<String> = args
        .into_iter()
        .map(|a| {
            if a.starts_with('/') {
                corefile.display().to_string()
            } else {
                a
            }
        })
        .collect();
    let output = Command::new(env!("CARGO_BIN_EXE_clusterdns"))
        .args(&args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no_such_plugin"), "{stderr}");
    assert!(stderr.contains(&corefile.display().to_string()), "{stderr}");
}

#[test]
fn readme_builds_loads_and_applies_what_the_manifests_use() {
    let manifests = applied();
    let image = container(coredns_deployment(&manifests))
        .image
        .clone()
        .unwrap();
    let page = kind_section();
    let short = readme_kind_steps();
    for command in [
        format!("docker build -t {image} ."),
        format!("kind load docker-image {image}"),
        "kubectl apply --server-side --force-conflicts -k deploy/".to_owned(),
        format!("kubectl apply --server-side -f deploy/{AUTOSCALER}"),
        "nslookup kubernetes.default".to_owned(),
    ] {
        assert!(page.contains(&command), "docs/kind.md runs `{command}`");
        assert!(
            short.contains(&command),
            "the README's kind steps run `{command}`"
        );
    }
}

/// The image is built with `cargo build` in the repository (the Dockerfile), so it gets the
/// allocator's options from `.cargo/config.toml`: one arena, no thread caches, freed pages
/// returned within a second (docs/kind.md, "Sizing"). jemalloc prints the options it runs
/// with when asked at exit; asking adds to the built-in ones rather than replacing them.
#[test]
fn the_binary_runs_with_the_allocator_options_its_sizing_was_measured_with() {
    let output = Command::new(env!("CARGO_BIN_EXE_clusterdns"))
        .arg("--version")
        .env("_RJEM_MALLOC_CONF", "stats_print:true")
        .output()
        .unwrap();
    assert!(output.status.success());
    let stats = String::from_utf8_lossy(&output.stderr);
    for option in [
        "opt.narenas: 1\n",
        "opt.tcache: false\n",
        "opt.dirty_decay_ms: 1000 ",
        "opt.muzzy_decay_ms: 0 ",
    ] {
        assert!(
            stats.contains(option),
            "jemalloc does not run with {option:?}:\n{}",
            &stats[..stats.len().min(3000)]
        );
    }
}

#[test]
fn the_image_builds_the_binary_the_layout_was_made_for() {
    // link/hot-text.ld names the functions start-up and the query path run by their symbols,
    // whose hashes change with the profile's settings and the compiler's flags: the image's
    // build must be Cargo.toml's release profile untouched, and only strip what it built.
    let text = read("Dockerfile");
    let instructions: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n");
    for changes_the_symbols in ["CARGO_PROFILE_", "RUSTFLAGS", "CARGO_BUILD_", "--profile"] {
        assert!(
            !instructions.contains(changes_the_symbols),
            "the Dockerfile sets {changes_the_symbols}, so its binary's symbols are not the \
             ones link/hot-text.ld lists"
        );
    }
    assert!(instructions.contains("cargo build --release --locked --bin clusterdns"));
    assert!(instructions.contains("strip --strip-debug /usr/local/bin/clusterdns"));
    let script = read("link/hot-text.ld");
    assert!(
        script.contains("INSERT BEFORE .text;") && script.contains("*(.text._ZN10clusterdns"),
        "link/hot-text.ld is `cargo xtask orderfile`'s linker script"
    );
    assert!(read("build.rs").contains("link/hot-text.ld"));
}

/// The build stage has the whole workspace to build from: the binary's own crates by path
/// (crates/model, crates/kube-proxy) and every other member, without which cargo reads no
/// workspace. The Dockerfile copies the build context whole, and .dockerignore keeps none of
/// them out.
#[test]
fn the_build_stage_gets_every_crate_of_the_workspace() {
    let dockerfile = read("Dockerfile");
    assert!(
        dockerfile.lines().any(|line| line.trim() == "COPY . ."),
        "the build stage copies the build context whole"
    );
    let cargo = read("Cargo.toml");
    let members: Vec<&str> = cargo
        .lines()
        .find_map(|line| line.strip_prefix("members = "))
        .expect("Cargo.toml lists the workspace's members")
        .split('"')
        .skip(1)
        .step_by(2)
        .collect();
    assert!(members.contains(&"crates/model"), "{members:?}");
    let ignored: Vec<String> = read(".dockerignore")
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| line.trim_matches('/').to_owned())
        .collect();
    for member in members.iter().filter(|member| **member != ".") {
        assert!(
            !ignored
                .iter()
                .any(|pattern| member == pattern || member.starts_with(&format!("{pattern}/"))),
            ".dockerignore keeps the workspace's {member} out of the build context"
        );
    }
}

/// The image `cargo xtask image` builds here, without a registry (xtask/src/images.rs), is the
/// one the Dockerfile describes: its last stage's user, entrypoint, args and ports, the binary
/// where the entrypoint runs it, without its debug sections, carrying
/// `cap_net_bind_service=+ep`, and what distroless's `cc-debian12:nonroot` gives the
/// binary: the C and GCC runtime libraries it links, the CA bundle, the `nonroot` user and
/// its home, a world-writable /tmp — and nothing that runs a shell.
#[test]
fn the_image_built_here_is_the_one_the_dockerfile_describes() {
    let dockerfile = image();
    assert_eq!(
        dockerfile.base, "gcr.io/distroless/cc-debian12:nonroot",
        "the recipe reproduces this base (xtask/src/images.rs): update both together"
    );
    let dir = tempfile::tempdir().unwrap();
    let built = xtask::images::clusterdns(
        std::path::Path::new(env!("CARGO_BIN_EXE_clusterdns")),
        dir.path(),
    )
    .unwrap();
    let archive = built.write(&dir.path().join("clusterdns.tar")).unwrap();
    let read = xtask::image::read(&archive.archive).unwrap();
    let config = &read.config["config"];

    let manifests = applied();
    let container = container(coredns_deployment(&manifests));
    let runs = container.image.clone().unwrap();
    assert_eq!(
        read.reference,
        format!("docker.io/library/{runs}"),
        "deploy/ runs it"
    );
    assert_eq!(
        read.docker_tags,
        std::slice::from_ref(&read.reference),
        "docker load names it alike"
    );
    assert_eq!(config["User"], dockerfile.user);
    assert_eq!(
        config["Entrypoint"],
        serde_json::json!(dockerfile.entrypoint)
    );
    assert_eq!(config["Cmd"], serde_json::json!(dockerfile.cmd));
    let mut exposed: Vec<&str> = config["ExposedPorts"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    exposed.sort_unstable();
    let mut said: Vec<&str> = dockerfile.exposed.iter().map(String::as_str).collect();
    said.sort_unstable();
    assert_eq!(exposed, said, "EXPOSE");
    assert_eq!(read.config["os"], "linux");

    // The binary: where the entrypoint is, executable, the file capability port 53 needs.
    let binary = read.entry(&dockerfile.entrypoint[0]).unwrap();
    assert_eq!((binary.mode, binary.uid), (0o755, 0));
    let capability = binary
        .xattrs
        .get("security.capability")
        .expect("the binary carries a file capability");
    let [setcap] = dockerfile.setcap.as_slice() else {
        panic!("{:?}", dockerfile.setcap)
    };
    assert_eq!(
        setcap,
        &format!("cap_net_bind_service=+ep {}", dockerfile.entrypoint[0])
    );
    assert_eq!(
        xtask::image::decode_file_capability(capability),
        Some((vec![10], true)),
        "CAP_NET_BIND_SERVICE, permitted and effective"
    );
    // Stripped of its debug sections, as the Dockerfile's build stage does.
    assert!(dockerfile.strips_debug);
    let unstripped = std::fs::metadata(env!("CARGO_BIN_EXE_clusterdns"))
        .unwrap()
        .len();
    let debug = Command::new("readelf")
        .args(["-S", "-W", env!("CARGO_BIN_EXE_clusterdns")])
        .output()
        .unwrap();
    if String::from_utf8_lossy(&debug.stdout).contains(".debug_info") {
        assert!(
            binary.size < unstripped,
            "{} of {unstripped} bytes",
            binary.size
        );
    }

    // distroless's cc-debian12:nonroot, as far as the binary uses it.
    for library in
        xtask::image::shared_libraries(std::path::Path::new(env!("CARGO_BIN_EXE_clusterdns")))
            .unwrap()
    {
        let path = library.display().to_string();
        let entry = read
            .entry(&path)
            .unwrap_or_else(|| panic!("{path} is missing"));
        assert_eq!(entry.kind, xtask::image::EntryType::Regular, "{path}");
    }
    let passwd = read.entry("etc/passwd").unwrap();
    assert_eq!(passwd.mode, 0o644);
    let home = read.entry("home/nonroot").unwrap();
    assert_eq!((home.uid, home.gid, home.mode), (65532, 65532, 0o700));
    assert_eq!(read.entry("tmp").unwrap().mode, 0o1777);
    assert!(read.entry("etc/ssl/certs/ca-certificates.crt").is_some());
    for shell in ["bin/sh", "bin/bash", "bin/busybox", "usr/bin/sh"] {
        assert!(
            read.entry(shell).is_none(),
            "{shell}: the image has no shell"
        );
    }
    // Every file is root's but the home directory, as in distroless.
    for entry in &read.entries {
        if entry.path != "home/nonroot" {
            assert_eq!((entry.uid, entry.gid), (0, 0), "{}", entry.path);
        }
    }
}

/// The node-cache image (xtask::images::node_cache, the node-local-dns DaemonSet's): `clusterdns
/// node-cache` as its entrypoint, run as root, and the tools node-cache runs on the node
/// working from the image's own files alone — each program run with the unpacked image as its
/// root (`chroot`, in a network namespace of its own): iptables through the machine's
/// alternative and both explicit backends, loading the extensions node-cache's rules use
/// (`-m comment`, `-j NOTRACK`, `--dport`), `ip` making a link with an address, `nft` a table.
#[test]
fn the_node_cache_image_runs_its_tools_from_its_own_files() {
    use xtask::image::{Content, Kind};
    if !crate::common::netns::is_root() {
        eprintln!("skipping the node-cache image's tools: chroot needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let image = xtask::images::node_cache(
        std::path::Path::new(env!("CARGO_BIN_EXE_clusterdns")),
        &work,
    )
    .unwrap();
    assert_eq!(
        image.config.user, "0:0",
        "node-cache makes links and rules: root"
    );
    assert_eq!(
        image.config.entrypoint,
        ["/usr/local/bin/clusterdns", "node-cache"],
        "the manifest's args are node-cache's"
    );
    let root = dir.path().join("root");
    for (path, entry) in &image.entries {
        let at = root.join(path);
        match &entry.kind {
            Kind::Dir => std::fs::create_dir_all(&at).unwrap(),
            Kind::File(content) => {
                match content {
                    Content::Bytes(bytes) => std::fs::write(&at, bytes).unwrap(),
                    Content::Host(host) => drop(std::fs::copy(host, &at).unwrap()),
                }
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&at, std::fs::Permissions::from_mode(entry.mode)).unwrap();
            }
            Kind::Symlink(target) => std::os::unix::fs::symlink(target, &at).unwrap(),
        }
    }
    let root = root.display().to_string();
    // In a network namespace of its own, each command's program from the image.
    let script = [
        "/usr/local/bin/clusterdns --version",
        "/usr/sbin/iptables -V",
        "/usr/sbin/iptables-legacy -V",
        "/usr/sbin/ip6tables-nft -V",
        "/usr/sbin/iptables -w 5 -t raw -I PREROUTING -p udp -d 169.254.20.10 --dport 53 \
         -m comment --comment 'NodeLocal DNS Cache: skip conntrack' -j NOTRACK",
        "/usr/sbin/iptables -w 5 -t filter -I INPUT -p tcp -d 169.254.20.10 --dport 53 \
         -m comment --comment 'NodeLocal DNS Cache: allow DNS traffic' -j ACCEPT",
        "/usr/sbin/iptables-save",
        "/usr/sbin/ip link add nodelocaldns type bridge",
        "/usr/sbin/ip addr add 169.254.20.10/32 dev nodelocaldns",
        "/usr/sbin/ip -o addr show dev nodelocaldns",
        "/usr/sbin/nft add table ip nodelocaldns",
        "/usr/sbin/nft list tables",
    ]
    .map(|command| format!("chroot {root} {command}"))
    .join(" && ");
    let ns = crate::common::netns::Netns::new("image-tools").unwrap();
    let out = ns.exec("sh", &["-ec", &script]);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "the image's tools: {said}");
    for expect in [
        "clusterdns ",
        "iptables v",
        "(legacy)",
        "(nf_tables)",
        "-A PREROUTING -d 169.254.20.10/32 -p udp -m udp --dport 53 -m comment --comment \"NodeLocal DNS Cache: skip conntrack\" -j NOTRACK",
        "-A INPUT -d 169.254.20.10/32 -p tcp -m tcp --dport 53 -m comment --comment \"NodeLocal DNS Cache: allow DNS traffic\" -j ACCEPT",
        "inet 169.254.20.10/32",
        "table ip nodelocaldns",
    ] {
        assert!(said.contains(expect), "no {expect:?} in:\n{said}");
    }
}
