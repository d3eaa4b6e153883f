//! `clusterdns completion SHELL` and `clusterdns man`: shell completions and manual pages,
//! generated from the command line's own definition, so they cannot drift from it.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, CommandFactory as _, ValueEnum};

use super::Cli;

/// Arguments of `completion`.
#[derive(Debug, Args)]
pub(super) struct CompletionArgs {
    /// The shell to complete in.
    #[arg(value_enum)]
    shell: Shell,
}

/// The shells completions are written for.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum Shell {
    /// bash (with or without the bash-completion package).
    Bash,
    /// zsh.
    Zsh,
    /// fish.
    Fish,
}

impl Shell {
    /// clap_complete's adapter for the shell: its script, and its side of the protocol.
    fn completer(self) -> &'static dyn clap_complete::env::EnvCompleter {
        match self {
            Self::Bash => &clap_complete::env::Bash,
            Self::Zsh => &clap_complete::env::Zsh,
            Self::Fish => &clap_complete::env::Fish,
        }
    }
}

/// Arguments of `man`.
#[derive(Debug, Args)]
pub(super) struct ManArgs {
    /// The command whose page to print (`man explain`, `man proxy trace`); without it,
    /// clusterdns.1.
    #[arg(value_name = "COMMAND", conflicts_with = "out")]
    command: Vec<String>,
    /// Write clusterdns.1 and one page per subcommand (clusterdns-records.1,
    /// clusterdns-proxy-trace.1, ...) into this directory; without it, print a page.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

/// The script completing `clusterdns` (or, when run as kubectl's plugin, the
/// `kubectl-clusterdns` it was run as) in the shell asked for: at each TAB it runs the binary
/// it was printed by (as that was run: by its name on `PATH`, or by its path) for the
/// candidates, so that namespaces, Services and contexts complete from the objects or the
/// cluster (see complete.rs).
pub(super) fn completion(args: &CompletionArgs, plugin: bool) -> anyhow::Result<ExitCode> {
    let name = if plugin {
        super::PLUGIN_NAME
    } else {
        "clusterdns"
    };
    let mut script = Vec::new();
    args.shell
        .completer()
        .write_registration(
            super::complete::ENV_VAR,
            name,
            name,
            &completer_path().to_string_lossy(),
            &mut script,
        )
        .context("writing the completion script")?;
    out!("{}", String::from_utf8_lossy(&script));
    Ok(ExitCode::SUCCESS)
}

/// How the script runs the binary: as the binary was run, a name found on `PATH` as it is
/// (it follows the binary there when it is upgraded), a relative path made absolute (the
/// script is used from other directories).
fn completer_path() -> PathBuf {
    let argv0 = std::env::args_os()
        .next()
        .map(PathBuf::from)
        .filter(|path| !path.as_os_str().is_empty());
    match argv0 {
        Some(path) if path.components().count() == 1 => path,
        Some(path) if path.is_absolute() => path,
        Some(path) => std::env::current_dir()
            .map(|dir| {
                // `./clusterdns` is `DIR/clusterdns`.
                let relative = path
                    .components()
                    .filter(|part| *part != std::path::Component::CurDir);
                dir.join(relative.collect::<PathBuf>())
            })
            .unwrap_or(path),
        None => std::env::current_exe().unwrap_or_else(|_| PathBuf::from("clusterdns")),
    }
}

/// `clusterdns version`: what `--version` prints.
pub(super) fn version() -> anyhow::Result<ExitCode> {
    outln!("clusterdns {}", env!("CARGO_PKG_VERSION"));
    Ok(ExitCode::SUCCESS)
}

/// The manual pages: the top page to stdout, or every page into `--out DIR`.
pub(super) fn man(args: &ManArgs) -> anyhow::Result<ExitCode> {
    let mut command = Cli::command().disable_help_subcommand(true);
    command.build();
    match &args.out {
        None => {
            let path: Vec<&str> = args.command.iter().map(String::as_str).collect();
            let page = render(named(command, &args.command)?, &path)?;
            out!("{page}");
        }
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("--out {}: cannot create the directory", dir.display()))?;
            write_pages(command, &[], dir)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The subcommand of `command` that `path` names (`["proxy", "trace"]`); `command` itself
/// for an empty path.
fn named(command: clap::Command, path: &[String]) -> anyhow::Result<clap::Command> {
    let mut current = command;
    let mut walked = Vec::new();
    for word in path {
        let known: Vec<String> = current
            .get_subcommands()
            .filter(|sub| !sub.is_hide_set())
            .map(|sub| sub.get_name().to_owned())
            .collect();
        let Some(next) = current.find_subcommand(word).cloned() else {
            let within = if walked.is_empty() {
                String::new()
            } else {
                format!(" {}", walked.join(" "))
            };
            let hint = crate::suggest::closest(word, known.iter().map(String::as_str))
                .map(|close| format!("; did you mean `man{within} {close}`?"))
                .unwrap_or_default();
            anyhow::bail!(
                "no command `{word}` in clusterdns{within} (it has {}){hint}",
                known.join(", ")
            );
        };
        walked.push(word.as_str());
        current = next;
    }
    Ok(current)
}

/// The page of `command` (a built command, whose subcommands are named `clusterdns-NAME`).
fn page_of(command: clap::Command) -> clap_mangen::Man {
    clap_mangen::Man::new(command)
        .source(format!("clusterdns {}", env!("CARGO_PKG_VERSION")))
        .manual("clusterdns manual")
}

/// The page of `command`, at `path` in the tree: clap_mangen's sections, then EXIT STATUS and
/// EXAMPLES ([`super::manual`]) before VERSION.
fn render(command: clap::Command, path: &[&str]) -> anyhow::Result<String> {
    let mut page = Vec::new();
    page_of(command).render(&mut page)?;
    let page = String::from_utf8(page)?;
    let Some(manual) = super::manual::of(path) else {
        return Ok(page);
    };
    // Rendered with apostrophes as the page's own (`\*(Aq`), whose definition the page
    // already opens with.
    let sections = manual.roff().render();
    let sections = sections
        .split_once(".el .ds Aq '\n")
        .map_or(sections.as_str(), |(_, rest)| rest);
    Ok(match page.find("\n.SH VERSION\n") {
        Some(at) => format!("{}\n{sections}{}", &page[..at], &page[at + 1..]),
        None => format!("{page}{sections}"),
    })
}

/// Writes the page of `command` (at `path` in the tree) and of each of its subcommands,
/// nested ones included, into `dir`, and names each file written on stdout.
fn write_pages(command: clap::Command, path: &[&str], dir: &Path) -> anyhow::Result<()> {
    let subcommands: Vec<clap::Command> = command
        .get_subcommands()
        .filter(|sub| !sub.is_hide_set())
        .cloned()
        .collect();
    let file = dir.join(page_of(command.clone()).get_filename());
    let page = render(command, path)?;
    std::fs::write(&file, page)
        .with_context(|| format!("--out {}: cannot write a page", dir.display()))?;
    outln!("{}", file.display());
    for sub in &subcommands {
        let mut sub_path = path.to_vec();
        sub_path.push(sub.get_name());
        write_pages(sub.clone(), &sub_path, dir)?;
    }
    Ok(())
}
