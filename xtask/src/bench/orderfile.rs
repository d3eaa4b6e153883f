//! `cargo xtask orderfile`: writes link/hot-text.ld, the functions of the release binary that
//! start-up and the query path run, as a linker script that build.rs hands the linker and
//! that puts them in an output section `.text.hot` before `.text`. Laid out together, they fill
//! about 2.4 MB of code instead of touching pages all over the binary's 13 MB, most of the
//! fixture-size RSS (docs/kind.md, "Sizing"); .ci/layout checks the script still matches the
//! binary. Regenerate after a change that renames or adds hot code.
//!
//! The release binary is built without the current ordering (`CLUSTERDNS_NO_ORDER=1`) and
//! runs under valgrind's callgrind on the bundled fixture with kubeadm's Corefile
//! (deploy/configmap.yaml, loopback ports, forward to a closed port); the command asks it each
//! kind of question over UDP and TCP with dig, reads /health, /ready and /metrics with curl,
//! twice, waits for the reload plugin's check (50 s from ready), and stops it with SIGTERM.
//! Every function callgrind saw run in the binary is listed, mangled, in the order callgrind
//! first met it ([`hot_functions`]), as a section pattern ([`patterns`]). A pattern that no
//! longer matches (renamed code) matches nothing, so a stale list costs pages, never a build;
//! .ci/layout fails when fewer than 70 % still match. The order is callgrind's and moves
//! between two runs; the set of functions moves only by a few, around the shutdown's races.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::{Server, Work, knob, kubeadm_corefile, log, need_tools, target_dir};
use crate::root;

/// The name this command logs under.
const NAME: &str = "orderfile";

/// The reload plugin's first check of the Corefile comes 30 s after the server starts, plus a
/// random jitter of up to 15 s (its defaults): the time from ready to the end, questions
/// included, so that the check's code runs too, with 5 s to spare. (bench/orderfile.sh slept
/// 35 s after the questions, about 42 s from ready, and its profile missed the check when
/// the jitter drew more.)
const RELOAD_WAIT: Duration = Duration::from_secs(50);

/// The knobs, each a flag or the environment variable bench/orderfile.sh read (in capitals).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Options {
    /// The server's DNS port on 127.0.0.1; health, ready and prometheus on the next three,
    /// forward to the one after [env: PORT] [default: 25363].
    #[arg(long)]
    pub port: Option<u16>,
    /// The linker script to write [default: link/hot-text.ld].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Keep the work directory (the profile, the server's logs) [env: KEEP].
    #[arg(long)]
    pub keep: bool,
}

/// The questions asked, each over UDP and TCP, twice: dig's arguments after the server.
pub const QUESTIONS: &[&[&str]] = &[
    &["kubernetes.default.svc.cluster.local", "A"],
    &["web.shop.svc.cluster.local", "AAAA"],
    &["db.shop.svc.cluster.local", "A"],
    &["_http._tcp.web.shop.svc.cluster.local", "SRV"],
    &["web-headless.shop.svc.cluster.local", "A"],
    &["nope.shop.svc.cluster.local", "A"],
    &["web.shop.svc.cluster.local.shop.svc.cluster.local", "A"],
    &["-x", "10.96.0.20"],
    &["cluster.local", "SOA"],
    &["cluster.local", "NS"],
    &["1-2-3-4.shop.pod.cluster.local", "A"],
    &["+noedns", "web.shop.svc.cluster.local", "A"],
    &["example.com", "A"],
];

