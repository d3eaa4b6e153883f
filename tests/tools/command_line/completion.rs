//! `clusterdns completion bash|zsh|fish`: scripts the shells accept, completing the commands
//! and flags the binary has, and namespaces, Services and contexts from the objects files on
//! the line or the cluster of the kubeconfig; and `kubectl clusterdns <TAB>` through
//! `kubectl_complete-clusterdns`, with the real kubectl.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::{Ran, binary, commands, run, run_with, tool};
use crate::common::apiserver::ApiServer;
use crate::common::fixture;

/// The fixture's objects, as the line names them (the shells run from the repository root).
const SHOP: &str = "fixtures/shop.json";
/// Its namespaces, and its Services.
const SHOP_NAMESPACES: [&str; 3] = ["default", "kube-system", "shop"];
const SHOP_SERVICES: [&str; 7] = [
    "default/kubernetes",
    "kube-system/kube-dns",
    "shop/checkout",
    "shop/db",
    "shop/empty",
    "shop/web",
    "shop/web-headless",
];
const SHOP_SERVICES_IN_SHOP: [&str; 5] = ["checkout", "db", "empty", "web", "web-headless"];

/// Where the completing process finds its cluster: a kubeconfig (`KUBECONFIG`), or none at
/// all (an empty home, not in a pod) — never the machine's own.
#[derive(Clone, Copy)]
enum Cluster<'a> {
    None,
    Kubeconfig(&'a Path),
}

impl Cluster<'_> {
    /// `command` with this cluster's environment, its home in `home`.
    fn apply<'c>(&self, command: &'c mut Command, home: &Path) -> &'c mut Command {
        command
            .env("HOME", home)
            .env_remove("KUBERNETES_SERVICE_HOST")
            .env_remove("KUBECONFIG");
        if let Cluster::Kubeconfig(path) = self {
            command.env("KUBECONFIG", path);
        }
        command
    }
}

/// The candidates that are not flags (values, commands), sorted.
fn values(offered: &[String]) -> Vec<String> {
    let mut values: Vec<String> = offered
        .iter()
        .filter(|candidate| !candidate.starts_with('-'))
        .cloned()
        .collect();
    values.sort();
    values
}

/// The script for `shell`, written to a file in `dir`.
fn script(shell: &str, dir: &std::path::Path) -> std::path::PathBuf {
    let ran = run(binary(), &["completion", shell]);
    assert_eq!(ran.code, 0, "completion {shell}: {}", ran.stderr);
    assert!(
        !ran.stdout.trim().is_empty(),
        "completion {shell} printed nothing"
    );
    let path = dir.join(format!("clusterdns.{shell}"));
    std::fs::write(&path, &ran.stdout).unwrap();
    path
}

/// What bash's completion function offers for the words `line` (the last one being
/// completed), as bash calls it on TAB: the function `complete -p clusterdns` names, with
/// `COMP_WORDS` and `COMP_CWORD` set.
fn bash_complete(script: &std::path::Path, line: &[&str]) -> Vec<String> {
    bash_complete_in(script, line, Cluster::None)
}

