//! Applying a plan: the only place a sandbox is booted, started or
//! recreated, always under the sandbox's lock (decision 13).
//!
//! Once the lock is held the sandbox is looked up again, because another
//! process may have booted or removed it while this one waited, and the
//! action is decided anew from what the runtime says now. Every decision
//! starts from a successful lookup: an unknown state is not an absent
//! sandbox, so nothing is booted or deleted on one.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::lock::SandboxLock;
use super::plan::{Action, Ready, action};
use super::{Engine, boot, prepare};
use crate::Error;
use crate::runtime::{ExecSpec, Isolation, Runtime};
use crate::session::{GuestHome, HomeSource, Index, Record, home};
use crate::settings::Network;

/// A sandbox that exists and runs.
#[derive(Debug)]
pub struct Ensured {
    pub runtime: Box<dyn Runtime>,
    pub isolation: Isolation,
    pub home: GuestHome,
    /// The project mounted, on the host.
    pub project: Option<PathBuf>,
    pub network: Network,
    /// Whether this request booted the sandbox (as opposed to finding it running).
    pub booted: bool,
    /// What was done to the sandbox. `Reuse` with `assumed` set means no
    /// runtime was asked: see [`Engine::ensure_assuming`].
    pub action: Action,
    pub assumed: bool,
}

impl Ensured {
    /// Where the agent starts: the project in the guest, else the guest home.
    pub fn workdir(&self, profile: &crate::profile::Profile) -> String {
        match &self.project {
            Some(p) => crate::session::project::guest_path(p),
            None => profile.guest_home.clone(),
        }
    }
}

/// What [`Engine::act`] did, with the home it used and the sandbox it acted on.
struct Acted {
    home: GuestHome,
    step: Action,
    /// The image reference handed to the runtime, when this request booted.
    booted: Option<String>,
    existing: Option<crate::runtime::Found>,
}

