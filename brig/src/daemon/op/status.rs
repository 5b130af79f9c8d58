//! `status`: every session in the inventory, with liveness read from the
//! runtime now — one listing per runtime binary, not one per session.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use super::{blocking, engine, failure, listing, liveness};
use crate::daemon::Shared;
use crate::daemon::inventory::{Known, Liveness};
use crate::error::chain;
use crate::proto::{Response, SessionReport};

pub(super) async fn handle(shared: &Arc<Shared>) -> Response {
    let known = shared.inventory.all();
    if known.is_empty() {
        return Response::sessions(Vec::new());
    }
    match blocking(shared, move |shared| report(shared, &known)).await {
        Ok(Ok((sessions, warnings))) => Response::sessions(sessions).with_warnings(warnings),
        Ok(Err(err)) => failure(&err, Vec::new()),
        Err(response) => response,
    }
}

fn report(shared: &Shared, known: &[Known]) -> Result<(Vec<SessionReport>, Vec<String>), crate::Error> {
    let mut engine = engine(shared)?;
    // Sessions of profiles with different runtimeBin are listed by their own
    // runtime; sessions sharing a binary share its one listing.
    let mut listings: HashMap<PathBuf, Result<_, String>> = HashMap::new();
    let mut sessions = Vec::with_capacity(known.len());
    for session in known {
        let opened = shared
            .registry
            .resolve(&session.agent)
            .map_err(crate::Error::from)
            .and_then(|entry| engine.open_runtime_for_listing(Some(&entry.profile)));
        let liveness = match opened {
            Ok(runtime) => {
                let listed = listings.entry(runtime.bin().to_owned()).or_insert_with(|| listing(runtime.as_ref()));
                liveness(listed, &session.sandbox)
            }
            Err(err) => Liveness::Unknown(chain(&err)),
        };
        sessions.push(session.report(&liveness));
    }
    Ok((sessions, engine.warnings.lines().to_vec()))
}
