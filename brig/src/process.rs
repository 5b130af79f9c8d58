//! The one way brig runs a subprocess.
//!
//! A [`Command`] keeps values out of argv by construction: arguments are
//! plain strings brig chose (flags, names, paths). Values bound for a guest
//! travel through a [feed](Command::feed_arg): a pipe the child opens by a
//! path on its argv, so they reach neither an argv, nor the environment of
//! the runtime (where a profile's `LD_PRELOAD` or `HOME` would change what
//! the runtime itself does), nor a file on disk. Output is
//! captured concurrently so a chatty stderr can never block the child, and a
//! failure carries the argv that was run (which holds no value, so it is safe
//! to print) with the first lines of the child's own stderr.

use std::cell::RefCell;
use std::ffi::OsString;
use std::fmt;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// At most this many stderr lines go into an error: enough for the cause,
/// short enough for one line of a report.
const STDERR_LINES: usize = 3;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot start {program}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{command}: {status}{}", stderr_suffix(stderr))]
    Failed { command: String, status: ExitStatus, stderr: String },
    #[error("{command}: no answer within {}s", timeout.as_secs())]
    Timeout { command: String, timeout: Duration },
    /// The caller's [`Deadline`] passed (or was cancelled) first; the child
    /// was killed, or never started.
    #[error("{command}: stopped at the caller's deadline")]
    Deadline { command: String },
    #[error("cannot hand the terminal to {command}")]
    Exec {
        command: String,
        #[source]
        source: std::io::Error,
    },
}

fn stderr_suffix(stderr: &str) -> String {
    let first = first_lines(stderr);
    if first.is_empty() { String::new() } else { format!(": {first}") }
}

/// The most of a failed child's stderr an error keeps: its lines stay
/// lines, so a reader of the runtime's words can pick out the one that
/// says why.
const STDERR_KEPT: usize = 16 * 1024;

impl Error {
    /// The child's own words, if it said anything.
    pub fn stderr(&self) -> Option<&str> {
        match self {
            Error::Failed { stderr, .. } if !stderr.is_empty() => Some(stderr),
            _ => None,
        }
    }
}

/// A point in time, and optionally a flag that brings it forward, after
/// which every command run through [`Command::capture`] (and so
/// [`Command::output`]) under [`Deadline::run`] on this thread is killed.
///
/// It exists for callers that hold a whole sequence of runtime calls to one
/// budget (`brig doctor --boot`) while the adapters run their commands
/// without knowing about it: an adapter's own timeout still applies, and the
/// earlier of the two wins. Commands that hand over the terminal are not
/// covered.
#[derive(Debug, Clone)]
pub struct Deadline {
    at: Instant,
    cancel: Option<Arc<AtomicBool>>,
}

thread_local! {
    static DEADLINE: RefCell<Option<Deadline>> = const { RefCell::new(None) };
}

impl Deadline {
    pub fn at(at: Instant) -> Self {
        Deadline { at, cancel: None }
    }

    /// End sooner, as soon as `flag` is set (from a signal handler, say).
    pub fn or_when(mut self, flag: Arc<AtomicBool>) -> Self {
        self.cancel = Some(flag);
        self
    }

    pub fn cancelled(&self) -> bool {
        self.cancel.as_ref().is_some_and(|flag| flag.load(Ordering::SeqCst))
    }

    pub fn passed(&self) -> bool {
        self.cancelled() || Instant::now() >= self.at
    }

    pub fn remaining(&self) -> Duration {
        if self.cancelled() { Duration::ZERO } else { self.at.saturating_duration_since(Instant::now()) }
    }

    /// Run `f` with this deadline over the commands it runs on this thread;
    /// the previous one (if any) is back in force afterwards.
    pub fn run<T>(&self, f: impl FnOnce() -> T) -> T {
        struct Restore(Option<Deadline>);
        impl Drop for Restore {
            fn drop(&mut self) {
                let previous = self.0.take();
                DEADLINE.with(|d| *d.borrow_mut() = previous);
            }
        }
        let _restore = Restore(DEADLINE.with(|d| d.borrow_mut().replace(self.clone())));
        f()
    }

