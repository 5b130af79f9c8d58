//! `brig rm <ref>` and `brig rm --all`: stop and remove sandboxes, and the
//! homes brig created for them.
//!
//! A home is deleted only when brig created it, and only the directory
//! `<state>/homes/<sandbox>`, through a held handle that never follows a
//! link. A home the user named is never touched; its path is printed so the
//! user knows what was left behind.

use std::io::IsTerminal;

use crate::Error;
use crate::cli::{Context, print};
use crate::engine::{Engine, Facts, Prompts};
use crate::error::UsageError;
use crate::exit::Code;
use crate::profile::Registry;
use crate::runtime::{Listed, Runtime, State};
use crate::session::Index;
use crate::warn::Warnings;

#[derive(Debug, clap::Args)]
pub struct RmArgs {
    /// The session: <agent> or <agent>@<label>.
    #[arg(value_name = "REF", required_unless_present = "all", conflicts_with = "all")]
    pub reference: Option<String>,
    /// Remove every brig sandbox the runtime lists.
    #[arg(long)]
    pub all: bool,
    /// With --all: do not ask.
    #[arg(short = 'y', long = "yes")]
    pub yes: bool,
    /// Print what would be removed, and remove nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Retiring: the session label (use <agent>@<label>).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
}

pub fn run(args: RmArgs, ctx: &Context) -> Result<Code, Error> {
    let registry = Registry::load(&ctx.env);
    let mut engine = Engine::new(&ctx.env, &registry, Prompts::Nobody, Warnings::stderr())?;
    if args.all {
        return remove_all(&mut engine, &args, ctx);
    }
    if args.yes {
        return Err(UsageError::YesWithoutAll.into());
    }
    let typed = args.reference.as_deref().unwrap_or_default();
    let (session, profile) = engine.session(typed, args.name.as_deref())?;
    let runtime = engine.open_runtime_for_listing(Some(&profile))?;
    let report = engine.remove(runtime.as_ref(), session.sandbox(), args.dry_run)?.report(args.dry_run);
    if !ctx.quiet {
        print(report)?;
    }
    Ok(Code::Success)
}

fn remove_all(engine: &mut Engine<'_>, args: &RmArgs, ctx: &Context) -> Result<Code, Error> {
    let runtime = engine.open_runtime_for_listing(None)?;
    let listing = runtime.list()?;
    if listing.is_empty() {
        let pruned = if args.dry_run { Vec::new() } else { engine.prune(runtime.as_ref())? };
        if !ctx.quiet {
            print(format!("no brig sandboxes to remove\n{}", pruned_report(&pruned)))?;
        }
        return Ok(Code::Success);
    }
    let names: Vec<String> = engine.registry.entries().iter().map(|e| e.profile.name.clone()).collect();
    let index = Index::load(engine.state_dir())?;
    let lines: String = listing
        .iter()
        .map(|l| {
            let shown = Facts::read(l, index.get(&l.name), &names).reference().unwrap_or_else(|| "-".to_owned());
            let state = match l.state {
                State::Running => "running",
                State::Stopped => "stopped",
                State::Unknown => "unknown",
            };
            format!("{shown}  {}  {state}\n", l.name)
        })
        .collect();
    print(&lines)?;
    if args.dry_run {
        let mut report = String::new();
        for listed in &listing {
            report.push_str(&remove(engine, runtime.as_ref(), listed, true)?);
        }
        print(report)?;
        return Ok(Code::Success);
    }
    if !args.yes {
        if !std::io::stdin().is_terminal() {
            return Err(Error::NeedsConfirmation {
                what: format!("removing {} sandbox(es)", listing.len()),
                flag: "-y",
            });
        }
        if !super::confirm(&format!("remove these {} sandbox(es)?", listing.len())) {
            print("nothing removed\n")?;
            return Ok(Code::Failure);
        }
    }
    let mut report = String::new();
    for listed in &listing {
        report.push_str(&remove(engine, runtime.as_ref(), listed, false)?);
    }
    report.push_str(&pruned_report(&engine.prune(runtime.as_ref())?));
    if !ctx.quiet {
        print(report)?;
    }
    Ok(Code::Success)
}

/// Remove one listed sandbox through the engine, under its lock.
fn remove(engine: &mut Engine<'_>, runtime: &dyn Runtime, listed: &Listed, dry_run: bool) -> Result<String, Error> {
    Ok(engine.remove(runtime, &listed.name, dry_run)?.report(dry_run))
}

/// One line per sandbox removed behind brig's back whose network and
/// host-isolation rules `rm --all` took.
fn pruned_report(pruned: &[String]) -> String {
    pruned
        .iter()
        .map(|s| format!("{s} was removed behind brig's back: removed its network and firewall rules\n"))
        .collect()
}
