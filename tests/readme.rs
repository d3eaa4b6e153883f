//! The README's commands and Corefile examples work as written.

use crate::common::binary::TestServer;
use crate::common::{TempCorefile, expect, read, root};

/// The first line of each ```sh block of the "Quick start" section.
fn quick_start() -> Vec<String> {
    let readme = read("README.md");
    let section = readme
        .split("## Quick start")
        .nth(1)
        .expect("a Quick start section");
    section
        .split("```sh\n")
        .skip(1)
        .filter_map(|block| block.lines().next().map(str::to_owned))
        .collect()
}

#[test]
fn the_first_command_serves_the_fixture() {
    let commands = quick_start();
    let serve = commands.first().expect("a serve command");
    let args = serve
        .strip_prefix("cargo run --release -- ")
        .expect("the serve command runs the release binary");
    let mut args: Vec<&str> = args.split_whitespace().collect();
    assert_eq!(args[..2], ["serve", "--objects"]);
    // The same arguments, on a free port rather than 1053, from the repository root.
    let fixture = root().join(args[2]);
    let fixture = fixture.to_str().unwrap();
    args[2] = fixture;
    args.extend(["--listen", "127.0.0.1:0"]);
    let server = TestServer::start(&args);
    let reply = server.ask_udp("web.shop.svc.cluster.local.", "A");
    assert_eq!(
        reply.answer,
        expect(&["web.shop.svc.cluster.local. 30 IN A 10.96.0.20"])
    );
}

#[test]
fn the_second_command_is_what_ci_runs() {
    let commands = quick_start();
    assert_eq!(commands.get(1).map(String::as_str), Some("cargo test"));
    let ci = read(".ci/run");
    assert!(
        ci.contains("readme_command 2") && ci.contains("bash -c \"$test_cmd\""),
        ".ci/run must run the README's test command"
    );
    assert!(
        ci.contains("cargo fmt --all -- --check")
            && ci.contains("cargo clippy --all-targets -- -D warnings")
    );
}

#[test]
fn corefile_examples_parse_and_load() {
    let readme = read("README.md");
    let blocks: Vec<&str> = readme
        .split("```corefile\n")
        .skip(1)
        .filter_map(|block| block.split("```").next())
        .collect();
    assert!(!blocks.is_empty());
    let example = read("Corefile.example");
    for text in blocks.into_iter().chain([example.as_str()]) {
        // Parsed, and loaded: objects read, zones built, forwarders and caches made — all but
        // the sockets (the examples use the real ports).
        let file = TempCorefile::new(&text.replace("fixtures/", "{FIXTURES}/"));
        let config =
            clusterdns::config::read_corefile(&file.path).unwrap_or_else(|e| panic!("{e}\n{text}"));
        clusterdns::server::load(&config).unwrap_or_else(|e| panic!("{e}\n{text}"));
    }
}

#[test]
fn the_shorthand_corefile_is_what_the_readme_shows() {
    let readme = read("README.md");
    let section = readme.split("What `serve --objects` runs").nth(1).unwrap();
    let shown = section
        .split("```corefile\n")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap();
    let options = clusterdns::config::ShorthandOptions {
        resolv_conf: Some("/etc/resolv.conf".into()),
        ..clusterdns::config::ShorthandOptions::new("127.0.0.1:1053".parse().unwrap())
    };
    let generated =
        clusterdns::config::shorthand_corefile_with(&["fixtures/shop.json".into()], &options);
    assert_eq!(shown.trim(), generated.trim());
}

/// The ```console blocks: each `$ clusterdns ARGS [| grep WORD]` line, with the output it
/// shows.
fn console_examples() -> Vec<(String, String)> {
    let readme = read("README.md");
    let mut examples = Vec::new();
    for block in readme.split("```console\n").skip(1) {
        let block = block.split("```").next().unwrap();
        let mut current: Option<(String, String)> = None;
        for line in block.lines() {
            if let Some(command) = line.strip_prefix("$ ") {
                examples.extend(current.take());
                current = Some((command.to_owned(), String::new()));
            } else if let Some((_, output)) = current.as_mut() {
                output.push_str(line);
                output.push('\n');
            }
        }
        examples.extend(current);
    }
    examples
}

