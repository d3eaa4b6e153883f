//! `clusterdns completion bash|zsh|fish`: scripts the shells accept, completing the commands
//! and flags the binary has.

use super::{binary, commands, run, tool};

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
    let ran = run("bash", &["-c", &program]);
    assert_eq!(ran.code, 0, "completing {line:?}: {}", ran.stderr);
    let mut offered: Vec<String> = ran.stdout.lines().map(str::to_owned).collect();
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
    assert_eq!(
        bash_complete(&script, &["clusterdns", "completion", ""]),
        ["--help", "-h", "bash", "fish", "zsh"]
    );
}

/// The names of every command (`records`, `render`, ...), each appearing in `text`.
fn names_every_command(shell: &str, text: &str) {
    for path in commands() {
        let name = path.last().unwrap();
        assert!(
            text.contains(name.as_str()),
            "the {shell} completion does not name {}",
            path.join(" ")
        );
    }
}

#[test]
fn zsh_script_parses_and_names_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let script = script("zsh", dir.path());
    let text = std::fs::read_to_string(&script).unwrap();
    assert!(text.starts_with("#compdef clusterdns"), "{text:.80}");
    names_every_command("zsh", &text);
    if let Some(zsh) = tool("zsh", "zsh_script_parses_and_names_every_command") {
        let check = run(zsh, &["-n", script.to_str().unwrap()]);
        assert_eq!(check.code, 0, "zsh -n: {}", check.stderr);
    }
}

#[test]
fn fish_completes_commands_and_values() {
    let dir = tempfile::tempdir().unwrap();
    let script = script("fish", dir.path());
    names_every_command("fish", &std::fs::read_to_string(&script).unwrap());
    let Some(fish) = tool("fish", "fish_completes_commands_and_values") else {
        return;
    };
    let check = run(&fish, &["-n", script.to_str().unwrap()]);
    assert_eq!(check.code, 0, "fish -n: {}", check.stderr);
    // fish's own completion, as on TAB: `complete -C LINE` prints `candidate<TAB>description`.
    let complete = |line: &str| -> Vec<String> {
        let program = format!("source '{}'; complete -C '{line}'", script.display());
        let ran = run(&fish, &["--no-config", "-c", &program]);
        assert_eq!(ran.code, 0, "fish completing {line:?}: {}", ran.stderr);
        let mut offered: Vec<String> = ran
            .stdout
            .lines()
            .map(|line| line.split('\t').next().unwrap().to_owned())
            .collect();
        offered.sort();
        offered
    };
    assert_eq!(
        complete("clusterdns re"),
        ["records", "resolv-conf", "resolve-cost"]
    );
    assert_eq!(
        complete("clusterdns records --format "),
        ["json", "yaml", "zone"]
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