    fn current() -> Option<Deadline> {
        DEADLINE.with(|d| d.borrow().clone())
    }
}

/// Held by every spawn: a feed is made inheritable just for its own child,
/// and no other child may be forked meanwhile and inherit it too.
static SPAWNING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Spawn, handing the child `feeds` (each at its own number, which its argv
/// names as `/dev/fd/<n>`), and closing them in brig once it has them. Tried
/// again for a moment on "text file busy": an executable that was just
/// written (a runtime installed a moment ago) can be briefly held open by a
/// child another thread forked before it closed its copy.
fn spawn(cmd: &mut std::process::Command, feeds: Vec<OwnedFd>) -> std::io::Result<std::process::Child> {
    let _one = SPAWNING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    for fd in &feeds {
        rustix::io::fcntl_setfd(fd, rustix::io::FdFlags::empty())?;
    }
    let mut tries = 0;
    loop {
        match cmd.spawn() {
            Err(err) if err.raw_os_error() == Some(rustix::io::Errno::TXTBSY.raw_os_error()) && tries < 20 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(10));
            }
            other => return other,
        }
    }
}

/// How an interactive command ended.
#[derive(Debug)]
pub struct Interactive {
    pub status: ExitStatus,
    /// The end of what it wrote to stderr.
    pub stderr_tail: String,
    /// stderr it wrote in its first moments and that was not printed,
    /// because it ended before they were over.
    pub held: Vec<u8>,
}

/// Copy a child's stderr to ours, keeping its tail, and holding back what
/// arrives within `hold` of the start until that time is over. Returns the
/// tail and whatever is still held when the pipe closes.
fn relay_stderr(mut pipe: std::process::ChildStderr, hold: Duration) -> (Vec<u8>, Vec<u8>) {
    use std::io::Write;
    let started = Instant::now();
    let mut tail: Vec<u8> = Vec::new();
    let mut held: Vec<u8> = Vec::new();
    let mut holding = !hold.is_zero();
    let mut buf = [0u8; 4096];
    loop {
        if holding {
            let left = hold.saturating_sub(started.elapsed());
            let ready = if left.is_zero() {
                0
            } else {
                let timeout = rustix::event::Timespec {
                    tv_sec: left.as_secs().try_into().unwrap_or(i64::MAX),
                    tv_nsec: left.subsec_nanos().into(),
                };
                let mut fds = [rustix::event::PollFd::new(&pipe, rustix::event::PollFlags::IN)];
                rustix::event::poll(&mut fds, Some(&timeout)).unwrap_or(1)
            };
            if ready == 0 {
                let _ = std::io::stderr().write_all(&held);
                held.clear();
                holding = false;
                continue;
            }
        }
        let n = match pipe.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if holding {
            held.extend_from_slice(&buf[..n]);
        } else {
            let _ = std::io::stderr().write_all(&buf[..n]);
        }
        tail.extend_from_slice(&buf[..n]);
        if tail.len() > 8192 {
            tail.drain(..tail.len() - 4096);
        }
    }
    (tail, held)
}

/// Captured output of a command that exited 0.
#[derive(Debug, Clone)]
pub struct Output {
    pub stdout: String,
    pub stderr: String,
}

/// A subprocess to run. See the module docs for the argv rule.
#[derive(Debug, Clone)]
pub struct Command {
    program: PathBuf,
    args: Vec<OsString>,
    env: Vec<(String, String)>,
    stdin: Option<Vec<u8>>,
    timeout: Option<Duration>,
    /// Arguments that name a pipe made at each spawn: (index in `args`,
    /// the bytes the pipe holds).
    feeds: Vec<(usize, Arc<[u8]>)>,
    /// Variables of brig's environment the child does not get.
    removed: Vec<String>,
}

