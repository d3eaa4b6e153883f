//! node-cache's rules on the node: through the `iptables` binary as node-cache does it (its
//! `utiliptables` runs `iptables -w -C`, then `-I CHAIN` when the rule is missing, and `-D`
//! until `-C` finds no copy on teardown), legacy or nft backend as the binary named is; or,
//! where the node has no iptables, as one nftables table loaded whole with `nft -f`.

use std::io::Write as _;
use std::process::{Command, Output, Stdio};

use super::error::Error;
use super::rules::{self, NFT_TABLE, Rule};

/// How many copies of one rule teardown deletes at most (node-cache loops until none is left).
const MAX_COPIES: usize = 64;

/// Which tool writes the rules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Backend {
    /// An iptables binary: `iptables` (whatever backend the node's alternative picks),
    /// `iptables-legacy`, `iptables-nft`, or their `ip6tables` twins for IPv6 addresses.
    Iptables(String),
    /// The `nft` binary and the [`NFT_TABLE`] table.
    Nftables,
}

/// The choice of `--netfilter`: a backend, or `auto` (iptables where the node has it, else nft).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Choice {
    /// Where the node has both iptables modes, the one its kubelet's chains are in (as
    /// kube-proxy's images choose); else `iptables` (or `ip6tables`) if on PATH, else `nft`.
    Auto,
    /// `iptables`/`ip6tables`, whichever backend the node's alternative is.
    Iptables,
    /// `iptables-legacy`/`ip6tables-legacy`.
    IptablesLegacy,
    /// `iptables-nft`/`ip6tables-nft`.
    IptablesNft,
    /// One nftables table, `nodelocaldns`, loaded with `nft -f`.
    Nftables,
}

impl Choice {
    /// The backend for addresses of one family (`ipv6`); `auto` looks at `PATH`.
    pub fn backend(self, ipv6: bool) -> Result<Backend, Error> {
        let six = if ipv6 { "ip6tables" } else { "iptables" };
        Ok(match self {
            Choice::Iptables => Backend::Iptables(six.to_owned()),
            Choice::IptablesLegacy => Backend::Iptables(format!("{six}-legacy")),
            Choice::IptablesNft => Backend::Iptables(format!("{six}-nft")),
            Choice::Nftables => Backend::Nftables,
            Choice::Auto if on_path(&format!("{six}-legacy")) && on_path(&format!("{six}-nft")) => {
                match kubelet_mode() {
                    Some(mode) => {
                        tracing::info!(
                            "the kubelet's chains are in iptables' {mode} mode: node-cache's \
                             rules go there too"
                        );
                        Backend::Iptables(format!("{six}-{mode}"))
                    }
                    None if on_path(six) => Backend::Iptables(six.to_owned()),
                    None => Backend::Iptables(format!("{six}-nft")),
                }
            }
            Choice::Auto if on_path(six) => Backend::Iptables(six.to_owned()),
            Choice::Auto if on_path("nft") => Backend::Nftables,
            Choice::Auto => {
                return Err(Error::new(format!(
                    "neither {six} nor nft is on PATH: node-cache's rules need one of them \
                     (or -setupiptables=false)"
                )));
            }
        })
    }
}

/// The iptables mode (`nft` or `legacy`) the node's kubelet writes its chains in, as
/// kube-proxy's and node-cache's images find it: the kubelet makes `KUBE-IPTABLES-HINT` (or,
/// before 1.25, `KUBE-KUBELET-CANARY`) in the mangle table of the mode the node runs, and a
/// rule written in the other mode would sit in a second set of tables beside the node's.
/// nft is asked first and for the mangle table only (that asks the kernel to make nothing);
/// legacy is asked for every table, since naming one would make it. `None` when neither has
/// them (no kubelet, or one older than 1.17).
fn kubelet_mode() -> Option<&'static str> {
    let lists = |program: &str, args: &[&str]| {
        Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .is_ok_and(|out| has_kubelet_chains(&String::from_utf8_lossy(&out.stdout)))
    };
    if ["iptables-nft-save", "ip6tables-nft-save"]
        .iter()
        .any(|save| lists(save, &["-t", "mangle"]))
    {
        return Some("nft");
    }
    if ["iptables-legacy-save", "ip6tables-legacy-save"]
        .iter()
        .any(|save| lists(save, &[]))
    {
        return Some("legacy");
    }
    None
}

