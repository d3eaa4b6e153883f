//! The README's commands, and every example of the README, ARCHITECTURE.md and `docs/`, work
//! as written; every link between those pages leads somewhere.

use crate::common::binary::TestServer;
use crate::common::{TempCorefile, expect, read, root};

/// The README, ARCHITECTURE.md, CONTRIBUTING.md and every page under `docs/`, with their paths from the
/// repository root.
fn pages() -> Vec<(String, String)> {
    let mut paths = vec![
        "README.md".to_owned(),
        "ARCHITECTURE.md".to_owned(),
        "CONTRIBUTING.md".to_owned(),
    ];
    let mut dirs = vec![root().join("docs")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                let relative = path.strip_prefix(root()).unwrap();
                paths.push(relative.to_str().unwrap().to_owned());
            }
        }
    }
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let text = read(&path);
            (path, text)
        })
        .collect()
}

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

/// The Quick start's `dig` lines, copied as they are (but for the port), ask the first
/// command's server and get what the table says: every backticked word of the answer
/// column is in dig's output.
#[test]
fn the_quick_start_dig_lines_answer_as_the_table_says() {
    let readme = read("README.md");
    let section = readme.split("## Quick start").nth(1).unwrap();
    let section = section.split("\n## ").next().unwrap();
    let rows: Vec<(String, Vec<String>)> = section
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split(" | ").collect();
            let ask = cells.first()?.strip_prefix("| `")?.strip_suffix('`')?;
            let shown = cells.get(1)?.split('`').skip(1).step_by(2);
            Some((ask.to_owned(), shown.map(str::to_owned).collect()))
        })
        .collect();
    assert!(rows.len() >= 6, "{rows:?}");
    let fixture = root().join("fixtures/shop.json");
    let server = TestServer::start(&[
        "serve",
        "--objects",
        fixture.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
    ]);
    for (ask, shown) in rows {
        let args: Vec<&str> = ask
            .strip_prefix("dig @127.0.0.1 -p 1053 ")
            .unwrap_or_else(|| panic!("`{ask}` does not ask the first command's server"))
            .split_whitespace()
            .collect();
        let output = std::process::Command::new("dig")
            .args(["@127.0.0.1", "-p", &server.addr.port().to_string()])
            .args(["+time=2", "+tries=1"])
            .args(&args)
            .output()
            .expect("dig (bind9-dnsutils; .ci/run installs it)");
        let printed = String::from_utf8_lossy(&output.stdout);
        assert!(
            !shown.is_empty(),
            "`{ask}`: the table shows nothing to check"
        );
        for word in shown {
            assert!(
                printed.contains(&word),
                "`{ask}` prints no {word}:\n{printed}"
            );
        }
    }
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
    let pages = pages();
    let mut blocks: Vec<(&str, &str)> = Vec::new();
    for (page, text) in &pages {
        blocks.extend(
            text.split("```corefile\n")
                .skip(1)
                .filter_map(|block| block.split("```").next())
                .map(|block| (page.as_str(), block)),
        );
    }
    assert!(blocks.len() >= 20, "{}", blocks.len());
    let example = read("Corefile.example");
    for (page, text) in blocks
        .into_iter()
        .chain([("Corefile.example", example.as_str())])
    {
        // Parsed, and loaded: objects read, zones built, forwarders and caches made — all but
        // the sockets (the examples use the real ports).
        let file = TempCorefile::new(&text.replace("fixtures/", "{FIXTURES}/"));
        let config = clusterdns::config::read_corefile(&file.path)
            .unwrap_or_else(|e| panic!("{page}: {e}\n{text}"));
        clusterdns::server::load(&config).unwrap_or_else(|e| panic!("{page}: {e}\n{text}"));
    }
}

