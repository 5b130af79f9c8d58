//! `cargo xtask ci`: everything CI runs, in order, stopping at the first failure.
//!
//! This is the README's test command, so a contributor and CI run exactly
//! the same steps.

use std::process::Command;

use anyhow::{Context, bail};

/// One step: a cargo invocation and what it proves.
struct Step {
    what: &'static str,
    args: &'static [&'static str],
}

const STEPS: &[Step] = &[
    Step { what: "formatting", args: &["fmt", "--all", "--check"] },
    Step { what: "lints", args: &["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"] },
    Step { what: "unit and integration tests", args: &["test", "--workspace"] },
];

pub fn run(args: &[String]) -> anyhow::Result<()> {
    if let Some(extra) = args.first() {
        bail!("`cargo xtask ci` takes no arguments (got {extra:?})");
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    for step in STEPS {
        eprintln!("==> {}: cargo {}", step.what, step.args.join(" "));
        let status = Command::new(&cargo)
            .args(step.args)
            .status()
            .with_context(|| format!("cannot run cargo for {}", step.what))?;
        if !status.success() {
            bail!("{} failed ({status})", step.what);
        }
    }
    eprintln!("==> ci: every step passed");
    Ok(())
}