/// Every console example runs, from the repository root, and prints what the README shows.
#[test]
fn console_examples_print_what_the_readme_shows() {
    let examples = console_examples();
    assert!(examples.len() >= 7, "{examples:?}");
    for (command, shown) in examples {
        let (command, grep) = match command.split_once(" | grep ") {
            Some((command, word)) => (command, Some(word.trim_matches('\'').to_owned())),
            None => (command.as_str(), None),
        };
        let args: Vec<&str> = command
            .strip_prefix("clusterdns ")
            .unwrap_or_else(|| panic!("not a clusterdns command: {command}"))
            .split_whitespace()
            .collect();
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_clusterdns"))
            .args(&args)
            .current_dir(crate::common::root())
            .env("RUST_LOG", "warn")
            .output()
            .unwrap();
        // 0, or 1 for a trace that does not DNAT and an explain that finds drift.
        assert!(
            output.status.code() == Some(0) || output.status.code() == Some(1),
            "{command}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let stdout = String::from_utf8(output.stdout).unwrap();
        let got: String = match &grep {
            Some(word) => stdout
                .lines()
                .filter(|line| line.contains(word.as_str()))
                .map(|line| format!("{line}\n"))
                .collect(),
            None => stdout,
        };
        assert_eq!(
            got, shown,
            "README example `{command}` prints something else"
        );
    }
}

/// The resolv-conf and resolve-cost sections show real runs (checked above): a report with
/// the seed lesson's figures and a log report.
#[test]
fn resolve_cost_examples_are_shown() {
    let examples = console_examples();
    let shown = |prefix: &str| {
        examples
            .iter()
            .find(|(command, _)| command.starts_with(prefix))
            .map(|(_, output)| output.clone())
            .unwrap_or_else(|| panic!("no README example `{prefix}...`"))
    };
    assert!(shown("clusterdns resolv-conf ").contains("options ndots:5"));
    assert!(
        shown("clusterdns resolve-cost api.partner.example.com --namespace shop")
            .contains("4 names tried, 3 NXDOMAIN; 8 queries, 6 NXDOMAIN")
    );
    assert!(shown("clusterdns resolve-cost --log ").contains("search-path misses"));
}

/// The backticked names after `label` in the README, up to the end of the paragraph.
fn listed(readme: &str, label: &str) -> Vec<String> {
    let paragraph = readme
        .split(label)
        .nth(1)
        .unwrap_or_else(|| panic!("no {label} in the README"))
        .split("\n\n")
        .next()
        .unwrap();
    paragraph
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// The README's lists of the CoreDNS plugins clusterdns implements and does not: every
/// directive of CoreDNS's `plugin.cfg` in exactly one, sorted, and each where the parser
/// puts it (a block with just the directive either is refused as not implemented, or is not).
#[test]
fn the_plugin_lists_are_what_the_parser_does() {
    let readme = read("README.md");
    let implemented = listed(&readme, "**Implemented:**");
    let missing = listed(&readme, "**Not implemented**");
    for list in [&implemented, &missing] {
        let mut sorted = list.clone();
        sorted.sort();
        assert_eq!(*list, sorted, "sorted");
    }
    let mut all: Vec<String> = implemented.iter().chain(&missing).cloned().collect();
    all.sort();
    let mut directives: Vec<String> = clusterdns::config::COREDNS_DIRECTIVES
        .iter()
        .map(|d| (*d).to_owned())
        .collect();
    directives.sort();
    assert_eq!(all, directives, "every plugin.cfg directive, once");
    for directive in clusterdns::config::COREDNS_DIRECTIVES {
        let text = format!(".:1053 {{\n    {directive}\n}}\n");
        let refused = matches!(
            clusterdns::config::parse_corefile(&text, std::path::Path::new("Corefile")),
            Err(clusterdns::config::Error::Unsupported { .. })
        );
        assert_eq!(
            refused,
            missing.iter().any(|m| m == directive),
            "{directive}: the README says otherwise"
        );
    }
}