/// Profiles the server and writes the linker script.
pub fn run(options: &Options) -> Result<PathBuf> {
    let port = knob(options.port, "PORT", 25363)?;
    let out = options
        .out
        .clone()
        .unwrap_or_else(|| root().join("link/hot-text.ld"));
    need_tools(&["valgrind", "dig", "curl", "nm", "setpriv"])?;
    let work = Work::new(NAME, options.keep || super::env_set("KEEP"))?;
    let dir = work.path();

    log(NAME, "building (release, without the current ordering)");
    super::run_to_file(
        super::cargo()
            .args(["build", "--release", "--bin", "clusterdns"])
            .env("CLUSTERDNS_NO_ORDER", "1")
            .current_dir(root()),
        &dir.join("build.log"),
    )?;
    let binary = target_dir()?.join("release/clusterdns");

    let corefile = dir.join("Corefile");
    std::fs::write(
        &corefile,
        kubeadm_corefile(port, &root().join("fixtures/shop.json"))?,
    )?;
    let profile = dir.join("callgrind.out");
    let mut out_file = std::ffi::OsString::from("--callgrind-out-file=");
    out_file.push(&profile);

    log(NAME, "running the server under callgrind");
    let mut server = Server::start_on(
        "clusterdns under callgrind",
        port,
        None,
        Path::new("valgrind"),
        &[
            "--tool=callgrind".as_ref(),
            "--demangle=no".as_ref(),
            out_file.as_os_str(),
            binary.as_os_str(),
            "serve".as_ref(),
            "--corefile".as_ref(),
            corefile.as_os_str(),
        ],
        &dir.join("server.log"),
    )?;
    // Asked with curl, as the questions below: the wait's requests are part of the profile.
    let deadline = Instant::now() + Duration::from_secs(600);
    while curl(port + 2, "/ready") != Some(200) {
        server.check_running()?;
        if Instant::now() >= deadline {
            bail!("clusterdns under callgrind did not become ready within 600 s");
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    let ready = Instant::now();

    log(NAME, "asking");
    for _ in 0..2 {
        for question in QUESTIONS {
            for tcp in [false, true] {
                // An answer or not, what counts is the code that ran.
                let _ = Command::new("dig")
                    .arg("@127.0.0.1")
                    .args(["-p", &port.to_string()])
                    .args(if tcp { &["+tcp"][..] } else { &[][..] })
                    .args(["+time=5", "+tries=1"])
                    .args(*question)
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
            }
        }
        for (port, path) in [
            (port + 1, "/health"),
            (port + 2, "/ready"),
            (port + 3, "/metrics"),
        ] {
            let _ = curl(port, path);
        }
    }
    log(NAME, "waiting for the reload plugin's check");
    std::thread::sleep(RELOAD_WAIT.saturating_sub(ready.elapsed()));
    server
        .terminate(Duration::from_secs(600))
        .context("stopping the server")?;
    drop(server);

    let file = File::open(&profile).with_context(|| format!("opening {}", profile.display()))?;
    let hot = hot_functions(BufReader::new(file), &binary.to_string_lossy())
        .with_context(|| profile.display().to_string())?;
    if hot.is_empty() {
        bail!("callgrind saw no function of {} run", binary.display());
    }
    let nm = Command::new("nm")
        .arg("--defined-only")
        .arg(&binary)
        .stderr(Stdio::inherit())
        .output()
        .context("running nm")?;
    if !nm.status.success() {
        bail!("nm --defined-only {}: {}", binary.display(), nm.status);
    }
    let functions = nm_functions(&String::from_utf8_lossy(&nm.stdout));
    let patterns = patterns(&functions, &hot);
    if let Some(parent) = out.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(&out, linker_script(&patterns))
        .with_context(|| format!("writing {}", out.display()))?;
    log(
        NAME,
        format!("{} functions written to {}", patterns.len(), out.display()),
    );
    Ok(out)
}

/// `GET path` on 127.0.0.1:`port` with curl, as bench/orderfile.sh asked: the answer's status,
/// none without one. HTTP/1.1, the connection closed by the client once the answer is read,
/// as the kubelet's probes and Prometheus's scrapes are. An HTTP/1.0 request (the other
/// benches' [`super::http_status`]) runs other code: hyper writes an HTTP/1.0 status line
/// with `StatusCode::canonical_reason`, and the server closes the connection, not the
/// client.
fn curl(port: u16, path: &str) -> Option<u16> {
    let output = Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code}"])
        .arg(format!("http://127.0.0.1:{port}{path}"))
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .ok()
        .filter(|code| *code != 0)
}

/// The functions of object `binary` that ran, from callgrind's output, each once, in the order
/// callgrind first met them.
///
/// callgrind names an object file and a function once, at the first `ob=`/`cob=` or
/// `fn=`/`cfn=` line with the id (`fn=(12) name`), and uses the bare `(ID)` after (without
/// string compression, the name itself is the id). Each `fn=` line opens the cost of a
/// function that ran, under the current `ob=`.
pub fn hot_functions(profile: impl BufRead, binary: &str) -> Result<Vec<String>> {
    let mut objects: HashMap<String, String> = HashMap::new();
    let mut functions: HashMap<String, String> = HashMap::new();
    let mut current: Option<String> = None;
    let mut seen = HashSet::new();
    let mut hot = Vec::new();
    for line in profile.lines() {
        let line = line.context("reading callgrind's output")?;
        if let Some(rest) = line.strip_prefix("ob=") {
            let id = define(rest, &mut objects);
            current = objects.get(&id).cloned();
        } else if let Some(rest) = line.strip_prefix("cob=") {
            define(rest, &mut objects);
        } else if let Some(rest) = line.strip_prefix("cfn=") {
            define(rest, &mut functions);
        } else if let Some(rest) = line.strip_prefix("fn=") {
            let id = define(rest, &mut functions);
            let name = functions.get(&id).cloned().unwrap_or_default();
            if current.as_deref() == Some(binary) && seen.insert(name.clone()) {
                hot.push(name);
            }
        }
    }
    Ok(hot)
}

/// A callgrind name definition or use, `(ID) NAME`, `(ID)` or `NAME` (after `fn=` and the
/// like): its id (what precedes the first space), its name recorded when it has one.
fn define(text: &str, names: &mut HashMap<String, String>) -> String {
    let id = text.split(' ').next().unwrap_or_default().to_owned();
    let name = strip_id(text);
    if !name.is_empty() {
        names.insert(id.clone(), name.to_owned());
    }
    id
}

/// `text` without a leading `(DIGITS)` and the one space after it.
fn strip_id(text: &str) -> &str {
    if let Some(rest) = text.strip_prefix('(')
        && let Some(close) = rest.find(')')
        && close > 0
        && rest[..close].bytes().all(|b| b.is_ascii_digit())
    {
        let after = &rest[close + 1..];
        return after.strip_prefix(' ').unwrap_or(after);
    }
    text
}

/// The code symbols of `nm --defined-only`'s output (types t, T, w, W).
pub fn nm_functions(nm: &str) -> Vec<String> {
    nm.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let kind = fields.get(1)?;
            matches!(*kind, "t" | "T" | "w" | "W")
                .then(|| fields.get(2).map(|s| (*s).to_owned()))?
        })
        .collect()
}