/// Whether an `iptables-save` listing declares one of the kubelet's chains.
fn has_kubelet_chains(listing: &str) -> bool {
    listing.lines().any(|line| {
        line.strip_prefix(':')
            .and_then(|rest| rest.split_whitespace().next())
            .is_some_and(|chain| chain == "KUBE-IPTABLES-HINT" || chain == "KUBE-KUBELET-CANARY")
    })
}

/// Whether `program` is an executable file in a directory of `PATH`.
fn on_path(program: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).any(|dir| dir.join(program).is_file())
}

/// What a failure was, for node-cache's `errortype` label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// Another process held the xtables lock past the wait (`iptables_lock`).
    Lock,
    /// Anything else (`iptables`).
    Other,
}

/// The rules on the node, through one backend.
#[derive(Debug)]
pub struct Netfilter {
    backend: Backend,
    rules: Vec<Rule>,
    /// nftables: the table as `nft list` showed it after it was loaded; a different listing
    /// means something changed it.
    listed: Option<String>,
}

impl Netfilter {
    pub fn new(backend: Backend, rules: Vec<Rule>) -> Self {
        Self {
            backend,
            rules,
            listed: None,
        }
    }

    pub fn backend(&self) -> &Backend {
        &self.backend
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// Makes every rule present: iptables inserts each missing one at the top of its chain,
    /// nftables loads the table again when its listing changed. The rules that were missing
    /// (all of them for a table reloaded), or the first failure.
    pub fn ensure(&mut self) -> Result<Vec<Rule>, (Failure, Error)> {
        match &self.backend {
            Backend::Iptables(program) => {
                let mut added = Vec::new();
                for rule in &self.rules {
                    if !iptables_check(program, rule)? {
                        iptables(program, "-I", rule)?;
                        added.push(rule.clone());
                    }
                }
                Ok(added)
            }
            Backend::Nftables => {
                let family = rules::nft_family(&self.rules);
                let now = nft_list(family).map_err(|e| (Failure::Other, e))?;
                if now.is_some() && now == self.listed {
                    return Ok(Vec::new());
                }
                let text = format!(
                    "table {family} {NFT_TABLE}\ndelete table {family} {NFT_TABLE}\n{}",
                    rules::nft_table(&self.rules)
                );
                nft_load(&text).map_err(|e| (Failure::Other, e))?;
                self.listed = nft_list(family).map_err(|e| (Failure::Other, e))?;
                Ok(self.rules.clone())
            }
        }
    }

    /// Removes every rule (every copy of each), or the table; the first failure, after
    /// trying them all.
    pub fn remove(&mut self) -> Result<(), Error> {
        let mut first = None;
        match &self.backend {
            Backend::Iptables(program) => {
                for rule in &self.rules {
                    for _ in 0..MAX_COPIES {
                        match iptables_check(program, rule) {
                            Ok(false) => break,
                            Ok(true) => {
                                if let Err((_, error)) = iptables(program, "-D", rule) {
                                    first.get_or_insert(error);
                                    break;
                                }
                            }
                            Err((_, error)) => {
                                first.get_or_insert(error);
                                break;
                            }
                        }
                    }
                }
            }
            Backend::Nftables => {
                let family = rules::nft_family(&self.rules);
                self.listed = None;
                let text =
                    format!("table {family} {NFT_TABLE}\ndelete table {family} {NFT_TABLE}\n");
                if let Err(error) = nft_load(&text) {
                    first = Some(error);
                }
            }
        }
        first.map_or(Ok(()), Err)
    }
}

/// `PROGRAM -w 5 -t TABLE -C CHAIN SPEC`: whether the rule is there.
fn iptables_check(program: &str, rule: &Rule) -> Result<bool, (Failure, Error)> {
    let out = iptables_output(program, "-C", rule)?;
    match out.status.code() {
        Some(0) => Ok(true),
        // iptables: "Bad rule (does a matching rule exist in that chain?)".
        Some(1) => Ok(false),
        _ => Err(iptables_failure(program, "-C", rule, &out)),
    }
}

/// `PROGRAM -w 5 -t TABLE ACTION CHAIN SPEC`, which must succeed.
fn iptables(program: &str, action: &str, rule: &Rule) -> Result<(), (Failure, Error)> {
    let out = iptables_output(program, action, rule)?;
    if out.status.success() {
        Ok(())
    } else {
        Err(iptables_failure(program, action, rule, &out))
    }
}

fn iptables_output(program: &str, action: &str, rule: &Rule) -> Result<Output, (Failure, Error)> {
    Command::new(program)
        .args([
            "-w",
            "5",
            "-t",
            rule.table.name(),
            action,
            rule.chain.name(),
        ])
        .args(rule.args())
        .stdin(Stdio::null())
        .output()
        .map_err(|error| {
            (
                Failure::Other,
                Error::new(format!("could not run {program}: {error}")),
            )
        })
}

fn iptables_failure(program: &str, action: &str, rule: &Rule, out: &Output) -> (Failure, Error) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let failure = if stderr.contains("holding the xtables lock") {
        Failure::Lock
    } else {
        Failure::Other
    };
    (
        failure,
        Error::new(format!(
            "{program} -t {} {action} {} {}: {} ({})",
            rule.table.name(),
            rule.chain.name(),
            rule.args().join(" "),
            stderr.trim(),
            out.status
        )),
    )
}

