use std::process::ExitCode;

fn main() -> ExitCode {
    clusterdns::cli::main()
}
