//! The token stream the parser reads: tokens of the Corefile with `import` lines replaced, as
//! they are reached, by the tokens of a snippet or of the files a path or glob names.
//!
//! `import` is an import only as the first token of a line (anywhere: between server blocks,
//! among directives, among a directive's options), and takes exactly one argument. A snippet
//! name wins over a file name. Files are relative to the directory of the file holding the
//! `import`. Every pasted token remembers the chain of imports that brought it, so a cycle
//! (a snippet or file importing itself, directly or not) is reported instead of looping; the
//! number of expansions is capped as well, against exponential but acyclic blow-ups. A glob
//! that matches no file is a warning in the log (CoreDNS's "No files matching import glob
//! pattern"), not an error; a plain path that does not exist is an error.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

use super::env::Environment;
use super::error::Error;
use super::fs::read_regular;
use super::glob;
use super::lexer::{self, Token, TokenKind};

/// At most this many imports are expanded in one parse (CoreDNS allows 1000 of each kind).
const MAX_EXPANSIONS: usize = 1000;
/// At most this many imports deep.
const MAX_DEPTH: usize = 64;
/// A Corefile or imported file larger than this is refused.
pub(crate) const MAX_FILE_BYTES: u64 = 16 << 20;

/// A token as the parser sees it.
#[derive(Debug, Clone)]
pub(crate) struct Delivered {
    /// The token.
    pub(crate) token: Token,
    /// Whether it is the first token of a line (the first token of an imported file or
    /// snippet always is).
    pub(crate) starts_line: bool,
}

/// Where a run of tokens came from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Origin {
    File(PathBuf),
    Snippet(String),
}

impl Origin {
    fn describe(&self) -> String {
        match self {
            Self::File(path) => path.display().to_string(),
            Self::Snippet(name) => format!("snippet '{name}'"),
        }
    }
}

struct Frame {
    tokens: Rc<[Token]>,
    position: usize,
    chain: Rc<Vec<Origin>>,
}

struct Snippet {
    tokens: Rc<[Token]>,
    line: usize,
}

/// Tokens with imports expanded.
pub(crate) struct Stream<'e> {
    frames: Vec<Frame>,
    snippets: HashMap<String, Snippet>,
    expansions: usize,
    env: &'e Environment,
    peeked: Option<Delivered>,
}

impl<'e> Stream<'e> {
    /// A stream over the tokens of the root file `file`.
    pub(crate) fn new(tokens: Vec<Token>, file: &Path, env: &'e Environment) -> Self {
        let root = Origin::File(std::fs::canonicalize(file).unwrap_or_else(|_| file.to_owned()));
        Self {
            frames: vec![Frame {
                tokens: tokens.into(),
                position: 0,
                chain: Rc::new(vec![root]),
            }],
            snippets: HashMap::new(),
            expansions: 0,
            env,
            peeked: None,
        }
    }

    /// The next token, without consuming it.
    pub(crate) fn peek(&mut self) -> Result<Option<&Delivered>, Error> {
        if self.peeked.is_none() {
            self.peeked = self.advance(true)?;
        }
        Ok(self.peeked.as_ref())
    }

    /// The next token.
    pub(crate) fn next(&mut self) -> Result<Option<Delivered>, Error> {
        match self.peeked.take() {
            Some(token) => Ok(Some(token)),
            None => self.advance(true),
        }
    }

    /// The next token without expanding `import` (for snippet bodies, which are expanded
    /// where they are pasted). Call it only when nothing has been peeked.
    pub(crate) fn next_raw(&mut self) -> Result<Option<Token>, Error> {
        match self.peeked.take() {
            Some(delivered) => Ok(Some(delivered.token)),
            None => Ok(self.advance(false)?.map(|delivered| delivered.token)),
        }
    }

    /// Defines snippet `name` (from `(name) { ... }` at `at`).
    pub(crate) fn define_snippet(
        &mut self,
        name: &str,
        tokens: Vec<Token>,
        at: &Token,
    ) -> Result<(), Error> {
        if let Some(previous) = self.snippets.get(name) {
            return Err(Error::Import {
                file: at.file.to_path_buf(),
                line: at.line,
                message: format!(
                    "snippet '{name}' is already defined (line {})",
                    previous.line
                ),
            });
        }
        self.snippets.insert(
            name.to_owned(),
            Snippet {
                tokens: tokens.into(),
                line: at.line,
            },
        );
        Ok(())
    }

