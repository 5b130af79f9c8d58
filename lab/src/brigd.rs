//! brigd as a trial meets it: a daemon started in the background for the
//! trial, and a client that sends raw lines to a socket and reads the
//! response lines back, as any program speaking the protocol would.
//!
//! The client is plain `std` code in the runner. To connect as another uid
//! it runs `lab-client` (a byte pipe between its stdio and the socket) under
//! `setpriv`, because the peer check reads the uid of the process that
//! connects and the runner itself must stay root.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Barrier, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use rustix::process::{Pid, Signal, kill_process, kill_process_group};

use crate::process::{self, Output};

/// How long a started daemon may take before its socket accepts a connection.
pub const START_TIMEOUT: Duration = Duration::from_secs(15);

/// With `closed: true`, how long the daemon may take to close the connection
/// after its last expected response.
const CLOSE_WAIT: Duration = Duration::from_secs(10);

/// With `closed: false`, how long the connection must stay open and quiet.
const OPEN_WAIT: Duration = Duration::from_millis(300);

/// A daemon running in the background, in its own process group, killed
/// with that group when dropped unreaped.
#[derive(Debug)]
pub struct Daemon {
    child: Child,
    pub pid: u32,
    pub socket: PathBuf,
    pub stdout: PathBuf,
    pub stderr: PathBuf,
    /// Started with its socket handed in (`activated`): the socket outlives it.
    pub handed_in: bool,
    started: Instant,
    reaped: bool,
}

