//! `cargo xtask lab`: builds brig and the lab runner, makes sure the lab
//! guest image is loaded into each runtime, then runs the lab; `cargo xtask
//! lab schema` regenerates `scenarios/schema.json`.
//!
//! Arguments after `lab` go to the runner untouched, so libtest's filters,
//! `--list`, `--ignored`, `--test-threads` and `--format` work as usual.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

const LAB_IMAGE: &str = "localhost/brig-lab/guest:latest";
const CLAUDE_CODE_IMAGE: &str = "localhost/brig-lab/claude-code:latest";
const RUNTIMES: [&str; 2] = ["nerdctl", "podman"];

pub fn run(args: &[String]) -> Result<()> {
    if args.first().map(String::as_str) == Some("schema") {
        if let Some(extra) = args.get(1) {
            bail!("`cargo xtask lab schema` takes no arguments (got {extra:?})");
        }
        return write_schema(&workspace_root());
    }
    run_lab(args, None)
}

/// Build, load the images, and run the lab with `args`; with `probe_log`,
/// the runner appends what each named probe measured there.
pub fn run_lab(args: &[String], probe_log: Option<&Path>) -> Result<()> {
    let root = workspace_root();

    cargo(&root, &["build", "--quiet", "-p", "brig", "-p", "lab", "--bins"])
        .context("building brig and the lab runner")?;

    // Both guest images: the agents family boots the real Claude Code too.
    let missing: Vec<&str> = wanted_runtimes()
        .into_iter()
        .filter(|rt| {
            crate::provision::find_in_path(rt).is_some()
                && !(has_image(rt, LAB_IMAGE) && has_image(rt, CLAUDE_CODE_IMAGE))
        })
        .collect();
    if !missing.is_empty() {
        eprintln!(
            "==> lab: a guest image is missing in {}; running cargo xtask images --claude-code",
            missing.join(", ")
        );
        cargo(&root, &["xtask", "images", "--claude-code"]).context("building the lab guest images")?;
    }

    // The rootless lane's user has a store of its own.
    if wanted_runtimes().contains(&"podman") && crate::rootless::user().is_some() {
        for image in [LAB_IMAGE, CLAUDE_CODE_IMAGE] {
            crate::rootless::ensure_image(image).context("the rootless lane's guest images")?;
        }
    }

    let bin_dir = target_dir(&root).join("debug");
    let mut lab = Command::new(bin_dir.join("lab"));
    lab.args(args).env("LAB_BRIG", bin_dir.join("brig")).current_dir(&root);
    if let Some(log) = probe_log {
        lab.env("LAB_PROBE_LOG", log);
    }
    let status = lab.status().context("cannot start the lab runner")?;
    if !status.success() {
        bail!("the lab failed ({status})");
    }
    Ok(())
}

fn write_schema(root: &Path) -> Result<()> {
    let path = root.join("scenarios").join("schema.json");
    let path_arg = path.to_string_lossy().into_owned();
    cargo(root, &["run", "--quiet", "-p", "lab", "--bin", "lab-schema", "--", &path_arg])
        .context("generating the scenario schema")?;
    eprintln!("==> wrote {}", path.display());
    Ok(())
}

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives inside the workspace").to_path_buf()
}

fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target"))
}

fn cargo(root: &Path, args: &[&str]) -> Result<()> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .args(args)
        .current_dir(root)
        .status()
        .with_context(|| format!("cannot run cargo {}", args.join(" ")))?;
    if !status.success() {
        bail!("cargo {} failed ({status})", args.join(" "));
    }
    Ok(())
}

/// The runtimes the lab will use: `LAB_RUNTIMES` if set, else both.
fn wanted_runtimes() -> Vec<&'static str> {
    match std::env::var("LAB_RUNTIMES") {
        Ok(list) if !list.trim().is_empty() => {
            RUNTIMES.into_iter().filter(|rt| list.split(',').any(|w| w.trim() == *rt)).collect()
        }
        _ => RUNTIMES.to_vec(),
    }
}

fn has_image(runtime: &str, image: &str) -> bool {
    Command::new(runtime)
        .args(["image", "inspect", image])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}
