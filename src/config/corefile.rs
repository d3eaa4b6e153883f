//! Reading a Corefile: its text lexed (`{$ENV}` substituted), its `import`s and snippets
//! expanded, its server blocks parsed and built into a [`Config`].

use std::path::Path;
use std::sync::Arc;

use super::blocks::Config;
use super::env::Environment;
use super::error::Error;
use super::{build, lexer, stream, syntax};

/// Reads and parses the Corefile at `path` (files it imports are relative to its directory).
pub fn read_corefile(path: &Path) -> Result<Config, Error> {
    read_corefile_in(path, &Environment::system())
}

/// [`read_corefile`] with the environment variables, interfaces and fixed files of `env`.
pub fn read_corefile_in(path: &Path, env: &Environment) -> Result<Config, Error> {
    let text = stream::read_text(path).map_err(|source| Error::Read {
        file: path.to_owned(),
        line: 0,
        error: source,
    })?;
    parse_corefile_in(&text, path, env)
}

/// Parses Corefile `text`; `file` names it in error messages and is the base directory of
/// relative `import`s and `objects` files. Environment variables and interfaces are the
/// process's and the machine's.
pub fn parse_corefile(text: &str, file: &Path) -> Result<Config, Error> {
    parse_corefile_in(text, file, &Environment::system())
}

/// [`parse_corefile`] with the environment variables and interfaces of `env`.
pub fn parse_corefile_in(text: &str, file: &Path, env: &Environment) -> Result<Config, Error> {
    let shared: Arc<Path> = Arc::from(file);
    let tokens = lexer::lex(text, &shared, env)?;
    let mut stream = stream::Stream::new(tokens, file, env);
    let blocks = syntax::parse(&mut stream)?;
    build::build(&blocks, file, env)
}
