//! `brig ls [-q] [--json]`: every brig sandbox the runtime lists, joined
//! with what the session index remembers, from one runtime listing.
//!
//! When the runtime cannot be asked, STATE is `unknown` for every session
//! the index remembers — never guessed as stopped — and nothing is deleted.

use std::path::PathBuf;

use serde::Serialize;

use crate::Error;
use crate::cli::{Context, print};
use crate::engine::{Engine, Facts, Prompts};
use crate::exit::Code;
use crate::json::Envelope;
use crate::profile::Registry;
use crate::runtime::{self, Listed, State};
use crate::session::{Index, Record, reference};
use crate::warn::Warnings;

#[derive(Debug, clap::Args)]
pub struct LsArgs {}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Row {
    #[serde(rename = "ref")]
    reference: Option<String>,
    agent: Option<String>,
    label: Option<String>,
    sandbox: String,
    state: &'static str,
    running: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    running_error: Option<String>,
    workspace: Option<PathBuf>,
    project: Option<PathBuf>,
    network: Option<String>,
    isolation: Option<String>,
    /// Who root in a container guest is on the host (`host-root`,
    /// `uid:<n>`); `null` for a microVM or when unknown.
    guest_root: Option<String>,
}

pub fn run(_args: LsArgs, ctx: &Context) -> Result<Code, Error> {
    let registry = Registry::load(&ctx.env);
    let mut engine = Engine::new(&ctx.env, &registry, Prompts::Nobody, Warnings::stderr())?;
    let index = Index::load(engine.state_dir())?;
    let names: Vec<String> = registry.entries().iter().map(|e| e.profile.name.clone()).collect();

    let listing = match engine.open_runtime_for_listing(None) {
        Ok(runtime) => runtime.list().map(|l| (runtime.kind(), l)).map_err(|e| e.to_string()),
        // Nothing installed: say so and show what brig remembers.
        Err(Error::Runtime(runtime::Error::NoneFound)) => Err(runtime::Error::NoneFound.to_string()),
        Err(err) => return Err(err),
    };
    let rows: Vec<Row> = match &listing {
        Ok((kind, listed)) => listed.iter().map(|l| listed_row(l, index.get(&l.name), &names, *kind)).collect(),
        Err(words) => {
            engine.warnings.push(format!("cannot ask the runtime, so every state is unknown: {words}"));
            index
                .iter()
                // A removed session whose home brig deleted is kept only as a
                // marker for the next run's "empty home" notice; it is no sandbox.
                .filter(|(_, r)| !r.emptied_home)
                .map(|(sandbox, record)| unknown_row(sandbox, record, words))
                .collect()
        }
    };

    if ctx.json {
        print(format!("{}\n", Envelope::new("SandboxList", &rows).to_line()))?;
    } else if ctx.quiet {
        // Only rows whose ref every other verb accepts.
        let refs: String = rows
            .iter()
            .filter_map(|r| r.reference.as_ref())
            .map(|r| format!("{}\n", crate::warn::escaped(r)))
            .collect();
        print(refs)?;
    } else {
        print(table(&rows))?;
    }
    Ok(Code::Success)
}

fn listed_row(listed: &Listed, record: Option<&Record>, names: &[String], kind: runtime::Kind) -> Row {
    let facts = Facts::read(listed, record, names);
    let guest_root = runtime::adapter::GuestRoot::word_for(facts.isolation.as_deref(), kind);
    Row {
        reference: facts.reference(),
        agent: facts.agent().map(str::to_owned),
        label: facts.session.and_then(|(_, l)| l),
        sandbox: listed.name.clone(),
        state: match listed.state {
            State::Running => "running",
            State::Stopped => "stopped",
            State::Unknown => "unknown",
        },
        running: listed.state == State::Running,
        running_error: None,
        workspace: facts.home,
        project: facts.project,
        network: facts.network,
        isolation: facts.isolation,
        guest_root,
    }
}

fn unknown_row(sandbox: &str, record: &Record, words: &str) -> Row {
    Row {
        reference: Some(reference::canonical_ref(&record.agent, record.label.as_deref())),
        agent: Some(record.agent.clone()),
        label: record.label.clone(),
        sandbox: sandbox.to_owned(),
        state: "unknown",
        running: false,
        running_error: Some(words.to_owned()),
        workspace: Some(record.home.clone()),
        project: record.project.clone(),
        network: record.network.clone(),
        isolation: None,
        guest_root: None,
    }
}

/// The human table. Every cell is escaped: labels and homes are read back
/// from sandboxes anyone may have created under a `brig-` name.
fn table(rows: &[Row]) -> String {
    let cells: Vec<[String; 4]> = rows
        .iter()
        .map(|r| {
            [
                r.reference.clone().unwrap_or_else(|| "-".to_owned()),
                r.sandbox.clone(),
                r.state.to_owned(),
                r.workspace.as_ref().map_or_else(|| "-".to_owned(), |w| w.display().to_string()),
            ]
            .map(|cell| crate::warn::escaped(&cell))
        })
        .collect();
    let header = ["REF", "SANDBOX", "STATE", "WORKSPACE"].map(str::to_owned);
    let mut widths = header.clone().map(|h| h.len());
    for row in &cells {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    std::iter::once(&header)
        .chain(&cells)
        .map(|row| {
            format!(
                "{:<w0$}  {:<w1$}  {:<w2$}  {}\n",
                row[0],
                row[1],
                row[2],
                row[3],
                w0 = widths[0],
                w1 = widths[1],
                w2 = widths[2]
            )
        })
        .collect()
}
