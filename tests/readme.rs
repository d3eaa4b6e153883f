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
