//! Warning lines on stderr.
//!
//! Every warning starts with `brig: `; continuation lines are indented notes.
//! Warnings never carry a value, only names. brigd collects the same lines
//! into a response's `warnings` instead of printing them.

use std::io::Write;

/// Print one warning line on stderr right away, escaped.
pub fn now(line: impl AsRef<str>) {
    let _ = writeln!(std::io::stderr().lock(), "brig: {}", escaped(line.as_ref()));
}

/// A line for the terminal with its control characters escaped: a path, a
/// label or a runtime's words may hold an escape sequence a guest or a
/// hostile profile put there, which must not move the cursor, retitle the
/// window or hide the rest of the line.
pub fn escaped(text: &str) -> String {
    text.chars().flat_map(|c| if c.is_control() { c.escape_debug().collect::<Vec<_>>() } else { vec![c] }).collect()
}

/// Where warnings go: the terminal for the CLI, a list for brigd.
#[derive(Debug, Default)]
pub struct Warnings {
    lines: Vec<String>,
    collect: bool,
    /// Under `-q` a note (a success summary) is not printed; warnings are.
    quiet: bool,
}

impl Warnings {
    /// Warnings printed to stderr as they arise.
    pub fn stderr() -> Self {
        Warnings { lines: Vec::new(), collect: false, quiet: false }
    }

    /// Warnings on stderr, with notes left out (`-q`).
    pub fn stderr_quiet(quiet: bool) -> Self {
        Warnings { lines: Vec::new(), collect: false, quiet }
    }

    /// Warnings kept for the caller (brigd's response).
    pub fn collected() -> Self {
        Warnings { lines: Vec::new(), collect: true, quiet: false }
    }

    /// A line that reports success rather than warns: printed on stderr
    /// unless quiet, and never among a brigd response's warnings.
    pub fn note(&self, line: impl AsRef<str>) {
        if !self.collect && !self.quiet {
            now(line);
        }
    }

    /// Add a line; the same line twice in one command is said once.
    pub fn push(&mut self, line: impl Into<String>) {
        let line = line.into();
        if self.lines.contains(&line) {
            return;
        }
        if !self.collect {
            now(&line);
        }
        self.lines.push(line);
    }

    /// Whether a progress line could be shown: the CLI, not quiet, with a
    /// terminal on stderr.
    pub fn shows_progress(&self) -> bool {
        use std::io::IsTerminal as _;
        !self.collect && !self.quiet && std::io::stderr().is_terminal()
    }

    /// A progress line printed only if the work it names is still going
    /// after a second: a quick step says nothing. The work is done when
    /// the returned guard is dropped.
    pub fn progress(&self, line: String) -> Progress {
        if !self.shows_progress() {
            return Progress { done: None, thread: None };
        }
        let (done, waiting) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            if waiting.recv_timeout(std::time::Duration::from_secs(1))
                == Err(std::sync::mpsc::RecvTimeoutError::Timeout)
            {
                now(line);
            }
        });
        Progress { done: Some(done), thread: Some(thread) }
    }

    pub fn lines(&self) -> &[String] {
        &self.lines
    }
}

/// A progress line's timer; dropping it ends the wait.
#[derive(Debug)]
pub struct Progress {
    done: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Progress {
    fn drop(&mut self) {
        // The sender gone, the timer wakes at once and prints nothing.
        drop(self.done.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(escaped("a\u{1b}[2Jb\nc\u{9b}d"), "a\\u{1b}[2Jb\\nc\\u{9b}d");
        assert_eq!(escaped("/home/ü x"), "/home/ü x");
    }
}
