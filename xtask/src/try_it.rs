//! `cargo xtask try [PROJECT]`: the README's first command. Brings up the
//! runtime stack if needed, builds the lab guest image, builds brig, and runs
//! the lab's stand-in agent in a sandbox against a project directory, so a
//! newcomer sees what an agent sees from inside: its argv, where it starts,
//! its home and the only host directories mounted into it.
//!
//! It uses a scratch state directory and removes the sandbox afterwards.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

pub fn run(args: &[String]) -> anyhow::Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().context("xtask lives in the workspace")?.to_owned();
    let scratch = root.join("target/try");
    let project = match args.first() {
        Some(dir) => PathBuf::from(dir),
        None => {
            let demo = scratch.join("demo");
            std::fs::create_dir_all(&demo)?;
            std::fs::write(demo.join("README"), "a project directory, mounted read-write at /work/demo\n")?;
            demo
        }
    };
    crate::provision::run(&[])?;
    crate::images::run(&[])?;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let built = Command::new(&cargo).args(["build", "-q", "-p", "brig"]).current_dir(&root).status()?;
    if !built.success() {
        bail!("cargo build -p brig failed");
    }
    let brig = root.join("target/debug/brig");
    let state = scratch.join("state");
    // The lab's own profiles and image: no shipped agent image can be pulled
    // on a machine without a registry, so the stand-in agent plays the part.
    let profiles = root.join("lab/profiles");
    let env = [
        ("BRIG_STATE_DIR", state.as_os_str()),
        ("BRIG_PROFILE_DIR", profiles.as_os_str()),
        ("BRIG_ALLOW_CONTAINER_ISOLATION", "1".as_ref()),
        ("BRIG_CONTAINERD_RUNTIME", "io.containerd.runc.v2".as_ref()),
    ];
    eprintln!("==> brig run lab-agent@try {}", project.display());
    let status = Command::new(&brig)
        .args(["run", "lab-agent@try"])
        .arg(&project)
        .args(["--", "hello", "from the host"])
        .envs(env)
        .status()
        .context("cannot run brig")?;
    let removed = Command::new(&brig).args(["rm", "-q", "lab-agent@try"]).envs(env).status()?;
    if !status.success() {
        bail!("brig run failed ({status})");
    }
    if !removed.success() {
        bail!("brig rm lab-agent@try failed ({removed})");
    }
    Ok(())
}
