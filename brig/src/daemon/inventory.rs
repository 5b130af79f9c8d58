//! The sessions this daemon has handled, and the per-sandbox gates that
//! serialize work on one sandbox.
//!
//! The inventory lives in memory only and holds what this process did: the
//! runtime is the source of truth for what exists and what runs, so nothing
//! here says whether a sandbox runs. A restarted daemon starts empty.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use crate::proto::SessionReport;

/// What the daemon knows of a session besides its liveness.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Known {
    pub agent: String,
    pub label: Option<String>,
    pub sandbox: String,
    pub workspace: String,
    pub project: Option<String>,
    pub network: Option<String>,
    pub isolation: Option<String>,
    pub guest_root: Option<String>,
}

/// A session's liveness as read from the runtime for one report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Liveness {
    Running,
    Stopped,
    /// The runtime could not be asked; its own words.
    Unknown(String),
}

impl Known {
    pub fn report(&self, liveness: &Liveness) -> SessionReport {
        let (running, running_error) = match liveness {
            Liveness::Running => (true, None),
            Liveness::Stopped => (false, None),
            Liveness::Unknown(words) => (false, Some(words.clone())),
        };
        SessionReport {
            agent: self.agent.clone(),
            name: self.label.clone(),
            sandbox: self.sandbox.clone(),
            workspace: self.workspace.clone(),
            running,
            running_error,
            project: self.project.clone(),
            network: self.network.clone(),
            isolation: self.isolation.clone(),
            guest_root: self.guest_root.clone(),
        }
    }
}

/// The gate of one sandbox: held across the whole blocking operation on it.
pub type Gate = Arc<tokio::sync::Mutex<()>>;

#[derive(Debug, Default)]
pub struct Inventory {
    // std mutexes: each is held only for a map operation, never across an
    // await, so they never block the runtime.
    sessions: Mutex<BTreeMap<String, Known>>,
    gates: Mutex<HashMap<String, Gate>>,
}

impl Inventory {
    /// The gate for `sandbox`. One gate per sandbox name for the daemon's
    /// life; there are only as many as sandboxes asked for.
    pub fn gate(&self, sandbox: &str) -> Gate {
        let mut gates = self.gates.lock().unwrap_or_else(|e| e.into_inner());
        gates.entry(sandbox.to_owned()).or_default().clone()
    }

    pub fn record(&self, known: Known) {
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        sessions.insert(known.sandbox.clone(), known);
    }

    pub fn get(&self, sandbox: &str) -> Option<Known> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner()).get(sandbox).cloned()
    }

    /// Every session, in sandbox-name order.
    pub fn all(&self) -> Vec<Known> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner()).values().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(sandbox: &str) -> Known {
        Known {
            agent: "claude-code".into(),
            label: None,
            sandbox: sandbox.into(),
            workspace: "/w".into(),
            project: None,
            network: Some("isolated".into()),
            isolation: None,
            guest_root: None,
        }
    }

    #[test]
    fn one_gate_per_sandbox() {
        let inventory = Inventory::default();
        assert!(Arc::ptr_eq(&inventory.gate("brig-a"), &inventory.gate("brig-a")));
        assert!(!Arc::ptr_eq(&inventory.gate("brig-a"), &inventory.gate("brig-b")));
    }

    #[test]
    fn unknown_liveness_is_not_running_and_says_why() {
        let report = known("brig-a").report(&Liveness::Unknown("nerdctl ps: exit status 1".into()));
        assert!(!report.running);
        assert_eq!(report.running_error.as_deref(), Some("nerdctl ps: exit status 1"));
        assert_eq!(known("brig-a").report(&Liveness::Running).running_error, None);
    }

    #[test]
    fn status_lists_in_name_order_and_a_record_replaces() {
        let inventory = Inventory::default();
        inventory.record(known("brig-b"));
        inventory.record(known("brig-a"));
        inventory.record(Known { workspace: "/other".into(), ..known("brig-b") });
        let all = inventory.all();
        assert_eq!(all.iter().map(|k| k.sandbox.as_str()).collect::<Vec<_>>(), ["brig-a", "brig-b"]);
        assert_eq!(all[1].workspace, "/other");
    }
}
