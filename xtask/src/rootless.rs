//! The rootless lane's host setup: an unprivileged lab user with subordinate
//! ids, a runtime directory, a usable `/dev/net/tun`, native overlay storage
//! for its podman, and the lab's guest image in that user's store.
//!
//! Provisioning makes the user; the lab loads the image (it is built after
//! provisioning). Each step checks first and changes only what is missing.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// The lab's unprivileged user; the lab runs the `podman-rootless` lane as it.
pub const USER: &str = lab::runtime::ROOTLESS_USER;

/// The user's uid and gid, and its home, from /etc/passwd.
pub fn user() -> Option<(u32, u32, PathBuf)> {
    lab::runtime::rootless_user()
}

/// A command run as the lab user, in its own environment.
pub fn as_user(program: &str) -> Result<Command> {
    lab::runtime::as_lane_user(program).with_context(|| format!("no user {USER}; run cargo xtask provision"))
}

fn has_subids(file: &str) -> bool {
    fs::read_to_string(file).is_ok_and(|t| t.lines().any(|l| l.split(':').next() == Some(USER)))
}

/// Make the user and everything its rootless podman needs; returns what was
/// done, for provisioning's report.
pub fn ensure_user() -> Result<String> {
    let mut done = Vec::new();
    if user().is_none() {
        let status = Command::new("useradd")
            .args(["--create-home", "--shell", "/bin/bash", "--comment", "brig lab rootless lane", USER])
            .status()
            .context("running useradd")?;
        if !status.success() {
            bail!("useradd {USER} failed ({status})");
        }
        done.push("user created");
    }
    let (uid, gid, home) = user().context("the user is still missing after useradd")?;
    // useradd gives a new user subordinate ids from login.defs; an older
    // user may have none.
    if !has_subids("/etc/subuid") || !has_subids("/etc/subgid") {
        let range = "200000-265535";
        let status = Command::new("usermod")
            .args(["--add-subuids", range, "--add-subgids", range, USER])
            .status()
            .context("running usermod")?;
        if !status.success() {
            bail!("usermod --add-subuids for {USER} failed ({status})");
        }
        done.push("subordinate ids added");
    }
    let run_dir = PathBuf::from(format!("/run/user/{uid}"));
    if fs::metadata(&run_dir).map(|m| m.uid()).ok() != Some(uid) {
        fs::create_dir_all(&run_dir)?;
        chown(&run_dir, uid, gid)?;
        fs::set_permissions(&run_dir, fs::Permissions::from_mode(0o700))?;
        done.push("runtime directory made");
    }
    // The user's network namespaces need the tun device; a desktop has it
    // 0666 (it grants nothing without a namespace of one's own), this kind
    // of host 0600.
    let tun = Path::new("/dev/net/tun");
    if fs::metadata(tun).is_ok_and(|m| m.mode() & 0o666 != 0o666) {
        fs::set_permissions(tun, fs::Permissions::from_mode(0o666))?;
        done.push("/dev/net/tun opened to users");
    }
    // Native overlay (the kernel's, rootless since 5.13) instead of vfs,
    // which copies every image layer for every container; the store's
    // places named, so a trial that gives brig another HOME still finds
    // the user's images (the lab points CONTAINERS_STORAGE_CONF here).
    let conf_dir = home.join(".config/containers");
    let conf = lab::runtime::lane_storage_conf(&home);
    let want = format!(
        "[storage]\ndriver = \"overlay\"\nrootless_storage_path = \"{}\"\n",
        home.join(".local/share/containers/storage").display()
    );
    let want = want.as_str();
    if fs::read_to_string(&conf).ok().as_deref() != Some(want) {
        fs::create_dir_all(&conf_dir)?;
        fs::write(&conf, want)?;
        for p in [home.join(".config"), conf_dir.clone(), conf.clone()] {
            chown(&p, uid, gid)?;
        }
        done.push("overlay storage");
    }
    let answer = as_user("podman")?
        .args(["info", "--format", "{{.Store.GraphDriverName}} {{.Host.NetworkBackend}}"])
        .output()
        .context("asking the user's podman")?;
    if !answer.status.success() {
        bail!("podman as {USER} does not answer: {}", String::from_utf8_lossy(&answer.stderr).trim());
    }
    let info = String::from_utf8_lossy(&answer.stdout).trim().to_owned();
    let what = if done.is_empty() { "present".to_owned() } else { done.join(", ") };
    Ok(format!("uid {uid}, podman {info}: {what}"))
}

fn chown(path: &Path, uid: u32, gid: u32) -> Result<()> {
    std::os::unix::fs::chown(path, Some(uid), Some(gid)).with_context(|| format!("chown {}", path.display()))
}

/// Copy `image` from root's podman into the lab user's store unless it has
/// the same image id there.
pub fn ensure_image(image: &str) -> Result<()> {
    let id = |cmd: &mut Command| -> Option<String> {
        let out = cmd.args(["image", "inspect", "--format", "{{.Id}}", image]).output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    let ours = id(&mut Command::new("podman")).with_context(|| format!("root's podman has no {image}"))?;
    if id(&mut as_user("podman")?) == Some(ours) {
        return Ok(());
    }
    let archive = std::env::temp_dir().join(format!("brig-rootless-image-{}.tar", std::process::id()));
    let _ = fs::remove_file(&archive);
    let saved = Command::new("podman").args(["save", "-q", "-o"]).arg(&archive).arg(image).status()?;
    if !saved.success() {
        bail!("podman save {image} failed ({saved})");
    }
    fs::set_permissions(&archive, fs::Permissions::from_mode(0o644))?;
    let loaded = as_user("podman")?.args(["load", "-q", "-i"]).arg(&archive).status();
    let _ = fs::remove_file(&archive);
    if !loaded?.success() {
        bail!("loading {image} into {USER}'s podman failed");
    }
    eprintln!("==> lab: loaded {image} into {USER}'s rootless podman");
    Ok(())
}
