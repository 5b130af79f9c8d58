//! The `brigd` daemon: a thin shell over the library's daemon module.

use std::process::ExitCode;

fn main() -> ExitCode {
    brig::daemon::main(std::env::args_os())
}