impl Daemon {
    /// Spawns `cmd` with its output going to `<log>.stdout` and `<log>.stderr`
    /// and waits until `socket` accepts a connection.
    pub fn start(mut cmd: Command, socket: PathBuf, log: &Path, shown: &str) -> Result<Daemon> {
        use std::os::unix::process::CommandExt;

        let stdout = log.with_extension("stdout");
        let stderr = log.with_extension("stderr");
        let out = File::create(&stdout).with_context(|| format!("creating {}", stdout.display()))?;
        let err = File::create(&stderr).with_context(|| format!("creating {}", stderr.display()))?;
        cmd.process_group(0).stdin(Stdio::null()).stdout(out).stderr(err);
        let started = Instant::now();
        let child = cmd.spawn().with_context(|| format!("cannot start {shown}"))?;
        let pid = child.id();
        let mut daemon = Daemon { child, pid, socket, stdout, stderr, handed_in: false, started, reaped: false };
        let deadline = started + START_TIMEOUT;
        loop {
            if let Some(status) = daemon.child.try_wait().context("waiting for brigd")? {
                daemon.reaped = true;
                let (out, err) = daemon.output_text();
                bail!(
                    "{shown}: exited ({}) before {} accepted a connection\n{}",
                    process::describe(status),
                    daemon.socket.display(),
                    process::render_streams(&out, &err)
                );
            }
            // A connection that sends nothing is closed by the daemon at once.
            if UnixStream::connect(&daemon.socket).is_ok() {
                return Ok(daemon);
            }
            if Instant::now() >= deadline {
                let (out, err) = daemon.output_text();
                bail!(
                    "{shown}: {} accepted no connection within {}s\n{}",
                    daemon.socket.display(),
                    START_TIMEOUT.as_secs(),
                    process::render_streams(&out, &err)
                );
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// Whether the daemon is still running (a daemon that exited is reaped).
    pub fn running(&mut self) -> bool {
        if self.reaped {
            return false;
        }
        match self.child.try_wait() {
            Ok(None) => true,
            _ => {
                self.reaped = true;
                false
            }
        }
    }

    /// Sends `signal` to the daemon (not its group: the runtime calls it has
    /// in flight are its to finish) and waits for it to exit.
    pub fn signal_and_wait(&mut self, signal: Signal, timeout: Duration) -> Result<Output> {
        if !self.running() {
            bail!("brigd (pid {}) is no longer running", self.pid);
        }
        let pid = Pid::from_raw(self.pid as i32).context("a child has a positive pid")?;
        kill_process(pid, signal).with_context(|| format!("signalling brigd pid {}", self.pid))?;
        let deadline = Instant::now() + timeout;
        let status = loop {
            if let Some(status) = self.child.try_wait().context("waiting for brigd")? {
                break status;
            }
            if Instant::now() >= deadline {
                let (out, err) = self.output_text();
                bail!(
                    "brigd pid {} did not exit within {}s of {signal:?}\n{}",
                    self.pid,
                    timeout.as_secs(),
                    process::render_streams(&out, &err)
                );
            }
            thread::sleep(Duration::from_millis(10));
        };
        self.reaped = true;
        let (stdout, stderr) = self.output_text();
        Ok(Output {
            code: status.code(),
            status: process::describe(status),
            stdout,
            stderr,
            elapsed: self.started.elapsed(),
        })
    }

    fn output_text(&self) -> (String, String) {
        let read = |p: &Path| std::fs::read(p).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
        (read(&self.stdout), read(&self.stderr))
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        // Pass or fail, nothing the daemon started outlives the trial.
        if let Some(pid) = Pid::from_raw(self.pid as i32) {
            let _ = kill_process_group(pid, Signal::KILL);
        }
        if !self.reaped {
            let _ = self.child.wait();
        }
    }
}

/// What one `request` sends, and how much it reads back.
#[derive(Debug, Clone)]
pub struct Exchange {
    pub socket: PathBuf,
    /// The bytes to write, in the pieces to write them in.
    pub pieces: Vec<Vec<u8>>,
    /// The pause between two pieces.
    pub pause: Duration,
    /// Connect through `setpriv` and `lab-client` as this uid.
    pub as_uid: Option<(u32, PathBuf)>,
    /// Response lines to read.
    pub responses: usize,
    pub closed: Option<bool>,
    pub deadline: Instant,
}

/// What came after the expected responses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum After {
    /// Not looked at (`closed` not given).
    Unchecked,
    Closed,
    Open,
    /// A line that was not expected.
    Extra(String),
    /// Neither closed nor open within the time given to tell.
    StillOpen(Duration),
}

/// What one connection received.
#[derive(Debug, Clone)]
pub struct Received {
    pub lines: Vec<String>,
    /// Why fewer lines than expected arrived, if they did.
    pub short: Option<String>,
    pub after: After,
    /// What went wrong writing (a daemon that closed early makes the rest of
    /// a write fail; that is for the message, not a failure by itself).
    pub write_error: Option<String>,
    /// `lab-client`'s stderr, when it was used.
    pub client_stderr: String,
}

enum Event {
    Line(String),
    End,
    Failed(String),
}

/// Runs `exchange` on `connections` connections at once: each connects,
/// all wait until every one is connected, then all write.
pub fn run(exchange: &Exchange, connections: usize) -> Vec<Result<Received>> {
    let barrier = Arc::new(Barrier::new(connections));
    let handles: Vec<_> = (0..connections)
        .map(|_| {
            let exchange = exchange.clone();
            let barrier = Arc::clone(&barrier);
            thread::spawn(move || one(&exchange, &barrier))
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err(anyhow!("the client thread panicked")))).collect()
}

/// One end of a connection the runner holds.
struct Ends {
    reader: Box<dyn Read + Send>,
    writer: Box<dyn Write + Send>,
    /// Closes the connection from our side, so that blocked threads return.
    close: Box<dyn FnOnce() -> String + Send>,
}

fn connect(exchange: &Exchange) -> Result<Ends> {
    match &exchange.as_uid {
        None => {
            let stream = UnixStream::connect(&exchange.socket)
                .with_context(|| format!("connecting to {}", exchange.socket.display()))?;
            let reader = stream.try_clone().context("cloning a socket")?;
            let writer = stream.try_clone().context("cloning a socket")?;
            Ok(Ends {
                reader: Box::new(reader),
                writer: Box::new(writer),
                close: Box::new(move || {
                    let _ = stream.shutdown(std::net::Shutdown::Both);
                    String::new()
                }),
            })
        }
        Some((uid, client)) => {
            use std::os::unix::process::CommandExt;
            let id = uid.to_string();
            let mut cmd = Command::new("setpriv");
            cmd.args(["--reuid", &id, "--regid", &id, "--clear-groups", "--"])
                .arg(client)
                .arg(&exchange.socket)
                .env_clear()
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .process_group(0)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            let mut child = cmd.spawn().with_context(|| format!("cannot start setpriv … {}", client.display()))?;
            let writer = child.stdin.take().expect("stdin was piped");
            let reader = child.stdout.take().expect("stdout was piped");
            let mut stderr = child.stderr.take().expect("stderr was piped");
            let errors = thread::spawn(move || {
                let mut text = String::new();
                let _ = stderr.read_to_string(&mut text);
                text
            });
            Ok(Ends {
                reader: Box::new(reader),
                writer: Box::new(writer),
                close: Box::new(move || {
                    if let Some(pid) = Pid::from_raw(child.id() as i32) {
                        let _ = kill_process_group(pid, Signal::KILL);
                    }
                    let _ = child.wait();
                    errors.join().unwrap_or_default()
                }),
            })
        }
    }
}

fn one(exchange: &Exchange, barrier: &Barrier) -> Result<Received> {
    let ends = connect(exchange);
    // Every connection waits here, connected or not, so one failure cannot
    // leave the others waiting forever.
    barrier.wait();
    let Ends { reader, mut writer, close } = ends?;

    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut reader = BufReader::new(reader);
        loop {
            let mut line = Vec::new();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) => {
                    let _ = tx.send(Event::End);
                    return;
                }
                Ok(_) => {
                    let text = String::from_utf8_lossy(&line).trim_end_matches(['\n', '\r']).to_owned();
                    if tx.send(Event::Line(text)).is_err() {
                        return;
                    }
                }
                // A daemon that closes with request bytes still unread makes
                // the kernel reset the connection: that is its close.
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                    let _ = tx.send(Event::End);
                    return;
                }
                Err(e) => {
                    let _ = tx.send(Event::Failed(e.to_string()));
                    return;
                }
            }
        }
    });

    let pieces = exchange.pieces.clone();
    let pause = exchange.pause;
    // The writer hands its end back, so the connection stays open until the
    // responses have been read, as a client that pipelines keeps it.
    let writing = thread::spawn(move || {
        for (i, piece) in pieces.iter().enumerate() {
            if i > 0 && !pause.is_zero() {
                thread::sleep(pause);
            }
            if let Err(e) = writer.write_all(piece).and_then(|()| writer.flush()) {
                return (writer, Some(e.to_string()));
            }
        }
        (writer, None)
    });

    let mut received = Received {
        lines: Vec::new(),
        short: None,
        after: After::Unchecked,
        write_error: None,
        client_stderr: String::new(),
    };
    let left = |deadline: Instant| deadline.saturating_duration_since(Instant::now());
    while received.lines.len() < exchange.responses {
        match rx.recv_timeout(left(exchange.deadline)) {
            Ok(Event::Line(line)) => received.lines.push(line),
            Ok(Event::End) => {
                received.short = Some(format!("brigd closed the connection after {} line(s)", received.lines.len()));
                break;
            }
            Ok(Event::Failed(e)) => {
                received.short = Some(format!("reading failed after {} line(s): {e}", received.lines.len()));
                break;
            }
            Err(_) => {
                received.short = Some(format!("timed out waiting for response {}", received.lines.len() + 1));
                break;
            }
        }
    }
    if received.short.is_none() {
        received.after = match exchange.closed {
            None => After::Unchecked,
            Some(want_closed) => {
                let wait = if want_closed { CLOSE_WAIT } else { OPEN_WAIT };
                match rx.recv_timeout(wait.min(left(exchange.deadline))) {
                    Ok(Event::Line(line)) => After::Extra(line),
                    Ok(Event::End | Event::Failed(_)) => After::Closed,
                    Err(_) if want_closed => After::StillOpen(wait),
                    Err(_) => After::Open,
                }
            }
        };
    }
    received.client_stderr = close();
    if let Ok((end, error)) = writing.join() {
        drop(end);
        received.write_error = error;
    }
    Ok(received)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixListener;

    /// A listener that answers each line with `{"n":<line number>}` and
    /// closes after `close_after` lines.
    fn echo_server(path: &Path, close_after: usize) -> thread::JoinHandle<()> {
        let listener = UnixListener::bind(path).unwrap();
        thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            let mut writer = stream.try_clone().unwrap();
            let reader = BufReader::new(stream);
            for (n, line) in reader.lines().enumerate() {
                if line.is_err() {
                    return;
                }
                writeln!(writer, "{{\"n\":{}}}", n + 1).unwrap();
                if n + 1 == close_after {
                    return;
                }
            }
        })
    }

    fn exchange(socket: PathBuf, lines: &[&str], responses: usize, closed: Option<bool>) -> Exchange {
        Exchange {
            socket,
            pieces: lines.iter().map(|l| format!("{l}\n").into_bytes()).collect(),
            pause: Duration::ZERO,
            as_uid: None,
            responses,
            closed,
            deadline: Instant::now() + Duration::from_secs(10),
        }
    }

    /// A socket path in a scratch directory that goes, socket and all, when
    /// the directory is dropped.
    fn socket_path(tag: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::Builder::new().prefix(&format!("lab-client-{tag}-")).tempdir().unwrap();
        let path = dir.path().join("s.sock");
        (dir, path)
    }

    #[test]
    fn reads_one_line_per_response_then_sees_the_close() {
        let (_dir, path) = socket_path("close");
        let server = echo_server(&path, 2);
        let got = run(&exchange(path.clone(), &["a", "b"], 2, Some(true)), 1).pop().unwrap().unwrap();
        server.join().unwrap();
        assert_eq!(got.lines, ["{\"n\":1}", "{\"n\":2}"]);
        assert_eq!(got.after, After::Closed);
        assert!(got.short.is_none());
    }

    #[test]
    fn a_close_before_the_last_response_is_reported() {
        let (_dir, path) = socket_path("short");
        let server = echo_server(&path, 1);
        let got = run(&exchange(path.clone(), &["a", "b"], 2, None), 1).pop().unwrap().unwrap();
        server.join().unwrap();
        assert_eq!(got.lines, ["{\"n\":1}"]);
        assert_eq!(got.short.as_deref(), Some("brigd closed the connection after 1 line(s)"));
    }

    #[test]
    fn an_open_connection_is_seen_open() {
        let (_dir, path) = socket_path("open");
        let server = echo_server(&path, 99);
        let got = run(&exchange(path.clone(), &["a"], 1, Some(false)), 1).pop().unwrap().unwrap();
        server.join().unwrap();
        assert_eq!(got.after, After::Open);
    }
}
