//! Making a guest home ready to boot: the home itself, the host side of
//! every hostmount, and the agent's first-run (onboarding) state.
//!
//! Everything inside a home may have been written by the guest, so every
//! path is walked from the home's handle one component at a time without
//! following a link, and every open is non-blocking: a link planted where a
//! hostmount goes is refused naming where it points, and a FIFO or device
//! is refused as not the file or directory expected, never opened in a way
//! that could hang brig.

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path};

use rustix::fs::{FileType, Mode, OFlags};
use rustix::io::Errno;

use crate::Error;
use crate::profile::Profile;
use crate::session::home::KEEP_DIR;
use crate::session::{self, GuestHome, HomeSource, PreparedHome, home, walk};

/// Mode of a file brig creates in a home for the guest.
const FILE_MODE: u32 = 0o644;
/// The largest onboarding file brig reads back to add a trust entry.
const ONBOARDING_MAX: u64 = 16 << 20;

/// Create (or open) the session's home through handles.
pub fn create_home(state_dir: &Path, sandbox: &str, home: &GuestHome) -> Result<PreparedHome, Error> {
    Ok(match home.source {
        HomeSource::Default => home::prepare_default_home(state_dir, sandbox)?,
        HomeSource::Named { .. } | HomeSource::Legacy => home::prepare_named_home(&home.path)?,
    })
}

/// The host side of every hostmount, made inside the home's keep directory:
/// missing parents as directories, a missing file empty, a missing
/// directory empty. The keep directory is made even for a profile without
/// hostmounts: every sandbox covers it, whatever its profile.
pub fn hostmounts(profile: &Profile, home: &PreparedHome) -> Result<(), Error> {
    make_dir(&dup(home)?, OsStr::new(KEEP_DIR), &home.path.join(KEEP_DIR))?;
    for mount in profile.hostmounts() {
        let kept = profile.host_side(&mount.path);
        let (parent, name) = open_parent(home, &kept)?;
        let shown = home.path.join(&kept);
        adopt(home, Path::new(&mount.path), &parent, name, mount.file);
        if mount.file {
            open_file(&parent, name, &shown, OFlags::RDONLY)?;
        } else {
            make_dir(&parent, name, &shown)?;
        }
    }
    Ok(())
}

/// A home made before the keep directory holds a hostmount where the guest
/// sees it. Move it into the keep directory once, when it is the kind
/// expected, so nothing the agent kept is lost. The move never follows a
/// link: whatever is renamed is then opened without following one, and a
/// link swapped in meanwhile is refused there.
fn adopt(home: &PreparedHome, rel: &Path, keep_parent: &OwnedFd, name: &OsStr, file: bool) {
    let nofollow = rustix::fs::AtFlags::SYMLINK_NOFOLLOW;
    if rustix::fs::statat(keep_parent, name, nofollow).is_ok() {
        return;
    }
    let Some(Component::Normal(old_name)) = rel.components().next_back() else { return };
    let mut fd = match dup(home) {
        Ok(fd) => fd,
        Err(_) => return,
    };
    for component in rel.parent().into_iter().flat_map(Path::components) {
        let Component::Normal(part) = component else { return };
        match walk::open_child_dir(&fd, part) {
            Ok(next) => fd = next,
            Err(_) => return,
        }
    }
    let Ok(st) = rustix::fs::statat(&fd, old_name, nofollow) else { return };
    let expected = match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => file,
        FileType::Directory => !file,
        _ => false,
    };
    if expected {
        let _ = rustix::fs::renameat_with(&fd, old_name, keep_parent, name, rustix::fs::RenameFlags::NOREPLACE);
    }
}

