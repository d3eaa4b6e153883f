//! The one error type of the Corefile parser.
//!
//! Every variant carries the file and the line it is about (line 0 means "the whole file"), and
//! its `Display` starts with `FILE:LINE:` the way compilers and CoreDNS print positions.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::selector::SelectorError;

/// What went wrong in a Corefile, and where.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The Corefile itself could not be read.
    #[error("{}: cannot read the Corefile: {error}", At(file, *line))]
    Read {
        /// The file.
        file: PathBuf,
        /// Always 0: the whole file.
        line: usize,
        /// Why.
        error: std::io::Error,
    },
    /// The text is not Corefile syntax: an unterminated quote, a brace out of place, a block
    /// that never closes, a server block without keys.
    #[error("{}: {message}", At(file, *line))]
    Syntax {
        /// The file.
        file: PathBuf,
        /// The line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// An `import` failed: no such snippet or file, a cycle, a snippet defined twice, too many
    /// expansions, an unreadable file.
    #[error("{}: {message}", At(file, *line))]
    Import {
        /// The file holding the `import` (or the snippet definition).
        file: PathBuf,
        /// Its line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A server block key that is not `[dns://]ZONE[:PORT]` or `[dns://]CIDR[:PORT]`.
    #[error("{}: invalid server block key '{key}': {message}", At(file, *line))]
    Key {
        /// The key as written.
        key: String,
        /// The file.
        file: PathBuf,
        /// The line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The same zone is served twice on one port and address (CoreDNS: "cannot serve
    /// dns://.:53 - it is already defined"), or once on the wildcard and once on a bound address.
    #[error("{}: {message}", At(file, *line))]
    Duplicate {
        /// The file.
        file: PathBuf,
        /// The line of the second key.
        line: usize,
        /// CoreDNS's wording.
        message: String,
    },
    /// A directive that is not a CoreDNS plugin.
    #[error("{}: unknown directive '{name}'{hint}", At(file, *line))]
    UnknownDirective {
        /// The directive as written.
        name: String,
        /// `; did you mean 'NAME'?` when a directive is a letter or two off, else empty.
        hint: String,
        /// The file.
        file: PathBuf,
        /// The line.
        line: usize,
    },
    /// A CoreDNS plugin that clusterdns does not implement yet. Its arguments and block were
    /// well-formed.
    #[error(
        "{}: directive '{directive}' is a CoreDNS plugin that clusterdns does not implement yet",
        At(file, *line)
    )]
    Unsupported {
        /// The directive.
        directive: String,
        /// The file.
        file: PathBuf,
        /// The line.
        line: usize,
    },
    /// An option inside a directive's block that the directive does not have.
    #[error("{}: unknown property '{name}' in {directive}{hint}", At(file, *line))]
    UnknownProperty {
        /// The directive whose block holds the option.
        directive: String,
        /// The option as written.
        name: String,
        /// `; did you mean 'NAME'?` when an option is a letter or two off, else empty.
        hint: String,
        /// The file.
        file: PathBuf,
        /// The line.
        line: usize,
    },
    /// An option that CoreDNS has but clusterdns refuses (for instance forward's `prefer_udp`).
    #[error("{}: property '{name}' of {directive} is not supported: {reason}", At(file, *line))]
    UnsupportedProperty {
        /// The directive.
        directive: String,
        /// The option.
        name: String,
        /// Why it is refused.
        reason: String,
        /// The file.
        file: PathBuf,
        /// The line.
        line: usize,
    },
    /// A directive or option with the wrong number of arguments or a bad value.
    #[error("{}: {directive}: {message}", At(file, *line))]
    Invalid {
        /// The directive.
        directive: String,
        /// What is wrong, starting with the option's name when it is about an option.
        message: String,
        /// The file.
        file: PathBuf,
        /// The line.
        line: usize,
    },
    /// A `labels` or `namespace_labels` expression that is not a label selector.
    #[error("{}: {directive}: {option}: invalid label selector '{input}': {error}", At(file, *line))]
    Selector {
        /// The directive.
        directive: String,
        /// The option (`labels` or `namespace_labels`).
        option: String,
        /// The expression, its arguments joined by spaces as CoreDNS does.
        input: String,
        /// Why it does not parse (boxed to keep `Error` small).
        error: Box<SelectorError>,
        /// The file.
        file: PathBuf,
        /// The line.
        line: usize,
    },
}

