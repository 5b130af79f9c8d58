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

/// Keeps what a terminal would print as text, plus newlines and tabs, and
/// drops everything else: C0 and C1 controls, CSI and ESC sequences, and the
/// payloads of OSC, DCS, SOS, PM and APC strings.
///
/// A hand-written scanner has to know every way a terminal can be told to
/// leave plain text (C1 controls alone are `0x9B` for CSI, `0x90` for DCS,
/// `0x9D` for OSC, in UTF-8 as `U+009B` and friends); the `vte` state machine
/// is the one terminal emulators use, so what it calls printable is what a
/// terminal prints. The parser keeps its state between calls, so a sequence
/// split across two reads is still dropped whole.
#[derive(Default)]
struct Sanitizer {
    parser: vte::Parser,
    kept: Kept,
}

// vte's parser has no Debug of its own; its state is of no use in a message.
impl std::fmt::Debug for Sanitizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sanitizer").finish_non_exhaustive()
    }
}

/// What the parser reports as text.
#[derive(Debug, Default)]
struct Kept(Vec<u8>);

impl vte::Perform for Kept {
    fn print(&mut self, c: char) {
        // vte hands DEL (and nothing else of the C0/C1 ranges) to `print`.
        if !c.is_control() {
            let mut utf8 = [0u8; 4];
            self.0.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
        }
    }

    fn execute(&mut self, byte: u8) {
        if matches!(byte, b'\n' | b'\t') {
            self.0.push(byte);
        }
    }
}

impl Sanitizer {
    fn feed(&mut self, bytes: &[u8]) -> Vec<u8> {
        self.parser.advance(&mut self.kept, bytes);
        std::mem::take(&mut self.kept.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn sanitized(chunks: &[&[u8]]) -> String {
        let mut s = Sanitizer::default();
        let out: Vec<u8> = chunks.iter().flat_map(|c| s.feed(c)).collect();
        String::from_utf8(out).expect("the sanitizer writes UTF-8")
    }

    /// Every case is also fed in two reads split at every byte, since the
    /// log arrives in reads of whatever size the pipe gives.
    #[rstest]
    #[case::plain_lines(b"one\ntwo\n\nthree\n", "one\ntwo\n\nthree\n")]
    #[case::tab_kept(b"a\tb", "a\tb")]
    #[case::csi_colour(b"\x1b[31mred\x1b[0m\n", "red\n")]
    #[case::csi_cursor_and_clear(b"x\x1b[2J\x1b[1;1Hy", "xy")]
    #[case::osc_title_bel(b"\x1b]0;title\x07after", "after")]
    #[case::osc_title_st(b"\x1b]0;title\x1b\\after", "after")]
    #[case::osc_hyperlink(b"\x1b]8;;http://x.invalid\x1b\\click\x1b]8;;\x1b\\", "click")]
    #[case::dcs_payload(b"a\x1bPq#0;2;0;0;0#0~~@@\x1b\\b", "ab")]
    #[case::apc_payload(b"a\x1b_Gf=100;cGF5bG9hZA==\x1b\\b", "ab")]
    #[case::pm_payload(b"a\x1b^private\x1b\\b", "ab")]
    #[case::sos_payload(b"a\x1bXstring\x1b\\b", "ab")]
    // C1 controls: the introducer is dropped, so what followed it is plain
    // text that no terminal reads as a sequence.
    #[case::c1_csi_utf8("a\u{9b}31mb".as_bytes(), "a31mb")]
    #[case::c1_osc_utf8("a\u{9d}0;t\u{9c}b".as_bytes(), "a0;tb")]
    #[case::c1_csi_raw_byte(b"a\x9b31mb", "a31mb")]
    #[case::lone_esc_at_end(b"done\x1b", "done")]
    #[case::c0_controls(b"bell\x07 nul\x00 bs\x08 cr\r del\x7f.", "bell nul bs cr del.")]
    #[case::utf8_text("gr\u{fc}\u{df}e \u{65e5}\u{672c} \u{1f600}\u{1f44d}\u{1f3fd}\n".as_bytes(), "gr\u{fc}\u{df}e \u{65e5}\u{672c} \u{1f600}\u{1f44d}\u{1f3fd}\n")]
    fn only_text_newlines_and_tabs_pass(#[case] input: &[u8], #[case] want: &str) {
        assert_eq!(sanitized(&[input]), want);
        for at in 0..=input.len() {
            let (a, b) = input.split_at(at);
            assert_eq!(sanitized(&[a, b]), want, "split after byte {at}");
        }
    }

    #[test]
    fn an_unterminated_string_swallows_only_itself() {
        let mut input = b"a\x1b]0;".to_vec();
        input.extend(std::iter::repeat_n(b'x', 1 << 20));
        input.extend(b"\x07b\n");
        assert_eq!(sanitized(&[&input]), "ab\n");
    }
}