/// What argv shows where a feed's path goes until a spawn makes the pipe.
const FEED_PLACEHOLDER: &str = "<pipe>";

/// The most a feed may hold: a pipe can be grown to this size without
/// privilege (`/proc/sys/fs/pipe-max-size`'s default), and the whole feed
/// is written before the child starts, so the child never waits on brig.
pub const FEED_MAX: usize = 1 << 20;

impl Command {
    pub fn new(program: impl Into<PathBuf>) -> Self {
        Command {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            stdin: None,
            timeout: None,
            feeds: Vec::new(),
            removed: Vec::new(),
        }
    }

    /// An argument naming a pipe that holds `bytes`, which the child reads
    /// as `/dev/fd/<n>`: its own descriptor, so it opens it even from
    /// inside a user namespace (rootless podman reads its `--env-file`
    /// there). The pipe is made and filled at each spawn (a command run
    /// again reads its bytes again), inherited by that child alone, and
    /// closed in brig as soon as the child has it.
    pub fn feed_arg(mut self, bytes: Vec<u8>) -> Self {
        self.feeds.push((self.args.len(), bytes.into()));
        self.args.push(FEED_PLACEHOLDER.into());
        self
    }

    pub fn arg(mut self, arg: impl AsRef<str>) -> Self {
        self.args.push(arg.as_ref().into());
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.args.extend(args.into_iter().map(|a| a.as_ref().into()));
        self
    }

    pub fn path_arg(mut self, path: &Path) -> Self {
        self.args.push(path.as_os_str().to_owned());
        self
    }

