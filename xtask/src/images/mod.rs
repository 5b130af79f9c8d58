//! `cargo xtask images`: builds the lab's guest images as OCI archives and loads them into each runtime.
//!
//! No registry is reachable from our machines, so every image is assembled
//! here from the host's static busybox and bash plus what the image adds:
//! `lab/guest/` for the lab guest; with `--claude-code`, also the real
//! Claude Code from the npm registry on Debian's glibc. `oci` writes every
//! byte with fixed metadata, so the same inputs always give the same digests
//! and the tag is a hash of the content.

mod claude_code;
mod debian;
mod elf;
mod guest;
mod npm;
mod oci;
mod userland;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail, ensure};
use serde_json::Value;

use oci::Image;
use userland::Userland;

const RUNTIMES: [&str; 2] = ["nerdctl", "podman"];

const USAGE: &str = "usage: cargo xtask images [--claude-code] [--out DIR] [--no-load]\n\n\
    Builds localhost/brig-lab/guest and loads it into nerdctl and podman.\n\
    --claude-code  also build localhost/brig-lab/claude-code: the pinned Claude Code\n\
    \x20              from the npm registry on Debian's glibc (downloads are cached\n\
    \x20              under ~/.cache/brig-provision)\n\
    --out DIR      where the archives go (default: target/lab-images)\n\
    --no-load      write the archives only";

pub fn run(args: &[String]) -> Result<()> {
    let opts = Options::parse(args)?;
    let userland = Userland::from_host()?;
    let out_dir = opts.out.clone().unwrap_or_else(default_out_dir);
    std::fs::create_dir_all(&out_dir).with_context(|| format!("creating {}", out_dir.display()))?;

    let guest = guest::LabGuest::from_workspace(&workspace_root())?.image(&userland)?;
    emit(&opts, &out_dir, &guest)?;

    if opts.claude_code {
        let started = Instant::now();
        let cache = crate::provision::cache_dir()?;
        let image = claude_code::ClaudeCode::fetch(&cache)?.image(&userland, &cache)?;
        emit(&opts, &out_dir, &image)?;
        println!("claude-code image took {:.1}s", started.elapsed().as_secs_f64());
    }
    Ok(())
}

/// Writes the image's archive and loads it into every runtime on PATH.
fn emit(opts: &Options, out_dir: &Path, image: &Image) -> Result<()> {
    let archive = out_dir.join(image.file_name());
    write_atomically(&archive, &image.archive)?;
    println!("archive  {}", archive.display());
    println!("image    {}:{} (and :latest)", image.repository, image.tag);
    println!("id       {}", image.config_digest);
    println!("manifest {}", image.manifest_digest);

    if opts.load {
        for runtime in RUNTIMES {
            load_into(runtime, &archive, image)?;
        }
    }
    Ok(())
}

#[derive(Debug)]
struct Options {
    out: Option<PathBuf>,
    load: bool,
    claude_code: bool,
}

impl Options {
    fn parse(args: &[String]) -> Result<Self> {
        let mut opts = Options { out: None, load: true, claude_code: false };
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--out" => {
                    let dir = args.next().context("--out needs a directory")?;
                    opts.out = Some(PathBuf::from(dir));
                }
                "--no-load" => opts.load = false,
                "--claude-code" => opts.claude_code = true,
                "-h" | "--help" => {
                    println!("{USAGE}");
                    std::process::exit(0);
                }
                other => bail!("unknown argument {other:?}\n{USAGE}"),
            }
        }
        Ok(opts)
    }
}

pub fn workspace_root() -> PathBuf {
    let xtask = Path::new(env!("CARGO_MANIFEST_DIR"));
    xtask.parent().unwrap_or(xtask).to_path_buf()
}

fn default_out_dir() -> PathBuf {
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| workspace_root().join("target"));
    target.join("lab-images")
}

fn write_atomically(path: &Path, data: &[u8]) -> Result<()> {
    let tmp = path.with_extension("tar.partial");
    std::fs::write(&tmp, data).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("renaming to {}", path.display()))
}

/// Runs a runtime command and returns its stdout; a failure carries the argv
/// run, the status and stderr.
fn capture(bin: &Path, args: &[&str]) -> Result<String> {
    let shown = format!("{} {}", bin.display(), args.join(" "));
    let out = Command::new(bin).args(args).output().with_context(|| format!("running {shown}"))?;
    ensure!(out.status.success(), "{shown}: {}: {}", out.status, String::from_utf8_lossy(&out.stderr).trim());
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The id a runtime reports for `reference`, without a `sha256:` prefix, or
/// `None` when it does not know the reference.
fn image_id(bin: &Path, reference: &str) -> Option<String> {
    let out = capture(bin, &["image", "inspect", reference]).ok()?;
    inspected_id(&out)
}

fn inspected_id(inspect_output: &str) -> Option<String> {
    let parsed: Value = serde_json::from_str(inspect_output).ok()?;
    let id = parsed.get(0)?.get("Id")?.as_str()?;
    Some(id.trim_start_matches("sha256:").to_owned())
}

fn load_into(runtime: &str, archive: &Path, image: &Image) -> Result<()> {
    let Some(bin) = crate::provision::find_in_path(runtime) else {
        println!("{runtime}: not on PATH, skipped");
        return Ok(());
    };
    let want = image.config_digest.trim_start_matches("sha256:");
    let refs = image.references();
    let present = |bin: &Path| refs.iter().all(|r| image_id(bin, r).as_deref() == Some(want));
    if present(&bin) {
        println!("{runtime}: already has {} (id {want:.12}), not loaded again", refs[0]);
        return Ok(());
    }
    let archive = archive.to_str().context("archive path is not UTF-8")?;
    capture(&bin, &["load", "-i", archive]).with_context(|| format!("loading into {runtime}"))?;
    for reference in &refs {
        let got = image_id(&bin, reference);
        ensure!(
            got.as_deref() == Some(want),
            "{runtime}: after loading, {reference} has id {} instead of {want}",
            got.as_deref().unwrap_or("(none)")
        );
    }
    println!("{runtime}: loaded {} and :latest (id {want:.12})", refs[0]);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inspect_ids_are_read_with_or_without_prefix() {
        assert_eq!(inspected_id(r#"[{"Id":"sha256:abc"}]"#).as_deref(), Some("abc"));
        assert_eq!(inspected_id(r#"[{"Id":"abc"}]"#).as_deref(), Some("abc"));
        assert_eq!(inspected_id("[]"), None);
    }
}