/// Write the profile's onboarding seed when its file is absent (or empty,
/// as a hostmount left it), and mark the run's directory trusted in it, so
/// the agent starts without its first-run questions. Done before the boot,
/// while nothing in the guest has the file open.
/// `workdir` is `None` under `BRIG_TRUST_WORKSPACE=0`: the seed is written,
/// and the agent asks its trust question itself.
pub fn seed_onboarding(profile: &Profile, home: &PreparedHome, workdir: Option<&str>) -> Result<Vec<String>, Error> {
    let Some(onboarding) = &profile.onboarding else { return Ok(Vec::new()) };
    let rel = profile.host_side(&onboarding.file);
    let (parent, name) = open_parent(home, &rel)?;
    let shown = home.path.join(&rel);
    let fd = open_file(&parent, name, &shown, OFlags::RDWR)?;
    let mut file = std::fs::File::from(fd);
    let size = file.metadata().map_err(|e| Error::io("inspect", &shown, e))?.len();
    let mut document = if size == 0 {
        onboarding.seed.clone().unwrap_or_else(|| serde_json::Value::Object(Default::default()))
    } else if size > ONBOARDING_MAX {
        return Ok(vec![format!("left {} alone: it is larger than brig reads", shown.display())]);
    } else {
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(|e| Error::io("read", &shown, e))?;
        match serde_json::from_slice(&bytes) {
            Ok(value) => value,
            Err(_) => return Ok(vec![format!("left {} alone: it is not JSON brig can read", shown.display())]),
        }
    };
    let before = (size != 0).then(|| document.clone());
    if let [map, flag] = onboarding.trust_key.as_slice()
        && let Some(workdir) = workdir
        && let Some(object) = document.as_object_mut()
    {
        let entries = object.entry(map.clone()).or_insert_with(|| serde_json::json!({}));
        if let Some(entries) = entries.as_object_mut() {
            let entry = entries.entry(workdir.to_owned()).or_insert_with(|| serde_json::json!({}));
            if let Some(entry) = entry.as_object_mut() {
                entry.insert(flag.clone(), serde_json::Value::Bool(true));
            }
        }
    }
    if before.as_ref() == Some(&document) {
        return Ok(Vec::new());
    }
    let mut bytes = serde_json::to_vec_pretty(&document).map_err(|e| Error::io("encode", &shown, e.into()))?;
    bytes.push(b'\n');
    // The file is a hostmount: the guest binds this very inode, so it is
    // rewritten in place rather than replaced.
    file.set_len(0).map_err(|e| Error::io("write", &shown, e))?;
    std::io::Seek::rewind(&mut file).map_err(|e| Error::io("write", &shown, e))?;
    file.write_all(&bytes).map_err(|e| Error::io("write", &shown, e))?;
    Ok(Vec::new())
}

/// Open the directory holding `rel` inside the home, creating missing
/// directories on the way, and return it with the last component's name.
pub(super) fn open_parent<'a>(home: &PreparedHome, rel: &'a Path) -> Result<(OwnedFd, &'a OsStr), Error> {
    let mut parts: Vec<&OsStr> = Vec::new();
    for component in rel.components() {
        match component {
            Component::Normal(name) => parts.push(name),
            // Profile paths are validated clean and relative; anything else
            // here is a bug, refused rather than followed.
            _ => return Err(Error::io("use", home.path.join(rel), std::io::Error::other("not a clean relative path"))),
        }
    }
    let Some((last, dirs)) = parts.split_last() else {
        return Err(Error::io("use", home.path.join(rel), std::io::Error::other("empty path")));
    };
    let mut fd = dup(home)?;
    let mut shown = home.path.clone();
    for name in dirs {
        shown.push(name);
        fd = make_dir(&fd, name, &shown)?;
    }
    Ok((fd, last))
}

fn dup(home: &PreparedHome) -> Result<OwnedFd, Error> {
    home.dir.as_fd().try_clone_to_owned().map_err(|e| Error::io("open", &home.path, e))
}