/// A Rust legacy symbol without its hash: `..17h<hex>E` (and any `.llvm.<digits>` after it)
/// cut to `..17h`; none for a symbol without such a hash.
pub fn hashless(name: &str) -> Option<String> {
    let core = strip_llvm(name).unwrap_or(name);
    let hex = core.strip_suffix('E')?;
    let before_hex = hex.trim_end_matches(|c: char| matches!(c, '0'..='9' | 'a'..='f'));
    if before_hex.len() == hex.len() {
        return None;
    }
    let before = before_hex.strip_suffix("17h")?;
    Some(format!("{before}17h"))
}

/// `name` without a trailing `.llvm.<digits>` (ThinLTO's), if it has one.
fn strip_llvm(name: &str) -> Option<&str> {
    let (before, digits) = name.rsplit_once(".llvm.")?;
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())).then_some(before)
}

/// Whether `name` is a symbol of the binary as callgrind writes one (`(below main)` is not).
fn is_symbol(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '.'))
}

/// Each hot function as a section pattern of the linker script (rustc gives each function a
/// section `.text.<symbol>`), once, in order. A Rust symbol ends in a hash (`17h<16 hex>E`)
/// that moves with the compiler, the dependencies and the profile's settings, and ThinLTO may
/// add `.llvm.<digits>`, which moves with the build directory: a function the binary has one
/// instance of (among `functions`, nm's) is matched whatever its hash; one of a generic
/// function's instances, by its hash, with any suffix. callgrind marks recursion with `'N`;
/// names with other characters are not functions of the binary.
pub fn patterns(functions: &[String], hot: &[String]) -> Vec<String> {
    let mut instances: HashMap<String, usize> = HashMap::new();
    for function in functions {
        if let Some(key) = hashless(function) {
            *instances.entry(key).or_default() += 1;
        }
    }
    let mut seen = HashSet::new();
    let mut patterns = Vec::new();
    for name in hot {
        let name = strip_recursion(name);
        if !is_symbol(name) {
            continue;
        }
        let pattern = match hashless(name) {
            Some(key) if instances.get(&key) == Some(&1) => format!("{key}*"),
            Some(_) => {
                let exact = match strip_llvm(name) {
                    Some(before) if before.ends_with('E') => before,
                    _ => name,
                };
                format!("{exact}*")
            }
            None => match strip_llvm(name) {
                Some(before) => format!("{before}.llvm.*"),
                None => name.to_owned(),
            },
        };
        if seen.insert(pattern.clone()) {
            patterns.push(pattern);
        }
    }
    patterns
}

