//! `brig logs <ref> [--follow] [--tail N] [--raw]`: the sandbox's log as
//! the runtime keeps it.
//!
//! Without `--raw`, terminal control sequences are dropped on the way to
//! the user's terminal: the log is written by whatever runs in the guest,
//! and a guest must not be able to drive the host terminal.

use std::io::{Read, Write};

use crate::Error;
use crate::cli::Context;
use crate::engine::{Engine, Prompts};
use crate::exit::Code;
use crate::profile::Registry;
use crate::runtime;
use crate::warn::Warnings;

#[derive(Debug, clap::Args)]
pub struct LogsArgs {
    /// The session: <agent> or <agent>@<label>.
    #[arg(value_name = "REF")]
    pub reference: String,
    /// Keep printing as the log grows.
    #[arg(short, long)]
    pub follow: bool,
    /// Only the last N lines.
    #[arg(long, value_name = "N")]
    pub tail: Option<u32>,
    /// Pass the log through untouched, control sequences included.
    #[arg(long)]
    pub raw: bool,
}

pub fn run(args: LogsArgs, ctx: &Context) -> Result<Code, Error> {
    let registry = Registry::load(&ctx.env);
    let mut engine = Engine::new(&ctx.env, &registry, Prompts::Nobody, Warnings::stderr())?;
    let (session, profile) = engine.session(&args.reference, None)?;
    let runtime = engine.open_runtime_for_listing(Some(&profile))?;
    if !runtime.list()?.iter().any(|l| l.name == session.sandbox()) {
        return Err(runtime::Error::NoSuchSandbox { name: session.sandbox().to_owned() }.into());
    }
    let command = runtime.logs(session.sandbox(), args.follow, args.tail);
    if args.raw {
        let status = command.interactive().map_err(runtime::Error::from)?;
        return Ok(if status.success() { Code::Success } else { Code::Failure });
    }
    let mut child = command.spawn_stdout().map_err(runtime::Error::from)?;
    let mut stdout = child.stdout.take().expect("spawn_stdout pipes stdout");
    let mut out = std::io::stdout().lock();
    let mut filter = Sanitizer::default();
    let mut buf = [0u8; 8192];
    loop {
        let n = stdout.read(&mut buf).map_err(|e| Error::io("read the log of", session.sandbox(), e))?;
        if n == 0 {
            break;
        }
        out.write_all(&filter.feed(&buf[..n])).and_then(|()| out.flush()).map_err(Error::Stdout)?;
    }
    let status = child.wait().map_err(|e| Error::io("wait for the log of", session.sandbox(), e))?;
    Ok(if status.success() { Code::Success } else { Code::Failure })
}

/// Drops escape sequences and C0 control bytes other than newline, tab and
/// carriage return, across chunk boundaries.
#[derive(Debug, Default)]
struct Sanitizer {
    state: Escape,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Escape {
    #[default]
    Text,
    /// Just saw ESC.
    Start,
    /// Inside `ESC [ … final`.
    Csi,
    /// Inside `ESC ] … BEL` or `ESC ] … ESC \`.
    Osc,
}

impl Sanitizer {
    fn feed(&mut self, bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(bytes.len());
        for &b in bytes {
            self.state = match (self.state, b) {
                (Escape::Text, 0x1b) => Escape::Start,
                (Escape::Text, b'\n' | b'\t' | b'\r') => {
                    out.push(b);
                    Escape::Text
                }
                (Escape::Text, 0..=0x1f | 0x7f) => Escape::Text,
                (Escape::Text, _) => {
                    out.push(b);
                    Escape::Text
                }
                (Escape::Start, b'[') => Escape::Csi,
                (Escape::Start, b']') => Escape::Osc,
                (Escape::Start, _) => Escape::Text,
                (Escape::Csi, 0x40..=0x7e) => Escape::Text,
                (Escape::Csi, _) => Escape::Csi,
                (Escape::Osc, 0x07) => Escape::Text,
                (Escape::Osc, 0x1b) => Escape::Start,
                (Escape::Osc, _) => Escape::Osc,
            };
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case(b"plain\n", b"plain\n")]
    #[case(b"\x1b[31mred\x1b[0m\n", b"red\n")]
    #[case(b"\x1b]0;title\x07after", b"after")]
    #[case(b"bell\x07 nul\x00 tab\t", b"bell nul tab\t")]
    fn control_sequences_are_dropped(#[case] input: &[u8], #[case] want: &[u8]) {
        assert_eq!(Sanitizer::default().feed(input), want);
    }

    #[test]
    fn a_sequence_split_across_chunks_is_still_dropped() {
        let mut s = Sanitizer::default();
        let mut out = s.feed(b"a\x1b[3");
        out.extend(s.feed(b"1mb"));
        assert_eq!(out, b"ab");
    }
}
