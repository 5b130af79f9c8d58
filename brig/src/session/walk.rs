//! Walking a host path one component at a time through directory handles.
//!
//! Spec 05 §3.3: on a path brig writes through, a symbolic link could send
//! the write somewhere else. Each component is opened relative to the handle
//! of its parent, so what is checked is what is used. Links are followed only
//! in directories the user cannot modify (and in `/` itself), because such a
//! link was put there by the system, not by something the user or an agent
//! controls: macOS's `/tmp` and `/var` are links of that kind. From the first
//! directory the user can write to, a link is refused.

use std::ffi::{CStr, OsStr};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::{Error, Result};

/// A directory reached by [`open_dir`].
#[derive(Debug)]
pub(crate) struct Walked {
    pub fd: OwnedFd,
    /// Whether the last component did not exist and the walk made it.
    pub created: bool,
}

const DIR_FLAGS: OFlags = OFlags::RDONLY.union(OFlags::DIRECTORY).union(OFlags::CLOEXEC);

/// Open the directory at `path`; `None` when a component is missing.
pub(crate) fn open_dir(path: &Path) -> Result<Option<Walked>> {
    walk(path, None)
}

/// Open the directory at `path`, making missing components with exactly
/// `mode` (not narrowed by the umask, so a home looks the same for every
/// user).
pub(crate) fn create_dir(path: &Path, mode: Mode) -> Result<Walked> {
    // A walk that creates does not come back empty-handed; the error only
    // keeps that an error rather than a panic.
    walk(path, Some(mode))?.ok_or_else(|| Error::io("create", path, std::io::Error::from(std::io::ErrorKind::NotFound)))
}

fn walk(path: &Path, create: Option<Mode>) -> Result<Option<Walked>> {
    let (mut fd, mut shown, mut in_root) = if path.is_absolute() {
        let fd = rustix::fs::open("/", DIR_FLAGS, Mode::empty()).map_err(|e| Error::io("open", "/", e))?;
        (fd, PathBuf::from("/"), true)
    } else {
        let fd = rustix::fs::openat(rustix::fs::CWD, ".", DIR_FLAGS, Mode::empty())
            .map_err(|e| Error::io("open", ".", e))?;
        (fd, PathBuf::new(), false)
    };
    let mut created = false;
    for component in path.components() {
        let name: &OsStr = match component {
            Component::Normal(name) => name,
            Component::ParentDir => OsStr::new(".."),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => continue,
        };
        let trusted = in_root || !user_writable(&fd, &shown)?;
        shown.push(name);
        in_root = false;
        let flags = if trusted { DIR_FLAGS } else { DIR_FLAGS | OFlags::NOFOLLOW };
        created = false;
        let next = match rustix::fs::openat(&fd, name, flags, Mode::empty()) {
            Ok(next) => next,
            Err(Errno::NOENT) => {
                let Some(mode) = create else { return Ok(None) };
                created = make_dir(&fd, name, mode, &shown)?;
                let next =
                    rustix::fs::openat(&fd, name, flags, Mode::empty()).map_err(|e| refusal(&fd, name, &shown, e))?;
                if created {
                    rustix::fs::fchmod(&next, mode).map_err(|e| Error::io("set the mode of", &shown, e))?;
                }
                next
            }
            Err(e) => return Err(refusal(&fd, name, &shown, e)),
        };
        fd = next;
    }
    Ok(Some(Walked { fd, created }))
}

/// `mkdirat`, with "someone else made it first" counted as not created.
fn make_dir(parent: &OwnedFd, name: &OsStr, mode: Mode, shown: &Path) -> Result<bool> {
    match rustix::fs::mkdirat(parent, name, mode) {
        Ok(()) => Ok(true),
        Err(Errno::EXIST) => Ok(false),
        Err(e) => Err(Error::io("create", shown, e)),
    }
}

/// Turn a failed open of `name` into the error that says why: a link (named
/// with its target), something that is not a directory, or plain I/O.
pub(crate) fn refusal(parent: &OwnedFd, name: &OsStr, shown: &Path, err: Errno) -> Error {
    if matches!(err, Errno::LOOP | Errno::NOTDIR) {
        match rustix::fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Symlink => {
                return symlink_error(parent, name, shown);
            }
            Ok(st) if FileType::from_raw_mode(st.st_mode) != FileType::Directory => {
                return Error::NotADirectory { path: shown.to_owned() };
            }
            _ => {}
        }
    }
    Error::io("open", shown, err)
}

/// The error for a refused link at `parent/name`, naming where it points.
pub(crate) fn symlink_error(parent: &OwnedFd, name: &OsStr, shown: &Path) -> Error {
    match rustix::fs::readlinkat(parent, name, Vec::new()) {
        Ok(target) => {
            Error::Symlink { link: shown.to_owned(), target: PathBuf::from(OsStr::from_bytes(target.as_bytes())) }
        }
        Err(e) => Error::io("read the link", shown, e),
    }
}

/// Whether the user could change the entries of this directory: root can
/// change any, an owner can, and so can anyone when it is world-writable or
/// group-writable for the user's group.
fn user_writable(fd: &OwnedFd, shown: &Path) -> Result<bool> {
    let st = rustix::fs::fstat(fd).map_err(|e| Error::io("inspect", shown, e))?;
    let euid = rustix::process::geteuid();
    let mode = Mode::from_raw_mode(st.st_mode);
    Ok(euid.is_root()
        || st.st_uid == euid.as_raw()
        || mode.contains(Mode::WOTH)
        || (mode.contains(Mode::WGRP) && st.st_gid == rustix::process::getegid().as_raw()))
}

/// The name of a directory entry as a path component.
pub(crate) fn entry_name(name: &CStr) -> &OsStr {
    OsStr::from_bytes(name.to_bytes())
}

/// Open an entry that must be a directory, never following a link.
pub(crate) fn open_child_dir(parent: impl AsFd, name: &OsStr) -> rustix::io::Result<OwnedFd> {
    rustix::fs::openat(parent, name, DIR_FLAGS | OFlags::NOFOLLOW, Mode::empty())
}