    fn advance(&mut self, expand: bool) -> Result<Option<Delivered>, Error> {
        loop {
            let Some(frame) = self.frames.last_mut() else {
                return Ok(None);
            };
            let Some(token) = frame.tokens.get(frame.position).cloned() else {
                self.frames.pop();
                continue;
            };
            let starts_line = match frame.position.checked_sub(1) {
                Some(previous) => frame
                    .tokens
                    .get(previous)
                    .is_none_or(|previous| lexer::on_new_line(previous, &token)),
                None => true,
            };
            frame.position += 1;
            if expand && starts_line && token.kind == TokenKind::Word && token.text == "import" {
                let chain = frame.chain.clone();
                self.import(&token, &chain)?;
                continue;
            }
            return Ok(Some(Delivered { token, starts_line }));
        }
    }

    /// Handles the `import` at `at` (already consumed) whose tokens came via `chain`.
    fn import(&mut self, at: &Token, chain: &Rc<Vec<Origin>>) -> Result<(), Error> {
        let error = |message: String| Error::Import {
            file: at.file.to_path_buf(),
            line: at.line,
            message,
        };
        let mut arguments = Vec::new();
        if let Some(frame) = self.frames.last_mut() {
            let mut previous = at.clone();
            while let Some(token) = frame.tokens.get(frame.position) {
                if lexer::on_new_line(&previous, token) {
                    break;
                }
                arguments.push(token.clone());
                previous = token.clone();
                frame.position += 1;
            }
        }
        let [argument] = arguments.as_slice() else {
            return Err(error(format!(
                "import takes exactly one argument (a snippet name, a file or a glob), got {}",
                arguments.len()
            )));
        };
        if argument.is_brace() {
            return Err(error(
                "import takes a snippet name, a file or a glob, not a brace".into(),
            ));
        }
        let name = argument.text.as_str();
        if name.is_empty() {
            return Err(error("import needs a non-empty argument".into()));
        }
        self.expansions += 1;
        if self.expansions > MAX_EXPANSIONS {
            return Err(error(format!(
                "more than {MAX_EXPANSIONS} imports expanded"
            )));
        }
        if chain.len() >= MAX_DEPTH {
            return Err(error(format!("imports nested more than {MAX_DEPTH} deep")));
        }
        let cycle = |origin: &Origin| {
            let start = chain.iter().position(|o| o == origin)?;
            let mut path: Vec<String> = chain[start..].iter().map(Origin::describe).collect();
            path.push(origin.describe());
            Some(format!("import cycle: {}", path.join(" -> ")))
        };

        if let Some(snippet) = self.snippets.get(name) {
            let origin = Origin::Snippet(name.to_owned());
            if let Some(message) = cycle(&origin) {
                return Err(error(message));
            }
            let mut next_chain = chain.as_ref().clone();
            next_chain.push(origin);
            let tokens = snippet.tokens.clone();
            self.frames.push(Frame {
                tokens,
                position: 0,
                chain: Rc::new(next_chain),
            });
            return Ok(());
        }

        let base = at.file.parent().unwrap_or(Path::new(""));
        let pattern = base.join(name);
        let files = if glob::has_wildcards(name) {
            let files = glob::glob(&pattern).map_err(&error)?;
            if files.is_empty() {
                // As CoreDNS (Caddy): optional imports, such as k3s's and AKS's
                // `custom/*.override`, are a warning, not an error.
                tracing::warn!(
                    "{}:{}: No files matching import glob pattern: {}",
                    at.file.display(),
                    at.line,
                    pattern.display()
                );
            }
            files
        } else if pattern.symlink_metadata().is_ok() {
            vec![pattern]
        } else if name.contains('/') {
            // A path: no snippet is named like that.
            return Err(error(format!(
                "import '{name}': file {} does not exist",
                pattern.display()
            )));
        } else {
            return Err(error(format!(
                "import '{name}': no snippet of that name is defined above, and file {} does \
                 not exist",
                pattern.display()
            )));
        };
        let mut frames = Vec::with_capacity(files.len());
        for path in files {
            let origin =
                Origin::File(std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone()));
            if let Some(message) = cycle(&origin) {
                return Err(error(message));
            }
            let text = read_text(&path)
                .map_err(|e| error(format!("cannot import {}: {e}", path.display())))?;
            let file: Arc<Path> = Arc::from(path.as_path());
            let tokens = lexer::lex(&text, &file, self.env)?;
            let mut next_chain = chain.as_ref().clone();
            next_chain.push(origin);
            frames.push(Frame {
                tokens: tokens.into(),
                position: 0,
                chain: Rc::new(next_chain),
            });
        }
        self.expansions += frames.len().saturating_sub(1);
        if self.expansions > MAX_EXPANSIONS {
            return Err(error(format!(
                "more than {MAX_EXPANSIONS} imports expanded"
            )));
        }
        // The first file must be read first: it goes on top.
        self.frames.extend(frames.into_iter().rev());
        Ok(())
    }
}