impl Engine<'_> {
    /// Make the planned sandbox exist and run.
    pub fn apply(&mut self, plan: Ready) -> Result<Ensured, Error> {
        let sandbox = plan.session.sandbox().to_owned();
        if plan.isolation == Isolation::Container {
            self.warn_container(plan.runtime.as_ref());
        }
        let mut lock = SandboxLock::take(&self.state_dir, &sandbox)?;
        // What the plan saw may have changed while this process waited: then
        // the record and the runtime are read again.
        let (record, existing) = if lock.generation() == plan.generation && !plan.assumed {
            (plan.record.clone(), plan.existing.clone())
        } else {
            (Index::load(&self.state_dir)?.get(&sandbox).cloned(), plan.runtime.lookup(&sandbox)?)
        };
        let acted = match self.act(&plan, record.as_ref(), existing, &mut lock) {
            // The plan took a session nobody had seen for new, without
            // asking; the runtime knows a sandbox of that name after all
            // (made outside brig, or under another state directory). Ask,
            // and decide again from what it says.
            Err(Error::Runtime(crate::runtime::Error::NameInUse { .. })) if plan.fresh => {
                let existing = plan.runtime.lookup(&sandbox)?;
                self.act(&plan, record.as_ref(), existing, &mut lock)?
            }
            other => other?,
        };
        let Acted { home, step, booted: booted_image, existing } = acted;
        let booted = booted_image.is_some();

        if plan.resolved.skills {
            let prepared = prepare::create_home(&self.state_dir, &sandbox, &home)?;
            for line in super::skills::seed(self.env, &plan.profile, &prepared.dir, &prepared.path)? {
                self.warnings.push(line);
            }
        }

        // A sandbox left running keeps the posture it was made with.
        let network =
            if booted { plan.resolved.network } else { existing_posture(existing.as_ref(), record.as_ref(), &plan) };
        Index::update(&self.state_dir, |index| {
            let mut entry = index.get(&sandbox).cloned().unwrap_or_else(|| Record::new(&plan.session, &home));
            entry.home = home.path.clone();
            entry.home_created_by_brig = home.created_by_brig();
            entry.project = plan.project.clone();
            entry.network = Some(network.to_string());
            entry.recreating = false;
            entry.runtime = Some(plan.runtime.kind().to_string());
            entry.isolation = Some(plan.isolation.to_string());
            entry.egress = match (&plan.resolved.egress, network) {
                (Some(egress), Network::Isolated) => egress.names.clone(),
                _ => Vec::new(),
            };
            if let Some(image) = &booted_image {
                // The digest that verified, when one did: what booted, not a
                // tag that may name something else tomorrow.
                entry.image = Some(image.clone());
                entry.publish = plan.resolved.publish.iter().map(ToString::to_string).collect();
                entry.emptied_home = false;
            }
            index.insert(sandbox.clone(), entry);
        })?;
        Ok(Ensured {
            runtime: plan.runtime,
            isolation: plan.isolation,
            home,
            project: plan.project,
            network,
            booted,
            action: step,
            assumed: false,
        })
    }

    /// Act on the sandbox as `existing` says it is: reuse, start, recreate
    /// or boot it.
    fn act(
        &mut self,
        plan: &Ready,
        record: Option<&Record>,
        existing: Option<crate::runtime::Found>,
        lock: &mut SandboxLock,
    ) -> Result<Acted, Error> {
        let sandbox = plan.session.sandbox();
        let mut home = plan.home.clone();
        if let Some(found) = &existing
            && !found.listed.labels.contains_key(crate::runtime::adapter::label::HOME)
            && let Some(legacy) = self.legacy_home(found, plan)
        {
            home = legacy;
        }
        let asked = plan.resolved.network_asked.then_some(plan.resolved.network);
        // Asked again here: a sandbox found only when its name turned out
        // taken was never seen by the plan.
        super::plan::posture_known(existing.as_ref(), record, asked, sandbox)?;
        let ports = plan.resolved.publish_asked.then_some(&plan.resolved.publish[..]);
        let step = action(existing.as_ref(), record, plan.project.as_deref(), asked, ports);
        let runtime = plan.runtime.as_ref();
        let mut booted = None;
        if step != Action::Reuse {
            lock.bump()?;
        }
        match &step {
            Action::Reuse => {
                // Policies bound or detached since the sandbox booted take
                // effect now: its table is written anew, in one transaction.
                let had = record.is_some_and(|r| !r.egress.is_empty());
                if (had || plan.resolved.egress.is_some())
                    && existing_posture(existing.as_ref(), record, plan) == Network::Isolated
                {
                    self.isolate(plan, sandbox)?;
                }
            }
            Action::Start => {
                self.recheck(plan, &home)?;
                // The rules go with a host reboot; a start puts them back
                // before the sandbox runs.
                let isolated = existing_posture(existing.as_ref(), record, plan) == Network::Isolated;
                if isolated {
                    self.isolate(plan, sandbox)?;
                }
                match runtime.start(sandbox) {
                    Ok(()) => {
                        if isolated {
                            self.isolate_running(plan, sandbox)?;
                        }
                        self.wait_ready(runtime, sandbox, plan.resolved.ready_timeout)?
                    }
                    // A runtime that cannot restart an instance (hull) gets a
                    // fresh one with the same home, project and network.
                    Err(crate::runtime::Error::NoRestart { .. }) => {
                        booted = Some(self.recreate(plan, &home, record)?);
                    }
                    Err(err) => return Err(err.into()),
                }
            }
            Action::Recreate { from } => {
                self.warnings.push(recreate_warning(sandbox, from.as_deref(), plan.project.as_deref()));
                booted = Some(self.recreate(plan, &home, record)?);
            }
            Action::Republish { from } => {
                let show = |list: &[crate::ports::Publish]| {
                    if list.is_empty() { "none".to_owned() } else { crate::ports::to_label(list).replace(',', ", ") }
                };
                self.warnings.push(format!(
                    "the ports {sandbox} publishes change from {} to {}; ports are fixed when a sandbox boots, so it is recreated (its home and project stay)",
                    show(from),
                    show(&plan.resolved.publish)
                ));
                booted = Some(self.recreate(plan, &home, record)?);
            }
            Action::Renetwork { from, to } => {
                let from = from.map_or_else(|| "an unknown posture".to_owned(), |n| n.to_string());
                self.warnings.push(format!("the network of {sandbox} changes from {from} to {to};"));
                self.warnings.push(
                    "  a sandbox's network is fixed when it boots, so it is recreated (its home and project stay);",
                );
                self.warnings.push("  every other session in it is disconnected");
                booted = Some(self.recreate(plan, &home, record)?);
            }
            Action::Boot => {
                let chosen = self.verify_image(plan)?;
                self.boot(plan, &home, record, true, &chosen)?;
                booted = Some(chosen.image);
            }
        }
        Ok(Acted { home, step, booted, existing })
    }

    /// Keep the sandbox's own network from the host and from every other
    /// sandbox network (decision 16): the host's firewall rules for its
    /// bridge, written before it runs.
    /// With an egress policy, the same table holds its rules, `host:`
    /// rules resolved now.
    fn isolate(&mut self, plan: &Ready, sandbox: &str) -> Result<(), Error> {
        self.write_rules(plan, sandbox, true)
    }

    /// Rootless podman keeps its network namespace only while one of the
    /// user's sandboxes runs: another sandbox stopping between the rules
    /// being written and this one starting takes the namespace, and the
    /// rules, with it, and the start makes a fresh one without them. Once
    /// this sandbox runs, the namespace is pinned by it, so the rules are
    /// written again there before the guest is used (the readiness exec,
    /// then the agent). The host's own firewall keeps them: nothing to do.
    fn isolate_running(&mut self, plan: &Ready, sandbox: &str) -> Result<(), Error> {
        let writer = crate::firewall::writer_for(self.env, plan.runtime.as_ref(), sandbox)?;
        if matches!(writer, crate::firewall::Writer::RootlessPodman { .. }) {
            self.write_rules(plan, sandbox, false)?;
        }
        Ok(())
    }

    /// The table for the sandbox's bridge; `warn` says once what an egress
    /// policy could not resolve.
    fn write_rules(&mut self, plan: &Ready, sandbox: &str, warn: bool) -> Result<(), Error> {
        let runtime = plan.runtime.as_ref();
        let network = boot::network_name(sandbox);
        let bridge = runtime.network_bridge(&network)?.ok_or_else(|| crate::firewall::Error::NoBridge {
            sandbox: sandbox.to_owned(),
            why: format!("{} reports no host bridge for {network}", runtime.kind()),
        })?;
        let egress = plan.resolved.egress.as_ref().map(crate::policy::Joined::resolve);
        if let Some(unresolved) = egress.as_ref().map(|e| &e.unresolved).filter(|u| warn && !u.is_empty()) {
            self.warnings.push(format!(
                "egress policy: {} did not resolve on this host, so no rule holds an address for it until {sandbox} next starts",
                unresolved.join(", ")
            ));
        }
        let writer = crate::firewall::writer_for(self.env, runtime, sandbox)?;
        crate::firewall::apply(&writer, sandbox, &bridge, egress.as_ref())?;
        Ok(())
    }

    /// Before a start: the stopped sandbox mounts the home, every hostmount
    /// and the project's git metadata again from the paths it was made
    /// with. Each is opened again by handle without following a link;
    /// anything but the directory or file expected refuses the start (exit
    /// 1, naming the link and its target). None of them can be swapped
    /// between this check and the mount: hostmounts lie under the home's
    /// keep directory and git metadata under a pinned `.git`, which no guest
    /// can change.
    fn recheck(&self, plan: &Ready, home: &GuestHome) -> Result<(), Error> {
        let prepared = prepare::create_home(&self.state_dir, plan.session.sandbox(), home)?;
        prepare_mounts(plan, &prepared)?;
        self.write_git(plan, &prepared)
    }

    /// brig's git configuration in the home (`git_setup`), as the settings
    /// and the host's identity say at this boot or start.
    fn write_git(&self, plan: &Ready, prepared: &crate::session::PreparedHome) -> Result<(), Error> {
        match super::git_setup::GitSetup::resolve(self.env, &plan.profile, &self.cwd)? {
            Some(setup) => super::git_setup::write(&setup, &plan.profile, prepared),
            None => Ok(()),
        }
    }

    /// Remove the sandbox to boot it again with another project. The record
    /// says so first: if the new boot fails, the home still belongs to the
    /// session and is never taken for one left behind.
    /// Returns the image reference booted.
    fn recreate(&mut self, plan: &Ready, home: &GuestHome, record: Option<&Record>) -> Result<String, Error> {
        let sandbox = plan.session.sandbox();
        // Verified before anything is removed: a refused image leaves the
        // sandbox as it was.
        let chosen = self.verify_image(plan)?;
        Index::update(&self.state_dir, |index| {
            let mut entry = index.get(sandbox).cloned().unwrap_or_else(|| Record::new(&plan.session, home));
            entry.recreating = true;
            index.insert(sandbox.to_owned(), entry);
        })?;
        plan.runtime.remove(sandbox)?;
        if plan.resolved.network != Network::Isolated {
            // Leaving its own network: the network and its rules go too.
            plan.runtime.remove_network(&boot::network_name(sandbox))?;
            crate::firewall::remove_for(self.env, plan.runtime.as_ref(), sandbox)?;
        }
        self.boot(plan, home, record, false, &chosen)?;
        Ok(chosen.image)
    }

    /// Boot a sandbox that does not exist. `first` is a boot with no
    /// sandbox before it, where a home on disk may have been left behind.
    fn boot(
        &mut self,
        plan: &Ready,
        home: &GuestHome,
        record: Option<&Record>,
        first: bool,
        chosen: &super::verify::Chosen,
    ) -> Result<(), Error> {
        let sandbox = plan.session.sandbox();
        let runtime = plan.runtime.as_ref();
        let mut empty_notice = record.is_some_and(|r| r.emptied_home);
        let kept = record.is_some_and(|r| r.recreating);
        if home.source == HomeSource::Default && first && !kept {
            // The lookup just confirmed no sandbox of this name exists, so a
            // home still on disk was left behind: by a sandbox removed
            // outside brig, or by a run killed before it booted.
            if home::remove_default_home(&self.state_dir, sandbox)? {
                self.warnings.push(format!(
                    "removed the home {} left behind by a sandbox that no longer exists",
                    home.path.display()
                ));
                empty_notice = true;
            }
        }
        if empty_notice {
            self.warnings.push(format!("{} starts from an empty home", plan.session.canonical_ref()));
        }
        let prepared = prepare::create_home(&self.state_dir, sandbox, home)?;
        let workdir = match &plan.project {
            Some(p) => crate::session::project::guest_path(p),
            None => plan.profile.guest_home.clone(),
        };
        let trust =
            crate::settings::Settings::new(self.env, &plan.profile.name).flag_bool_or("TRUST_WORKSPACE", true)?;
        let outcome = prepare_mounts(plan, &prepared)
            .and_then(|()| self.write_git(plan, &prepared))
            .and_then(|()| prepare::seed_onboarding(&plan.profile, &prepared, trust.then_some(workdir.as_str())))
            .map(|lines| lines.into_iter().for_each(|line| self.warnings.push(line)))
            .and_then(|()| boot::spec(self, plan, home, chosen))
            .and_then(|spec| {
                tracing::info!("booting {sandbox} from {}", spec.image);
                let attach = boot::network(runtime, sandbox, plan.resolved.network)?;
                if plan.resolved.network == Network::Isolated {
                    self.isolate(plan, sandbox)?;
                }
                // A first pull can take minutes with nothing to show for it.
                let pulling = self.warnings.shows_progress()
                    && chosen.pull != Some(crate::settings::Pull::Never)
                    && runtime.local_digests(&chosen.image).is_none();
                let _progress = pulling.then(|| self.warnings.progress(format!("pulling {} …", chosen.image)));
                runtime.boot(&boot::with_network(spec, attach)).map_err(Error::from)?;
                if plan.resolved.network == Network::Isolated {
                    self.isolate_running(plan, sandbox)?;
                }
                Ok(())
            })
            .and_then(|()| self.wait_ready(runtime, sandbox, plan.resolved.ready_timeout));
        if let Err(err) = outcome {
            if matches!(err, Error::Runtime(crate::runtime::Error::NameInUse { .. })) {
                // The sandbox of that name is not this boot's: only the home
                // this boot made goes.
                if prepared.created && home.source == HomeSource::Default {
                    let _ = home::remove_default_home(&self.state_dir, sandbox);
                }
            } else {
                self.clean_failed_boot(runtime, sandbox, home, prepared.created && !kept);
            }
            return Err(err);
        }
        Ok(())
    }

    /// After a failed boot, remove what it made: the half-created sandbox,
    /// its network, and the home — the home only when this boot created it,
    /// and only once a lookup confirms no sandbox of that name exists. The
    /// sandbox's lock is still held, so nothing removed here can belong to
    /// another process.
    fn clean_failed_boot(&mut self, runtime: &dyn Runtime, sandbox: &str, home: &GuestHome, created: bool) {
        let _ = runtime.remove(sandbox);
        let _ = runtime.remove_network(&boot::network_name(sandbox));
        let _ = crate::firewall::remove_for(self.env, runtime, sandbox);
        if !created || home.source != HomeSource::Default {
            return;
        }
        match runtime.lookup(sandbox) {
            Ok(None) => {
                if let Err(err) = home::remove_default_home(&self.state_dir, sandbox) {
                    self.warnings.push(format!("could not remove the home of the failed boot: {err}"));
                }
            }
            _ => self
                .warnings
                .push(format!("kept {}: the runtime could not confirm that {sandbox} is gone", home.path.display())),
        }
    }

    /// A sandbox from a release before 0.3.0 mounts its home from
    /// `~/brig/<agent>[-<label>]`; while that sandbox exists, that is its home.
    fn legacy_home(&self, found: &crate::runtime::Found, plan: &Ready) -> Option<GuestHome> {
        if plan.home.source != HomeSource::Default {
            return None;
        }
        let user_home = self.env.home()?;
        let sandbox = plan.session.sandbox();
        let legacy_path = user_home.join("brig").join(&sandbox[crate::session::reference::SANDBOX_PREFIX.len()..]);
        let mounted = found.mounts.iter().find(|m| m.destination == std::path::Path::new(&plan.profile.guest_home));
        mounted.filter(|m| m.source == legacy_path).map(|m| GuestHome::legacy(m.source.clone()))
    }

    /// Wait until the guest answers an exec, up to `limit` seconds.
    pub(crate) fn wait_ready(&self, runtime: &dyn Runtime, sandbox: &str, limit: u32) -> Result<(), Error> {
        let deadline = Instant::now() + Duration::from_secs(u64::from(limit));
        let probe = ExecSpec { argv: vec!["true".to_owned()], ..ExecSpec::default() };
        loop {
            match runtime.exec(sandbox, &probe).timeout(Duration::from_secs(10)).output() {
                Ok(_) => return Ok(()),
                Err(err) if Instant::now() >= deadline => {
                    return Err(crate::runtime::Error::NotReady {
                        name: sandbox.to_owned(),
                        seconds: limit,
                        words: err.to_string(),
                    }
                    .into());
                }
                Err(_) => std::thread::sleep(Duration::from_millis(100)),
            }
        }
    }
}

