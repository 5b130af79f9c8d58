//! The `brig` command: a thin shell over the library's CLI.

use std::process::ExitCode;

fn main() -> ExitCode {
    brig::cli::main(std::env::args_os()).into()
}
