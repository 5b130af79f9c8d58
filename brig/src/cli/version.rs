//! `brig version [--json]`: the build facts captured at compile time.

use crate::build_info::BuildInfo;
use crate::cli::{Context, print};
use crate::exit::Code;
use crate::json::Envelope;

#[derive(Debug, clap::Args)]
pub struct VersionArgs {}

pub fn run(_args: VersionArgs, ctx: &Context) -> Result<Code, crate::Error> {
    let info = BuildInfo::current();
    if ctx.json {
        print(format!("{}\n", Envelope::new("Version", &info).to_line()))?;
    } else {
        print(format!("brig {}\n", info.line()))?;
    }
    Ok(Code::Success)
}