fn recreate_warning(sandbox: &str, old: Option<&std::path::Path>, new: Option<&std::path::Path>) -> String {
    let show = |p: Option<&std::path::Path>| p.map_or_else(|| "no project".to_owned(), |p| p.display().to_string());
    format!(
        "the project changes from {} to {}; a mount cannot be added to a live sandbox, so {sandbox} is recreated (everything inside the old guest, including its memory-backed mounts, is gone; the guest home stays)",
        show(old),
        show(new)
    )
}

/// The host side of every mount inside the home and the project, made and
/// checked through handles.
fn prepare_mounts(plan: &Ready, home: &crate::session::PreparedHome) -> Result<(), Error> {
    prepare::hostmounts(&plan.profile, home)?;
    match &plan.project {
        Some(project) => super::git_meta::prepare(project, &plan.git),
        None => Ok(()),
    }
}

/// The posture an existing sandbox was booted with, as its labels (or its
/// record) say; the plan's when they say nothing.
fn existing_posture(existing: Option<&crate::runtime::Found>, record: Option<&Record>, plan: &Ready) -> Network {
    existing
        .and_then(|found| super::Facts::read(&found.listed, record, &[]).network)
        .as_deref()
        .and_then(crate::settings::Enumerated::parse)
        .unwrap_or(plan.resolved.network)
}
