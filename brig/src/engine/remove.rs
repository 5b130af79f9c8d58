//! Stopping and removing a sandbox, under its lock like every other change.
//!
//! A home is deleted only when brig created it, and only the directory
//! `<state>/homes/<sandbox>`, through a held handle that never follows a
//! link. The sandbox is looked up again once the lock is held, so a
//! removal never acts on what another process changed meanwhile, and never
//! deletes the home of a sandbox that another process booted while this one
//! waited: that sandbox is removed first, then its home.

use std::path::PathBuf;

use super::lock::SandboxLock;
use super::{Engine, Facts, boot};
use crate::Error;
use crate::runtime::{self, Runtime};
use crate::session::{Index, home};

/// What a removal did (or, on a dry run, would do).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Removed {
    pub sandbox: String,
    /// The home deleted (or that would be).
    pub deleted_home: Option<PathBuf>,
    /// The home kept, because brig did not create it.
    pub kept_home: Option<PathBuf>,
}

impl Removed {
    /// One line per thing done, as `rm` prints it.
    pub fn report(&self, dry_run: bool) -> String {
        let (removed, deleted, kept) =
            if dry_run { ("would remove", "would delete", "would keep") } else { ("removed", "deleted", "kept") };
        let mut out = format!("{removed} {}\n", self.sandbox);
        if let Some(p) = &self.deleted_home {
            out.push_str(&format!("{deleted} its home {}\n", p.display()));
        }
        if let Some(p) = &self.kept_home {
            out.push_str(&format!("{kept} its home {}\n", p.display()));
        }
        out
    }
}

impl Engine<'_> {
    /// Stop a sandbox; stopping one that is not running succeeds, and one
    /// that does not exist is [`runtime::Error::NoSuchSandbox`]. The
    /// runtime's own `stop` says both, so nothing is asked first.
    pub fn stop(&mut self, runtime: &dyn Runtime, sandbox: &str) -> Result<(), Error> {
        let mut lock = SandboxLock::take(&self.state_dir, sandbox)?;
        lock.bump()?;
        runtime.stop(sandbox)?;
        Ok(())
    }

    /// Stop and remove one sandbox and its own network, delete its home if
    /// brig created it, and drop its record (keeping a marker when the home
    /// was emptied, so the next run says it starts from an empty home).
    /// What sandboxes removed behind brig's back left: the network of its
    /// own and the host-isolation rules of every sandbox brig knows of (by
    /// its network or its record) that the runtime no longer lists. Each
    /// is looked up again under its lock, so a sandbox another process is
    /// booting at that moment keeps its network and rules. Returns the
    /// sandboxes cleaned up after.
    pub fn prune(&mut self, runtime: &dyn Runtime) -> Result<Vec<String>, Error> {
        let listed: std::collections::BTreeSet<String> = runtime.list()?.into_iter().map(|l| l.name).collect();
        let mut candidates: std::collections::BTreeSet<String> = runtime
            .brig_networks()?
            .into_iter()
            .filter_map(|n| n.strip_suffix(boot::NETWORK_SUFFIX).map(str::to_owned))
            .collect();
        // A record of a sandbox on another runtime is not this runtime's to
        // judge: that sandbox may be running there, rules and all.
        let kind = runtime.kind().to_string();
        let index = Index::load(&self.state_dir)?;
        candidates.extend(
            index.iter().filter(|(_, r)| r.runtime.as_deref() == Some(kind.as_str())).map(|(s, _)| s.to_owned()),
        );
        let mut pruned = Vec::new();
        for sandbox in candidates.into_iter().filter(|s| !listed.contains(s)) {
            if crate::session::home::check_sandbox_name(&sandbox).is_err() {
                continue;
            }
            let _lock = SandboxLock::take(&self.state_dir, &sandbox)?;
            if runtime.lookup(&sandbox)?.is_some() {
                continue;
            }
            runtime.remove_network(&boot::network_name(&sandbox))?;
            crate::firewall::remove_for(self.env, runtime, &sandbox)?;
            pruned.push(sandbox);
        }
        Ok(pruned)
    }

    pub fn remove(&mut self, runtime: &dyn Runtime, sandbox: &str, dry_run: bool) -> Result<Removed, Error> {
        let mut lock = SandboxLock::take(&self.state_dir, sandbox)?;
        let state_dir = self.state_dir.clone();
        let record = Index::load(&state_dir)?.get(sandbox).cloned();
        // The record, written under this lock at every boot, says where the
        // home is; only a sandbox without one is asked for its labels.
        let facts = match record.as_ref().filter(|r| r.runtime.is_some()) {
            Some(record) => Facts::from_record(record),
            None => {
                let found = runtime
                    .lookup(sandbox)?
                    .ok_or_else(|| runtime::Error::NoSuchSandbox { name: sandbox.to_owned() })?;
                Facts::read(&found.listed, record.as_ref(), &[])
            }
        };
        let Facts { home: home_path, home_created: created, .. } = facts;
        // Only the default home of this very sandbox under this state dir is
        // brig's to delete, whatever a label or record claims.
        let default_home = home::default_home_path(&state_dir, sandbox);
        let deletes_home = created != Some(false) && home_path.as_deref().is_none_or(|p| p == default_home);
        let kept_home = if deletes_home { None } else { home_path };
        if dry_run {
            let deleted_home = (deletes_home && default_home.exists()).then_some(default_home);
            return Ok(Removed { sandbox: sandbox.to_owned(), deleted_home, kept_home });
        }
        lock.bump()?;
        runtime.remove(sandbox)?;
        runtime.remove_network(&boot::network_name(sandbox))?;
        crate::firewall::remove_for(self.env, runtime, sandbox)?;
        let emptied = deletes_home && home::remove_default_home(&state_dir, sandbox)?;
        Index::update(&state_dir, |index| match (index.get(sandbox).cloned(), emptied) {
            (Some(mut record), true) => {
                record.project = None;
                record.network = None;
                record.image = None;
                record.emptied_home = true;
                record.recreating = false;
                record.runtime = None;
                record.isolation = None;
                index.insert(sandbox.to_owned(), record);
            }
            _ => {
                index.remove(sandbox);
            }
        })?;
        Ok(Removed { sandbox: sandbox.to_owned(), deleted_home: emptied.then_some(default_home), kept_home })
    }
}
