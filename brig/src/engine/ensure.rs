//! `ensure`: make a session's sandbox exist and run, with the home and
//! project the request asks for, booting only if needed.
//!
//! Every decision here starts from a successful listing: if the runtime
//! cannot be asked, nothing is booted and nothing is deleted, because an
//! unknown state is not an absent sandbox.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{Engine, boot};
use crate::Error;
use crate::profile::Profile;
use crate::runtime::{ExecSpec, Isolation, Runtime, State, adapter::label};
use crate::session::{GuestHome, HomeSource, Index, Record, Session, home, project};
use crate::settings::{Bool, Network, Positive, Pull, Settings, Verify};

/// What the run line says about the project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProjectChoice {
    /// A directory named on the line.
    Named(String),
    /// Nothing named: whatever this session last ran with.
    Remembered,
    /// `--no-project`: nothing, and forget the remembered one.
    Nothing,
}

/// One ensure request.
#[derive(Debug, Clone)]
pub struct Request {
    pub session: Session,
    pub profile: Profile,
    pub home_flag: Option<String>,
    pub project: ProjectChoice,
    pub image: Option<String>,
    pub mem: Option<u32>,
    pub cpus: Option<u32>,
    pub network: Option<Network>,
    /// `--skills`: seed the home with the agent's host config subdirectories.
    pub skills: bool,
}

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
}

impl Ensured {
    /// Where the agent starts: the project in the guest, else the guest home.
    pub fn workdir(&self, profile: &Profile) -> String {
        match &self.project {
            Some(p) => project::guest_path(p),
            None => profile.guest_home.clone(),
        }
    }
}

/// Resolved settings for a boot.
pub(super) struct Resolved {
    pub image: String,
    pub mem: u32,
    pub cpus: u32,
    pub network: Network,
    pub pull: Option<Pull>,
    pub skills: bool,
}

