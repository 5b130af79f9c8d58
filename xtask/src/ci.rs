//! `cargo xtask ci`: everything CI runs, in order, stopping at the first failure.
//!
//! This is the README's test command, so a contributor and CI run exactly
//! the same steps: bring up the runtime stack, check formatting and lints,
//! run the unit and integration tests (under cargo-nextest, which
//! provisioning installs), check what a release ships, build the lab's guest
//! images, then run the whole lab against both real runtimes, rootful and
//! rootless. Nothing CI provisions may be skipped: the tests run with `CI`
//! set, so a test that needs a host tool (busybox, a shell) fails without it,
//! and `LAB_REQUIRE` makes a missing runtime, or a missing second uid for the
//! peer check, fail its trials.

use std::process::Command;
use std::time::{Duration, Instant};

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
    // Under nextest, each test in its own process, with a JUnit report in
    // target/nextest/ci/junit.xml; nextest does not run doctests, so
    // `cargo test --doc` does.
    Step {
        what: "unit and integration tests",
        args: &["nextest", "run", "--workspace", "--profile", "ci"],
        env: &[("CI", "true")],
    },
    Step { what: "doctests", args: &["test", "--workspace", "--doc"], env: &[("CI", "true")] },
    Step { what: "workflows, Nix flake, manual pages", args: &["xtask", "release", "check"], env: &[] },
    Step { what: "lab guest images", args: &["xtask", "images", "--claude-code"], env: &[] },
    Step {
        what: "the lab",
        args: &["xtask", "lab"],
        env: &[("LAB_REQUIRE", "nerdctl,podman,podman-rootless,second-uid")],
    },
];

pub fn run(args: &[String]) -> anyhow::Result<()> {
    if let Some(extra) = args.first() {
        bail!("`cargo xtask ci` takes no arguments (got {extra:?})");
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let started = Instant::now();
    let mut took = Vec::new();
    for step in STEPS {
        eprintln!("==> {}: cargo {}", step.what, step.args.join(" "));
        let step_started = Instant::now();
        let status = Command::new(&cargo)
            .args(step.args)
            .envs(step.env.iter().copied())
            .status()
            .with_context(|| format!("cannot run cargo for {}", step.what))?;
        took.push((step.what, step_started.elapsed()));
        if !status.success() {
            print_times(&took, started.elapsed());
            bail!("{} failed ({status})", step.what);
        }
    }
    print_times(&took, started.elapsed());
    eprintln!("==> ci: every step passed");
    Ok(())
}

/// Where the run's time went, step by step: the whole run must stay under
/// half an hour on two cores, and this says which step to look at first.
fn print_times(took: &[(&str, Duration)], total: Duration) {
    let width = took.iter().map(|(what, _)| what.len()).max().unwrap_or(0);
    eprintln!("==> ci: time per step");
    for (what, took) in took {
        eprintln!("    {what:<width$}  {:>6.0}s", took.as_secs_f64());
    }
    eprintln!("    {:<width$}  {:>6.0}s", "in all", total.as_secs_f64());
}

/// Whether a test whose host tool is missing must fail rather than skip: it
/// must when `CI` is set, as CI services set it and [`STEPS`] does, to
/// anything but empty, `0` or `false`.
#[cfg(test)]
pub fn forbids_skipping(ci: Option<&std::ffi::OsStr>) -> bool {
    ci.and_then(|v| v.to_str()).is_some_and(|v| !matches!(v.trim(), "" | "0" | "false"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ci_runs_the_tests_that_would_skip() {
        let env = |what: &str| STEPS.iter().find(|s| s.what == what).unwrap().env;
        let ci = env("unit and integration tests").iter().find(|(k, _)| *k == "CI").map(|(_, v)| v.as_ref());
        assert!(forbids_skipping(ci), "the test step must set CI");
        let (_, required) = env("the lab").iter().find(|(k, _)| *k == "LAB_REQUIRE").unwrap();
        for need in ["nerdctl", "podman", "podman-rootless", "second-uid"] {
            assert!(required.split(',').any(|r| r == need), "LAB_REQUIRE lacks {need}: {required}");
        }
    }

    #[test]
    fn the_tests_run_under_a_nextest_profile_that_writes_junit() {
        let step = STEPS.iter().find(|s| s.what == "unit and integration tests").unwrap();
        assert_eq!(step.args[..2], ["nextest", "run"], "{:?}", step.args);
        let at = step.args.iter().position(|a| *a == "--profile").expect("the test step names a profile");
        let profile = step.args[at + 1];
        let config = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.config/nextest.toml");
        let text = std::fs::read_to_string(&config).unwrap();
        for table in [format!("[profile.{profile}]"), format!("[profile.{profile}.junit]")] {
            assert!(text.lines().any(|l| l.trim() == table), "{} lacks {table}", config.display());
        }
        assert!(
            STEPS.iter().any(|s| s.args[..2] == ["test", "--workspace"] && s.args.contains(&"--doc")),
            "nextest skips doctests: a step must run them"
        );
    }

    #[test]
    fn what_counts_as_ci() {
        let cases = [(None, false), (Some(""), false), (Some("0"), false), (Some("false"), false)];
        let cases = cases.into_iter().chain([(Some("true"), true), (Some("1"), true), (Some("yes"), true)]);
        for (value, want) in cases {
            assert_eq!(forbids_skipping(value.map(std::ffi::OsStr::new)), want, "CI={value:?}");
        }
    }
}