impl Error {
    /// The file the error is about.
    pub fn file(&self) -> &Path {
        match self {
            Self::Read { file, .. }
            | Self::Syntax { file, .. }
            | Self::Import { file, .. }
            | Self::Key { file, .. }
            | Self::Duplicate { file, .. }
            | Self::UnknownDirective { file, .. }
            | Self::Unsupported { file, .. }
            | Self::UnknownProperty { file, .. }
            | Self::UnsupportedProperty { file, .. }
            | Self::Invalid { file, .. }
            | Self::Selector { file, .. } => file,
        }
    }

    /// The line the error is about (1-based; 0 means the whole file).
    pub fn line(&self) -> usize {
        match self {
            Self::Read { line, .. }
            | Self::Syntax { line, .. }
            | Self::Import { line, .. }
            | Self::Key { line, .. }
            | Self::Duplicate { line, .. }
            | Self::UnknownDirective { line, .. }
            | Self::Unsupported { line, .. }
            | Self::UnknownProperty { line, .. }
            | Self::UnsupportedProperty { line, .. }
            | Self::Invalid { line, .. }
            | Self::Selector { line, .. } => *line,
        }
    }
}

/// `FILE:LINE`, or `FILE` alone for line 0.
struct At<'a>(&'a Path, usize);

impl fmt::Display for At<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.1 == 0 {
            write!(f, "{}", self.0.display())
        } else {
            write!(f, "{}:{}", self.0.display(), self.1)
        }
    }
}

/// `; did you mean 'NAME'?` for the name of `known` nearest to `typed`, when one is near
/// enough; else empty.
pub(crate) fn did_you_mean<'a>(typed: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    crate::suggest::closest(typed, known)
        .map(|close| format!("; did you mean '{close}'?"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_has_file_and_line() {
        let cases = [
            (
                "unknown property",
                Error::UnknownProperty {
                    directive: "kubernetes".into(),
                    name: "foo".into(),
                    hint: String::new(),
                    file: "Corefile".into(),
                    line: 12,
                },
                "Corefile:12: unknown property 'foo' in kubernetes",
            ),
            (
                "unknown property, near a known one",
                Error::UnknownProperty {
                    directive: "kubernetes".into(),
                    name: "fallthru".into(),
                    hint: did_you_mean("fallthru", ["fallthrough", "ttl"]),
                    file: "Corefile".into(),
                    line: 12,
                },
                "Corefile:12: unknown property 'fallthru' in kubernetes; did you mean \
                 'fallthrough'?",
            ),
            (
                "whole file",
                Error::Syntax {
                    file: "Corefile".into(),
                    line: 0,
                    message: "empty".into(),
                },
                "Corefile: empty",
            ),
            (
                "unsupported",
                Error::Unsupported {
                    directive: "errors".into(),
                    file: "a/Corefile".into(),
                    line: 2,
                },
                "a/Corefile:2: directive 'errors' is a CoreDNS plugin that clusterdns does not \
                 implement yet",
            ),
        ];
        for (name, error, want) in cases {
            assert_eq!(error.to_string(), want, "{name}");
        }
    }

    #[test]
    fn accessors() {
        let error = Error::Invalid {
            directive: "bind".into(),
            message: "x".into(),
            file: "F".into(),
            line: 3,
        };
        assert_eq!(error.file(), Path::new("F"));
        assert_eq!(error.line(), 3);
    }
}
