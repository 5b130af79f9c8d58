//! Where brigd listens, and taking that place: the socket path and where it
//! came from, the length check, the lock that makes one daemon per path, and
//! a bind that never leaves the socket open to anyone else; or a listening
//! socket a service manager hands in (systemd's socket activation).
//!
//! All of this runs before the async runtime starts, while the process has
//! one thread; the bind changes the process-wide umask for a moment, which
//! is only safe then.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, OpenOptionsExt};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustix::fs::{FlockOperation, Mode};
use rustix::io::Errno;

use super::Error;
use crate::environment::Environment;

/// The file name of the default socket, in `XDG_RUNTIME_DIR` or the state directory.
pub const SOCKET_NAME: &str = "brigd.sock";

/// The longest socket path the kernel takes: `sun_path` holds the path and
/// its terminating NUL.
#[cfg(target_os = "linux")]
pub const MAX_PATH_BYTES: usize = 107;
#[cfg(not(target_os = "linux"))]
pub const MAX_PATH_BYTES: usize = 103;

/// Which setting chose the socket path; errors name it so the user knows
/// what to change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Flag,
    XdgRuntimeDir,
    Default,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Source::Flag => "--socket",
            Source::XdgRuntimeDir => "XDG_RUNTIME_DIR",
            Source::Default => "the default, <state>/brigd.sock (BRIG_STATE_DIR or ~/.brig)",
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SocketPath {
    pub path: PathBuf,
    pub source: Source,
}

/// `--socket`, else `$XDG_RUNTIME_DIR/brigd.sock` when that is set and not
/// empty, else `<state>/brigd.sock`. `brig doctor` looks at the same place.
pub fn resolve(flag: Option<&Path>, env: &Environment) -> Result<SocketPath, Error> {
    if let Some(path) = flag {
        return Ok(SocketPath { path: path.to_owned(), source: Source::Flag });
    }
    if let Some(dir) = env.get("XDG_RUNTIME_DIR") {
        return Ok(SocketPath { path: Path::new(dir).join(SOCKET_NAME), source: Source::XdgRuntimeDir });
    }
    let state = env.state_dir().ok_or(Error::NoSocketPath)?;
    Ok(SocketPath { path: state.join(SOCKET_NAME), source: Source::Default })
}

/// Refuse a path the kernel would truncate or reject, before anything is
/// created on disk.
pub fn check_length(socket: &SocketPath) -> Result<(), Error> {
    let length = socket.path.as_os_str().len();
    if length > MAX_PATH_BYTES {
        return Err(Error::PathTooLong {
            path: socket.path.clone(),
            length,
            limit: MAX_PATH_BYTES,
            source_name: socket.source,
        });
    }
    Ok(())
}

/// `<socket>.lock`, beside the socket.
pub fn lock_path(socket: &Path) -> PathBuf {
    let mut name = socket.file_name().unwrap_or_default().to_owned();
    name.push(".lock");
    socket.with_file_name(name)
}

/// The socket path and lock of a running daemon. The lock is released by
/// the kernel when the process ends, however it ends.
#[derive(Debug)]
pub struct Claimed {
    pub path: PathBuf,
    _lock: File,
    /// The socket was handed in: its file is the service manager's to keep.
    handed_in: bool,
}

impl Claimed {
    /// Remove the socket file on a clean exit. The lock file stays: removing
    /// it while held would let a second daemon lock a fresh file beside a
    /// daemon still draining.
    pub fn remove_socket(&self) {
        if self.handed_in {
            return;
        }
        match std::fs::remove_file(&self.path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!("could not remove {}: {e}", self.path.display()),
        }
    }
}

/// Take the path: create its directory if needed, hold the lock, clear a
/// stale socket, and bind with mode 0600 from the first moment.
pub fn claim(path: &Path) -> Result<(Claimed, UnixListener), Error> {
    let lock = lock(path)?;
    // Holding the lock, any socket file here is a dead daemon's.
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => {
            std::fs::remove_file(path).map_err(|source| Error::Io {
                action: "remove the stale socket",
                path: path.to_owned(),
                source,
            })?;
            tracing::info!("removed the stale socket {} (no daemon held its lock)", path.display());
        }
        Ok(_) => return Err(Error::NotASocket { path: path.to_owned() }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => return Err(Error::Io { action: "inspect", path: path.to_owned(), source }),
    }

    let listener = bind_private(path)?;
    Ok((Claimed { path: path.to_owned(), _lock: lock, handed_in: false }, listener))
}

