//! `stop`: stop a session's sandbox, whether this daemon started it or not.
//! Stopping a sandbox that is already stopped succeeds, as on the CLI.

use std::sync::Arc;

use super::on_session;
use crate::daemon::Shared;
use crate::daemon::inventory::{Known, Liveness};
use crate::engine::{Engine, Facts};
use crate::proto::Response;
use crate::runtime::Runtime;
use crate::session::{Index, Session, home};

pub(super) async fn handle(shared: &Arc<Shared>, agent: &str, name: Option<&str>) -> Response {
    match on_session(shared, "stop", agent, name, stop).await {
        // A stop the runtime confirmed is the report's liveness: there is no
        // second listing to race against.
        Ok((known, warnings)) => {
            shared.inventory.record(known.clone());
            Response::sessions(vec![known.report(&Liveness::Stopped)]).with_warnings(warnings)
        }
        Err(response) => response,
    }
}

fn stop(shared: &Shared, engine: &mut Engine<'_>, typed: &str) -> Result<Known, crate::Error> {
    let (session, profile) = engine.session(typed, None)?;
    let previous = shared.inventory.get(session.sandbox());
    let runtime = engine.open_runtime_for_listing(Some(&profile))?;
    let sandbox = session.sandbox();
    engine.stop(runtime.as_ref(), sandbox)?;
    tracing::info!("stopped {sandbox}");
    match previous {
        Some(known) => Ok(known),
        None => known_from_runtime(engine, runtime.as_ref(), &session),
    }
}

/// What to report for a sandbox this daemon never ensured: what its labels,
/// then the session index, say; the default home when neither knows.
fn known_from_runtime(engine: &Engine<'_>, runtime: &dyn Runtime, session: &Session) -> Result<Known, crate::Error> {
    let record = Index::load(engine.state_dir()).ok().and_then(|index| index.get(session.sandbox()).cloned());
    let facts = match runtime.lookup(session.sandbox())? {
        Some(found) => Facts::read(&found.listed, record.as_ref(), &[]),
        None => record.as_ref().map(Facts::from_record).unwrap_or_default(),
    };
    let workspace = facts.home.unwrap_or_else(|| home::default_home_path(engine.state_dir(), session.sandbox()));
    Ok(Known {
        agent: session.agent().to_owned(),
        label: session.label().map(str::to_owned),
        sandbox: session.sandbox().to_owned(),
        workspace: workspace.display().to_string(),
        project: facts.project.map(|p| p.display().to_string()),
        network: facts.network,
        guest_root: crate::runtime::adapter::GuestRoot::word_for(facts.isolation.as_deref(), runtime.kind()),
        isolation: facts.isolation,
    })
}
