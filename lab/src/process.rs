//! The one way the lab runs a child: its own process group, captured output,
//! a deadline, and the whole group killed if the child is dropped unreaped.
//!
//! A step that hangs (a runtime waiting on a lock, an agent reading a
//! terminal that is not there) must fail its trial, not the whole run, and
//! must not leave processes behind that keep sandboxes or pipes alive.

use std::io::{Read, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow};
use rustix::process::{Pid, Signal, kill_process_group};

/// How long a finished child's output pipes may stay open: a process it left
/// behind in its group that still holds them is killed after this.
const DRAIN_GRACE: Duration = Duration::from_secs(10);

/// What a finished command did.
#[derive(Debug, Clone)]
pub struct Output {
    /// The exit code, or `None` when a signal ended the child.
    pub code: Option<i32>,
    pub status: String,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

/// A spawned child that is killed, with its process group, unless reaped.
#[derive(Debug)]
struct Guard {
    child: Child,
    reaped: bool,
}

impl Guard {
    fn kill_group(&self) {
        if let Some(pid) = Pid::from_raw(self.child.id() as i32) {
            // The group may already be empty; there is nothing to report then.
            let _ = kill_process_group(pid, Signal::KILL);
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if !self.reaped {
            self.kill_group();
            let _ = self.child.wait();
        }
    }
}

/// Runs `cmd` to completion or until `timeout`, feeding it `stdin`.
///
/// The command is shown in errors as `shown`, the argv the caller ran.
pub fn run(mut cmd: Command, stdin: Option<&str>, timeout: Duration, shown: &str) -> Result<Output> {
    use std::os::unix::process::CommandExt;

    cmd.process_group(0)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let child = cmd.spawn().with_context(|| format!("cannot start {shown}"))?;
    let mut guard = Guard { child, reaped: false };

    if let Some(text) = stdin {
        let mut pipe = guard.child.stdin.take().expect("stdin was piped");
        let bytes = text.as_bytes().to_vec();
        // A writer thread, so a child that never reads cannot block the lab.
        thread::spawn(move || {
            let _ = pipe.write_all(&bytes);
        });
    }
    let stdout = drain(guard.child.stdout.take().expect("stdout was piped"));
    let stderr = drain(guard.child.stderr.take().expect("stderr was piped"));

    let status = wait_until(&mut guard.child, started + timeout)?;
    let Some(status) = status else {
        guard.kill_group();
        let _ = guard.child.wait();
        guard.reaped = true;
        let out = collect(&stdout, &stderr, Duration::from_secs(2));
        return Err(anyhow!("{shown}: timed out after {}s\n{}", timeout.as_secs(), render_streams(&out.0, &out.1)));
    };
    guard.reaped = true;

    let deadline = Instant::now() + DRAIN_GRACE;
    let mut out = collect(&stdout, &stderr, DRAIN_GRACE);
    if out.2 {
        // Something the child started still holds its output open.
        guard.kill_group();
        let rest = collect(&stdout, &stderr, deadline.saturating_duration_since(Instant::now()));
        out = (rest.0, rest.1, rest.2);
        return Err(anyhow!(
            "{shown}: exited ({}) but a process it left in its group kept its output open; killed it\n{}",
            describe(status),
            render_streams(&out.0, &out.1)
        ));
    }
    Ok(Output {
        code: status.code(),
        status: describe(status),
        stdout: out.0,
        stderr: out.1,
        elapsed: started.elapsed(),
    })
}

type Pipe = mpsc::Receiver<Vec<u8>>;

fn drain(mut reader: impl Read + Send + 'static) -> Pipe {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = reader.read_to_end(&mut buf);
        let _ = tx.send(buf);
    });
    rx
}

/// Both streams as text, and whether either was still open at the deadline.
fn collect(stdout: &Pipe, stderr: &Pipe, wait: Duration) -> (String, String, bool) {
    let deadline = Instant::now() + wait;
    let mut open = false;
    let mut take = |pipe: &Pipe| match pipe.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(_) => {
            open = true;
            String::new()
        }
    };
    let out = take(stdout);
    let err = take(stderr);
    (out, err, open)
}

fn wait_until(child: &mut Child, deadline: Instant) -> Result<Option<ExitStatus>> {
    loop {
        if let Some(status) = child.try_wait().context("waiting for a child")? {
            return Ok(Some(status));
        }
        if Instant::now() >= deadline {
            return Ok(None);
        }
        thread::sleep(Duration::from_millis(10));
    }
}

pub fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        (None, None) => "unknown status".to_owned(),
    }
}

/// Both streams for a failure message, each cut to its last lines.
pub fn render_streams(stdout: &str, stderr: &str) -> String {
    format!("--- stdout\n{}--- stderr\n{}", tail(stdout), tail(stderr))
}

fn tail(text: &str) -> String {
    const LINES: usize = 40;
    let lines: Vec<&str> = text.lines().collect();
    let mut out = String::new();
    if lines.len() > LINES {
        out.push_str(&format!("[… {} earlier lines]\n", lines.len() - LINES));
    }
    for line in &lines[lines.len().saturating_sub(LINES)..] {
        out.push_str(line);
        out.push('\n');
    }
    if out.is_empty() {
        out.push_str("(empty)\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", script]);
        cmd
    }

    #[test]
    fn captures_both_streams_and_the_code() {
        let out = run(sh("echo out; echo err >&2; exit 3"), None, Duration::from_secs(10), "sh").unwrap();
        assert_eq!(out.code, Some(3));
        assert_eq!(out.stdout, "out\n");
        assert_eq!(out.stderr, "err\n");
    }

    #[test]
    fn feeds_stdin() {
        let out = run(sh("cat"), Some("hello"), Duration::from_secs(10), "cat").unwrap();
        assert_eq!(out.stdout, "hello");
    }

    #[test]
    fn a_hanging_child_times_out_with_its_group() {
        let started = Instant::now();
        let err =
            run(sh("sleep 30 & echo started; wait"), None, Duration::from_millis(300), "sh").unwrap_err().to_string();
        assert!(err.contains("timed out after"), "{err}");
        assert!(err.contains("started"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(10));
    }
}
