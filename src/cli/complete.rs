//! Completion at TAB, answered by the binary itself: the shells' scripts (`completion SHELL`)
//! call it back with the line (clap_complete's dynamic engine), and kubectl runs it as
//! `kubectl_complete-clusterdns` (cobra's `__complete` protocol). Commands, flags and fixed
//! values come from the command line's definition; namespaces, Services and contexts from
//! the objects files on the line, or else from the cluster of its `--kubeconfig` and
//! `--context`, given [`CLUSTER_TIMEOUT`]. A completion offers what it can or nothing: it
//! never prints an error into the terminal the user is typing in.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::OnceLock;
use std::time::Duration;

use clap_complete::engine::CompletionCandidate;

use crate::model::Cluster;
use crate::source::live::{self, ListKind, Wanted};

/// The environment variable the shells' scripts set to the shell's name when they call the
/// binary back for candidates (clap_complete's `COMPLETE`, named for us alone).
pub(super) const ENV_VAR: &str = "_CLUSTERDNS_COMPLETE";

/// The name kubectl (1.26 and later) runs for the candidates of `kubectl clusterdns ...`.
pub(super) const KUBECTL_COMPLETER: &str = "kubectl_complete-clusterdns";

/// How long reading the cluster for candidates may take, connecting included.
const CLUSTER_TIMEOUT: Duration = Duration::from_secs(2);

/// cobra's `ShellCompDirectiveNoSpace`: the shell adds no space after the candidate.
const DIRECTIVE_NO_SPACE: u8 = 2;
/// cobra's `ShellCompDirectiveNoFileComp`: the shell offers no file names instead.
const DIRECTIVE_NO_FILE_COMP: u8 = 4;

/// The line being completed: its words (the program's name first) and the index of the
/// word at the cursor, whose value is not yet what the user means.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Line {
    words: Vec<String>,
    current: usize,
}

/// The line of this process's completion request (none outside one).
static LINE: OnceLock<Line> = OnceLock::new();

fn line() -> &'static Line {
    static EMPTY: Line = Line {
        words: Vec::new(),
        current: 0,
    };
    LINE.get().unwrap_or(&EMPTY)
}

impl Line {
    pub(super) fn new(words: Vec<String>, current: usize) -> Self {
        Self { words, current }
    }

    /// The values given to the flag `--long` (or `-short`) on the line, in order: `--long V`,
    /// `--long=V`, `-s V`, `-sV` and `-s=V`; with `many`, each word after the flag up to the
    /// next flag (clap's `num_args = 1..`). Neither the word at the cursor nor anything after
    /// `--` counts.
    fn values(&self, long: &str, short: Option<char>, many: bool) -> Vec<&str> {
        let long = format!("--{long}");
        let short = short.map(|short| format!("-{short}"));
        let mut found = Vec::new();
        let mut index = 1;
        while index < self.words.len() {
            let word = self.words[index].as_str();
            if word == "--" {
                break;
            }
            let attached = word
                .strip_prefix(long.as_str())
                .and_then(|rest| rest.strip_prefix('='))
                .or_else(|| {
                    let rest = word.strip_prefix(short.as_deref()?)?;
                    (!rest.is_empty()).then(|| rest.strip_prefix('=').unwrap_or(rest))
                });
            let separate = word == long || short.as_deref() == Some(word);
            if let Some(value) = attached.filter(|_| index != self.current) {
                found.push(value);
            }
            index += 1;
            if separate {
                while let Some(next) = self.words.get(index) {
                    if index == self.current || next.starts_with('-') {
                        break;
                    }
                    found.push(next.as_str());
                    index += 1;
                    if !many {
                        break;
                    }
                }
            }
        }
        found
    }

    /// The last value of a flag taking one.
    fn value(&self, long: &str, short: Option<char>) -> Option<&str> {
        self.values(long, short, false).last().copied()
    }

    /// `-n`/`--namespace`.
    fn namespace(&self) -> Option<&str> {
        self.value("namespace", Some('n'))
    }