/// [`bash_complete`] with `cluster` for the binary the script calls; it says nothing on
/// stderr, whatever it finds.
fn bash_complete_in(script: &Path, line: &[&str], cluster: Cluster<'_>) -> Vec<String> {
    let words: Vec<String> = line.iter().map(|word| format!("'{word}'")).collect();
    let program = format!(
        r#"source '{script}' || exit 3
spec=$(complete -p clusterdns) || exit 4
function=$(sed -n 's/.* -F \([^ ]*\) .*/\1/p' <<<"$spec")
COMP_WORDS=({words})
COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
COMP_LINE="${{COMP_WORDS[*]}}"
COMP_POINT=${{#COMP_LINE}}
"$function" clusterdns "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}"
printf '%s\n' "${{COMPREPLY[@]}}"
"#,
        script = script.display(),
        words = words.join(" "),
    );
    let home = tempfile::tempdir().unwrap();
    let ran = run_with(cluster.apply(Command::new("bash").args(["-c", &program]), home.path()));
    assert_eq!(ran.code, 0, "completing {line:?}: {}", ran.stderr);
    assert_eq!(ran.stderr, "", "completing {line:?} said something");
    // An empty COMPREPLY prints one empty line.
    let mut offered: Vec<String> = ran
        .stdout
        .lines()
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect();
    offered.sort();
    offered
}

#[test]
fn bash_completes_commands_and_values() {
    let dir = tempfile::tempdir().unwrap();
    let script = script("bash", dir.path());
    let check = run("bash", &["-n", script.to_str().unwrap()]);
    assert_eq!(check.code, 0, "bash -n: {}", check.stderr);

    assert_eq!(
        bash_complete(&script, &["clusterdns", "re"]),
        ["records", "resolv-conf", "resolve-cost"]
    );
    assert_eq!(
        bash_complete(&script, &["clusterdns", "proxy", "tr"]),
        ["trace"]
    );
    assert_eq!(
        bash_complete(&script, &["clusterdns", "resolve-cost", "--out"]),
        ["--output"]
    );
    assert_eq!(
        bash_complete(&script, &["clusterdns", "explain", "--output", ""]),
        ["json", "text", "yaml"]
    );
    // On an empty word, each flag once (its long form); after a dash, the short one.
    assert_eq!(
        bash_complete(&script, &["clusterdns", "completion", ""]),
        ["--help", "bash", "fish", "zsh"]
    );
    assert_eq!(
        bash_complete(&script, &["clusterdns", "completion", "-"]),
        ["-h"]
    );
}

#[test]
fn bash_completes_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let script = script("bash", dir.path());
    for path in commands() {
        let (last, parents) = path.split_last().unwrap();
        let mut line = vec!["clusterdns"];
        line.extend(parents.iter().map(String::as_str));
        line.push(&last[..2]);
        let offered = bash_complete(&script, &line);
        assert!(offered.contains(last), "{line:?}: {offered:?}");
    }
}

/// The namespaces and Services of the `--objects` on the line, in the forms each argument
/// takes.
#[test]
fn bash_completes_namespaces_and_services_from_the_objects() {
    let dir = tempfile::tempdir().unwrap();
    let script = script("bash", dir.path());
    let complete = |line: &[&str]| bash_complete(&script, line);
    assert_eq!(
        complete(&["clusterdns", "explain", "--objects", SHOP, "-n", ""]),
        SHOP_NAMESPACES
    );
    assert_eq!(
        complete(&[
            "clusterdns",
            "explain",
            "--objects",
            SHOP,
            "--namespace",
            "kube"
        ]),
        ["kube-system"]
    );
    // With -n, the Service's NAME; the flags beside it, on an empty word.
    let offered = complete(&["clusterdns", "explain", "--objects", SHOP, "-n", "shop", ""]);
    assert_eq!(values(&offered), SHOP_SERVICES_IN_SHOP);
    assert!(offered.contains(&"--ruleset".to_owned()), "{offered:?}");
    assert_eq!(
        complete(&[
            "clusterdns",
            "explain",
            "-n",
            "shop",
            "--objects",
            SHOP,
            "w"
        ]),
        ["web", "web-headless"]
    );
    // Without, NS/NAME in every namespace (right after `--objects FILE`, the word could be
    // another file too: so after another flag).
    assert_eq!(
        values(&complete(&[
            "clusterdns",
            "explain",
            "--objects",
            SHOP,
            "-o",
            "text",
            ""
        ])),
        SHOP_SERVICES
    );
    assert_eq!(
        complete(&[
            "clusterdns",
            "endpoints",
            "--objects",
            SHOP,
            "--service",
            ""
        ]),
        SHOP_SERVICES
    );
    // Comma-separated: the Service after the last comma.
    assert_eq!(
        complete(&[
            "clusterdns",
            "endpoints",
            "--objects",
            SHOP,
            "--service",
            "shop/web,shop/c"
        ]),
        ["shop/web,shop/checkout"]
    );
    // Every -n: resolve-cost's and resolv-conf's are a pod's namespace.
    assert_eq!(
        complete(&["clusterdns", "resolve-cost", "--objects", SHOP, "-n", "s"]),
        ["shop"]
    );
    assert_eq!(
        complete(&["clusterdns", "endpoints", "--objects", SHOP, "-n", "d"]),
        ["default"]
    );
    // Objects that cannot be read: nothing, and nothing said.
    assert_eq!(
        complete(&[
            "clusterdns",
            "explain",
            "--objects",
            "no-such.json",
            "-n",
            ""
        ]),
        [] as [&str; 0]
    );
}

/// A kubeconfig with contexts `kind-dev` and `prod` (current) for a server at `server`,
/// written into `dir`.
fn kubeconfig(dir: &Path, server: &str) -> PathBuf {
    let path = dir.join("kubeconfig");
    let text = format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: prod\nclusters:\n\
         - name: c\n  cluster:\n    server: {server}\n\
         users:\n- name: u\n  user: {{}}\n\
         contexts:\n\
         - name: kind-dev\n  context:\n    cluster: c\n    user: u\n\
         - name: prod\n  context:\n    cluster: c\n    user: u\n    namespace: shop\n"
    );
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn bash_completes_contexts_from_the_kubeconfig() {
    let dir = tempfile::tempdir().unwrap();
    let script = script("bash", dir.path());
    let file = kubeconfig(dir.path(), "https://127.0.0.1:1");
    // From --kubeconfig on the line, and from KUBECONFIG.
    assert_eq!(
        bash_complete(
            &script,
            &[
                "clusterdns",
                "records",
                "--kubeconfig",
                file.to_str().unwrap(),
                "--context",
                ""
            ]
        ),
        ["kind-dev", "prod"]
    );
    assert_eq!(
        bash_complete_in(
            &script,
            &["clusterdns", "explain", "--context", "k"],
            Cluster::Kubeconfig(&file)
        ),
        ["kind-dev"]
    );
    // No kubeconfig: no context.
    assert_eq!(
        bash_complete(&script, &["clusterdns", "serve", "--context", ""]),
        [] as [&str; 0]
    );
}

/// Without `--objects`, the candidates come from the cluster of the kubeconfig (the API
/// server stand-in, serving the fixture).
#[test]
fn bash_completes_from_the_live_cluster() {
    let api = ApiServer::start();
    api.apply_file(fixture("shop.json"));
    let dir = tempfile::tempdir().unwrap();
    let script = script("bash", dir.path());
    let file = api.kubeconfig(dir.path(), &[("laptop", None), ("other", None)]);
    let cluster = Cluster::Kubeconfig(&file);
    let complete = |line: &[&str]| bash_complete_in(&script, line, cluster);
    assert_eq!(
        complete(&["clusterdns", "explain", "-n", ""]),
        SHOP_NAMESPACES
    );
    assert_eq!(
        values(&complete(&["clusterdns", "explain", "-n", "shop", ""])),
        SHOP_SERVICES_IN_SHOP
    );
    assert_eq!(
        complete(&["clusterdns", "endpoints", "--service", ""]),
        SHOP_SERVICES
    );
    assert_eq!(
        complete(&["clusterdns", "explain", "--context", ""]),
        ["laptop", "other"]
    );
    // --context on the line picks the context read.
    assert_eq!(
        complete(&["clusterdns", "explain", "--context", "other", "-n", "kube"]),
        ["kube-system"]
    );
}

/// A cluster that does not answer: after a short wait, no candidates and nothing said; the
/// commands and flags still complete.
#[test]
fn bash_completes_nothing_from_a_cluster_that_does_not_answer() {
    // A listener nobody accepts from: the connection is made, the request never answered.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let script = script("bash", dir.path());
    let hangs = kubeconfig(
        dir.path(),
        &format!("http://{}", silent.local_addr().unwrap()),
    );
    let started = Instant::now();
    assert_eq!(
        bash_complete_in(
            &script,
            &["clusterdns", "explain", "-n", ""],
            Cluster::Kubeconfig(&hangs)
        ),
        [] as [&str; 0]
    );
    let waited = started.elapsed();
    assert!(waited < Duration::from_secs(8), "waited {waited:?}");
    assert_eq!(
        bash_complete_in(
            &script,
            &["clusterdns", "explain", "--ob"],
            Cluster::Kubeconfig(&hangs)
        ),
        ["--objects"]
    );
    // No cluster at all.
    assert_eq!(
        bash_complete(&script, &["clusterdns", "endpoints", "--service", ""]),
        [] as [&str; 0]
    );
}

/// What zsh's completion function hands zsh for the words `line` (the last one being
/// completed), as on TAB: the script sourced with `compdef` and `_describe` (compsys's)
/// standing in, `words` and `CURRENT` set as compsys sets them; each candidate's value.
fn zsh_complete(zsh: &Path, script: &Path, line: &[&str]) -> Vec<String> {
    let words: Vec<String> = line.iter().map(|word| format!("'{word}'")).collect();
    let program = format!(
        r#"compdef() {{ : }}
_describe() {{ print -rl -- "${{(@P)3}}" }}
source '{script}' || exit 3
words=({words})
CURRENT=${{#words}}
_clap_dynamic_completer_clusterdns
"#,
        script = script.display(),
        words = words.join(" "),
    );
    let home = tempfile::tempdir().unwrap();
    let ran =
        run_with(Cluster::None.apply(Command::new(zsh).args(["-f", "-c", &program]), home.path()));
    assert_eq!(ran.code, 0, "zsh completing {line:?}: {}", ran.stderr);
    assert_eq!(ran.stderr, "", "zsh completing {line:?} said something");
    let value = regex::Regex::new(r"^((?:[^:\\]|\\.)*)").unwrap();
    let mut offered: Vec<String> = ran
        .stdout
        .lines()
        .map(|line| value.captures(line).unwrap()[1].replace('\\', ""))
        .collect();
    offered.sort();
    offered
}

#[test]
fn zsh_completes_commands_namespaces_and_services() {
    let dir = tempfile::tempdir().unwrap();
    let script = script("zsh", dir.path());
    let text = std::fs::read_to_string(&script).unwrap();
    assert!(text.starts_with("#compdef clusterdns"), "{text:.80}");
    let Some(zsh) = tool("zsh", "zsh_completes_commands_namespaces_and_services") else {
        return;
    };
    let check = run(&zsh, &["-n", script.to_str().unwrap()]);
    assert_eq!(check.code, 0, "zsh -n: {}", check.stderr);
    let complete = |line: &[&str]| zsh_complete(&zsh, &script, line);
    assert_eq!(
        complete(&["clusterdns", "re"]),
        ["records", "resolv-conf", "resolve-cost"]
    );
    assert_eq!(
        complete(&["clusterdns", "explain", "--output", ""]),
        ["json", "text", "yaml"]
    );
    assert_eq!(
        complete(&["clusterdns", "explain", "--objects", SHOP, "-n", ""]),
        SHOP_NAMESPACES
    );
    assert_eq!(
        values(&complete(&[
            "clusterdns",
            "explain",
            "--objects",
            SHOP,
            "-n",
            "shop",
            ""
        ])),
        SHOP_SERVICES_IN_SHOP
    );
    assert_eq!(
        complete(&[
            "clusterdns",
            "endpoints",
            "--objects",
            SHOP,
            "--service",
            ""
        ]),
        SHOP_SERVICES
    );
}

#[test]
fn fish_completes_commands_and_values() {
    let dir = tempfile::tempdir().unwrap();
    let script = script("fish", dir.path());
    let Some(fish) = tool("fish", "fish_completes_commands_and_values") else {
        return;
    };
    let check = run(&fish, &["-n", script.to_str().unwrap()]);
    assert_eq!(check.code, 0, "fish -n: {}", check.stderr);
    let file = kubeconfig(dir.path(), "https://127.0.0.1:1");
    // fish's own completion, as on TAB: `complete -C LINE` prints `candidate<TAB>description`.
    let complete = |line: &str| -> Vec<String> {
        let program = format!("source '{}'; complete -C '{line}'", script.display());
        let home = tempfile::tempdir().unwrap();
        let ran = run_with(Cluster::Kubeconfig(&file).apply(
            Command::new(&fish).args(["--no-config", "-c", &program]),
            home.path(),
        ));
        assert_eq!(ran.code, 0, "fish completing {line:?}: {}", ran.stderr);
        assert_eq!(ran.stderr, "", "fish completing {line:?} said something");
        let mut offered: Vec<String> = ran.stdout.lines().map(str::to_owned).collect();
        offered.sort();
        offered
    };
    let first = |offered: Vec<String>| -> Vec<String> {
        offered
            .iter()
            .map(|line| line.split('\t').next().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        first(complete("clusterdns re")),
        ["records", "resolv-conf", "resolve-cost"]
    );
    assert_eq!(
        first(complete("clusterdns records --format ")),
        ["json", "yaml", "zone"]
    );
    assert_eq!(
        first(complete(&format!(
            "clusterdns explain --objects {SHOP} -n "
        ))),
        SHOP_NAMESPACES
    );
    assert_eq!(
        values(&first(complete(&format!(
            "clusterdns explain --objects {SHOP} -n shop "
        )))),
        SHOP_SERVICES_IN_SHOP
    );
    assert_eq!(
        first(complete(&format!(
            "clusterdns endpoints --objects {SHOP} --service shop/w"
        ))),
        ["shop/web", "shop/web-headless"]
    );
    // The contexts of KUBECONFIG, the current one said to be.
    assert_eq!(
        complete("clusterdns explain --context "),
        ["kind-dev", "prod\tcurrent context"]
    );
}

#[test]
fn an_unknown_shell_is_a_usage_error() {
    let ran = run(binary(), &["completion", "tcsh"]);
    assert_eq!(ran.code, 2);
    assert!(
        ran.stderr.contains("invalid value 'tcsh'") && ran.stderr.contains("bash, zsh, fish"),
        "{}",
        ran.stderr
    );
}

/// A directory with `kubectl-clusterdns` and `kubectl_complete-clusterdns`, links to the
/// binary under test, as the documentation has them installed.
fn plugin_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for name in ["kubectl-clusterdns", "kubectl_complete-clusterdns"] {
        std::os::unix::fs::symlink(binary(), dir.path().join(name)).unwrap();
    }
    dir
}

/// `kubectl __complete ARGS...` (what kubectl's shell scripts run on TAB) with `plugins` and
/// kubectl's own directory on `PATH`: the candidates and cobra's directive (`:4`).
fn kubectl_complete(
    kubectl: &Path,
    plugins: &Path,
    cluster: Cluster<'_>,
    args: &[&str],
) -> (Vec<String>, String) {
    let path = std::env::join_paths([plugins, kubectl.parent().unwrap()]).unwrap();
    let home = tempfile::tempdir().unwrap();
    let mut command = Command::new(kubectl);
    command.arg("__complete").args(args).env("PATH", path);
    let ran: Ran = run_with(cluster.apply(&mut command, home.path()));
    assert_eq!(ran.code, 0, "kubectl __complete {args:?}: {}", ran.stderr);
    // kubectl's own debug lines go to stderr; nothing of ours may.
    assert!(
        !ran.stderr.contains("clusterdns:") && !ran.stderr.contains("rror"),
        "kubectl __complete {args:?}: {}",
        ran.stderr
    );
    let mut lines: Vec<String> = ran.stdout.lines().map(str::to_owned).collect();
    let directive = lines.pop().unwrap_or_default();
    let mut offered: Vec<String> = lines
        .iter()
        .map(|line| line.split('\t').next().unwrap().to_owned())
        .collect();
    offered.sort();
    (offered, directive)
}

#[test]
fn kubectl_completes_the_plugin_through_kubectl_complete_clusterdns() {
    let Some(kubectl) =
        super::plugin::kubectl("kubectl_completes_the_plugin_through_kubectl_complete_clusterdns")
    else {
        return;
    };
    let plugins = plugin_dir();
    let complete =
        |cluster, args: &[&str]| kubectl_complete(&kubectl, plugins.path(), cluster, args);
    let none = Cluster::None;
    let (offered, directive) = complete(none, &["clusterdns", "ex"]);
    assert_eq!(
        (offered, directive.as_str()),
        (vec!["explain".to_owned()], ":4")
    );
    assert_eq!(
        complete(
            none,
            &["clusterdns", "explain", "--objects", SHOP, "-n", ""]
        )
        .0,
        SHOP_NAMESPACES
    );
    assert_eq!(
        values(
            &complete(
                none,
                &["clusterdns", "explain", "--objects", SHOP, "-n", "shop", ""]
            )
            .0
        ),
        SHOP_SERVICES_IN_SHOP
    );
    assert_eq!(
        complete(
            none,
            &[
                "clusterdns",
                "endpoints",
                "--objects",
                SHOP,
                "--service",
                ""
            ]
        )
        .0,
        SHOP_SERVICES
    );
    // A path is completed by the plugin, without a space after a directory.
    let (offered, directive) = complete(
        none,
        &["clusterdns", "explain", "--objects", "fixtures/shop.j"],
    );
    assert_eq!((offered, directive.as_str()), (vec![SHOP.to_owned()], ":4"));
    let (offered, directive) = complete(none, &["clusterdns", "explain", "--objects", "fixt"]);
    assert_eq!(
        (offered, directive.as_str()),
        (vec!["fixtures/".to_owned()], ":6")
    );

    // A kubeconfig whose server is not there: no namespace, nothing said; the commands and
    // flags still complete.
    let dir = tempfile::tempdir().unwrap();
    let nowhere = kubeconfig(dir.path(), "https://127.0.0.1:1");
    let cluster = Cluster::Kubeconfig(&nowhere);
    let (offered, directive) = complete(cluster, &["clusterdns", "explain", "-n", ""]);
    assert_eq!((offered, directive.as_str()), (vec![], ":4"));
    assert_eq!(
        complete(cluster, &["clusterdns", "explain", "--ob"]).0,
        ["--objects"]
    );
    assert_eq!(
        complete(cluster, &["clusterdns", "explain", "--context", ""]).0,
        ["kind-dev", "prod"]
    );

    // Without kubectl_complete-clusterdns, kubectl completes nothing of the plugin's.
    std::fs::remove_file(plugins.path().join("kubectl_complete-clusterdns")).unwrap();
    assert_eq!(complete(none, &["clusterdns", "ex"]).0, [] as [&str; 0]);
}

/// Run directly as kubectl runs it: the protocol's lines, and nothing on stderr.
#[test]
fn kubectl_complete_clusterdns_answers_cobras_protocol() {
    let plugins = plugin_dir();
    let completer = plugins.path().join("kubectl_complete-clusterdns");
    let home = tempfile::tempdir().unwrap();
    let ran = |args: &[&str]| {
        run_with(Cluster::None.apply(Command::new(&completer).args(args), home.path()))
    };
    let answer = ran(&["explain", "--objects", SHOP, "-n", "s"]);
    assert_eq!(
        (answer.code, answer.stdout.as_str(), answer.stderr.as_str()),
        (0, "shop\n:4\n", "")
    );
    // Descriptions after a tab; no word at all is an empty one.
    let answer = ran(&[]);
    assert!(
        answer.stdout.contains("explain\tOne Service across pods")
            && answer.stdout.ends_with("\n:4\n"),
        "{}",
        answer.stdout
    );
    let answer = ran(&["explain", "-n", ""]);
    assert_eq!(
        (answer.stdout.as_str(), answer.stderr.as_str()),
        (":4\n", "")
    );
}
