//! Colour only on a terminal, and never with `NO_COLOR` (https://no-color.org): clap's usage
//! errors and the server's log lines, run on a terminal made by `script`. Nothing the tools
//! print on stdout is coloured, on a terminal or not.

use std::process::Command;

use super::{binary, run_with, tool};

const ESC: char = '\u{1b}';

/// What `command` (a shell command line) prints on a terminal (`script` gives it one), with
/// `NO_COLOR` as given.
fn on_terminal(script: &std::path::Path, command: &str, no_color: Option<&str>) -> String {
    let mut run = Command::new(script);
    run.args(["-qec", command, "/dev/null"])
        .env_remove("NO_COLOR")
        .env("RUST_LOG", "info");
    if let Some(value) = no_color {
        run.env("NO_COLOR", value);
    }
    run_with(&mut run).stdout
}

#[test]
fn colour_on_a_terminal_only_and_never_with_no_color() {
    let Some(script) = tool(
        "script",
        "colour_on_a_terminal_only_and_never_with_no_color",
    ) else {
        return;
    };
    let bin = binary().display();
    let usage_error = format!("{bin} --bogus");
    // The server logs at start; it is stopped a moment later.
    let serve =
        format!("timeout -s INT 2 {bin} serve --objects fixtures/shop.json --listen 127.0.0.1:0");
    for command in [&usage_error, &serve] {
        let coloured = on_terminal(&script, command, None);
        assert!(
            coloured.contains("error") || coloured.contains("INFO"),
            "{coloured}"
        );
        assert!(
            coloured.contains(ESC),
            "{command}: no colour on a terminal:\n{coloured}"
        );
        // NO_COLOR set to anything but "" means no colour.
        let plain = on_terminal(&script, command, Some("1"));
        assert!(plain.contains("error") || plain.contains("INFO"), "{plain}");
        assert!(
            !plain.contains(ESC),
            "{command}: colour with NO_COLOR=1:\n{plain:?}"
        );
        let empty = on_terminal(&script, command, Some(""));
        assert!(
            empty.contains(ESC),
            "{command}: NO_COLOR= (empty) turns colour off"
        );
    }
    // The tools' reports: plain text on a terminal too.
    let explain = on_terminal(
        &script,
        &format!("env RUST_LOG=warn {bin} explain pay/payments --objects fixtures/proxy.json"),
        None,
    );
    assert!(explain.contains("pay/payments"), "{explain}");
    assert!(!explain.contains(ESC), "{explain:?}");
}

#[test]
fn no_colour_when_not_on_a_terminal() {
    let mut serve = Command::new("timeout");
    serve
        .args(["-s", "INT", "2"])
        .arg(binary())
        .args([
            "serve",
            "--objects",
            "fixtures/shop.json",
            "--listen",
            "127.0.0.1:0",
        ])
        .env_remove("NO_COLOR");
    let ran = run_with(serve.env("RUST_LOG", "info"));
    assert!(ran.stderr.contains("INFO"), "{}", ran.stderr);
    assert!(!ran.stderr.contains(ESC), "{:?}", ran.stderr);
    let usage = run_with(Command::new(binary()).arg("--bogus").env_remove("NO_COLOR"));
    assert!(usage.stderr.contains("error"), "{}", usage.stderr);
    assert!(!usage.stderr.contains(ESC), "{:?}", usage.stderr);
}
