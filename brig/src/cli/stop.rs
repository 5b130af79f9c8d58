//! `brig stop <ref>`: stop the sandbox; its name, home and record stay.

use crate::Error;
use crate::cli::{Context, print};
use crate::engine::{Engine, Prompts};
use crate::exit::Code;
use crate::profile::Registry;
use crate::warn::Warnings;

#[derive(Debug, clap::Args)]
pub struct StopArgs {
    /// The session: <agent> or <agent>@<label>.
    #[arg(value_name = "REF")]
    pub reference: String,
    /// Retiring: the session label (use <agent>@<label>).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
}

pub fn run(args: StopArgs, ctx: &Context) -> Result<Code, Error> {
    let registry = Registry::load(&ctx.env);
    let mut engine = Engine::new(&ctx.env, &registry, Prompts::Nobody, Warnings::stderr())?;
    let (session, profile) = engine.session(&args.reference, args.name.as_deref())?;
    let runtime = engine.open_runtime_for_listing(Some(&profile))?;
    // Stopping what is not running is success: the user's intent holds.
    engine.stop(runtime.as_ref(), session.sandbox())?;
    if !ctx.quiet {
        print(format!("stopped {}\n", session.sandbox()))?;
    }
    Ok(Code::Success)
}