#[test]
fn the_shorthand_corefile_is_what_the_docs_show() {
    let page = read("docs/corefile.md");
    let section = page.split("What `serve --objects` runs").nth(1).unwrap();
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

/// The ```console blocks of every page: each `$ clusterdns ARGS [| grep WORD]` line, with
/// the output it shows.
fn console_examples() -> Vec<(String, String)> {
    let mut examples = Vec::new();
    let pages = pages();
    for block in pages
        .iter()
        .flat_map(|(_, text)| text.split("```console\n").skip(1))
    {
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
            // The examples read files, never a cluster the machine may have a kubeconfig for.
            .env_remove("KUBECONFIG")
            .env_remove("KUBERNETES_SERVICE_HOST")
            .env("HOME", crate::common::root().join("target/no-home"))
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
        assert_eq!(got, shown, "the example `{command}` prints something else");
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
            .unwrap_or_else(|| panic!("no example `{prefix}...`"))
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
    let mut directives: Vec<String> = clusterdns::plugin::COREDNS_DIRECTIVES
        .iter()
        .map(|d| (*d).to_owned())
        .collect();
    directives.sort();
    assert_eq!(all, directives, "every plugin.cfg directive, once");
    for directive in clusterdns::plugin::COREDNS_DIRECTIVES {
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

/// GitHub's anchor for a heading: lower case, spaces to dashes, other punctuation dropped.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a page's headings (outside fenced blocks).
fn anchors(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut found = Vec::new();
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            found.push(anchor(line.trim_start_matches('#')));
        }
    }
    found
}

/// The targets of a page's Markdown links `[text](target)`, outside fenced blocks and code.
fn links(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut found = Vec::new();
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        for piece in line.split("](").skip(1) {
            if let Some(target) = piece.split(')').next() {
                found.push(target.to_owned());
            }
        }
    }
    found
}

/// Every link between the pages leads to a file that exists and, with `#anchor`, to one of
/// its headings.
#[test]
fn every_link_between_the_pages_resolves() {
    let pages = pages();
    let mut checked = 0;
    for (page, text) in &pages {
        let dir = std::path::Path::new(page).parent().unwrap();
        for target in links(text) {
            if target.starts_with("http://") || target.starts_with("https://") {
                continue;
            }
            let (file, fragment) = match target.split_once('#') {
                Some((file, fragment)) => (file, Some(fragment)),
                None => (target.as_str(), None),
            };
            let path = if file.is_empty() {
                std::path::PathBuf::from(page)
            } else {
                dir.join(file)
            };
            let full = root().join(&path);
            assert!(full.exists(), "{page}: the link to {target} leads nowhere");
            if let Some(fragment) = fragment {
                let text = std::fs::read_to_string(&full).unwrap();
                assert!(
                    anchors(&text).iter().any(|a| a == fragment),
                    "{page}: {} has no heading #{fragment}",
                    path.display()
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 40, "{checked} links");
}

/// Every plugin the README lists as implemented has a page in CoreDNS's plugin-README shape,
/// linked from the README's plugin table, and every page under `docs/plugins/` is such a
/// plugin.
#[test]
fn every_implemented_plugin_has_its_page() {
    let readme = read("README.md");
    let implemented = listed(&readme, "**Implemented:**");
    for plugin in &implemented {
        let path = format!("docs/plugins/{plugin}.md");
        let page = read(&path);
        assert!(
            page.starts_with(&format!("# {plugin}\n")),
            "{path}: its title"
        );
        for section in ["## Description", "## Syntax", "## Examples"] {
            assert!(
                page.contains(&format!("\n{section}\n")),
                "{path}: {section}"
            );
        }
        assert!(
            readme.contains(&format!("]({path})")),
            "the README's plugin table links {path}"
        );
    }
    for entry in std::fs::read_dir(root().join("docs/plugins")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let plugin = name.strip_suffix(".md").unwrap();
        assert!(
            implemented.iter().any(|p| p == plugin),
            "docs/plugins/{name} is not an implemented plugin"
        );
    }
}

/// Every command of the binary has a page under `docs/commands/`, linked from the README.
#[test]
fn every_command_has_its_page() {
    let readme = read("README.md");
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_clusterdns"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    let commands: Vec<&str> = help
        .split("Commands:")
        .nth(1)
        .expect("a command list in --help")
        .lines()
        .skip(1)
        .take_while(|line| !line.trim().is_empty())
        .filter_map(|line| line.split_whitespace().next())
        .filter(|command| *command != "help")
        .collect();
    assert!(commands.len() >= 8, "{commands:?}");
    for command in commands {
        let pages: Vec<String> = if command == "proxy" {
            vec!["proxy-render".into(), "proxy-trace".into()]
        } else {
            vec![command.to_owned()]
        };
        for page in pages {
            let path = format!("docs/commands/{page}.md");
            assert!(root().join(&path).exists(), "{command}: no {path}");
            assert!(
                readme.contains(&format!("]({path})")),
                "the README links {path}"
            );
        }
    }
}