    /// Where the candidates come from: the `--objects` files, else the cluster.
    fn objects(&self) -> Vec<PathBuf> {
        self.values("objects", None, true)
            .into_iter()
            .map(PathBuf::from)
            .collect()
    }

    fn kubeconfig(&self) -> Option<&Path> {
        self.value("kubeconfig", None).map(Path::new)
    }
}

/// The objects of `line` that `wanted` names: its `--objects` files, or else what the
/// cluster of its `--kubeconfig` and `--context` lists; `None` on any failure.
fn objects_of(line: &Line, wanted: &[Wanted]) -> Option<Cluster> {
    let files = line.objects();
    if !files.is_empty() {
        return crate::source::file::read_objects(&files)
            .ok()
            .map(|loaded| loaded.cluster);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ok()?;
    let read = runtime.block_on(async {
        let read = async {
            let connection = live::connect(line.kubeconfig(), line.value("context", None)).await?;
            let mut loader = crate::source::file::Loader::new();
            for what in wanted {
                let mut failed = None;
                connection
                    .list(what, |text, _| {
                        if let Err(error) = loader.add_text(text, Path::new(what.kind.resource())) {
                            failed.get_or_insert(error);
                        }
                    })
                    .await?;
                if let Some(error) = failed {
                    return Err(anyhow::Error::from(error));
                }
            }
            Ok::<_, anyhow::Error>(loader.finish_as_given().cluster)
        };
        tokio::time::timeout(CLUSTER_TIMEOUT, read).await
    });
    // A request still under way (a resolver's thread) is left behind, not waited for.
    runtime.shutdown_background();
    read.ok()?.ok()
}

/// The namespaces of the line's objects.
fn namespace_names(line: &Line) -> Vec<String> {
    objects_of(line, &[Wanted::all(ListKind::Namespaces)])
        .map(|cluster| cluster.namespaces.into_keys().collect())
        .unwrap_or_default()
}

/// The Services of the line's objects: `NAME` in the namespace of `-n`, else `NS/NAME` in
/// every namespace.
fn service_names(line: &Line) -> Vec<String> {
    let namespace = line.namespace();
    let wanted = Wanted::in_namespace(ListKind::Services, namespace);
    let Some(cluster) = objects_of(line, &[wanted]) else {
        return Vec::new();
    };
    cluster
        .services
        .into_keys()
        .filter_map(|key| match namespace {
            Some(namespace) => (*key.namespace == *namespace).then(|| key.name.to_string()),
            None => Some(format!("{}/{}", key.namespace, key.name)),
        })
        .collect()
}

/// The contexts of the line's kubeconfig, the current one said to be.
fn context_names(line: &Line) -> Vec<CompletionCandidate> {
    let Ok((names, current)) = live::context_names(line.kubeconfig()) else {
        return Vec::new();
    };
    names
        .into_iter()
        .map(|name| {
            let is_current = current.as_deref() == Some(name.as_str());
            CompletionCandidate::new(name).help(is_current.then(|| "current context".into()))
        })
        .collect()
}

/// Those of `candidates` that begin with what is typed.
fn starting_with(
    typed: &OsStr,
    candidates: impl IntoIterator<Item = CompletionCandidate>,
) -> Vec<CompletionCandidate> {
    let typed = typed.to_string_lossy();
    candidates
        .into_iter()
        .filter(|candidate| candidate.get_value().to_string_lossy().starts_with(&*typed))
        .collect()
}

/// `-n/--namespace`'s completer: the namespaces of the line's objects.
pub(super) fn namespaces(typed: &OsStr) -> Vec<CompletionCandidate> {
    starting_with(
        typed,
        namespace_names(line())
            .into_iter()
            .map(CompletionCandidate::new),
    )
}

/// The completer of an argument naming a Service: `NS/NAME`, or `NAME` with `-n NS`.
pub(super) fn services(typed: &OsStr) -> Vec<CompletionCandidate> {
    starting_with(
        typed,
        service_names(line())
            .into_iter()
            .map(CompletionCandidate::new),
    )
}

/// `--context`'s completer: the kubeconfig's contexts.
pub(super) fn contexts(typed: &OsStr) -> Vec<CompletionCandidate> {
    starting_with(typed, context_names(line()))
}

/// Answers a completion request, if this run is one: run as [`KUBECTL_COMPLETER`], or
/// called back by a shell's script with [`ENV_VAR`] set. `args` are the process's own.
pub(super) fn answer(args: &[OsString]) -> Option<ExitCode> {
    let argv0 = args.first().map(Path::new);
    if argv0
        .and_then(Path::file_name)
        .is_some_and(|name| name == KUBECTL_COMPLETER)
    {
        return Some(kubectl(args.get(1..).unwrap_or_default()));
    }
    let shell = std::env::var(ENV_VAR).ok()?;
    if shell.is_empty() || shell == "0" {
        return None;
    }
    Some(from_shell(&shell, args))
}

/// A shell script's request: `ENV_VAR=SHELL clusterdns -- WORDS...`, which clap_complete
/// answers in that shell's form. A failure exits with status 1 and says nothing (the
/// scripts then offer nothing).
fn from_shell(shell: &str, args: &[OsString]) -> ExitCode {
    let plugin = super::run_as_plugin(args.first().map(OsString::as_os_str));
    let words: Vec<String> = args
        .iter()
        .skip_while(|arg| *arg != "--")
        .skip(1)
        .map(|word| word.to_string_lossy().into_owned())
        .collect();
    // bash and zsh say which word the cursor is in; fish cuts the line at the cursor.
    let current = match shell {
        "bash" | "zsh" => std::env::var("_CLAP_COMPLETE_INDEX")
            .ok()
            .and_then(|index| index.parse().ok())
            .unwrap_or(words.len().saturating_sub(1)),
        _ => words.len().saturating_sub(1),
    };
    let _ = LINE.set(Line::new(words, current));
    let current_dir = std::env::current_dir().ok();
    let answered = clap_complete::CompleteEnv::with_factory(move || super::command_for(plugin))
        .var(ENV_VAR)
        .try_complete(args.iter().cloned(), current_dir.as_deref());
    match answered {
        Ok(_) => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    }
}

/// kubectl's request (`kubectl __complete clusterdns WORDS...` runs
/// `kubectl_complete-clusterdns WORDS...`, the last word the one at the cursor, maybe
/// empty): the candidates, one a line with a tab before any description, then `:N`, cobra's
/// directive (no file names: the paths a flag takes are among the candidates).
fn kubectl(words: &[OsString]) -> ExitCode {
    let mut line = vec![super::PLUGIN_NAME.to_owned()];
    line.extend(words.iter().map(|word| word.to_string_lossy().into_owned()));
    if line.len() == 1 {
        line.push(String::new());
    }
    let current = line.len() - 1;
    let _ = LINE.set(Line::new(line.clone(), current));
    let mut command = super::command_for(true);
    let current_dir = std::env::current_dir().ok();
    let candidates = clap_complete::engine::complete(
        &mut command,
        line.into_iter().map(OsString::from).collect(),
        current,
        current_dir.as_deref(),
    )
    .unwrap_or_default();
    let mut text = String::new();
    let mut directive = DIRECTIVE_NO_FILE_COMP;
    for candidate in candidates
        .iter()
        .filter(|candidate| !candidate.is_hide_set())
    {
        let value = candidate.get_value().to_string_lossy();
        // cobra reads a line per candidate: one with a line break in it cannot be offered.
        if value.contains(['\n', '\t']) {
            continue;
        }
        if value.ends_with('/') {
            directive |= DIRECTIVE_NO_SPACE;
        }
        text.push_str(&value);
        if let Some(help) = candidate.get_help() {
            let help = help.to_string();
            let first = help.lines().next().unwrap_or_default();
            if !first.is_empty() {
                text.push('\t');
                text.push_str(first);
            }
        }
        text.push('\n');
    }
    text.push_str(&format!(":{directive}\n"));
    // kubectl reads what it can; a closed pipe leaves nothing to say.
    let _ = super::write_stdout(format_args!("{text}"));
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(words: &[&str], current: usize) -> Line {
        Line::new(
            words.iter().map(|word| (*word).to_owned()).collect(),
            current,
        )
    }

    #[test]
    fn flag_values_in_every_form() {
        let words = [
            "clusterdns",
            "explain",
            "-n",
            "shop",
            "--objects",
            "a.json",
            "b.json",
            "--kubeconfig=k",
            "--objects=c.json",
            "",
        ];
        let given = line(&words, 9);
        assert_eq!(given.namespace(), Some("shop"));
        assert_eq!(
            given.values("objects", None, true),
            ["a.json", "b.json", "c.json"]
        );
        assert_eq!(given.kubeconfig(), Some(Path::new("k")));
        assert_eq!(given.value("context", None), None);
        for (word, namespace) in [
            ("-nshop", "shop"),
            ("-n=shop", "shop"),
            ("--namespace=x", "x"),
        ] {
            assert_eq!(
                line(&["clusterdns", "explain", word, ""], 3).namespace(),
                Some(namespace),
                "{word}"
            );
        }
    }

    #[test]
    fn the_word_at_the_cursor_is_no_value_yet() {
        // `-n sh<TAB>`: what is typed is not yet the namespace.
        let typing = line(&["clusterdns", "explain", "-n", "sh"], 3);
        assert_eq!(typing.namespace(), None);
        // `--objects a.json <TAB>`: the word at the cursor is not an objects file.
        let objects = line(&["clusterdns", "explain", "--objects", "a.json", "x"], 4);
        assert_eq!(objects.objects(), [PathBuf::from("a.json")]);
        // A flag's value after the cursor still counts; `--` ends the flags.
        let after = line(
            &["clusterdns", "explain", "", "-n", "shop", "--", "-n", "x"],
            2,
        );
        assert_eq!(after.values("namespace", Some('n'), false), ["shop"]);
    }

    #[test]
    fn objects_files_give_namespaces_and_services() {
        let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/shop.json");
        let all = line(&["clusterdns", "explain", "--objects", fixture, ""], 4);
        assert_eq!(namespace_names(&all), ["default", "kube-system", "shop"]);
        assert!(service_names(&all).contains(&"shop/web".to_owned()));
        let shop = line(
            &[
                "clusterdns",
                "explain",
                "--objects",
                fixture,
                "-n",
                "shop",
                "",
            ],
            6,
        );
        assert_eq!(
            service_names(&shop),
            ["checkout", "db", "empty", "web", "web-headless"]
        );
        let missing = line(
            &["clusterdns", "explain", "--objects", "/nonexistent", ""],
            4,
        );
        assert!(namespace_names(&missing).is_empty());
    }

    /// Every argument that names a namespace, a Service or a context has its completer
    /// (a new `-n` without one would complete file names).
    #[test]
    fn every_namespace_service_and_context_argument_completes() {
        fn walk(command: &clap::Command, path: &str, names: &mut Vec<String>) {
            for arg in command.get_arguments() {
                let names_one = arg
                    .get_long()
                    .is_some_and(|long| ["namespace", "service", "context"].contains(&long))
                    || arg.get_value_names().is_some_and(|values| {
                        values
                            .iter()
                            .any(|value| *value == "NS" || *value == "NS/NAME")
                    });
                if names_one {
                    let has = arg
                        .get::<clap_complete::engine::ArgValueCompleter>()
                        .is_some();
                    assert!(has, "{path} {}: no completer", arg.get_id());
                    names.push(format!("{path} {}", arg.get_id()));
                }
            }
            for sub in command.get_subcommands() {
                walk(sub, &format!("{path} {}", sub.get_name()), names);
            }
        }
        let mut names = Vec::new();
        walk(&super::super::command_for(false), "clusterdns", &mut names);
        for expected in [
            "clusterdns explain service",
            "clusterdns explain namespace",
            "clusterdns endpoints service",
            "clusterdns endpoints namespace",
            "clusterdns resolve-cost namespace",
            "clusterdns resolv-conf namespace",
            "clusterdns records context",
        ] {
            assert!(
                names.iter().any(|name| name == expected),
                "{expected}: {names:?}"
            );
        }
    }
}
