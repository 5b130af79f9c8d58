//! `stop`: stop a session's sandbox, whether this daemon started it or not.
//! Stopping a sandbox that is already stopped succeeds, as on the CLI.

use std::path::PathBuf;
use std::sync::Arc;

use super::{blocking, engine, failure, typed_ref};
use crate::daemon::Shared;
use crate::daemon::inventory::{Known, Liveness};
use crate::engine::Engine;
use crate::proto::Response;
use crate::runtime::{self, Listed, State, adapter::label};
use crate::session::{Index, Session, home};

pub(super) async fn handle(shared: &Arc<Shared>, agent: &str, name: Option<&str>) -> Response {
    let typed = typed_ref(agent, name);
    let session = match Session::parse(&typed, &shared.registry) {
        Ok(session) => session,
        Err(err) => return failure(&err.into(), Vec::new()),
    };
    let sandbox = session.sandbox().to_owned();
    tracing::info!("stop {sandbox}");
    let _gate = shared.inventory.gate(&sandbox).lock_owned().await;
    let previous = shared.inventory.get(&sandbox);
    let outcome = blocking(shared, move |shared| {
        let mut engine = match engine(shared) {
            Ok(engine) => engine,
            Err(err) => return (Err(err), Vec::new()),
        };
        let result = stop(&mut engine, &typed, previous);
        (result, engine.warnings.lines().to_vec())
    })
    .await;
    match outcome {
        // A stop the runtime confirmed is the report's liveness: there is no
        // second listing to race against.
        Ok((Ok(known), warnings)) => {
            shared.inventory.record(known.clone());
            Response::sessions(vec![known.report(&Liveness::Stopped)]).with_warnings(warnings)
        }
        Ok((Err(err), warnings)) => failure(&err, warnings),
        Err(response) => response,
    }
}

fn stop(engine: &mut Engine<'_>, typed: &str, previous: Option<Known>) -> Result<Known, crate::Error> {
    let (session, profile) = engine.session(typed, None)?;
    let runtime = engine.open_runtime_for_listing(Some(&profile))?;
    let listing = runtime.list()?;
    let sandbox = session.sandbox();
    let listed = listing
        .into_iter()
        .find(|l| l.name == sandbox)
        .ok_or_else(|| runtime::Error::NoSuchSandbox { name: sandbox.to_owned() })?;
    if listed.state == State::Running {
        runtime.stop(sandbox)?;
        tracing::info!("stopped {sandbox}");
    }
    Ok(previous.unwrap_or_else(|| known_from_runtime(engine, &session, &listed)))
}

/// What to report for a sandbox this daemon never ensured: the labels brig
/// put on it, then the session index, then the default home.
fn known_from_runtime(engine: &Engine<'_>, session: &Session, listed: &Listed) -> Known {
    let record = Index::load(engine.state_dir()).ok().and_then(|index| index.get(session.sandbox()).cloned());
    let workspace = listed
        .labels
        .get(label::HOME)
        .map(PathBuf::from)
        .or_else(|| record.as_ref().map(|r| r.home.clone()))
        .unwrap_or_else(|| home::default_home_path(engine.state_dir(), session.sandbox()));
    let project = match listed.labels.get(label::PROJECT) {
        Some(p) if p.is_empty() => None,
        Some(p) => Some(p.clone()),
        None => record.as_ref().and_then(|r| r.project.as_ref()).map(|p| p.display().to_string()),
    };
    Known {
        agent: session.agent().to_owned(),
        label: session.label().map(str::to_owned),
        sandbox: session.sandbox().to_owned(),
        workspace: workspace.display().to_string(),
        project,
        network: listed.labels.get(label::NETWORK).cloned().or_else(|| record.and_then(|r| r.network)),
        isolation: listed.labels.get(label::ISOLATION).cloned(),
    }
}