/// `mkdirat` then open it as a directory without following a link.
pub(super) fn make_dir(parent: &OwnedFd, name: &OsStr, shown: &Path) -> Result<OwnedFd, Error> {
    match rustix::fs::mkdirat(parent, name, Mode::from_raw_mode(home::HOME_MODE)) {
        Ok(()) | Err(Errno::EXIST) => {}
        Err(e) => return Err(session::Error::io("create", shown, e).into()),
    }
    walk::open_child_dir(parent, name).map_err(|e| walk::refusal(parent, name, shown, e).into())
}

/// Open (creating when missing) a regular file without following a link
/// and without blocking; anything but a regular file is refused.
pub(super) fn open_file(parent: &OwnedFd, name: &OsStr, shown: &Path, access: OFlags) -> Result<OwnedFd, Error> {
    let flags = access | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY;
    let fd = rustix::fs::openat(parent, name, flags, Mode::from_raw_mode(FILE_MODE)).map_err(|e| match e {
        Errno::LOOP => walk::symlink_error(parent, name, shown),
        Errno::NXIO => session::Error::NotAFile { path: shown.to_owned(), found: "a FIFO or socket" },
        e => session::Error::io("open", shown, e),
    })?;
    let st = rustix::fs::fstat(&fd).map_err(|e| session::Error::io("inspect", shown, e))?;
    match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => {}
        other => return Err(session::Error::NotAFile { path: shown.to_owned(), found: describe(other) }.into()),
    }
    // Opened non-blocking only so that a FIFO could not hang the open.
    rustix::fs::fcntl_setfl(
        &fd,
        rustix::fs::fcntl_getfl(&fd).map_err(|e| session::Error::io("open", shown, e))? - OFlags::NONBLOCK,
    )
    .map_err(|e| session::Error::io("open", shown, e))?;
    Ok(fd)
}

