//! `cargo xtask`: the project's automation, in Rust so it runs wherever cargo does.
//!
//! `ci` runs what CI runs; `provision` installs and starts the local runtime
//! stack; `images` builds the lab guest image and loads it into each runtime;
//! `man` writes the manual pages; `release check` checks what a release
//! ships beyond the tests.

mod bench;
mod ci;
mod images;
mod lab;
mod man;
mod provision;
mod release;
mod report;
mod rootless;
mod try_it;

use std::process::ExitCode;

const USAGE: &str = "usage: cargo xtask <ci | try | provision | images | lab | bench | report | man | release> [args…]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((task, rest)) = args.split_first() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let result = match task.as_str() {
        "ci" => ci::run(rest),
        "lab" => lab::run(rest),
        "provision" => provision::run(rest),
        "images" => images::run(rest),
        "try" => try_it::run(rest),
        "bench" => bench::run(rest),
        "report" => report::run(rest),
        "man" => man::run(rest),
        "release" => release::run(rest),
        other => {
            eprintln!("unknown task {other:?}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("xtask {task}: {err:#}");
            ExitCode::FAILURE
        }
    }
}
