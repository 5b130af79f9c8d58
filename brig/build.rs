//! Captures the build facts `brig version` prints: the commit, its time, and
//! whether the tree had uncommitted changes. A build without git history
//! (a source tarball) records none of them and reports itself as `dev`.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8(out.stdout).ok()?.trim().to_owned())
}

fn main() {
    let commit = git(&["rev-parse", "HEAD"]);
    if let Some(commit) = &commit {
        println!("cargo:rustc-env=BRIG_BUILD_COMMIT={commit}");
        if let Some(time) = git(&["log", "-1", "--format=%cI", "HEAD"]) {
            println!("cargo:rustc-env=BRIG_BUILD_COMMIT_TIME={time}");
        }
        let dirty = git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
        println!("cargo:rustc-env=BRIG_BUILD_MODIFIED={dirty}");
        // Rebuild the facts when HEAD moves or the index changes; edits to the
        // crate's own sources re-run this script too, so `+dirty` follows them.
        if let Some(git_dir) = git(&["rev-parse", "--absolute-git-dir"]) {
            for file in ["HEAD", "index", "logs/HEAD"] {
                println!("cargo:rerun-if-changed={git_dir}/{file}");
            }
        }
        println!("cargo:rerun-if-changed=src");
        println!("cargo:rerun-if-changed=../profiles");
    } else {
        println!("cargo:rustc-env=BRIG_BUILD_MODIFIED=false");
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let rustc_version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.split_whitespace().nth(1).map(str::to_owned))
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=BRIG_BUILD_RUSTC={rustc_version}");
}