/// `nft list table FAMILY nodelocaldns`: the listing, or `None` when there is no such table.
fn nft_list(family: &str) -> Result<Option<String>, Error> {
    let out = Command::new("nft")
        .args(["list", "table", family, NFT_TABLE])
        .stdin(Stdio::null())
        .output()
        .map_err(|error| Error::new(format!("could not run nft: {error}")))?;
    if out.status.success() {
        return Ok(Some(String::from_utf8_lossy(&out.stdout).into_owned()));
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("No such file or directory") {
        Ok(None)
    } else {
        Err(Error::new(format!(
            "nft list table {family} {NFT_TABLE}: {}",
            stderr.trim()
        )))
    }
}

/// `nft -f -` with `text`, in one transaction.
fn nft_load(text: &str) -> Result<(), Error> {
    let mut child = Command::new("nft")
        .args(["-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|error| Error::new(format!("could not run nft: {error}")))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(text.as_bytes())
            .map_err(|error| Error::new(format!("writing to nft -f -: {error}")))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|error| Error::new(format!("waiting for nft: {error}")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(Error::new(format!(
            "nft -f refused the {NFT_TABLE} table: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::has_kubelet_chains;

    #[test]
    fn the_kubelets_chains_are_found_by_their_declarations() {
        let legacy = "# Generated by iptables-save v1.8.9\n*mangle\n:PREROUTING ACCEPT [0:0]\n\
                      :KUBE-IPTABLES-HINT - [0:0]\nCOMMIT\n";
        assert!(has_kubelet_chains(legacy));
        assert!(has_kubelet_chains(
            "*mangle\n:KUBE-KUBELET-CANARY - [0:0]\n"
        ));
        // A rule that names the chain, a longer name and an empty listing are not the kubelet's.
        assert!(!has_kubelet_chains(
            "*mangle\n-A FOO -j KUBE-IPTABLES-HINT\n"
        ));
        assert!(!has_kubelet_chains(
            "*mangle\n:KUBE-IPTABLES-HINTS - [0:0]\n"
        ));
        assert!(!has_kubelet_chains(""));
    }
}
