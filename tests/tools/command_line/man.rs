//! `clusterdns man`: a page per command, rendered by groff and man without complaint, each
//! naming every flag of its command.

use std::process::Command;

use clap::CommandFactory as _;
use clusterdns::cli::manual::{self, Check};

use super::{binary, commands, long_flags, run, run_with, tool};

#[test]
fn man_writes_a_page_per_command_with_every_flag() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("man1");
    let ran = run(binary(), &["man", "--out", out.to_str().unwrap()]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);

    let mut pages = vec![(vec![], "clusterdns.1".to_owned())];
    for path in commands() {
        pages.push((path.clone(), format!("clusterdns-{}.1", path.join("-"))));
    }
    let mut written: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    written.sort();
    let mut expected: Vec<String> = pages.iter().map(|(_, file)| file.clone()).collect();
    expected.sort();
    assert_eq!(written, expected);
    // It names what it wrote, the top page first.
    let listed: Vec<&str> = ran.stdout.lines().collect();
    assert_eq!(listed.len(), pages.len(), "{}", ran.stdout);
    assert_eq!(listed[0], out.join("clusterdns.1").to_str().unwrap());

    let groff = tool("groff", "man_writes_a_page_per_command_with_every_flag");
    let man = tool("man", "man_writes_a_page_per_command_with_every_flag");
    for (path, file) in &pages {
        let page = out.join(file);
        let title = if path.is_empty() {
            "clusterdns".to_owned()
        } else {
            format!("clusterdns-{}", path.join("-"))
        };
        let source = std::fs::read_to_string(&page).unwrap();
        assert!(
            source.contains(&format!(".TH {title} 1 ")),
            "{file}:\n{source}"
        );
        if let Some(groff) = &groff {
            // -ww: every warning; -z: no output, only the diagnostics.
            let check = run(
                groff,
                &["-man", "-Tutf8", "-ww", "-z", page.to_str().unwrap()],
            );
            assert_eq!(check.code, 0, "groff {file}: {}", check.stderr);
            assert_eq!(check.stderr, "", "groff warns about {file}");
        }
        let text = match &man {
            // The page as `man -l` shows it, plain text when not on a terminal.
            Some(man) => {
                let shown = run_with(
                    Command::new(man)
                        .args(["-l", page.to_str().unwrap()])
                        .env("MANPAGER", "cat")
                        .env("MANWIDTH", "200"),
                );
                assert_eq!(shown.code, 0, "man -l {file}: {}", shown.stderr);
                assert!(
                    shown.stdout.contains(&format!("{title}(1)")),
                    "{file}:\n{}",
                    shown.stdout
                );
                shown.stdout
            }
            None => source.replace("\\-", "-"),
        };
        for flag in long_flags(path) {
            assert!(text.contains(&flag), "{file} does not show {flag}:\n{text}");
        }
        // Every page has its sections, and shows each example line whole (unfilled: never
        // broken or hyphenated, so it copies as it is).
        for section in [
            ".SH NAME",
            ".SH SYNOPSIS",
            ".SH EXAMPLES",
            ".SH \"EXIT STATUS\"",
        ] {
            assert!(source.contains(section), "{file} has no {section}");
        }
        let words: Vec<&str> = path.iter().map(String::as_str).collect();
        let manual = manual::of(&words).unwrap_or_else(|| panic!("{file}: no examples"));
        for example in manual.examples {
            let shown = if man.is_some() {
                text.clone()
            } else {
                source.replace("\\*(Aq", "'")
            };
            assert!(
                shown.contains(example.line),
                "{file} does not show `{}`:\n{shown}",
                example.line
            );
        }

        // The top page and each parent list their commands.
        for sub in commands() {
            if sub.len() == path.len() + 1 && sub.starts_with(path) {
                let name = sub.last().unwrap();
                assert!(text.contains(name.as_str()), "{file} does not list {name}");
            }
        }
    }
}

#[test]
fn man_without_a_directory_prints_the_top_page() {
    let ran = run(binary(), &["man"]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(
        ran.stdout.contains(".TH clusterdns 1"),
        "{:.300}",
        ran.stdout
    );
    assert!(ran.stdout.contains("resolve\\-cost"), "{}", ran.stdout);
}

#[test]
fn man_into_a_file_says_which() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("taken");
    std::fs::write(&file, "").unwrap();
    let ran = run(binary(), &["man", "--out", file.to_str().unwrap()]);
    assert_eq!(ran.code, 2);
    assert!(
        ran.stderr
            .starts_with(&format!("clusterdns: --out {}:", file.display())),
        "{}",
        ran.stderr
    );
}

