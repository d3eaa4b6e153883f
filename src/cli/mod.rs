//! The command line: argument parsing and dispatch. The only module that prints to stdout
//! or chooses an exit code.

use std::process::ExitCode;

/// Parse the arguments, run the command, and turn its result into an exit code.
pub fn main() -> ExitCode {
    ExitCode::SUCCESS
}
