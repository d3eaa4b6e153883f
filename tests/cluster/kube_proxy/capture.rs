//! What kube-proxy wrote, from its V(9) log: the first (full) `iptables-restore` input and
//! `nft -f` transaction of each family.

/// The first `"Restoring iptables"` input of `family` (`IPv4`, `IPv6`): the log line holds it
/// as a quoted string.
pub fn restore_input(log: &str, family: &str) -> Option<String> {
    let marker = format!("\"Restoring iptables\" ipFamily=\"{family}\" rules=");
    let line = log.lines().find(|l| l.contains(&marker))?;
    let quoted = line.split(&marker).nth(1)?.trim_end();
    serde_json::from_str(quoted).ok()
}

/// Each `"Running nftables transaction"`'s text, in order: the log line is followed by the
/// transaction, a tab before each line, up to a line ` >`.
pub fn nft_transactions(log: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for line in log.lines() {
        if let Some(text) = current.as_mut() {
            if line.trim() == ">" {
                out.extend(current.take());
            } else {
                text.push_str(line.strip_prefix('\t').unwrap_or(line));
                text.push('\n');
            }
        } else if line.contains("\"Running nftables transaction\"") {
            current = Some(String::new());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_give_back_what_kube_proxy_wrote() {
        let log = "I1 x\nI2 proxier.go:1397] \"Restoring iptables\" ipFamily=\"IPv4\" rules=\"*nat\\n-A X -m comment --comment \\\"a b\\\"\\nCOMMIT\\n\"\nI3 proxier.go:1718] \"Running nftables transaction\" transaction=<\n\tadd table ip kube-proxy\n\tadd chain ip kube-proxy a\n >\nI4 y\n";
        assert_eq!(
            restore_input(log, "IPv4").as_deref(),
            Some("*nat\n-A X -m comment --comment \"a b\"\nCOMMIT\n")
        );
        assert_eq!(restore_input(log, "IPv6"), None);
        assert_eq!(
            nft_transactions(log),
            ["add table ip kube-proxy\nadd chain ip kube-proxy a\n"]
        );
    }
}
