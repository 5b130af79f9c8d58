//! What every runtime CLI adapter shares: reading the runtime's own words
//! out of its stderr, and the three ways brig calls it — a query whose
//! failure means "the runtime cannot be asked", an operation on one sandbox
//! whose "no such sandbox" is its own error, and the failure of either in
//! one sentence.
//!
//! nerdctl and hull log through logrus (`time=… level=fatal msg="…"`);
//! podman, docker and hull print `Error: …` or `error: …`. One reader keeps
//! the message of either shape, unescaped the one way logrus escapes.

use std::time::Duration;

use super::{Error, Kind};
use crate::process::{self, Command};

/// A listing or inspect that takes longer than this is treated as an
/// unreachable runtime rather than left to hang a command.
pub const QUERY_TIMEOUT: Duration = Duration::from_secs(10);

/// The messages of a runtime's stderr, at most a few lines. When the
/// runtime said it failed — a logrus line at `fatal` or `error` level, or
/// an `Error: …`/`error: …` line — those lines are its reason, and the
/// progress and warnings before them are left out.
pub fn runtime_words(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let failing = |l: &&str| {
        l.contains("level=fatal") || l.contains("level=error") || l.starts_with("Error: ") || l.starts_with("error: ")
    };
    let chosen: Vec<&str> = if lines.iter().any(failing) { lines.into_iter().filter(failing).collect() } else { lines };
    let words: Vec<String> = chosen
        .into_iter()
        .map(|line| match logrus_message(line) {
            Some(msg) => msg,
            None => line.strip_prefix("Error: ").or_else(|| line.strip_prefix("error: ")).unwrap_or(line).to_owned(),
        })
        .collect();
    process::first_lines(&words.join("\n"))
}

/// The `msg="…"` field of a logrus text line, unescaped (`\n` read as a
/// blank, so the message stays one line).
pub fn logrus_message(line: &str) -> Option<String> {
    let at = line.find("msg=\"")?;
    let mut out = String::new();
    let mut chars = line[at + 5..].chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(out),
            '\\' => match chars.next() {
                Some('n') => out.push(' '),
                Some('t') => out.push(' '),
                Some(other) => out.push(other),
                None => break,
            },
            c => out.push(c),
        }
    }
    Some(out)
}

/// One runtime dialect's way of failing.
#[derive(Debug, Clone, Copy)]
pub struct Core {
    pub kind: Kind,
    /// Whether the runtime's words say the sandbox does not exist.
    pub missing: fn(&str) -> bool,
}

impl Core {
    /// Run a query whose failure means "the runtime cannot be asked".
    pub fn query(&self, cmd: Command) -> Result<String, Error> {
        cmd.timeout(QUERY_TIMEOUT).output().map(|o| o.stdout).map_err(|e| self.unreachable(&e))
    }

    /// The runtime could not answer: its exit status and its own words.
    pub fn unreachable(&self, err: &process::Error) -> Error {
        let words = match err {
            process::Error::Failed { status, stderr, .. } => {
                let said = runtime_words(stderr);
                // "exit status 1", as the runtime's users know it.
                let status = status.code().map_or_else(|| status.to_string(), |c| format!("exit status {c}"));
                if said.is_empty() { status } else { format!("{status}: {said}") }
            }
            other => other.to_string(),
        };
        Error::Unreachable { runtime: self.kind, words }
    }

    /// Run an operation on one sandbox; the runtime's "no such sandbox"
    /// becomes [`Error::NoSuchSandbox`], anything else says what failed and
    /// the runtime's reason.
    pub fn operate(&self, cmd: Command, name: &str) -> Result<(), Error> {
        match cmd.output() {
            Ok(_) => Ok(()),
            Err(err) => {
                let said = err.stderr().map(runtime_words).unwrap_or_default();
                if (self.missing)(&said) {
                    Err(Error::NoSuchSandbox { name: name.to_owned() })
                } else {
                    Err(self.failed(&cmd, &err, said))
                }
            }
        }
    }

    /// A failed call in one sentence: the runtime's words, or the failure
    /// itself when it said nothing.
    pub fn failed(&self, cmd: &Command, err: &process::Error, said: String) -> Error {
        tracing::debug!("failed: {}", cmd.display());
        Error::Operation {
            runtime: self.kind,
            what: cmd.summary(),
            command: cmd.display(),
            words: if said.is_empty() { err.to_string() } else { said },
        }
    }

    /// `logs [--follow] [--tail N] <name>`, which every dialect spells alike.
    pub fn logs(cmd: Command, name: &str, follow: bool, tail: Option<u32>) -> Command {
        let mut cmd = cmd.arg("logs");
        if follow {
            cmd = cmd.arg("--follow");
        }
        if let Some(n) = tail {
            cmd = cmd.args(["--tail", &n.to_string()]);
        }
        cmd.arg(name)
    }

    /// Whether a failed call's words say the sandbox does not exist.
    pub fn says_missing(&self, err: &process::Error) -> bool {
        err.stderr().map(runtime_words).is_some_and(|w| (self.missing)(&w))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::logrus(r#"time="x" level=fatal msg="no such container: a""#, "no such container: a")]
    #[case::logrus_escapes(r#"time="x" level=fatal msg="say \"hi\"\nthen""#, "say \"hi\" then")]
    #[case::podman("Error: no container with name or ID \"a\" found", "no container with name or ID \"a\" found")]
    #[case::hull("error: instance not found: a", "instance not found: a")]
    #[case::plain("something else", "something else")]
    #[case::the_fatal_line_is_the_reason(
        "time=\"x\" level=info msg=\"trying next host\" error=\"dial tcp\"\ntime=\"x\" level=fatal msg=\"failed to resolve reference \\\"r\\\": no such host\"",
        "failed to resolve reference \"r\": no such host"
    )]
    #[case::podman_progress_then_error(
        "Trying to pull r...\nError: initializing source docker://r: no such host",
        "initializing source docker://r: no such host"
    )]
    fn one_reader_for_every_dialect(#[case] stderr: &str, #[case] want: &str) {
        assert_eq!(runtime_words(stderr), want);
    }
}
