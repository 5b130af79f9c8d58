//! `cargo xtask ci`: everything CI runs, in order, stopping at the first failure.
//!
//! This is the README's test command, so a contributor and CI run exactly
//! the same steps: bring up the runtime stack, build the lab's guest image,
//! check formatting and lints, run the unit and integration tests, then run
//! the whole lab against both real runtimes. `LAB_REQUIRE` makes a missing
//! runtime a failure, so CI can never pass by skipping.

use std::process::Command;

use anyhow::{Context, bail};

/// One step: a cargo invocation, what it proves, and extra environment.
struct Step {
    what: &'static str,
    args: &'static [&'static str],
    env: &'static [(&'static str, &'static str)],
}

const STEPS: &[Step] = &[
    Step { what: "runtime stack", args: &["xtask", "provision"], env: &[] },
    Step { what: "formatting", args: &["fmt", "--all", "--check"], env: &[] },
    Step { what: "lints", args: &["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"], env: &[] },
    Step { what: "unit and integration tests", args: &["test", "--workspace"], env: &[] },
    Step { what: "lab guest image", args: &["xtask", "images"], env: &[] },
    Step { what: "the lab", args: &["xtask", "lab"], env: &[("LAB_REQUIRE", "nerdctl,podman")] },
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
            .envs(step.env.iter().copied())
            .status()
            .with_context(|| format!("cannot run cargo for {}", step.what))?;
        if !status.success() {
            bail!("{} failed ({status})", step.what);
        }
    }
    eprintln!("==> ci: every step passed");
    Ok(())
}