/// `man COMMAND...` prints that command's page, as `man clusterdns-COMMAND` would show it; a
/// command that does not exist is named with the commands there are.
#[test]
fn man_of_a_command_prints_its_page() {
    for (args, title) in [
        (vec!["man", "explain"], "clusterdns-explain"),
        (vec!["man", "proxy", "trace"], "clusterdns-proxy-trace"),
    ] {
        let ran = run(binary(), &args);
        assert_eq!(ran.code, 0, "{}", ran.stderr);
        assert!(
            ran.stdout.contains(&format!(".TH {title} 1")),
            "{args:?}: {:.300}",
            ran.stdout
        );
    }
    // `clusterdns man explain | man -l -` shows the examples and exit statuses.
    if let Some(man) = tool("man", "man_of_a_command_prints_its_page") {
        let page = run(binary(), &["man", "explain"]).stdout;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("explain.1");
        std::fs::write(&file, page).unwrap();
        let shown = run_with(
            Command::new(man)
                .args(["-l", file.to_str().unwrap()])
                .env("MANPAGER", "cat")
                .env("MANWIDTH", "100"),
        );
        assert_eq!(shown.code, 0, "{}", shown.stderr);
        assert!(
            shown.stdout.contains("EXIT STATUS\n")
                && shown.stdout.contains("EXAMPLES\n")
                && shown
                    .stdout
                    .contains("clusterdns explain pay/payments --objects fixtures/proxy.json\n")
                && shown.stdout.contains("At least one finding"),
            "{}",
            shown.stdout
        );
    }
    let ran = run(binary(), &["man", "explian"]);
    assert_eq!(ran.code, 2);
    assert!(
        ran.stderr
            .contains("no command `explian` in clusterdns (it has serve, records")
            && ran.stderr.contains("did you mean `man explain`?"),
        "{}",
        ran.stderr
    );
    let ran = run(binary(), &["man", "proxy", "trase"]);
    assert_eq!(ran.code, 2);
    assert!(
        ran.stderr.contains("did you mean `man proxy trace`?"),
        "{}",
        ran.stderr
    );
}

/// Every example of every page runs as the page says: those that read only the repository's
/// files (or nothing) exit with the status given, from the repository root and with no
/// kubeconfig to find; the others (a server, a live cluster, a write outside the repository)
/// parse. `--help` shows them too, and the exit statuses.
#[test]
fn every_example_runs_as_its_page_says() {
    let mut paths = vec![vec![]];
    paths.extend(commands());
    let no_home = crate::common::root().join("target/no-home");
    for path in paths {
        let words: Vec<&str> = path.iter().map(String::as_str).collect();
        let manual = manual::of(&words).unwrap_or_else(|| panic!("{path:?} has no examples"));
        let mut help_args = words.clone();
        help_args.push("--help");
        let help = run(binary(), &help_args);
        assert_eq!(help.code, 0, "{}", help.stderr);
        assert!(
            help.stdout.contains("\nExamples:\n") && help.stdout.contains("\nExit status:\n"),
            "{path:?} --help:\n{}",
            help.stdout
        );
        for example in manual.examples {
            assert!(help.stdout.contains(example.line), "{}", help.stdout);
            let args = example.args();
            match example.check {
                Check::Exits(code) => {
                    let ran = run_with(
                        std::process::Command::new(binary())
                            .args(&args)
                            .env("RUST_LOG", "warn")
                            .env_remove("KUBECONFIG")
                            .env_remove("KUBERNETES_SERVICE_HOST")
                            .env("HOME", &no_home),
                    );
                    assert_eq!(
                        ran.code,
                        i32::from(code),
                        "`{}` exits {}, its page says {code}: {}",
                        example.line,
                        ran.code,
                        ran.stderr
                    );
                    assert!(
                        !(ran.stdout.is_empty() && ran.stderr.is_empty()),
                        "`{}` says nothing",
                        example.line
                    );
                }
                Check::Parses => {
                    let parsed = clusterdns::cli::Cli::command()
                        .try_get_matches_from(std::iter::once("clusterdns").chain(args));
                    assert!(parsed.is_ok(), "`{}`: {parsed:?}", example.line);
                }
            }
        }
    }
}

/// `version` says what `--version` says.
#[test]
fn version_is_a_command_too() {
    let command = run(binary(), &["version"]);
    let flag = run(binary(), &["--version"]);
    assert_eq!(command.code, 0, "{}", command.stderr);
    assert_eq!(command.stdout, flag.stdout);
    assert_eq!(
        command.stdout,
        format!("clusterdns {}\n", env!("CARGO_PKG_VERSION"))
    );
}
