//! `cargo xtask release check`: what a release ships that the tests do not
//! exercise: the workflows pass `actionlint`, the Nix flake parses
//! (`nix-instantiate --parse`; it cannot be evaluated without the network),
//! and every manual page renders with `man`. CI runs it; provisioning
//! installs the three tools.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail, ensure};

const USAGE: &str = "usage: cargo xtask release check";

pub fn run(args: &[String]) -> Result<()> {
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["check"] => check(),
        ["-h" | "--help"] => {
            println!("{USAGE}");
            Ok(())
        }
        _ => bail!("{USAGE}"),
    }
}

fn check() -> Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().context("xtask lives in the workspace")?.to_owned();
    eprintln!("==> actionlint: .github/workflows");
    tool(Command::new(Path::new(crate::provision::INSTALL_DIR).join("actionlint")).current_dir(&root), "actionlint")?;
    eprintln!("==> nix-instantiate --parse nix/flake.nix");
    tool(Command::new("nix-instantiate").arg("--parse").arg(root.join("nix/flake.nix")), "nix-instantiate")?;
    let man = tempfile_dir()?;
    crate::man::run(&["--out".to_owned(), man.display().to_string(), "--check".to_owned()])?;
    std::fs::remove_dir_all(&man).with_context(|| format!("removing {}", man.display()))?;
    eprintln!("==> release check: every part passed");
    Ok(())
}

/// Runs a checker; its own words are the failure.
fn tool(cmd: &mut Command, name: &str) -> Result<()> {
    let out = cmd.output().with_context(|| format!("cannot run {name}; `cargo xtask provision` installs it"))?;
    ensure!(
        out.status.success(),
        "{name} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

fn tempfile_dir() -> Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("brig-man-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}