impl Engine<'_> {
    /// Read every setting the run needs, refusing an unrecognised value
    /// (exit 2) before anything is touched.
    fn settings(&self, req: &Request, recorded: Option<Network>) -> Result<Resolved, Error> {
        let settings = Settings::new(self.env, req.session.agent());
        // Verification is checked for a valid value now, so a typo never
        // boots anything; the checks themselves arrive with image verification.
        settings.resolve::<Verify>(None, "VERIFY", None, None, Verify::Warn)?;
        let network = settings
            .resolve::<Network>(
                req.network.map(|n| ("--network", n)),
                "NETWORK",
                recorded,
                req.profile.network,
                Network::Isolated,
            )?
            .value;
        let mem = settings
            .resolve::<Positive>(req.mem.map(|m| ("--mem", Positive(m))), "MEM", None, None, Positive(req.profile.mem))?
            .value
            .0;
        let cpus = settings
            .resolve::<Positive>(
                req.cpus.map(|c| ("--cpus", Positive(c))),
                "CPUS",
                None,
                None,
                Positive(req.profile.cpus),
            )?
            .value
            .0;
        let pull =
            settings.variable("PULL").map(|(var, text)| crate::settings::parse_as::<Pull>(&var, text)).transpose()?;
        let image = match (&req.image, settings.variable("IMAGE")) {
            (Some(image), _) => image.clone(),
            (None, Some((_, image))) => image.to_owned(),
            (None, None) => req.profile.image.clone(),
        };
        let skills = settings
            .resolve::<Bool>(req.skills.then_some(("--skills", Bool(true))), "SKILLS", None, None, Bool(false))?
            .value
            .0;
        Ok(Resolved { image, mem, cpus, network, pull, skills })
    }

    pub fn ensure(&mut self, req: &Request) -> Result<Ensured, Error> {
        // Every declared secret is checked before a sandbox exists. Without a
        // store an optional secret is simply absent; a required one refuses.
        let required: Vec<String> = req.profile.secrets.iter().filter(|s| s.required).map(|s| s.name.clone()).collect();
        if !required.is_empty() {
            return Err(Error::SecretsUnavailable { profile: req.profile.name.clone(), names: required });
        }
        let sandbox = req.session.sandbox().to_owned();
        let record = Index::load(&self.state_dir)?.get(&sandbox).cloned();
        let recorded_network =
            record.as_ref().and_then(|r| r.network.as_deref()).and_then(crate::settings::Enumerated::parse);
        let resolved = self.settings(req, recorded_network)?;
        let mut home = home::resolve_home(&req.session, req.home_flag.as_deref(), self.env, &self.cwd)?;
        let wanted_project = self.wanted_project(&req.project, record.as_ref())?;
        let runtime = self.open_runtime(&req.profile)?;
        let listing = runtime.list()?;
        let existing = listing.iter().find(|l| l.name == sandbox).cloned();
        let isolation = self.admit(runtime.as_ref(), existing.as_ref())?;
        let mut booted = false;
        let mut recreated = false;

        let facts = existing.as_ref().map(|e| super::Facts::read(e, record.as_ref(), &[]));
        if let (Some(existing), Some(facts)) = (&existing, &facts) {
            // Only a sandbox brig did not label itself can carry a home
            // from an older release; asking the runtime for mounts costs a call.
            if !existing.labels.contains_key(label::HOME)
                && let Some(legacy) = self.legacy_home(runtime.as_ref(), &req.session, &req.profile, &home)?
            {
                home = legacy;
            }
            if facts.project != wanted_project {
                self.warnings.push(recreate_warning(&sandbox, facts.project.as_deref(), wanted_project.as_deref()));
                if existing.state == State::Running {
                    runtime.stop(&sandbox)?;
                }
                runtime.remove(&sandbox)?;
                recreated = true;
            } else if existing.state == State::Stopped {
                match runtime.start(&sandbox) {
                    Ok(()) => self.wait_ready(runtime.as_ref(), &sandbox)?,
                    // A runtime that cannot restart an instance (hull) gets a
                    // fresh one with the same home, project and network.
                    Err(crate::runtime::Error::NoRestart { .. }) => {
                        runtime.remove(&sandbox)?;
                        recreated = true;
                    }
                    Err(err) => return Err(err.into()),
                }
            }
        }

        if existing.is_none() || recreated {
            self.boot(&BootInput {
                runtime: runtime.as_ref(),
                isolation,
                req,
                resolved: &resolved,
                home: &home,
                project: wanted_project.as_deref(),
                record: record.as_ref(),
                leftover_check: existing.is_none(),
            })?;
            booted = true;
        }

        if resolved.skills {
            let prepared = match home.source {
                HomeSource::Default => home::prepare_default_home(&self.state_dir, &sandbox)?,
                HomeSource::Named { .. } | HomeSource::Legacy => home::prepare_named_home(&home.path)?,
            };
            for line in super::skills::seed(self.env, &req.profile, &prepared.dir, &prepared.path)? {
                self.warnings.push(line);
            }
        }

        // A sandbox that was left running keeps the posture it was made with.
        let network = match (&facts, recreated) {
            (Some(facts), false) => {
                facts.network.as_deref().and_then(crate::settings::Enumerated::parse).unwrap_or(resolved.network)
            }
            _ => resolved.network,
        };
        Index::update(&self.state_dir, |index| {
            let mut entry = index.get(&sandbox).cloned().unwrap_or_else(|| Record::new(&req.session, &home));
            entry.home = home.path.clone();
            entry.home_created_by_brig = home.created_by_brig();
            entry.project = wanted_project.clone();
            entry.network = Some(network.to_string());
            if booted {
                entry.image = Some(resolved.image.clone());
                entry.emptied_home = false;
            }
            index.insert(sandbox.clone(), entry);
        })?;
        Ok(Ensured { runtime, isolation, home, project: wanted_project, network, booted })
    }

    /// The project this run should mount, per the run line and the record.
    fn wanted_project(&mut self, choice: &ProjectChoice, record: Option<&Record>) -> Result<Option<PathBuf>, Error> {
        match choice {
            ProjectChoice::Named(dir) => Ok(Some(project::resolve(dir, &self.cwd)?)),
            ProjectChoice::Nothing => Ok(None),
            ProjectChoice::Remembered => match record.and_then(|r| r.project.clone()) {
                Some(path) if project::still_usable(&path) => Ok(Some(path)),
                Some(path) => {
                    self.warnings.push(format!(
                        "the project this session last ran with, {}, no longer exists; running without a project",
                        path.display()
                    ));
                    Ok(None)
                }
                None => Ok(None),
            },
        }
    }

    /// A sandbox from a release before 0.3.0 mounts its home from
    /// `~/brig/<agent>[-<label>]`; while that sandbox exists, that is its home.
    fn legacy_home(
        &self,
        runtime: &dyn Runtime,
        session: &Session,
        profile: &Profile,
        home: &GuestHome,
    ) -> Result<Option<GuestHome>, Error> {
        if home.source != HomeSource::Default {
            return Ok(None);
        }
        let Some(user_home) = self.env.home() else { return Ok(None) };
        let legacy_path =
            user_home.join("brig").join(&session.sandbox()[crate::session::reference::SANDBOX_PREFIX.len()..]);
        let Some(mounts) = runtime.mounts(session.sandbox())? else { return Ok(None) };
        let mounted = mounts.iter().find(|m| m.destination == Path::new(&profile.guest_home));
        Ok(mounted.filter(|m| m.source == legacy_path).map(|m| GuestHome::legacy(m.source.clone())))
    }

    fn boot(&mut self, input: &BootInput<'_>) -> Result<(), Error> {
        let sandbox = input.req.session.sandbox();
        let runtime = input.runtime;
        let mut empty_notice = input.record.is_some_and(|r| r.emptied_home);
        if input.home.source == HomeSource::Default && input.leftover_check {
            // The listing just confirmed no sandbox of this name exists, so a
            // home still on disk was left behind: by a sandbox removed
            // outside brig, or by a run killed before it booted.
            if home::remove_default_home(&self.state_dir, sandbox)? {
                self.warnings.push(format!(
                    "removed the home {} left behind by a sandbox that no longer exists",
                    input.home.path.display()
                ));
                empty_notice = true;
            }
        }
        if empty_notice {
            self.warnings.push(format!("{} starts from an empty home", input.req.session.canonical_ref()));
        }
        let prepared = match input.home.source {
            HomeSource::Default => home::prepare_default_home(&self.state_dir, sandbox)?,
            HomeSource::Named { .. } | HomeSource::Legacy => home::prepare_named_home(&input.home.path)?,
        };
        let spec = boot::spec(self, input, &prepared)?;
        tracing::info!("booting {sandbox} from {}", spec.image);
        let outcome = boot::network(runtime, input.req.session.sandbox(), input.resolved.network)
            .and_then(|attach| runtime.boot(&boot::with_network(spec, attach)).map_err(Error::from))
            .and_then(|()| self.wait_ready(runtime, sandbox));
        if let Err(err) = outcome {
            self.clean_failed_boot(runtime, sandbox, input, prepared.created);
            return Err(err);
        }
        Ok(())
    }

    /// After a failed first boot, remove what it made: the half-created
    /// sandbox, then the home it created — but the home only once a
    /// listing confirms no sandbox of that name exists.
    fn clean_failed_boot(&mut self, runtime: &dyn Runtime, sandbox: &str, input: &BootInput<'_>, created: bool) {
        let _ = runtime.remove(sandbox);
        let _ = runtime.remove_network(&boot::network_name(sandbox));
        if !created || input.home.source != HomeSource::Default {
            return;
        }
        match runtime.list() {
            Ok(listing) if !listing.iter().any(|l| l.name == sandbox) => {
                if let Err(err) = home::remove_default_home(&self.state_dir, sandbox) {
                    self.warnings.push(format!("could not remove the home of the failed boot: {err}"));
                }
            }
            _ => self.warnings.push(format!(
                "kept {}: the runtime could not confirm that {sandbox} is gone",
                input.home.path.display()
            )),
        }
    }

    /// Wait until the guest answers an exec, up to `BRIG_READY_TIMEOUT` seconds.
    pub(crate) fn wait_ready(&self, runtime: &dyn Runtime, sandbox: &str) -> Result<(), Error> {
        let limit = self
            .env
            .get("BRIG_READY_TIMEOUT")
            .map(|t| crate::settings::parse_as::<Positive>("BRIG_READY_TIMEOUT", t))
            .transpose()?
            .map_or(30, |p| p.0);
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

/// Everything a boot needs, gathered by `ensure`.
pub(super) struct BootInput<'r> {
    pub runtime: &'r dyn Runtime,
    pub isolation: Isolation,
    pub req: &'r Request,
    pub resolved: &'r Resolved,
    pub home: &'r GuestHome,
    pub project: Option<&'r Path>,
    pub record: Option<&'r Record>,
    /// The sandbox did not exist (as opposed to being recreated).
    pub leftover_check: bool,
}

fn recreate_warning(sandbox: &str, old: Option<&Path>, new: Option<&Path>) -> String {
    let show = |p: Option<&Path>| p.map_or_else(|| "no project".to_owned(), |p| p.display().to_string());
    format!(
        "the project changes from {} to {}; a mount cannot be added to a live sandbox, so {sandbox} is recreated (everything inside the old guest, including its memory-backed mounts, is gone; the guest home stays)",
        show(old),
        show(new)
    )
}
