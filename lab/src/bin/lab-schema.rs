//! Writes the scenario JSON Schema to the path given (or stdout), for
//! `cargo xtask lab schema`.

use std::process::ExitCode;

fn main() -> ExitCode {
    let schema = lab::scenario::schema_json();
    match std::env::args_os().nth(1) {
        None => {
            print!("{schema}");
            ExitCode::SUCCESS
        }
        Some(path) => match std::fs::write(&path, schema) {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("lab-schema: cannot write {}: {err}", path.to_string_lossy());
                ExitCode::FAILURE
            }
        },
    }
}
