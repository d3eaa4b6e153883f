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
fn corefile_examples_parse() {
    let readme = read("README.md");
    let blocks: Vec<&str> = readme
        .split("```corefile\n")
        .skip(1)
        .filter_map(|block| block.split("```").next())
        .collect();
    assert!(!blocks.is_empty());
    for block in blocks {
        let file = TempCorefile::new(&block.replace("fixtures/", "{FIXTURES}/"));
        clusterdns::config::read_corefile(&file.path).unwrap_or_else(|e| panic!("{e}\n{block}"));
    }
    let example = TempCorefile::new(&read("Corefile.example").replace("fixtures/", "{FIXTURES}/"));
    clusterdns::config::read_corefile(&example.path).unwrap();
}