/// Reads a Corefile or an imported file: a regular file, UTF-8, at most [`MAX_FILE_BYTES`].
pub(crate) fn read_text(path: &Path) -> std::io::Result<String> {
    use std::io::{Error as IoError, ErrorKind};
    let bytes = read_regular(path, MAX_FILE_BYTES)?;
    String::from_utf8(bytes).map_err(|_| IoError::new(ErrorKind::InvalidData, "not UTF-8 text"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn stream_texts(text: &str, file: &Path) -> Result<Vec<(String, bool)>, Error> {
        let env = Environment::isolated();
        let arc: Arc<Path> = Arc::from(file);
        let tokens = lexer::lex(text, &arc, &env)?;
        let mut stream = Stream::new(tokens, file, &env);
        let mut out = Vec::new();
        while let Some(d) = stream.next()? {
            out.push((d.token.text, d.starts_line));
        }
        Ok(out)
    }

    #[test]
    fn imports_files_relative_to_the_importing_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/a.conf"), "a1 a2\nimport b.conf").unwrap();
        std::fs::write(dir.path().join("sub/b.conf"), "b1").unwrap();
        let got = stream_texts(
            "x import\nimport sub/a.conf\ny",
            &dir.path().join("Corefile"),
        );
        let got = got.unwrap();
        let texts: Vec<&str> = got.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(texts, ["x", "import", "a1", "a2", "b1", "y"]);
        assert!(got[2].1 && !got[3].1 && got[4].1 && got[5].1);
    }

    #[test]
    fn globs_in_order_and_empty_globs() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("2.conf"), "two").unwrap();
        std::fs::write(dir.path().join("1.conf"), "one").unwrap();
        let got = stream_texts("import *.conf\nimport *.none", &dir.path().join("Corefile"));
        let texts: Vec<String> = got.unwrap().into_iter().map(|(t, _)| t).collect();
        assert_eq!(texts, ["one", "two"]);
    }

    #[test]
    fn errors() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("self.conf"), "import self.conf").unwrap();
        std::fs::write(dir.path().join("ping.conf"), "import pong.conf").unwrap();
        std::fs::write(dir.path().join("pong.conf"), "import ping.conf").unwrap();
        std::fs::create_dir(dir.path().join("dir.conf")).unwrap();
        let corefile = dir.path().join("Corefile");
        let cases = [
            ("no argument", "import", "exactly one argument"),
            ("two arguments", "import a b", "exactly one argument"),
            ("brace", "import {", "not a brace"),
            ("empty", "import \"\"", "non-empty"),
            ("missing", "\nimport nope", "no snippet of that name"),
            (
                "missing file",
                "import /nonexistent/x",
                "import '/nonexistent/x': file /nonexistent/x does not exist",
            ),
            ("self", "import self.conf", "import cycle"),
            ("ping pong", "import ping.conf", "import cycle"),
            ("directory", "import dir.conf", "is a directory"),
            ("class", "import [a].conf", "character class"),
        ];
        for (name, text, want) in cases {
            let error = stream_texts(text, &corefile).unwrap_err();
            assert!(error.to_string().contains(want), "{name}: {error}");
        }
        let error = stream_texts("\nimport nope", &corefile).unwrap_err();
        assert_eq!(error.line(), 2);
    }

    #[test]
    fn read_text_refuses_directories() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read_text(dir.path()).is_err());
        assert!(read_text(&dir.path().join("missing")).is_err());
    }
}
