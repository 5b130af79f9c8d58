//! The per-sandbox lock (decision 13): one file lock per sandbox name in the
//! state directory, taken by every change of a sandbox, from the CLI and
//! from brigd alike.
//!
//! N processes racing on one ref queue on this lock: the first boots, the
//! rest find the sandbox running. A failed boot's cleanup runs under the
//! same lock, so it can never remove what another process created, and
//! `rm` can never delete the home of a sandbox another process is booting.
//! The kernel drops the lock when its holder dies, so a killed brig never
//! leaves a sandbox locked.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{FlockOperation, Mode, OFlags};

use crate::session::{self, home::HOME_MODE, walk};

/// Held while a sandbox changes; released on drop.
///
/// The lock file holds a generation number that every holder which changed
/// the sandbox raises. A plan reads it before it asks the runtime about the
/// sandbox; when apply then finds it unchanged under the lock, no brig has
/// touched the sandbox in between and the plan's answer still stands, so
/// the runtime is not asked twice. A holder raises it when its change
/// begins and again when it lets go, so a plan that looked while a change
/// was under way never matches.
#[derive(Debug)]
pub struct SandboxLock {
    fd: OwnedFd,
    generation: u64,
    changed: bool,
    shown: PathBuf,
}

/// `<state>/locks/<sandbox>.lock`.
pub fn path(state_dir: &Path, sandbox: &str) -> PathBuf {
    state_dir.join("locks").join(format!("{sandbox}.lock"))
}

impl SandboxLock {
    /// Wait for and take the lock of `sandbox`. The lock file is opened
    /// through the handle of the locks directory without following a link,
    /// so a link planted under its name is refused, never written through.
    pub fn take(state_dir: &Path, sandbox: &str) -> Result<SandboxLock, session::Error> {
        session::home::check_sandbox_name(sandbox)?;
        let dir_path = state_dir.join("locks");
        let dir = walk::create_dir(&dir_path, Mode::from_raw_mode(HOME_MODE))?;
        let file = format!("{sandbox}.lock");
        let shown = dir_path.join(&file);
        // NONBLOCK on open only: a FIFO planted under the lock's name must
        // not hang brig; flock itself waits as it should.
        let flags = OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
        let fd = rustix::fs::openat(&dir.fd, file.as_str(), flags, Mode::from_raw_mode(0o600))
            .map_err(|e| walk::refusal(&dir.fd, file.as_ref(), &shown, e))?;
        let st = rustix::fs::fstat(&fd).map_err(|e| session::Error::io("inspect", &shown, e))?;
        if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::RegularFile {
            return Err(session::Error::io("lock", &shown, std::io::Error::other("not a regular file")));
        }
        rustix::fs::flock(&fd, FlockOperation::LockExclusive).map_err(|e| session::Error::io("lock", &shown, e))?;
        let generation = read_generation(&fd);
        Ok(SandboxLock { fd, generation, changed: false, shown })
    }

    /// The generation the last change left.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Record that this holder is changing the sandbox (raised once more
    /// when the lock is let go).
    pub fn bump(&mut self) -> Result<(), session::Error> {
        self.changed = true;
        self.write_next()
    }

    fn write_next(&mut self) -> Result<(), session::Error> {
        self.generation += 1;
        let text = self.generation.to_string();
        rustix::fs::ftruncate(&self.fd, 0).map_err(|e| session::Error::io("write", &self.shown, e))?;
        rustix::io::pwrite(&self.fd, text.as_bytes(), 0).map_err(|e| session::Error::io("write", &self.shown, e))?;
        Ok(())
    }
}

impl Drop for SandboxLock {
    fn drop(&mut self) {
        if self.changed {
            // Nothing to report to: the next plan simply finds a generation
            // it did not see, or, if this write failed, asks the runtime
            // because the start of the change was recorded.
            let _ = self.write_next();
        }
    }
}

/// The generation of `sandbox` as it is now, read without the lock: 0 when
/// no lock file exists (or it cannot be read as one).
pub fn generation(state_dir: &Path, sandbox: &str) -> u64 {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
    match rustix::fs::open(path(state_dir, sandbox), flags, Mode::empty()) {
        Ok(fd) => read_generation(&fd),
        Err(_) => 0,
    }
}

fn read_generation(fd: &OwnedFd) -> u64 {
    let regular = rustix::fs::fstat(fd)
        .is_ok_and(|st| rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::RegularFile);
    let mut buf = [0u8; 20];
    let n = if regular { rustix::io::pread(fd, &mut buf, 0).unwrap_or(0) } else { 0 };
    std::str::from_utf8(&buf[..n]).ok().and_then(|t| t.trim().parse().ok()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Barrier};

    #[test]
    fn holders_of_one_sandbox_take_turns() {
        let state = tempfile::tempdir().unwrap();
        let inside = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let start = Arc::new(Barrier::new(4));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (state, inside, most, start) =
                    (state.path().to_owned(), inside.clone(), most.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    let _lock = SandboxLock::take(&state, "brig-a").unwrap();
                    let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    inside.fetch_sub(1, Ordering::SeqCst);
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(most.load(Ordering::SeqCst), 1, "two holders of one sandbox's lock at once");
    }

    #[test]
    fn a_change_raises_the_generation() {
        let state = tempfile::tempdir().unwrap();
        assert_eq!(generation(state.path(), "brig-a"), 0);
        let mut lock = SandboxLock::take(state.path(), "brig-a").unwrap();
        assert_eq!(lock.generation(), 0);
        lock.bump().unwrap();
        assert_eq!(generation(state.path(), "brig-a"), 1, "raised when the change begins");
        drop(lock);
        assert_eq!(generation(state.path(), "brig-a"), 2, "and again when it ends");
        let unchanged = SandboxLock::take(state.path(), "brig-a").unwrap();
        assert_eq!(unchanged.generation(), 2);
        drop(unchanged);
        assert_eq!(generation(state.path(), "brig-a"), 2, "a holder that changed nothing leaves it");
    }

    #[test]
    fn a_planted_link_is_refused() {
        let state = tempfile::tempdir().unwrap();
        std::fs::create_dir(state.path().join("locks")).unwrap();
        let target = state.path().join("elsewhere");
        std::os::unix::fs::symlink(&target, path(state.path(), "brig-a")).unwrap();
        let err = SandboxLock::take(state.path(), "brig-a").unwrap_err();
        assert!(matches!(err, session::Error::Symlink { .. }), "{err:?}");
        assert!(!target.exists(), "the lock was written through the link");
    }

    #[test]
    fn a_fifo_does_not_hang() {
        let state = tempfile::tempdir().unwrap();
        std::fs::create_dir(state.path().join("locks")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            path(state.path(), "brig-a"),
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        assert!(SandboxLock::take(state.path(), "brig-a").is_err());
    }

    #[test]
    fn a_name_that_is_not_a_sandbox_is_refused() {
        let state = tempfile::tempdir().unwrap();
        assert!(SandboxLock::take(state.path(), "../x").is_err());
    }
}
