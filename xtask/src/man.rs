//! `cargo xtask man [--out DIR]`: the manual pages, from the same clap
//! definitions the binaries parse their arguments with, so a page cannot
//! describe a flag the binary does not take.
//!
//! `brig(1)`, one page per verb (`brig-run(1)`, `brig-policy-attach(1)`, …)
//! and `brigd(8)` go to `DIR/man1` and `DIR/man8` (default `target/man`).
//! With `--check` each page is then looked up and rendered by `man` itself
//! from that directory (`man -M DIR 1 brig-run`, as `man brig-run` finds an
//! installed page), which fails on a page it cannot find or read.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail, ensure};
use clap::CommandFactory as _;

const USAGE: &str = "usage: cargo xtask man [--out DIR] [--check]";

pub fn run(args: &[String]) -> Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().context("xtask lives in the workspace")?.to_owned();
    let mut out = root.join("target/man");
    let mut check = false;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--out" => out = PathBuf::from(args.next().context("--out needs a directory")?),
            "--check" => check = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            other => bail!("unknown argument {other:?}\n{USAGE}"),
        }
    }
    let pages = write(&out)?;
    eprintln!("==> wrote {} manual pages under {}", pages.len(), out.display());
    if check {
        for page in &pages {
            check_page(&out, page)?;
        }
        eprintln!("==> man renders every page");
    }
    Ok(())
}

/// Writes every page; returns their paths.
fn write(out: &Path) -> Result<Vec<PathBuf>> {
    let mut pages = Vec::new();
    let man1 = out.join("man1");
    std::fs::create_dir_all(&man1).with_context(|| format!("creating {}", man1.display()))?;
    pages.extend(tree(&brig::cli::command(), "brig", &man1)?);
    let man8 = out.join("man8");
    std::fs::create_dir_all(&man8).with_context(|| format!("creating {}", man8.display()))?;
    let brigd = brig::daemon::Args::command();
    pages.push(page(brigd, "brigd", "8", &man8)?);
    Ok(pages)
}

/// The page of `cmd`, named `name`, and one for each of its subcommands,
/// named `name-<sub>`, recursively.
fn tree(cmd: &clap::Command, name: &str, dir: &Path) -> Result<Vec<PathBuf>> {
    let mut pages = vec![page(cmd.clone(), name, "1", dir)?];
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help") {
        pages.extend(tree(sub, &format!("{name}-{}", sub.get_name()), dir)?);
    }
    Ok(pages)
}

fn page(cmd: clap::Command, name: &str, section: &str, dir: &Path) -> Result<PathBuf> {
    // A verb's page is titled `brig-run`, as `man brig-run` finds it; its
    // synopsis says `brig run`, as the user types it.
    let cmd = cmd.name(name.to_owned()).bin_name(name.replace('-', " "));
    let mut text = Vec::new();
    clap_mangen::Man::new(cmd).section(section).render(&mut text).with_context(|| format!("rendering {name}"))?;
    let path = dir.join(format!("{name}.{section}"));
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

/// `man` finds the page under `dir` by section and name and renders it
/// without error, and the text names the page.
fn check_page(dir: &Path, path: &Path) -> Result<()> {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
    let section = path.extension().and_then(|s| s.to_str()).unwrap_or_default();
    let out = Command::new("man")
        .arg("-M")
        .arg(dir)
        .args([section, stem])
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "80")
        .output()
        .context("running man (install man-db)")?;
    let text = String::from_utf8_lossy(&out.stdout);
    let errors = String::from_utf8_lossy(&out.stderr);
    ensure!(
        out.status.success() && errors.trim().is_empty(),
        "man -M {} {section} {stem}: {}",
        dir.display(),
        errors.trim()
    );
    ensure!(text.contains("NAME") && text.contains(stem), "{} does not render its NAME section", path.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_verb_has_a_page_and_brigd_is_in_section_8() {
        let dir = tempfile::tempdir().unwrap();
        let pages = write(dir.path()).unwrap();
        let names: Vec<String> = pages.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        for verb in brig::cli::command().get_subcommands().filter(|s| !s.is_hide_set()) {
            let want = format!("brig-{}.1", verb.get_name());
            assert!(names.contains(&want), "no page {want} in {names:?}");
        }
        assert!(names.contains(&"brig.1".to_owned()) && names.contains(&"brigd.8".to_owned()), "{names:?}");
        let run = std::fs::read_to_string(dir.path().join("man1/brig-run.1")).unwrap();
        assert!(run.contains("brig run") && run.contains("\\-\\-publish"), "{run}");
    }
}