fn describe(kind: FileType) -> &'static str {
    match kind {
        FileType::Directory => "a directory",
        FileType::Fifo => "a FIFO",
        FileType::Socket => "a socket",
        FileType::CharacterDevice | FileType::BlockDevice => "a device",
        FileType::Symlink => "a symbolic link",
        _ => "not a regular file",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Registry;

    fn claude() -> Profile {
        let env = crate::environment::Environment::from_pairs([("HOME", "/nonexistent")]);
        Registry::load(&env).resolve("claude-code").unwrap().profile.clone()
    }

    fn home(dir: &Path) -> PreparedHome {
        home::prepare_named_home(&dir.join("home")).unwrap()
    }

    #[test]
    fn hostmounts_get_their_parents() {
        let scratch = tempfile::tempdir().unwrap();
        let home = home(scratch.path());
        hostmounts(&claude(), &home).unwrap();
        assert!(home.path.join(".brig-keep/.claude/settings.json").is_file());
        assert!(home.path.join(".brig-keep/.claude/sessions").is_dir());
        assert!(home.path.join(".brig-keep/.claude/.claude.json").is_file());
        assert!(!home.path.join(".claude").exists(), "nothing where the guest sees it");
    }

    #[test]
    fn hostmounts_of_an_older_home_move_into_the_keep_directory() {
        let scratch = tempfile::tempdir().unwrap();
        let home = home(scratch.path());
        std::fs::create_dir_all(home.path.join(".claude/sessions")).unwrap();
        std::fs::write(home.path.join(".claude/sessions/one"), "kept").unwrap();
        std::fs::write(home.path.join(".claude/settings.json"), "{}").unwrap();
        // Not the kind expected: a directory where a file hostmount goes stays.
        std::fs::create_dir(home.path.join(".claude/history.jsonl")).unwrap();
        hostmounts(&claude(), &home).unwrap();
        let kept = home.path.join(".brig-keep/.claude");
        assert_eq!(std::fs::read_to_string(kept.join("sessions/one")).unwrap(), "kept");
        assert_eq!(std::fs::read_to_string(kept.join("settings.json")).unwrap(), "{}");
        assert!(kept.join("history.jsonl").is_file());
        assert!(home.path.join(".claude/history.jsonl").is_dir());
    }

    #[test]
    fn a_link_where_a_hostmount_goes_is_refused_and_not_followed() {
        let scratch = tempfile::tempdir().unwrap();
        let home = home(scratch.path());
        let outside = scratch.path().join("outside");
        std::fs::create_dir_all(home.path.join(".brig-keep/.claude")).unwrap();
        std::os::unix::fs::symlink(&outside, home.path.join(".brig-keep/.claude/settings.json")).unwrap();
        let err = hostmounts(&claude(), &home).unwrap_err();
        assert!(matches!(err, Error::Session(session::Error::Symlink { .. })), "{err:?}");
        assert!(!outside.exists(), "followed the link");
        // A link higher up, too, and the keep directory itself.
        for at in [".brig-keep/.claude", ".brig-keep"] {
            std::fs::remove_dir_all(home.path.join(".brig-keep")).ok();
            std::fs::create_dir_all(home.path.join(at).parent().unwrap()).unwrap();
            std::os::unix::fs::symlink(&outside, home.path.join(at)).unwrap();
            let err = hostmounts(&claude(), &home).unwrap_err();
            assert!(matches!(err, Error::Session(session::Error::Symlink { .. })), "{at}: {err:?}");
            std::fs::remove_file(home.path.join(at)).unwrap();
        }
        assert!(!outside.exists(), "followed the link");
    }

    #[test]
    fn a_fifo_where_a_hostmount_goes_is_refused_without_hanging() {
        let scratch = tempfile::tempdir().unwrap();
        let home = home(scratch.path());
        std::fs::create_dir_all(home.path.join(".brig-keep/.claude")).unwrap();
        let fifo = home.path.join(".brig-keep/.claude/settings.json");
        rustix::fs::mknodat(rustix::fs::CWD, &fifo, FileType::Fifo, Mode::from_raw_mode(0o600), 0).unwrap();
        let err = hostmounts(&claude(), &home).unwrap_err();
        assert!(matches!(err, Error::Session(session::Error::NotAFile { .. })), "{err:?}");
    }

    #[test]
    fn onboarding_seeds_once_and_trusts_the_workdir() {
        let scratch = tempfile::tempdir().unwrap();
        let home = home(scratch.path());
        let profile = claude();
        assert!(seed_onboarding(&profile, &home, Some("/work/demo")).unwrap().is_empty());
        let file = home.path.join(".brig-keep/.claude/.claude.json");
        let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        assert_eq!(doc["hasCompletedOnboarding"], true);
        assert_eq!(doc["projects"]["/work/demo"]["hasTrustDialogAccepted"], true);
        // What the agent wrote since stays; a second directory is added.
        std::fs::write(&file, r#"{"mine": 1, "projects": {"/work/demo": {"x": 2}}}"#).unwrap();
        seed_onboarding(&profile, &home, Some("/work/other")).unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        assert_eq!(doc["mine"], 1);
        assert_eq!(doc["projects"]["/work/demo"]["x"], 2);
        assert_eq!(doc["projects"]["/work/other"]["hasTrustDialogAccepted"], true);
        assert!(doc.get("hasCompletedOnboarding").is_none(), "the seed is written only into an absent file");
    }

    #[test]
    fn onboarding_leaves_a_file_it_cannot_read() {
        let scratch = tempfile::tempdir().unwrap();
        let home = home(scratch.path());
        std::fs::create_dir_all(home.path.join(".brig-keep/.claude")).unwrap();
        std::fs::write(home.path.join(".brig-keep/.claude/.claude.json"), "not json").unwrap();
        let warnings = seed_onboarding(&claude(), &home, Some("/work/demo")).unwrap();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert_eq!(std::fs::read_to_string(home.path.join(".brig-keep/.claude/.claude.json")).unwrap(), "not json");
    }
}