/// `name` without callgrind's recursion mark, a trailing `'<digits>`.
fn strip_recursion(name: &str) -> &str {
    match name.rsplit_once('\'') {
        Some((before, digits))
            if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) =>
        {
            before
        }
        _ => name,
    }
}

/// link/hot-text.ld's text: an output section `.text.hot` of every pattern's `.text.` and
/// `.text.unlikely.` sections, inserted before `.text`.
pub fn linker_script(patterns: &[String]) -> String {
    let mut text = String::from(
        "/* Written by `cargo xtask orderfile`: the functions start-up and the query path run,\n   laid out first and together by build.rs (-T). Regenerate, don't edit. */\nSECTIONS {\n  .text.hot : {\n",
    );
    for pattern in patterns {
        text.push_str(&format!(
            "    *(.text.{pattern} .text.unlikely.{pattern})\n"
        ));
    }
    text.push_str("  }\n}\nINSERT BEFORE .text;\n");
    text
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// callgrind's output, compressed names as it writes them: two objects, functions of the
    /// binary and of libc, a call into libc (cob/cfn), names used again by id.
    const PROFILE: &str = "# callgrind format
version: 1
creator: callgrind-3.19.0
pid: 4242
cmd:  /t/release/clusterdns serve --corefile /w/Corefile
part: 1

positions: line
events: Ir
summary: 1000

ob=(1) /usr/lib/x86_64-linux-gnu/libc.so.6
fl=(1) ???
fn=(1) memcpy
0 10

ob=(2) /t/release/clusterdns
fl=(2) ???
fn=(2) _ZN10clusterdns4main17h0123456789abcdefE
0 5
cob=(1)
cfn=(1)
calls=1 0
0 10
cfn=(3) _ZN10clusterdns6server3run17haaaaaaaaaaaaaaaaE'2
calls=1 0
0 20
fn=(3)
0 20
fn=(4) (below main)
0 1
fn=(2)
0 1
ob=(1)
fn=(5) strlen
0 3
ob=(2)
fn=(6) main
0 1
";

    #[test]
    fn the_binarys_functions_are_listed_in_the_order_callgrind_met_them() {
        let hot = hot_functions(PROFILE.as_bytes(), "/t/release/clusterdns").unwrap();
        assert_eq!(
            hot,
            [
                "_ZN10clusterdns4main17h0123456789abcdefE",
                "_ZN10clusterdns6server3run17haaaaaaaaaaaaaaaaE'2",
                "(below main)",
                "main",
            ]
        );
        assert!(
            hot_functions(PROFILE.as_bytes(), "/elsewhere/clusterdns")
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn uncompressed_names_are_their_own_ids() {
        let profile =
            "ob=/t/clusterdns\nfn=main\n0 1\nfn=_ZN1a1b17h0000000000000001E\n0 1\nfn=main\n";
        assert_eq!(
            hot_functions(profile.as_bytes(), "/t/clusterdns").unwrap(),
            ["main", "_ZN1a1b17h0000000000000001E"]
        );
    }

    #[test]
    fn nm_lists_the_code_symbols() {
        let nm = "0000000000012340 T main\n0000000000012350 t _ZN1a1b17h0000000000000001E\n0000000000400000 D some_data\n0000000000012360 W weak_fn\n0000000000012370 r _ZN1a5CONST17h1E\n0000000000012380 w weak_lower\n";
        assert_eq!(
            nm_functions(nm),
            [
                "main",
                "_ZN1a1b17h0000000000000001E",
                "weak_fn",
                "weak_lower"
            ]
        );
    }

    #[test]
    fn hashes_are_cut_off_where_rust_puts_them() {
        assert_eq!(
            hashless("_ZN4core3fmt5write17h9f1d2e3c4b5a6978E").as_deref(),
            Some("_ZN4core3fmt5write17h")
        );
        assert_eq!(
            hashless("_ZN4core3fmt5write17h9f1d2e3c4b5a6978E.llvm.1234567").as_deref(),
            Some("_ZN4core3fmt5write17h")
        );
        assert_eq!(hashless("_RNvCs1_3std4main"), None);
        assert_eq!(hashless("main"), None);
        assert_eq!(hashless("_ZN1a17hE"), None);
        assert_eq!(hashless("_ZN1a16hdeadE"), None);
        assert_eq!(hashless("_ZN1a17hdeadE.llvm."), None);
    }

    #[test]
    fn patterns_match_one_instance_by_name_and_generic_ones_by_hash() {
        let functions: Vec<String> = [
            "_ZN3one3fun17h1111111111111111E",
            "_ZN3gen3fun17h2222222222222222E",
            "_ZN3gen3fun17h3333333333333333E.llvm.42",
            "_ZN3lto3fun17h4444444444444444E.llvm.7",
            "_RNvCs1_3std4main.llvm.99",
            "main",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        let hot: Vec<String> = [
            "_ZN3one3fun17h1111111111111111E",
            "_ZN3gen3fun17h3333333333333333E.llvm.42",
            "_ZN3gen3fun17h2222222222222222E'3",
            "_ZN3lto3fun17h4444444444444444E.llvm.7",
            "_RNvCs1_3std4main.llvm.99",
            "main",
            "main'2",
            "(below main)",
            "0x000000000001f2c0",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        assert_eq!(
            patterns(&functions, &hot),
            [
                "_ZN3one3fun17h*",
                "_ZN3gen3fun17h3333333333333333E*",
                "_ZN3gen3fun17h2222222222222222E*",
                "_ZN3lto3fun17h*",
                "_RNvCs1_3std4main.llvm.*",
                "main",
            ]
        );
    }

    #[test]
    fn the_linker_script_has_the_layout_ci_checks() {
        let script = linker_script(&["_ZN3one3fun17h*".to_owned(), "main".to_owned()]);
        assert_eq!(
            script,
            "/* Written by `cargo xtask orderfile`: the functions start-up and the query path run,\n   laid out first and together by build.rs (-T). Regenerate, don't edit. */\nSECTIONS {\n  .text.hot : {\n    *(.text._ZN3one3fun17h* .text.unlikely._ZN3one3fun17h*)\n    *(.text.main .text.unlikely.main)\n  }\n}\nINSERT BEFORE .text;\n"
        );
        // The repository's own has the same frame.
        let ours = std::fs::read_to_string(root().join("link/hot-text.ld")).unwrap();
        let lines: Vec<&str> = ours.lines().collect();
        assert_eq!(lines[2..4], ["SECTIONS {", "  .text.hot : {"]);
        assert_eq!(
            lines[lines.len() - 3..],
            ["  }", "}", "INSERT BEFORE .text;"]
        );
        assert!(
            lines[4..lines.len() - 3]
                .iter()
                .all(|line| line.starts_with("    *(.text.") && line.ends_with(')'))
        );
    }
}
