//! `brig rm <ref>` and `brig rm --all`: stop and remove sandboxes, and the
//! homes brig created for them.
//!
//! A home is deleted only when brig created it, and only the directory
//! `<state>/homes/<sandbox>`, through a held handle that never follows a
//! link. A home the user named is never touched; its path is printed so the
//! user knows what was left behind.

use std::io::{BufRead, IsTerminal, Write};

use crate::Error;
use crate::cli::{Context, print};
use crate::engine::{Engine, Facts, Prompts, network_name};
use crate::error::UsageError;
use crate::exit::Code;
use crate::profile::Registry;
use crate::runtime::{self, Listed, Runtime, State};
use crate::session::{Index, home};
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
    let listing = runtime.list()?;
    let Some(listed) = listing.iter().find(|l| l.name == session.sandbox()) else {
        return Err(runtime::Error::NoSuchSandbox { name: session.sandbox().to_owned() }.into());
    };
    let report = remove(&engine, runtime.as_ref(), listed, args.dry_run)?;
    if !ctx.quiet {
        print(report)?;
    }
    Ok(Code::Success)
}

fn remove_all(engine: &mut Engine<'_>, args: &RmArgs, ctx: &Context) -> Result<Code, Error> {
    let runtime = engine.open_runtime_for_listing(None)?;
    let listing = runtime.list()?;
    if listing.is_empty() {
        if !ctx.quiet {
            print("no brig sandboxes to remove\n")?;
        }
        return Ok(Code::Success);
    }
    let names: Vec<String> = engine.registry.entries().iter().map(|e| e.profile.name.clone()).collect();
    let index = Index::load(engine.state_dir())?;
    let lines: String = listing
        .iter()
        .map(|l| {
            let shown = Facts::read(l, index.get(&l.name), &names).reference().unwrap_or_else(|| "-".to_owned());
            let state = if l.state == State::Running { "running" } else { "stopped" };
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
        if !confirm(&format!("remove these {} sandbox(es)?", listing.len())) {
            print("nothing removed\n")?;
            return Ok(Code::Failure);
        }
    }
    let mut report = String::new();
    for listed in &listing {
        report.push_str(&remove(engine, runtime.as_ref(), listed, false)?);
    }
    if !ctx.quiet {
        print(report)?;
    }
    Ok(Code::Success)
}

/// Ask on the terminal; anything but y/yes is no.
fn confirm(question: &str) -> bool {
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "{question} [y/N] ");
    let _ = err.flush();
    let mut answer = String::new();
    if std::io::stdin().lock().read_line(&mut answer).is_err() {
        return false;
    }
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

/// Stop and remove one sandbox and its own network, delete its home if brig
/// created it, and drop its record. Returns what it did, one line each.
fn remove(engine: &Engine<'_>, runtime: &dyn Runtime, listed: &Listed, dry_run: bool) -> Result<String, Error> {
    let sandbox = listed.name.as_str();
    let state_dir = engine.state_dir();
    let record = Index::load(state_dir)?.get(sandbox).cloned();
    let Facts { home: home_path, home_created: created, .. } = Facts::read(listed, record.as_ref(), &[]);
    // Only the default home of this very sandbox under this state dir is
    // brig's to delete, whatever a label or record claims.
    let default_home = home::default_home_path(state_dir, sandbox);
    let deletes_home = created != Some(false) && home_path.as_deref().is_none_or(|p| p == default_home);
    let mut out = String::new();
    if dry_run {
        out.push_str(&format!("would remove {sandbox}\n"));
        if deletes_home && default_home.exists() {
            out.push_str(&format!("would delete its home {}\n", default_home.display()));
        } else if let Some(p) = &home_path {
            out.push_str(&format!("would keep its home {}\n", p.display()));
        }
        return Ok(out);
    }
    if listed.state == State::Running {
        runtime.stop(sandbox)?;
    }
    runtime.remove(sandbox)?;
    runtime.remove_network(&network_name(sandbox))?;
    out.push_str(&format!("removed {sandbox}\n"));
    let mut emptied = false;
    if deletes_home {
        emptied = home::remove_default_home(state_dir, sandbox)?;
        if emptied {
            out.push_str(&format!("deleted its home {}\n", default_home.display()));
        }
    } else if let Some(p) = &home_path {
        out.push_str(&format!("kept its home {}\n", p.display()));
    }
    Index::update(state_dir, |index| {
        match (index.get(sandbox).cloned(), emptied) {
            // Keep a marker so the next run says it starts from an empty home.
            (Some(mut record), true) => {
                record.project = None;
                record.network = None;
                record.image = None;
                record.emptied_home = true;
                index.insert(sandbox.to_owned(), record);
            }
            _ => {
                index.remove(sandbox);
            }
        }
    })?;
    Ok(out)
}