/// The listening socket a service manager handed this process, if one did:
/// `LISTEN_PID` names this process and `LISTEN_FDS` one descriptor, fd 3
/// (the protocol of systemd's socket units and `systemd-socket-activate`).
/// It must be a listening unix stream socket with a path; its lock is taken
/// as for a socket brigd binds, so one daemon serves a path however it was
/// started. `asked` is `--socket`, which must then name the same path.
pub fn handed_in(env: &Environment, asked: Option<&Path>) -> Result<Option<(Claimed, UnixListener)>, Error> {
    let ours = env.get("LISTEN_PID").and_then(|p| p.trim().parse::<u32>().ok()) == Some(std::process::id());
    let Some(count) = env.get("LISTEN_FDS").filter(|_| ours) else { return Ok(None) };
    if count.trim() != "1" {
        // Quoted: the value is the environment's, and may hold anything.
        return Err(Error::HandedIn(format!("it handed {count:?} descriptors, and brigd serves exactly one socket")));
    }
    let fd = adopt_fd3();
    let refuse = |why: &str| Error::HandedIn(format!("fd 3 is {why}"));
    // Not passed on to the runtimes and tools brigd starts.
    rustix::io::fcntl_setfd(&fd, rustix::io::FdFlags::CLOEXEC).map_err(|_| refuse("not an open descriptor"))?;
    match rustix::net::sockopt::socket_type(&fd) {
        Ok(rustix::net::SocketType::STREAM) => {}
        _ => return Err(refuse("not a stream socket")),
    }
    if !rustix::net::sockopt::socket_acceptconn(&fd).unwrap_or(false) {
        return Err(refuse("a socket that is not listening"));
    }
    let listener = UnixListener::from(fd);
    let path = listener
        .local_addr()
        .ok()
        .and_then(|a| a.as_pathname().map(Path::to_path_buf))
        .ok_or_else(|| refuse("not a unix socket with a path"))?;
    if let Some(asked) = asked.filter(|a| *a != path) {
        return Err(Error::HandedIn(format!(
            "it handed {} and --socket names {}; drop --socket or make them one",
            path.display(),
            asked.display()
        )));
    }
    let lock = lock(&path)?;
    Ok(Some((Claimed { path, _lock: lock, handed_in: true }, listener)))
}

/// fd 3, which the service manager opened for this process.
#[allow(unsafe_code)]
fn adopt_fd3() -> std::os::fd::OwnedFd {
    use std::os::fd::FromRawFd as _;
    // SAFETY: LISTEN_PID names this process, so the descriptor was handed
    // to it at exec; `handed_in` runs once, before brigd opens any
    // descriptor of its own (the async runtime, signals, the lock), so
    // nothing else in the process owns fd 3.
    unsafe { std::os::fd::OwnedFd::from_raw_fd(3) }
}

/// Create the socket's directory if needed and hold `<socket>.lock`, with
/// this process's pid in it.
fn lock(path: &Path) -> Result<File, Error> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    if !dir.exists() {
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(|source| Error::Io {
            action: "create the socket directory",
            path: dir.to_owned(),
            source,
        })?;
    }

    let lock_path = lock_path(path);
    // No truncation on open: the file may belong to a running daemon whose
    // pid a second one must still be able to read.
    let mut lock = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        // A link planted at the lock's path (the socket's directory may be
        // one others can write, such as /tmp) is refused, not followed:
        // the pid written below would truncate whatever it named.
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(&lock_path)
        .map_err(|source| Error::Io { action: "open the lock file", path: lock_path.clone(), source })?;
    if !lock.metadata().is_ok_and(|m| m.is_file()) {
        return Err(Error::Io {
            action: "use as the lock file",
            path: lock_path,
            source: std::io::Error::other("it is not a regular file"),
        });
    }
    match rustix::fs::flock(&lock, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => {}
        Err(Errno::WOULDBLOCK) => {
            return Err(Error::AlreadyServed { socket: path.to_owned(), pid: holder_pid(&lock_path) });
        }
        Err(e) => {
            return Err(Error::Io { action: "lock", path: lock_path, source: e.into() });
        }
    }
    write_pid(&mut lock).map_err(|source| Error::Io { action: "write the pid to", path: lock_path.clone(), source })?;
    Ok(lock)
}