    /// Put `name=value` in the child's environment; argv never sees the value.
    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }

    /// Leave `name` out of the child's environment.
    pub fn env_remove(mut self, name: impl Into<String>) -> Self {
        self.removed.push(name.into());
        self
    }

    /// Feed these bytes on the child's stdin.
    pub fn stdin(mut self, bytes: Vec<u8>) -> Self {
        self.stdin = Some(bytes);
        self
    }

    /// Kill the child and fail if it has not finished by then.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    pub fn program(&self) -> &Path {
        &self.program
    }

    /// The argv as run, for messages: `nerdctl ps -a --format …`.
    pub fn display(&self) -> String {
        let name = self.program.file_name().unwrap_or(self.program.as_os_str());
        std::iter::once(name)
            .chain(self.args.iter().map(OsString::as_os_str))
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// What was run, in a few words for a message: the program and its
    /// subcommand (`nerdctl network create`, `podman exec`). The whole argv
    /// is in the debug log (`--verbose`), not in what the user reads.
    pub fn summary(&self) -> String {
        let name = self.program.file_name().unwrap_or(self.program.as_os_str()).to_string_lossy().into_owned();
        let words = self.args.iter().map(|a| a.to_string_lossy()).take_while(|a| !a.starts_with('-')).take(2);
        std::iter::once(name).chain(words.map(|w| w.into_owned())).collect::<Vec<_>>().join(" ")
    }

    pub fn argv(&self) -> impl Iterator<Item = &OsString> {
        self.args.iter()
    }

    /// The std command, with every feed made: the pipes' read ends, to be
    /// handed to [`spawn`].
    fn std(&self) -> Result<(std::process::Command, Vec<OwnedFd>), Error> {
        let mut args = self.args.clone();
        let mut held = Vec::new();
        for (at, bytes) in &self.feeds {
            let (read, path) = fill_pipe(bytes).map_err(|source| self.spawn_error(source))?;
            args[*at] = path.into();
            held.push(read);
        }
        let mut cmd = std::process::Command::new(&self.program);
        cmd.args(&args);
        for name in &self.removed {
            cmd.env_remove(name);
        }
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        Ok((cmd, held))
    }

    /// Run to completion capturing stdout and stderr; a non-zero exit is an
    /// error carrying the child's stderr.
    pub fn output(&self) -> Result<Output, Error> {
        let (status, stdout, stderr) = self.capture()?;
        if status.success() {
            Ok(Output { stdout, stderr })
        } else {
            let mut stderr = stderr;
            if stderr.len() > STDERR_KEPT {
                let mut cut = STDERR_KEPT;
                while !stderr.is_char_boundary(cut) {
                    cut -= 1;
                }
                stderr.truncate(cut);
            }
            Err(Error::Failed { command: self.summary(), status, stderr })
        }
    }

    /// Run capturing output, and return the status whatever it is.
    pub fn capture(&self) -> Result<(ExitStatus, String, String), Error> {
        let deadline = Deadline::current();
        if deadline.as_ref().is_some_and(Deadline::passed) {
            return Err(Error::Deadline { command: self.summary() });
        }
        tracing::debug!("running {}", self.display());
        let (mut cmd, feeds) = self.std()?;
        cmd.stdin(if self.stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = spawn(&mut cmd, feeds)
            .map_err(|source| Error::Spawn { program: self.program.display().to_string(), source })?;
        // Feed stdin and drain both pipes on their own threads, so neither
        // side can fill a pipe buffer and wait on the other forever.
        let feeder = self.stdin.clone().zip(child.stdin.take()).map(|(bytes, mut pipe)| {
            std::thread::spawn(move || {
                use std::io::Write;
                let _ = pipe.write_all(&bytes);
            })
        });
        let out = drain(child.stdout.take());
        let err = drain(child.stderr.take());
        let status = match (self.timeout, deadline) {
            (None, None) => child.wait(),
            (limit, deadline) => {
                let start = Instant::now();
                loop {
                    if let Some(status) = child.try_wait().map_err(|source| self.spawn_error(source))? {
                        break Ok(status);
                    }
                    let timed_out = limit.filter(|limit| start.elapsed() >= *limit);
                    let stopped = deadline.as_ref().is_some_and(Deadline::passed);
                    if timed_out.is_some() || stopped {
                        let _ = child.kill();
                        let _ = child.wait();
                        return Err(match timed_out {
                            Some(timeout) if !stopped => Error::Timeout { command: self.summary(), timeout },
                            _ => Error::Deadline { command: self.summary() },
                        });
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
        }
        .map_err(|source| self.spawn_error(source))?;
        if let Some(feeder) = feeder {
            let _ = feeder.join();
        }
        let stdout = out.join().unwrap_or_default();
        let stderr = err.join().unwrap_or_default();
        Ok((status, stdout, stderr))
    }

    /// Run with the terminal inherited (stdin, stdout, stderr), returning its status.
    pub fn interactive(&self) -> Result<ExitStatus, Error> {
        tracing::debug!("running {}", self.display());
        let (mut cmd, feeds) = self.std()?;
        spawn(&mut cmd, feeds).and_then(|mut child| child.wait()).map_err(|source| self.spawn_error(source))
    }

    /// Like [`Command::interactive`], but stderr is passed through a pipe
    /// so that its last lines can be read afterwards (some runtimes report
    /// the guest command's real exit status only there).
    pub fn interactive_keep_stderr(&self) -> Result<(ExitStatus, String), Error> {
        self.interactive_holding_stderr(Duration::ZERO).map(|run| (run.status, run.stderr_tail))
    }

    /// Like [`Command::interactive_keep_stderr`], but what the child writes
    /// to stderr in its first `hold` is kept back. If the child ends within
    /// that time, the caller gets those bytes unprinted, and decides: a
    /// runtime that refused the exec before any guest command ran is
    /// retried, and its refusal need not be shown. Otherwise they are
    /// printed when `hold` ends, and stderr streams from then on.
    pub fn interactive_holding_stderr(&self, hold: Duration) -> Result<Interactive, Error> {
        tracing::debug!("running {}", self.display());
        let (mut cmd, feeds) = self.std()?;
        let mut child = spawn(cmd.stderr(Stdio::piped()), feeds).map_err(|source| self.spawn_error(source))?;
        let pipe = child.stderr.take().expect("stderr is piped");
        let relay = std::thread::spawn(move || relay_stderr(pipe, hold));
        let status = child.wait().map_err(|source| self.spawn_error(source))?;
        let (tail, held) = relay.join().unwrap_or_default();
        Ok(Interactive { status, stderr_tail: String::from_utf8_lossy(&tail).into_owned(), held })
    }

    /// Start the command with stdout piped to the caller and stderr inherited,
    /// for output that is streamed as it comes (`brig logs --follow`).
    pub fn spawn_stdout(&self) -> Result<std::process::Child, Error> {
        tracing::debug!("running {}", self.display());
        let (mut cmd, feeds) = self.std()?;
        spawn(cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::inherit()), feeds)
            .map_err(|source| self.spawn_error(source))
    }

    /// Replace this process with the command: the terminal goes to the
    /// runtime and brig is gone. Returns only on failure.
    pub fn exec_replace(&self) -> Error {
        tracing::debug!("handing over to {}", self.display());
        let (mut cmd, feeds) = match self.std() {
            Ok(made) => made,
            Err(err) => return err,
        };
        // The runtime that replaces brig keeps brig's descriptors: the feeds
        // stay open across the exec at the numbers its argv names.
        for fd in &feeds {
            if let Err(e) = rustix::io::fcntl_setfd(fd, rustix::io::FdFlags::empty()) {
                return self.spawn_error(e.into());
            }
        }
        let source = cmd.exec();
        Error::Exec { command: self.summary(), source }
    }

    fn spawn_error(&self, source: std::io::Error) -> Error {
        Error::Spawn { program: self.program.display().to_string(), source }
    }
}

/// A pipe holding `bytes` whose write end is already closed, and the path
/// through which the child opens its read end.
fn fill_pipe(bytes: &[u8]) -> std::io::Result<(OwnedFd, String)> {
    use std::os::fd::AsRawFd;
    if bytes.len() > FEED_MAX {
        return Err(std::io::Error::other(format!("{} bytes are more than a pipe holds ({FEED_MAX})", bytes.len())));
    }
    let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    if bytes.len() > rustix::pipe::fcntl_getpipe_size(&write)? {
        rustix::pipe::fcntl_setpipe_size(&write, bytes.len())?;
    }
    let mut written = 0;
    while written < bytes.len() {
        written += rustix::io::write(&write, &bytes[written..])?;
    }
    drop(write);
    let path = format!("/dev/fd/{}", read.as_raw_fd());
    Ok((read, path))
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display())
    }
}

fn drain<R: Read + Send + 'static>(pipe: Option<R>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// The first few non-empty lines of a child's stderr, joined with "; ".
pub fn first_lines(stderr: &str) -> String {
    stderr.lines().map(str::trim).filter(|l| !l.is_empty()).take(STDERR_LINES).collect::<Vec<_>>().join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_travel_in_the_environment_not_argv() {
        let cmd = Command::new("/bin/sh").args(["-c", "printf %s \"$TOKEN\""]).env("TOKEN", "s3cret");
        assert!(!cmd.display().contains("s3cret"));
        assert_eq!(cmd.output().unwrap().stdout, "s3cret");
    }

    #[test]
    fn failure_carries_what_ran_status_and_stderr_lines() {
        let err = Command::new("/bin/sh")
            .args(["-c", "echo one >&2; echo two >&2; echo three >&2; echo four >&2; exit 3"])
            .output()
            .unwrap_err();
        let text = err.to_string();
        // The program and its subcommand, not the whole argv (that is for --verbose).
        assert!(text.starts_with("sh: "), "{text}");
        assert!(!text.contains("echo"), "{text}");
        assert!(text.contains("exit status: 3"), "{text}");
        assert!(text.ends_with("one; two; three"), "{text}");
    }

    #[test]
    fn a_summary_is_the_program_and_its_subcommand() {
        let summary = |args: &[&str]| Command::new("/usr/bin/nerdctl").args(args).summary();
        assert_eq!(summary(&["run", "--detach", "--name", "x", "--", "img"]), "nerdctl run");
        assert_eq!(summary(&["network", "create", "--opt", "isolate=true", "n"]), "nerdctl network create");
        assert_eq!(summary(&["stop", "brig-a"]), "nerdctl stop brig-a");
        assert_eq!(summary(&["exec", "-w", "/root", "brig-a", "true"]), "nerdctl exec");
    }

    #[test]
    fn a_missing_program_is_a_spawn_error() {
        let err = Command::new("/no/such/runtime").output().unwrap_err();
        assert!(matches!(err, Error::Spawn { .. }), "{err}");
    }

    #[test]
    fn a_slow_child_is_killed_at_the_timeout() {
        let start = Instant::now();
        let err = Command::new("/bin/sleep").arg("5").timeout(Duration::from_millis(100)).output().unwrap_err();
        assert!(matches!(err, Error::Timeout { .. }), "{err}");
        assert!(start.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn a_deadline_kills_a_child_that_has_no_timeout_of_its_own() {
        let start = Instant::now();
        let deadline = Deadline::at(start + Duration::from_millis(100));
        let err = deadline.run(|| Command::new("/bin/sleep").arg("5").output()).unwrap_err();
        assert!(matches!(err, Error::Deadline { .. }), "{err}");
        assert!(start.elapsed() < Duration::from_secs(2));
        // Outside `run` the deadline no longer applies.
        assert!(Command::new("/bin/true").output().is_ok());
    }

    #[test]
    fn a_passed_or_cancelled_deadline_starts_nothing() {
        let scratch = tempfile::tempdir().unwrap();
        let marker = scratch.path().join("marker");
        let touch = || Command::new("/bin/touch").path_arg(&marker).output();
        let flag = Arc::new(AtomicBool::new(true));
        let cancelled = Deadline::at(Instant::now() + Duration::from_secs(60)).or_when(flag);
        assert!(matches!(cancelled.run(touch), Err(Error::Deadline { .. })));
        let passed = Deadline::at(Instant::now());
        assert!(matches!(passed.run(touch), Err(Error::Deadline { .. })));
        assert!(!marker.exists());
    }

    #[test]
    fn the_earlier_of_timeout_and_deadline_wins() {
        let deadline = Deadline::at(Instant::now() + Duration::from_secs(60));
        let err = deadline
            .run(|| Command::new("/bin/sleep").arg("5").timeout(Duration::from_millis(50)).output())
            .unwrap_err();
        assert!(matches!(err, Error::Timeout { .. }), "{err}");
    }

    #[test]
    fn a_feed_is_read_through_its_path_and_made_again_for_every_run() {
        let cmd = Command::new("/bin/sh")
            .args(["-c", "cat \"$1\"; env | grep -c FED_ || true", "sh"])
            .feed_arg(b"FED_A=one\n".to_vec());
        assert!(cmd.display().contains("<pipe>"), "{}", cmd.display());
        for _ in 0..2 {
            let out = cmd.output().unwrap();
            assert_eq!(out.stdout, "FED_A=one\n0\n", "read once per run, never in the environment");
        }
        let big = vec![b'x'; 300_000];
        let out = Command::new("/bin/sh").args(["-c", "wc -c < \"$1\"", "sh"]).feed_arg(big).output().unwrap();
        assert_eq!(out.stdout.trim(), "300000");
        let err = Command::new("/bin/true").feed_arg(vec![0; FEED_MAX + 1]).output().unwrap_err();
        assert!(matches!(err, Error::Spawn { .. }), "{err:?}");
    }

    #[test]
    fn stdin_is_fed_and_large_output_does_not_block() {
        let input = vec![b'x'; 300_000];
        let out = Command::new("/bin/cat").stdin(input.clone()).output().unwrap();
        assert_eq!(out.stdout.len(), input.len());
    }
}
