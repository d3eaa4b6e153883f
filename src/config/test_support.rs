//! Helpers for the parser's unit tests: a fixed environment and table runners.

#![allow(clippy::unwrap_used)]

use std::path::Path;

use super::{Config, Environment, Error, ServerBlock, parse_corefile_in};

/// The `/etc/resolv.conf` every test sees.
pub(crate) const RESOLV_CONF: &str =
    "# fixed for the tests\nsearch example.test\nnameserver 192.0.2.53\nnameserver 2001:db8::53\n";

/// Fixed variables, interfaces and `/etc/resolv.conf`.
pub(crate) fn env() -> Environment {
    Environment::isolated()
        .with_var("ZONE", "cluster.local")
        .with_var("PORT", "1053")
        .with_interface("eth0", "10.1.1.1".parse().unwrap())
        .with_interface("eth0", "fe80::1".parse().unwrap())
        .with_interface("eth0", "fd00::5".parse().unwrap())
        .with_interface("lo", "127.0.0.1".parse().unwrap())
        .with_file("/etc/resolv.conf", RESOLV_CONF)
        .with_file(
            "/fixed/bad-resolv.conf",
            "nameserver 192.0.2.1\nnameserver dns.google\n",
        )
        .with_file("/fixed/empty-resolv.conf", "# no nameserver\nsearch a\n")
        .with_file("/fixed/link-local-resolv.conf", "nameserver fe80::1%eth0\n")
        .with_file(
            "/fixed/mixed-resolv.conf",
            "nameserver fe80::1%eth0\nnameserver 192.0.2.1\n",
        )
        .with_file(
            "/fixed/sixteen-resolv.conf",
            (1..=16)
                .map(|i| format!("nameserver 192.0.2.{i}\n"))
                .collect::<String>(),
        )
}

/// Parses `text` as the file `Corefile` in [`env`].
pub(crate) fn parse(text: &str) -> Result<Config, Error> {
    parse_corefile_in(text, Path::new("Corefile"), &env())
}

/// The one server block of `.:53 {\n DIRECTIVES\n}`: the directives start on line 2.
pub(crate) fn block(directives: &str) -> Result<ServerBlock, Error> {
    let mut config = parse(&format!(".:53 {{\n{directives}\n}}\n"))?;
    Ok(config.servers.remove(0))
}

/// The variant's name, for tables.
pub(crate) fn kind(error: &Error) -> &'static str {
    match error {
        Error::Read { .. } => "Read",
        Error::Syntax { .. } => "Syntax",
        Error::Import { .. } => "Import",
        Error::Key { .. } => "Key",
        Error::Duplicate { .. } => "Duplicate",
        Error::UnknownDirective { .. } => "UnknownDirective",
        Error::Unsupported { .. } => "Unsupported",
        Error::UnknownProperty { .. } => "UnknownProperty",
        Error::UnsupportedProperty { .. } => "UnsupportedProperty",
        Error::Invalid { .. } => "Invalid",
        Error::Selector { .. } => "Selector",
    }
}

/// A valid case: a name, the directives of one block, and a check of the block.
pub(crate) type Valid<'a> = (&'a str, &'a str, fn(&ServerBlock) -> bool);

/// Runs valid cases through [`block`].
pub(crate) fn check_valid(cases: &[Valid<'_>]) {
    for (name, directives, check) in cases {
        let server = block(directives).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(check(&server), "{name}: {server:#?}");
    }
}

/// An invalid case: what the input is, the error's line and kind, and a piece of its
/// message.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Invalid<'a> {
    /// The case, in failure messages.
    pub(crate) name: &'a str,
    /// The directives of one block, starting on line 2 ([`check_invalid`]), or a whole
    /// Corefile ([`check_invalid_corefiles`]).
    pub(crate) input: &'a str,
    /// The error's line.
    pub(crate) line: usize,
    /// The error's variant, as [`kind`] names it.
    pub(crate) kind: &'a str,
    /// A piece of the error's message.
    pub(crate) message: &'a str,
}

/// Runs invalid cases through [`block`].
pub(crate) fn check_invalid(cases: &[Invalid<'_>]) {
    for case in cases {
        match block(case.input) {
            Ok(server) => panic!("{}: parsed: {server:#?}", case.name),
            Err(error) => case.check(&error),
        }
    }
}

/// Runs invalid cases through [`parse`], each input a whole Corefile.
pub(crate) fn check_invalid_corefiles(cases: &[Invalid<'_>]) {
    for case in cases {
        match parse(case.input) {
            Ok(config) => panic!("{}: parsed: {config:?}", case.name),
            Err(error) => case.check(&error),
        }
    }
}

impl Invalid<'_> {
    /// The error is the one the case expects, in the file `Corefile`.
    fn check(&self, error: &Error) {
        let name = self.name;
        assert!(error.to_string().contains(self.message), "{name}: {error}");
        assert_eq!(
            (kind(error), error.line()),
            (self.kind, self.line),
            "{name}: {error}"
        );
        assert_eq!(error.file(), Path::new("Corefile"), "{name}");
    }
}

/// The addresses, parsed.
pub(crate) fn ips(texts: &[&str]) -> Vec<std::net::IpAddr> {
    texts.iter().map(|t| t.parse().unwrap()).collect()
}

/// The zones, as text.
pub(crate) fn names(zones: &[hickory_proto::rr::Name]) -> Vec<String> {
    zones.iter().map(ToString::to_string).collect()
}