/// Bind under umask 0177, so the socket is created 0600. A chmod after the
/// bind would leave a moment in which another user could connect.
fn bind_private(path: &Path) -> Result<UnixListener, Error> {
    let previous = rustix::process::umask(Mode::from_raw_mode(0o177));
    let bound = UnixListener::bind(path);
    rustix::process::umask(previous);
    bound.map_err(|source| Error::Io { action: "bind", path: path.to_owned(), source })
}

fn write_pid(lock: &mut File) -> std::io::Result<()> {
    lock.set_len(0)?;
    lock.rewind()?;
    writeln!(lock, "{}", std::process::id())?;
    lock.sync_data()
}

/// The pid written in a held lock. A daemon that has just taken the lock may
/// not have written it yet, so this waits a moment for it.
fn holder_pid(lock_path: &Path) -> Option<u32> {
    let deadline = Instant::now() + Duration::from_millis(500);
    loop {
        let mut text = String::new();
        let read = File::open(lock_path).and_then(|mut f| f.read_to_string(&mut text));
        if read.is_ok()
            && let Ok(pid) = text.trim().parse()
        {
            return Some(pid);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case(&[("HOME", "/h")], None, "/h/.brig/brigd.sock", Source::Default)]
    #[case(&[("HOME", "/h"), ("BRIG_STATE_DIR", "/s")], None, "/s/brigd.sock", Source::Default)]
    #[case(&[("HOME", "/h"), ("XDG_RUNTIME_DIR", "/run/user/1000")], None, "/run/user/1000/brigd.sock", Source::XdgRuntimeDir)]
    #[case(&[("HOME", "/h"), ("XDG_RUNTIME_DIR", "")], None, "/h/.brig/brigd.sock", Source::Default)]
    #[case(&[("HOME", "/h"), ("XDG_RUNTIME_DIR", "/run/user/1000")], Some("/tmp/b.sock"), "/tmp/b.sock", Source::Flag)]
    fn socket_path_precedence(
        #[case] vars: &[(&str, &str)],
        #[case] flag: Option<&str>,
        #[case] want: &str,
        #[case] source: Source,
    ) {
        let env = Environment::from_pairs(vars.iter().copied());
        let got = resolve(flag.map(Path::new), &env).unwrap();
        assert_eq!(got, SocketPath { path: PathBuf::from(want), source });
    }

    #[test]
    fn without_home_or_state_there_is_no_default() {
        let err = resolve(None, &Environment::default()).unwrap_err();
        assert!(matches!(err, Error::NoSocketPath), "{err}");
    }

    #[test]
    fn the_length_limit_counts_bytes_and_names_the_source() {
        let fits =
            SocketPath { path: PathBuf::from(format!("/{}", "a".repeat(MAX_PATH_BYTES - 1))), source: Source::Flag };
        check_length(&fits).unwrap();
        let long = SocketPath {
            path: PathBuf::from(format!("/{}", "é".repeat(MAX_PATH_BYTES / 2 + 1))),
            source: Source::XdgRuntimeDir,
        };
        let err = check_length(&long).unwrap_err().to_string();
        // Two bytes a character: the limit is in bytes, not characters.
        let length = 1 + 2 * (MAX_PATH_BYTES / 2 + 1);
        assert!(err.contains(&format!("{length} bytes")), "{err}");
        assert!(err.contains(&format!("limit of {MAX_PATH_BYTES}")), "{err}");
        assert!(err.contains("XDG_RUNTIME_DIR"), "{err}");
    }

    #[test]
    fn the_lock_sits_beside_the_socket() {
        assert_eq!(lock_path(Path::new("/run/x/brigd.sock")), PathBuf::from("/run/x/brigd.sock.lock"));
    }
}
