//! `ensure`: the CLI's whole path to a running sandbox — home, credentials,
//! image, share — booting only if needed, with the report read back from
//! the runtime.

use std::sync::Arc;

use super::on_session;
use crate::daemon::Shared;
use crate::daemon::inventory::{Known, Liveness};
use crate::engine::{Engine, Request};
use crate::proto::Response;

pub(super) async fn handle(shared: &Arc<Shared>, agent: &str, name: Option<&str>) -> Response {
    match on_session(shared, "ensure", agent, name, |_, engine, typed| ensure(engine, typed)).await {
        Ok(((known, liveness), warnings)) => {
            shared.inventory.record(known.clone());
            Response::sessions(vec![known.report(&liveness)]).with_warnings(warnings)
        }
        Err(response) => response,
    }
}

fn ensure(engine: &mut Engine<'_>, typed: &str) -> Result<(Known, Liveness), crate::Error> {
    let (session, profile) = engine.session(typed, None)?;
    let ensured = engine.ensure(&Request::bare(session.clone(), profile))?;
    let sandbox = session.sandbox();
    if ensured.booted {
        tracing::info!("booted {sandbox}");
    } else {
        tracing::info!("{sandbox} was already running");
    }
    // Liveness was read from the runtime within this request: the engine's
    // listing found the sandbox running, or it answered the readiness exec
    // after booting. A second listing would only double the runtime calls.
    let liveness = Liveness::Running;
    let known = Known {
        agent: session.agent().to_owned(),
        label: session.label().map(str::to_owned),
        sandbox: sandbox.to_owned(),
        workspace: ensured.home.path.display().to_string(),
        project: ensured.project.as_ref().map(|p| p.display().to_string()),
        network: Some(ensured.network.to_string()),
        isolation: Some(ensured.isolation.to_string()),
        guest_root: crate::runtime::adapter::GuestRoot::word_for(
            Some(&ensured.isolation.to_string()),
            ensured.runtime.kind(),
        ),
    };
    Ok((known, liveness))
}
