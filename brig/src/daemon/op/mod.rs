//! The ops: one `match` hands each request to its handler, one module per op.
//!
//! The engine is blocking code, so every handler that touches the runtime
//! runs it on the blocking pool. Work on one sandbox is serialized by that
//! sandbox's gate, held for the whole blocking call; work on different
//! sandboxes runs side by side.

mod ensure;
mod status;
mod stop;
mod version;

use std::sync::Arc;

use super::Shared;
use super::inventory::Liveness;
use crate::engine::{Engine, Prompts};
use crate::error::chain;
use crate::exit::exit_code;
use crate::proto::{Op, Request, Response};
use crate::runtime::{self, Listed, State};
use crate::session::Session;
use crate::warn::Warnings;

/// Answer one request. The response carries the request's `id`, whatever
/// the outcome.
pub async fn answer(shared: &Arc<Shared>, request: Request) -> Response {
    let Request { id, op } = request;
    let response = match op {
        Op::Ensure { agent, name } => ensure::handle(shared, &agent, name.as_deref()).await,
        Op::Status {} => status::handle(shared).await,
        Op::Stop { agent, name } => stop::handle(shared, &agent, name.as_deref()).await,
        Op::Version {} => version::handle(),
    };
    response.with_id(id)
}

/// The ref the engine parses: the request's `name` is the session label.
/// Joining them keeps one parser, so `name` obeys the same slug rules as
/// `agent@label` on the command line.
fn typed_ref(agent: &str, name: Option<&str>) -> String {
    match name {
        Some(label) => format!("{agent}@{label}"),
        None => agent.to_owned(),
    }
}

/// A failed request: brig's exit code for the cause, the error's whole
/// chain, and any warnings gathered before it failed.
fn failure(err: &crate::Error, warnings: Vec<String>) -> Response {
    Response::failure(exit_code(err).as_u8(), chain(err)).with_warnings(warnings)
}

/// An engine for one request: it never prompts, and it keeps warnings for
/// the response instead of printing them.
fn engine(shared: &Shared) -> Result<Engine<'_>, crate::Error> {
    Engine::new(&shared.env, &shared.registry, Prompts::Nobody, Warnings::collected())
}

/// The shared shape of `ensure` and `stop`: parse the session the request
/// names, take its sandbox's gate, and run `work` on a fresh engine on the
/// blocking pool with the gate held until it is done. Returns the work's
/// result and the warnings it gathered, or the response for a failure.
async fn on_session<T: Send + 'static>(
    shared: &Arc<Shared>,
    op: &'static str,
    agent: &str,
    name: Option<&str>,
    work: impl FnOnce(&Shared, &mut Engine<'_>, &str) -> Result<T, crate::Error> + Send + 'static,
) -> Result<(T, Vec<String>), Response> {
    let typed = typed_ref(agent, name);
    // Parsing is pure and cheap: it names the sandbox whose gate to take.
    let sandbox = match Session::parse(&typed, &shared.registry) {
        Ok(session) => session.sandbox().to_owned(),
        Err(err) => return Err(failure(&err.into(), Vec::new())),
    };
    tracing::info!("{op} {sandbox}");
    // Held across the whole blocking call: the second of two concurrent
    // ensures waits here, then finds the sandbox running and boots nothing.
    let _gate = shared.inventory.gate(&sandbox).lock_owned().await;
    let outcome = blocking(shared, move |shared| {
        let mut engine = match engine(shared) {
            Ok(engine) => engine,
            Err(err) => return (Err(err), Vec::new()),
        };
        let result = work(shared, &mut engine, &typed);
        (result, engine.warnings.lines().to_vec())
    })
    .await?;
    match outcome {
        (Ok(value), warnings) => Ok((value, warnings)),
        (Err(err), warnings) => {
            tracing::info!("{op} {sandbox} failed: {}", chain(&err));
            Err(failure(&err, warnings))
        }
    }
}

/// Run blocking engine work on the blocking pool. A panic in it becomes a
/// code 1 response rather than a dropped connection.
async fn blocking<T: Send + 'static>(
    shared: &Arc<Shared>,
    work: impl FnOnce(&Shared) -> T + Send + 'static,
) -> Result<T, Response> {
    let shared = Arc::clone(shared);
    tokio::task::spawn_blocking(move || work(&shared)).await.map_err(|e| {
        tracing::error!("a request's work failed: {e}");
        Response::failure(crate::Code::Failure.as_u8(), format!("internal error: {e}"))
    })
}

/// A sandbox's liveness from one listing of its runtime.
fn liveness(listing: &Result<Vec<Listed>, String>, sandbox: &str) -> Liveness {
    match listing {
        Ok(listed) => match listed.iter().find(|l| l.name == sandbox).map(|l| l.state) {
            Some(State::Running) => Liveness::Running,
            Some(State::Stopped) | None => Liveness::Stopped,
            Some(State::Unknown) => Liveness::Unknown(format!("the runtime reports the state of {sandbox} as unknown")),
        },
        Err(words) => Liveness::Unknown(words.clone()),
    }
}

/// A listing, with a failure kept as the runtime's own words.
fn listing(runtime: &dyn runtime::Runtime) -> Result<Vec<Listed>, String> {
    runtime.list().map_err(|e| chain(&e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn listed(name: &str, state: State) -> Listed {
        Listed { name: name.into(), state, labels: BTreeMap::new() }
    }

    #[test]
    fn liveness_comes_from_the_listing() {
        let listing = Ok(vec![listed("brig-a", State::Running), listed("brig-b", State::Stopped)]);
        assert_eq!(liveness(&listing, "brig-a"), Liveness::Running);
        assert_eq!(liveness(&listing, "brig-b"), Liveness::Stopped);
        // Removed behind the daemon's back: not running.
        assert_eq!(liveness(&listing, "brig-c"), Liveness::Stopped);
        let failed = Err("nerdctl ps: cannot connect to containerd".to_owned());
        assert_eq!(liveness(&failed, "brig-a"), Liveness::Unknown("nerdctl ps: cannot connect to containerd".into()));
    }

    #[test]
    fn name_is_the_label() {
        assert_eq!(typed_ref("claude", Some("refactor")), "claude@refactor");
        assert_eq!(typed_ref("claude", None), "claude");
    }
}
