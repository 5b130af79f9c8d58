//! Planning: the one step that decides what a run would do.
//!
//! [`Engine::plan`] reads settings, the profile, the session index and one
//! lookup of the sandbox in its runtime, and opens nothing for writing. It
//! decides every refusal in one fixed order, so the same input meets the
//! same refusal and exit code whichever verb asked: `run`, `sh`, brigd's
//! `ensure`, `info` and `plan` all come through here. A plan that is
//! refused still carries everything decided before the refusal, for `brig
//! plan` to show.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::git_meta::GitPath;
use super::{Engine, Error as EngineError, boot};
use crate::Error;
use crate::profile::{Kind as ProfileKind, Profile};
use crate::runtime::{Found, Isolation, Runtime, State};
use crate::session::{GuestHome, HomeSource, Index, Record, Session, home, project};
use crate::settings::{Bool, Enumerated, Network, Positive, Pull, Settings, Source, Verify};

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

/// One request to make a session's sandbox run.
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
    /// `--publish`: empty keeps what an existing sandbox publishes.
    pub publish: Vec<crate::ports::Publish>,
    /// `--skills`: seed the home with the agent's host config subdirectories.
    pub skills: bool,
}

impl Request {
    /// A request with nothing on the line but the ref (brigd's `ensure`).
    pub fn bare(session: Session, profile: Profile) -> Request {
        Request {
            session,
            profile,
            home_flag: None,
            project: ProjectChoice::Remembered,
            image: None,
            mem: None,
            cpus: None,
            network: None,
            publish: Vec::new(),
            skills: false,
        }
    }
}

/// Every setting a boot reads, resolved and validated.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Resolved {
    pub image: String,
    pub mem: u32,
    pub cpus: u32,
    pub network: Network,
    /// The posture was asked for (a flag or a variable) or forced by an
    /// egress policy, so an existing sandbox with another is recreated
    /// rather than kept as it is.
    #[serde(skip)]
    pub network_asked: bool,
    /// Every egress policy bound to the run, joined.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub egress: Option<crate::policy::Joined>,
    /// The ports the sandbox publishes: those asked for, else those an
    /// existing sandbox was made with.
    pub publish: Vec<crate::ports::Publish>,
    /// `--publish` was given: an existing sandbox publishing others is
    /// recreated.
    #[serde(skip)]
    pub publish_asked: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pull: Option<Pull>,
    pub verify: Verify,
    /// Who must have signed the image (`BRIG_VERIFY_*`), read at planning
    /// so that a bad key or trust root refuses before anything exists.
    #[serde(skip)]
    pub policy: crate::verify::Policy,
    pub skills: bool,
    /// Seconds to wait for a new sandbox to answer (`BRIG_READY_TIMEOUT`).
    pub ready_timeout: u32,
}

/// What applying the plan does to the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// No sandbox exists: create and start one.
    Boot,
    /// The sandbox exists, stopped, with the wanted project: start it.
    Start,
    /// The sandbox exists with another project: remove it and boot anew
    /// with the same home.
    Recreate { from: Option<PathBuf> },
    /// The sandbox exists with another network posture than the one asked
    /// for: remove it and boot anew with the same home and project.
    Renetwork { from: Option<Network>, to: Network },
    /// The sandbox exists publishing other ports than those asked for.
    Republish { from: Vec<crate::ports::Publish> },
    /// The sandbox runs with the wanted project: use it as it is.
    Reuse,
}

impl Action {
    pub fn word(&self) -> &'static str {
        match self {
            Action::Boot => "boot",
            Action::Start => "start",
            Action::Recreate { .. } | Action::Renetwork { .. } | Action::Republish { .. } => "recreate",
            Action::Reuse => "reuse",
        }
    }
}

/// What a mount is, for the plan's readers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MountKind {
    /// The guest home.
    Home,
    /// One path kept on host disk under a memory-backed mount.
    Hostmount,
    /// The project, read-write at `/work/<name>`.
    Project,
    /// Memory only; nothing reaches the host disk.
    Tmpfs,
    /// An empty read-only tmpfs hiding the home's keep directory.
    Cover,
    /// A file or directory of the project's git metadata through which a
    /// host-side `git` would run code, read-only.
    GitMetadata,
}

impl MountKind {
    pub fn is_tmpfs(self) -> bool {
        matches!(self, MountKind::Tmpfs | MountKind::Cover)
    }
}

/// One mount the sandbox gets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedMount {
    pub kind: MountKind,
    /// The host side; `None` for a tmpfs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<PathBuf>,
    pub guest: String,
    /// A hostmount of a single file rather than a directory.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub file: bool,
    /// tmpfs options.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub options: Option<String>,
    /// The guest may read it and not change it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
}

/// A credential the run may carry, by name only: never a value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Credential {
    pub name: String,
    pub from: &'static str,
    pub required: bool,
    /// A secret: whether the store holds it (from its index; no value is
    /// read). `None` for a host variable, or when the store was not read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stored: Option<bool>,
    /// A stored secret whose recorded expiry has passed.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub expired: bool,
}

/// A credential file the guest gets (`files:`), by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GuestLogin {
    /// The secret.
    pub name: String,
    /// Where its value came from (`file:…`, `env:…`, `command`), `store`
    /// for one stored by hand, or `missing`.
    pub source: String,
    pub expired: bool,
}

/// Everything a run would do, or the refusal that stops it.
///
/// Fields are filled in the order [`Engine::plan`] decides them; a refused
/// plan keeps what was decided before the refusal and leaves the rest empty.
#[derive(Debug)]
pub struct Plan {
    pub session: Session,
    pub profile: Profile,
    pub resolved: Option<Resolved>,
    pub home: Option<GuestHome>,
    /// The project to mount; only meaningful once `home` is decided.
    pub project: Option<PathBuf>,
    pub record: Option<Record>,
    pub credentials: Vec<Credential>,
    pub guest_login: Vec<GuestLogin>,
    pub runtime: Option<Box<dyn Runtime>>,
    /// The shim or OCI runtime the sandbox is handed to, where one is named.
    pub shim: Option<String>,
    pub isolation: Option<Isolation>,
    /// The sandbox as the runtime has it now.
    pub existing: Option<Found>,
    pub action: Option<Action>,
    pub mounts: Vec<PlannedMount>,
    pub git: Vec<GitPath>,
    pub refused: Option<Error>,
    /// `existing` was read from the session index, not from the runtime:
    /// see [`Engine::plan_assuming`].
    pub assumed: bool,
    /// The sandbox's lock generation when the plan looked ([`super::lock`]).
    pub generation: u64,
    /// No sandbox was asked for: nothing records or holds this session,
    /// so it is taken for new, and its boot finds out if the runtime knows
    /// the name after all.
    pub fresh: bool,
}

/// A plan that was not refused: every field decided.
#[derive(Debug)]
pub struct Ready {
    pub session: Session,
    pub profile: Profile,
    pub resolved: Resolved,
    pub home: GuestHome,
    pub project: Option<PathBuf>,
    pub record: Option<Record>,
    pub runtime: Box<dyn Runtime>,
    pub isolation: Isolation,
    pub mounts: Vec<PlannedMount>,
    /// The project's git metadata the sandbox protects.
    pub git: Vec<GitPath>,
    pub action: Action,
    pub assumed: bool,
    pub existing: Option<Found>,
    pub generation: u64,
    pub fresh: bool,
}

impl Plan {
    /// The plan with every field decided, or its refusal.
    pub fn ready(self) -> Result<Ready, Error> {
        if let Some(err) = self.refused {
            return Err(err);
        }
        let missing = || Error::from(EngineError::Incomplete);
        Ok(Ready {
            resolved: self.resolved.ok_or_else(missing)?,
            home: self.home.ok_or_else(missing)?,
            runtime: self.runtime.ok_or_else(missing)?,
            isolation: self.isolation.ok_or_else(missing)?,
            session: self.session,
            profile: self.profile,
            project: self.project,
            record: self.record,
            mounts: self.mounts,
            git: self.git,
            action: self.action.ok_or_else(missing)?,
            assumed: self.assumed,
            existing: self.existing,
            generation: self.generation,
            fresh: self.fresh,
        })
    }
}

/// How a plan learns the state of the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Lookup {
    /// Ask the runtime: a plan to be shown (`info`, `plan`, `doctor <ref>`).
    Always,
    /// Ask, except for a session nothing records and no home on disk
    /// belongs to, which is taken for new: the boot finds out when the
    /// runtime has the name after all ([`Plan::fresh`]).
    UnlessNew,
    /// As `UnlessNew`, and take the session index's word for a sandbox
    /// brig left running ([`Plan::assumed`]).
    TrustRecord,
}

impl Engine<'_> {
    /// Decide everything about `req`. Touches nothing: no directory is
    /// created, no secret store opened, nothing booted. The runtime is asked
    /// about the sandbox.
    pub fn plan(&mut self, req: &Request) -> Plan {
        self.plan_with(req, Lookup::Always)
    }

    /// A plan that takes the session index's word for a sandbox brig left
    /// running, instead of asking the runtime, when the index records it
    /// booted on this runtime with this home and project. The runtime call
    /// is most of what a command in a running sandbox costs; the caller
    /// proves the assumption by the exec itself, and falls back to
    /// [`Engine::ensure`] when the runtime answers that the sandbox is not
    /// running. Nothing is ever booted, started or removed on an assumption.
    pub fn plan_assuming(&mut self, req: &Request) -> Plan {
        self.plan_with(req, Lookup::TrustRecord)
    }

    pub(super) fn plan_with(&mut self, req: &Request, lookup: Lookup) -> Plan {
        let mut plan = Plan {
            session: req.session.clone(),
            profile: req.profile.clone(),
            resolved: None,
            home: None,
            project: None,
            record: None,
            credentials: credentials(&req.profile),
            guest_login: Vec::new(),
            runtime: None,
            shim: None,
            isolation: None,
            existing: None,
            action: None,
            mounts: Vec::new(),
            git: Vec::new(),
            refused: None,
            assumed: false,
            generation: 0,
            fresh: false,
        };
        if let Err(err) = self.decide(req, &mut plan, lookup) {
            plan.refused = Some(err);
        }
        plan
    }

    /// The refusals, in the one order every verb meets them: usage and
    /// settings (2), the profile's platform (1), home and project (1),
    /// credentials (6), runtime and shim (4), isolation (7), the sandbox's
    /// state (1 when the runtime cannot say).
    fn decide(&mut self, req: &Request, plan: &mut Plan, lookup: Lookup) -> Result<(), Error> {
        let sandbox = req.session.sandbox();
        check_sandbox_name(sandbox)?;
        // Read before the record and the runtime, so that apply can tell
        // whether either may have changed since.
        plan.generation = super::lock::generation(&self.state_dir, sandbox);
        let index = Index::load(&self.state_dir)?;
        let record = index.get(sandbox).cloned();
        plan.record = record.clone();
        let recorded_network = record.as_ref().and_then(|r| r.network.as_deref()).and_then(Network::parse);
        let resolved = self.settings(req, recorded_network)?;
        // A variable no runtime can carry refuses now, not after a boot.
        boot::forwarded(self, &req.profile, boot::Bindings::Check)?;
        plan.resolved = Some(resolved);

        if req.profile.kind == ProfileKind::Gui {
            return Err(EngineError::GuiNotHere { profile: req.profile.name.clone() }.into());
        }
        let home = home::resolve_home(&req.session, req.home_flag.as_deref(), self.env, &self.cwd)?;
        check_path("the guest home", &home.path)?;
        // A default home is brig's own directory under its state; a home
        // the user named, and every project, must not hand over the host.
        if home.source != HomeSource::Default {
            self.check_host_path("the guest home", &home.path)?;
        }
        plan.home = Some(home.clone());
        let project = self.wanted_project(&req.project, record.as_ref())?;
        if let Some(p) = &project {
            check_path("the project", p)?;
            self.check_host_path("the project", p)?;
        }
        check_apart(sandbox, &home.path, project.as_deref(), &index)?;
        let git = match &project {
            Some(p) => {
                let git = super::git_meta::paths(p, self.env)?;
                for path in &git {
                    check_path("the project's git metadata", &p.join(&path.rel))?;
                }
                git
            }
            None => Vec::new(),
        };
        plan.project = project.clone();
        plan.mounts = mounts(&req.profile, &home.path, project.as_deref(), &git);
        plan.git = git;

        self.check_secrets(&req.profile, plan)?;

        let runtime = self.open_runtime(&req.profile)?;
        plan.shim = runtime.shim().map(str::to_owned);
        runtime.check_shim()?;
        // Decision 4: a posture this runtime cannot give is refused, never
        // quietly exchanged for another.
        if req_network_isolated(plan) && !runtime.isolates_networks() {
            return Err(crate::runtime::Error::IsolationUnenforceable { runtime: runtime.kind() }.into());
        }
        if let Some(resolved) = &plan.resolved {
            enforceable(self.env, runtime.as_ref(), sandbox, resolved)?;
            if !resolved.publish.is_empty() && !runtime.publishes_ports() {
                return Err(EngineError::PublishUnsupported { runtime: runtime.kind() }.into());
            }
        }
        let recorded = match lookup {
            Lookup::TrustRecord => assumed_running(record.as_ref(), runtime.kind(), &home, sandbox),
            Lookup::Always | Lookup::UnlessNew => None,
        };
        plan.assumed = recorded.is_some();
        // A session no record and no home know of is new: asking the runtime
        // first would cost a call on every first boot, and the boot itself
        // finds out when the name is taken. With a home on disk the runtime
        // must be asked, since only its answer may have that home removed.
        plan.fresh = lookup != Lookup::Always && record.is_none() && !home_on_disk(&home, &self.state_dir, sandbox);
        let looked = match recorded {
            Some(found) => Ok(Some(found)),
            None if plan.fresh => Ok(None),
            None => runtime.lookup(sandbox),
        };
        let existing = match looked {
            Ok(found) => found,
            Err(err) => {
                plan.runtime = Some(runtime);
                return Err(err.into());
            }
        };
        if existing.is_none()
            && let Some(other) = record.as_ref().and_then(|r| r.runtime.as_deref())
            && other != runtime.kind().to_string()
            && crate::runtime::Kind::parse(other).is_some_and(|k| self.env.find_on_path(k.binary_name()).is_some())
        {
            // The session's sandbox lives on another runtime that is still
            // installed: booting here would give one home to two guests, and
            // the home is not left behind.
            plan.runtime = Some(runtime);
            return Err(EngineError::OnOtherRuntime {
                reference: req.session.canonical_ref(),
                other: other.to_owned(),
            }
            .into());
        }
        let isolation = self.admit(runtime.as_ref(), existing.as_ref().map(|f| &f.listed));
        plan.runtime = Some(runtime);
        plan.isolation = Some(isolation?);
        let resolved = plan.resolved.as_mut().expect("resolved above");
        let held = existing.as_ref().map(|f| super::Facts::read(&f.listed, record.as_ref(), &[]).publish);
        let asked_ports = resolved.publish_asked;
        if !asked_ports && let Some(held) = &held {
            // Publications stay with the sandbox until others are named.
            resolved.publish = held.clone();
        }
        let asked = resolved.network_asked.then_some(resolved.network);
        posture_known(existing.as_ref(), record.as_ref(), asked, sandbox)?;
        if asked.is_none()
            && let Some(posture) =
                existing.as_ref().and_then(|f| super::Facts::read(&f.listed, record.as_ref(), &[]).posture())
        {
            // A sandbox kept as it is has the posture it has: what `info`
            // says and what is recorded, whatever a new one would get.
            resolved.network = posture;
        }
        let step = action(
            existing.as_ref(),
            record.as_ref(),
            project.as_deref(),
            asked,
            asked_ports.then_some(&resolved.publish[..]),
        );
        if step != Action::Reuse && step != Action::Start {
            // A boot listens on each host port; one taken by something
            // else would fail inside the runtime, after the old sandbox
            // went. The sandbox's own ports are its own to take over (a
            // runtime may hold them open: podman does).
            let wanted: Vec<_> = resolved
                .publish
                .iter()
                .filter(|p| !held.as_ref().is_some_and(|h| h.iter().any(|h| h.overlaps(p))))
                .copied()
                .collect();
            ports_free(plan.runtime.as_deref().expect("opened above"), sandbox, &wanted)?;
        }
        plan.action = Some(step);
        plan.existing = existing;
        Ok(())
    }

    /// Read every setting the run needs, refusing an unrecognised value
    /// (exit 2) before anything is touched.
    fn settings(&self, req: &Request, recorded: Option<Network>) -> Result<Resolved, Error> {
        let settings = Settings::new(self.env, req.session.agent());
        let verify = settings.resolve::<Verify>(None, "VERIFY", None, None, Verify::Warn)?.value;
        let posture = settings.resolve::<Network>(
            req.network.map(|n| ("--network", n)),
            "NETWORK",
            recorded,
            req.profile.network,
            Network::Isolated,
        )?;
        let mut network_asked = matches!(posture.source, Source::Flag(_) | Source::Env(_));
        let mut network = posture.value;
        let egress = self.egress(req)?;
        if egress.is_some() && network == Network::Shared {
            // A policy is enforced on the sandbox's own network; one asked
            // for shared in so many words is not quietly moved off it.
            if network_asked {
                return Err(crate::policy::Error::Unenforceable {
                    sandbox: req.session.sandbox().to_owned(),
                    why: format!(
                        "it needs a network of the sandbox's own, and {} asks for the shared one",
                        posture.source
                    ),
                }
                .into());
            }
            network = Network::Isolated;
            network_asked = true;
        }
        let positive = |flag: &'static str, given: Option<u32>, key: &str, default: u32| {
            settings.resolve::<Positive>(given.map(|v| (flag, Positive(v))), key, None, None, Positive(default))
        };
        let mem = positive("--mem", req.mem, "MEM", req.profile.mem)?.value.0;
        let cpus = positive("--cpus", req.cpus, "CPUS", req.profile.cpus)?.value.0;
        let pull =
            settings.variable("PULL").map(|(var, text)| crate::settings::parse_as::<Pull>(&var, text)).transpose()?;
        let (image, source) = match (&req.image, settings.variable("IMAGE")) {
            (Some(image), _) => (image.clone(), "--image".to_owned()),
            (None, Some((var, image))) => (image.to_owned(), var),
            // An example profile whose image was never published would
            // only fail at the pull; say so before anything exists.
            (None, None) if req.profile.unpublished => {
                return Err(EngineError::Unpublished {
                    profile: req.profile.name.clone(),
                    image: req.profile.image.clone(),
                }
                .into());
            }
            (None, None) => (req.profile.image.clone(), format!("the {} profile", req.profile.name)),
        };
        check_image(&image, &source)?;
        let skills = settings
            .resolve::<Bool>(req.skills.then_some(("--skills", Bool(true))), "SKILLS", None, None, Bool(false))?
            .value
            .0;
        let ready_timeout = crate::settings::global::<Positive>(self.env, "BRIG_READY_TIMEOUT")?.map_or(30, |p| p.0);
        // Read now so that a typo refuses before anything exists, not when
        // the first exec forwards the profile's variables.
        settings.flag_bool("ALLOW_DENIED")?;
        settings.flag_bool("ALLOW_REFS")?;
        for flag in ["GIT_CONFIG", "GIT_IDENTITY", "TRUST_WORKSPACE"] {
            settings.flag_bool(flag)?;
        }
        crate::settings::global::<Bool>(self.env, "BRIG_ALLOW_CONTAINER_ISOLATION")?;
        let policy = crate::verify::Policy::from_env(self.env)?;
        if !req.publish.is_empty() && network == Network::Offline {
            return Err(crate::error::UsageError::PublishOffline.into());
        }
        if let Some((a, b)) = crate::ports::overlapping(&req.publish) {
            return Err(crate::error::UsageError::PublishOverlap { a: a.to_string(), b: b.to_string() }.into());
        }
        let publish = req.publish.clone();
        Ok(Resolved {
            publish_asked: !publish.is_empty(),
            image,
            mem,
            cpus,
            network,
            network_asked,
            egress,
            publish,
            pull,
            verify,
            policy,
            skills,
            ready_timeout,
        })
    }

    /// The egress policies bound to the run, joined; none for a profile
    /// that binds none (the policy directory is then not read beyond its
    /// attachments).
    fn egress(&self, req: &Request) -> Result<Option<crate::policy::Joined>, Error> {
        let store = match crate::policy::Store::open(self.env) {
            Ok(store) => store,
            // Nowhere to look for attachments: only inline bindings could
            // bind anything, and those must be found.
            Err(_) if req.profile.policy.is_empty() => return Ok(None),
            Err(err) => return Err(err),
        };
        let bound = store.bound(&req.profile, req.session.label())?;
        Ok(crate::policy::Joined::join(&bound))
    }

    /// Every declared secret, checked before a sandbox exists from the
    /// store's index (no value is read): a missing required one refuses
    /// (exit 6, every missing name and the command that stores it), a
    /// missing optional one warns, and an expired or expiring one warns and
    /// is still handed over. A store that cannot be opened refuses only
    /// when something is required.
    fn check_secrets(&mut self, profile: &Profile, plan: &mut Plan) -> Result<(), Error> {
        if profile.secrets.is_empty() {
            return Ok(());
        }
        let required: Vec<&str> = profile.secrets.iter().filter(|s| s.required).map(|s| s.name.as_str()).collect();
        let index = match self.secret_store().and_then(|store| store.index()) {
            Ok(index) => index,
            Err(err) if required.is_empty() => {
                tracing::debug!("no secret store for {}'s optional secrets: {err}", profile.name);
                return Ok(());
            }
            Err(err) => return Err(err.into()),
        };
        let now = crate::secrets::now_ms();
        let expired = |name: &str| index.get(name).and_then(|e| e.expires_at).is_some_and(|t| t <= now);
        for c in plan.credentials.iter_mut().filter(|c| c.from == "secret") {
            c.stored = Some(index.contains_key(&c.name));
            c.expired = expired(&c.name);
        }
        plan.guest_login = profile
            .files
            .iter()
            .filter_map(|f| f.reference.strip_prefix("secrets."))
            .map(|name| GuestLogin {
                name: name.to_owned(),
                source: index.get(name).map_or("missing", |e| e.from.as_deref().unwrap_or("store")).to_owned(),
                expired: expired(name),
            })
            .collect();
        let missing: Vec<String> =
            required.iter().filter(|name| !index.contains_key(**name)).map(|name| (*name).to_owned()).collect();
        if !missing.is_empty() {
            return Err(Error::SecretsMissing { profile: profile.name.clone(), names: missing });
        }
        for decl in &profile.secrets {
            match index.get(&decl.name) {
                None => self.warnings.push(format!(
                    "{} can use the secret {}, which is not stored; it runs without it ({})",
                    profile.name,
                    decl.name,
                    decl.hint.clone().unwrap_or_else(|| format!("to store it: brig secret create {}", decl.name))
                )),
                Some(entry) => {
                    if let Some(expires) = entry.expires_at {
                        if expires <= now {
                            self.warnings.push(format!(
                                "the secret {} expired {}; it is handed over anyway",
                                decl.name,
                                crate::secrets::ago(now - expires)
                            ));
                        } else if expires - now < 24 * 3600 * 1000 {
                            self.warnings.push(format!("the secret {} is about to expire", decl.name));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Decision 15, for a path the guest would be able to write.
    fn check_host_path(&self, what: &'static str, path: &Path) -> Result<(), EngineError> {
        match super::host_paths::refusal(path, self.env, &self.state_dir) {
            Some(why) => Err(EngineError::HandsOverHost { what, path: path.display().to_string(), why }),
            None => Ok(()),
        }
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
}

/// The plan asks for a network of the sandbox's own.
/// A sandbox whose posture neither its labels nor its record say (one made
/// outside brig under a brig name) is kept only when a posture is named,
/// which recreates it: keeping it as it is would promise what nobody knows.
pub(super) fn posture_known(
    existing: Option<&Found>,
    record: Option<&Record>,
    asked: Option<Network>,
    sandbox: &str,
) -> Result<(), Error> {
    match existing {
        Some(found) if asked.is_none() && super::Facts::read(&found.listed, record, &[]).posture().is_none() => {
            Err(EngineError::UnknownPosture { sandbox: sandbox.to_owned() }.into())
        }
        _ => Ok(()),
    }
}

/// Each publication's host port is free: no other brig sandbox on this
/// runtime publishes it (nerdctl's port mapping holds no socket, so two
/// would be accepted and race), and nothing on the host listens there.
fn ports_free(runtime: &dyn Runtime, sandbox: &str, wanted: &[crate::ports::Publish]) -> Result<(), Error> {
    if wanted.is_empty() {
        return Ok(());
    }
    let taken = |p: &crate::ports::Publish, holder: String| EngineError::PortTaken { publish: p.to_string(), holder };
    for other in runtime.list()?.into_iter().filter(|l| l.name != sandbox) {
        let theirs = other.labels.get(crate::runtime::adapter::label::PUBLISH).map(|l| crate::ports::from_label(l));
        for p in wanted {
            if let Some(held) = theirs.iter().flatten().find(|h| h.overlaps(p)) {
                return Err(taken(p, format!("{} ({held})", other.name)).into());
            }
        }
    }
    for p in wanted {
        p.free_on_host().map_err(|e| taken(p, format!("something else on the host ({e})")))?;
    }
    Ok(())
}

/// An egress policy refuses (exit 7) where this run path cannot hold it.
/// `offline` needs no enforcing.
fn enforceable(
    env: &crate::environment::Environment,
    runtime: &dyn Runtime,
    sandbox: &str,
    resolved: &Resolved,
) -> Result<(), Error> {
    let Some(egress) = &resolved.egress else { return Ok(()) };
    if resolved.network == Network::Offline {
        return Ok(());
    }
    match egress_unenforceable(env, runtime, egress) {
        Some(why) => Err(crate::policy::Error::Unenforceable { sandbox: sandbox.to_owned(), why }.into()),
        None => Ok(()),
    }
}

/// Why this run path cannot hold an egress policy, if it cannot: a runtime
/// brig does not enforce policies on, a host firewall brig cannot write, or
/// a glob whose addresses no rule can list.
pub fn egress_unenforceable(
    env: &crate::environment::Environment,
    runtime: &dyn Runtime,
    egress: &crate::policy::Joined,
) -> Option<String> {
    if !runtime.enforces_egress() {
        return Some(format!("brig does not enforce egress policies on {}", runtime.kind()));
    }
    if let Err(why) = crate::firewall::capable(env, runtime.kind(), runtime.bin()) {
        return Some(why);
    }
    egress.unenforceable_glob().map(|glob| {
        format!(
            "{glob} would have to {} connections by name, and brig's rules hold addresses only; name the hosts one by one",
            if egress.default == crate::policy::Default::Deny { "let through" } else { "stop" }
        )
    })
}

fn req_network_isolated(plan: &Plan) -> bool {
    plan.resolved.as_ref().is_some_and(|r| r.network == Network::Isolated)
}

/// No home or project of this sandbox is nested in, or the wrong kind of
/// twin of, one another session mounts (`host_paths::apart`).
fn check_apart(sandbox: &str, home: &Path, project: Option<&Path>, index: &Index) -> Result<(), EngineError> {
    use super::host_paths::{Mounted, Role, apart};
    let others: Vec<Mounted<'_>> = index
        .iter()
        .filter(|(name, _)| *name != sandbox)
        .flat_map(|(_, r)| {
            let reference = crate::session::reference::canonical_ref(&r.agent, r.label.as_deref());
            let project =
                r.project.as_deref().map(|p| Mounted { reference: reference.clone(), role: Role::Project, path: p });
            std::iter::once(Mounted { reference, role: Role::Home, path: &r.home }).chain(project)
        })
        .collect();
    let mine =
        std::iter::once((Role::Home, home, "the guest home")).chain(project.map(|p| (Role::Project, p, "the project")));
    for (role, path, what) in mine {
        if let Some(why) = apart(role, path, home, &others) {
            return Err(EngineError::HandsOverHost { what, path: path.display().to_string(), why });
        }
    }
    Ok(())
}

/// The sandbox as the session index says brig left it: running, on
/// `runtime`, with the home, project, network and isolation recorded at
/// its boot. `None` unless the record is complete and names this runtime
/// and home.
fn assumed_running(
    record: Option<&Record>,
    runtime: crate::runtime::Kind,
    home: &GuestHome,
    sandbox: &str,
) -> Option<Found> {
    use crate::runtime::adapter::label;
    let r = record?;
    let usable =
        r.runtime.as_deref() == Some(runtime.binary_name()) && r.home == home.path && !r.recreating && !r.emptied_home;
    let (network, isolation) = (r.network.as_ref()?, r.isolation.as_ref()?);
    if !usable {
        return None;
    }
    let labels = [
        (label::AGENT, r.agent.clone()),
        (label::LABEL, r.label.clone().unwrap_or_default()),
        (label::HOME, r.home.display().to_string()),
        (label::HOME_CREATED, r.home_created_by_brig.to_string()),
        (label::PROJECT, r.project.as_ref().map(|p| p.display().to_string()).unwrap_or_default()),
        (label::NETWORK, network.clone()),
        (label::ISOLATION, isolation.clone()),
    ];
    let listed = crate::runtime::Listed {
        name: sandbox.to_owned(),
        state: State::Running,
        labels: labels.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
    };
    Some(Found { listed, mounts: Vec::new() })
}

/// Whether anything is at the home's path (a link counts; nothing is followed).
fn home_on_disk(home: &GuestHome, state_dir: &Path, sandbox: &str) -> bool {
    let path = match home.source {
        HomeSource::Default => home::default_home_path(state_dir, sandbox),
        HomeSource::Named { .. } | HomeSource::Legacy => home.path.clone(),
    };
    std::fs::symlink_metadata(path).is_ok()
}

/// What to do with the sandbox as it is now. Pure, so that apply can decide
/// again from a fresh lookup once it holds the sandbox's lock.
pub fn action(
    existing: Option<&Found>,
    record: Option<&Record>,
    wanted: Option<&Path>,
    posture: Option<Network>,
    ports: Option<&[crate::ports::Publish]>,
) -> Action {
    let Some(found) = existing else { return Action::Boot };
    let facts = super::Facts::read(&found.listed, record, &[]);
    if facts.project.as_deref() != wanted {
        return Action::Recreate { from: facts.project };
    }
    if let Some(to) = posture
        && facts.posture() != Some(to)
    {
        return Action::Renetwork { from: facts.posture(), to };
    }
    if let Some(ports) = ports {
        let (mut old, mut new) = (facts.publish.clone(), ports.to_vec());
        old.sort();
        new.sort();
        if old != new {
            return Action::Republish { from: facts.publish };
        }
    }
    match found.listed.state {
        State::Running => Action::Reuse,
        State::Stopped => Action::Start,
        // A lookup reports an unreadable state as an error; should one
        // reach here all the same, nothing is done to the sandbox.
        State::Unknown => Action::Reuse,
    }
}

/// The mounts a sandbox of `profile` gets, in the order they are made:
/// home, tmpfs (parents first), the hostmounts under them, the project.
/// The tmpfs over a home's keep directory: empty, read-only, and too small
/// to matter.
pub const COVER_OPTIONS: &str = "ro,size=4k,mode=0500,nodev,nosuid,noexec";

pub fn mounts(profile: &Profile, home: &Path, project: Option<&Path>, git: &[GitPath]) -> Vec<PlannedMount> {
    let mut out = vec![PlannedMount {
        kind: MountKind::Home,
        host: Some(home.to_owned()),
        guest: profile.guest_home.clone(),
        file: false,
        options: None,
        read_only: false,
    }];
    out.extend(profile.tmpfs_mounts().into_iter().map(|m| PlannedMount {
        kind: MountKind::Tmpfs,
        host: None,
        guest: m.target,
        file: false,
        options: Some(m.options),
        read_only: false,
    }));
    out.push(PlannedMount {
        kind: MountKind::Cover,
        host: None,
        guest: profile.keep_cover(),
        file: false,
        options: Some(COVER_OPTIONS.to_owned()),
        read_only: true,
    });
    out.extend(profile.hostmounts().into_iter().map(|m| PlannedMount {
        kind: MountKind::Hostmount,
        host: Some(home.join(profile.host_side(&m.path))),
        guest: m.target,
        file: m.file,
        options: None,
        read_only: false,
    }));
    if let Some(project) = project {
        out.push(PlannedMount {
            kind: MountKind::Project,
            host: Some(project.to_owned()),
            guest: project::guest_path(project),
            file: false,
            options: None,
            read_only: false,
        });
        let guest = project::guest_path(project);
        out.extend(git.iter().map(|g| PlannedMount {
            kind: MountKind::GitMetadata,
            host: Some(project.join(&g.rel)),
            guest: format!("{guest}/{}", g.rel.display()),
            file: !g.dir,
            options: None,
            read_only: g.read_only,
        }));
    }
    out
}

/// Credentials by name: declared secrets, then variables bound to the host
/// environment or the store. Never a value.
pub fn credentials(profile: &Profile) -> Vec<Credential> {
    let names = profile.credential_names();
    let secrets = names.secrets.into_iter().map(|name| Credential {
        required: profile.secret(&name).is_some_and(|d| d.required),
        name,
        from: "secret",
        stored: None,
        expired: false,
    });
    let env = names.env.into_iter().map(|name| Credential {
        name,
        from: "env",
        required: false,
        stored: None,
        expired: false,
    });
    secrets.chain(env).collect()
}

/// The longest sandbox name every runtime accepts with room for the
/// network named after it: containerd's identifiers stop at 76 characters.
pub const MAX_SANDBOX_NAME: usize = 76 - boot::NETWORK_SUFFIX.len();

/// A sandbox name every runtime can take. Labels follow the seed's slug
/// rule, which brig never shortens and which allows runs like `a..b`;
/// nerdctl refuses those, and names too long, for containers and networks
/// alike. Such a name is refused here (exit 2), before anything exists,
/// rather than by the runtime after a home was made.
fn check_sandbox_name(sandbox: &str) -> Result<(), EngineError> {
    if sandbox.len() > MAX_SANDBOX_NAME || !boot::is_identifier(sandbox) {
        return Err(EngineError::UnusableName { sandbox: sandbox.to_owned(), max: MAX_SANDBOX_NAME });
    }
    Ok(())
}

/// An image reference the runtime will read as an image: never an option,
/// never blank, nothing that ends its argv word early.
fn check_image(image: &str, source: &str) -> Result<(), EngineError> {
    let problem = if image.is_empty() {
        Some("is empty")
    } else if image.starts_with('-') {
        Some("starts with '-', so a runtime would read it as an option")
    } else if image.chars().any(|c| c.is_whitespace() || c.is_control()) {
        Some("holds a blank or a control character, which no image reference does")
    } else {
        None
    };
    match problem {
        Some(problem) => {
            Err(EngineError::BadImage { image: image.escape_debug().to_string(), from: source.to_owned(), problem })
        }
        None => Ok(()),
    }
}

/// A host path the runtimes' mount syntax can carry. `--mount` separates
/// its fields with `,`, and nerdctl turns it into a `-v` spec split on `:`,
/// so a path holding either (or a quote, or a control character) cannot be
/// mounted on every runtime: refused, exit 2.
fn check_path(what: &'static str, path: &Path) -> Result<(), EngineError> {
    let text = path.to_string_lossy();
    if text.contains([',', ':', '"']) || text.chars().any(char::is_control) {
        return Err(EngineError::UnmountablePath { what, path: text.escape_debug().to_string() });
    }
    Ok(())
}

/// Where a home's source says it came from, for the plan's readers.
pub fn home_source_word(source: &HomeSource) -> &'static str {
    match source {
        HomeSource::Default => "default",
        HomeSource::Named { .. } => "named",
        HomeSource::Legacy => "legacy",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::{Kind, Listed, adapter::label};
    use rstest::rstest;

    fn record(project: Option<&str>) -> Record {
        Record {
            agent: "lab-agent".into(),
            label: Some("x".into()),
            home: "/state/homes/brig-lab-agent-x".into(),
            home_created_by_brig: true,
            project: project.map(PathBuf::from),
            network: Some("isolated".into()),
            image: None,
            emptied_home: false,
            recreating: false,
            runtime: Some("nerdctl".into()),
            isolation: Some("container".into()),
            egress: Vec::new(),
            publish: Vec::new(),
        }
    }

    fn found(state: State, project: Option<&str>) -> Found {
        let labels = [(label::AGENT, "lab-agent"), (label::PROJECT, project.unwrap_or_default())];
        Found {
            listed: Listed {
                name: "brig-lab-agent-x".into(),
                state,
                labels: labels.into_iter().map(|(k, v)| (k.to_owned(), v.to_owned())).collect(),
            },
            mounts: Vec::new(),
        }
    }

    /// (the sandbox as found, the project wanted) → what apply does.
    #[rstest]
    #[case::nothing_there(None, Some("/p"), Action::Boot)]
    #[case::running_same_project(Some(found(State::Running, Some("/p"))), Some("/p"), Action::Reuse)]
    #[case::stopped_same_project(Some(found(State::Stopped, Some("/p"))), Some("/p"), Action::Start)]
    #[case::running_other_project(
        Some(found(State::Running, Some("/p"))),
        Some("/q"),
        Action::Recreate { from: Some("/p".into()) }
    )]
    #[case::project_dropped(Some(found(State::Stopped, Some("/p"))), None, Action::Recreate { from: Some("/p".into()) })]
    #[case::first_project(Some(found(State::Running, None)), Some("/p"), Action::Recreate { from: None })]
    #[case::no_project_either_way(Some(found(State::Running, None)), None, Action::Reuse)]
    fn actions(#[case] existing: Option<Found>, #[case] wanted: Option<&str>, #[case] want: Action) {
        assert_eq!(action(existing.as_ref(), Some(&record(Some("/p"))), wanted.map(Path::new), None, None), want);
    }

    /// Policies are held on nerdctl and podman only; docker and hull say
    /// why, and a glob is refused only where it would have to act.
    #[test]
    fn egress_is_enforced_only_where_brig_writes_the_rules() {
        use crate::runtime::{HullCli, Kind, OciCli};
        let doc = |default: &str, list: &str, rule: &str| {
            let text = format!(
                "apiVersion: brig.sh/v1alpha1\nname: p\negress:\n  default: {default}\n  {list}:\n    - {rule}\n"
            );
            crate::policy::Joined::join(&[crate::policy::parse(&text, "p").unwrap()]).unwrap()
        };
        let env = crate::environment::Environment::from_pairs([("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")]);
        let plain = doc("deny", "allow", "cidr: 192.0.2.0/24");
        let docker = OciCli::new(Kind::Docker, "/bin/false".into(), None);
        let hull = HullCli::new("/bin/false".into(), Some("vz".into()));
        assert!(egress_unenforceable(&env, &docker, &plain).unwrap().contains("on docker"));
        assert!(egress_unenforceable(&env, &hull, &plain).unwrap().contains("on hull"));
        let nerdctl = OciCli::new(Kind::Nerdctl, "/bin/false".into(), None);
        let firewall = crate::firewall::capable(&env, Kind::Nerdctl, Path::new("/bin/false")).map(drop);
        assert_eq!(egress_unenforceable(&env, &nerdctl, &plain), firewall.clone().err());
        // Rootless podman writes them in its own namespace: enforced as a
        // user too, wherever nft is installed.
        let podman = OciCli::new(Kind::Podman, "/bin/false".into(), None);
        assert_eq!(
            egress_unenforceable(&env, &podman, &plain).is_none(),
            firewall.is_ok() || crate::firewall::capable(&env, Kind::Podman, Path::new("/bin/false")).is_ok()
        );
        if firewall.is_ok() {
            let glob = doc("deny", "allow", "host: \"*.example.com\"");
            assert!(egress_unenforceable(&env, &nerdctl, &glob).unwrap().contains("let through"));
            let harmless = doc("deny", "deny", "host: \"*.example.com\"");
            assert_eq!(egress_unenforceable(&env, &nerdctl, &harmless), None);
        }
    }

    /// A posture or ports named differ from the sandbox's: recreated; the
    /// same ones, or none named: kept. A project change comes first.
    #[test]
    fn a_named_posture_or_port_list_that_differs_recreates() {
        use crate::ports::Publish;
        let mut running = found(State::Running, Some("/p"));
        running.listed.labels.insert(label::NETWORK.into(), "isolated".into());
        running.listed.labels.insert(label::PUBLISH.into(), "127.0.0.1:3000:3000/tcp".into());
        let act = |posture, ports: Option<&[Publish]>, project: &str| {
            action(Some(&running), None, Some(Path::new(project)), posture, ports)
        };
        let same = [Publish::parse("3000").unwrap()];
        let other = [Publish::parse("3001:3000").unwrap()];
        assert_eq!(act(None, None, "/p"), Action::Reuse);
        assert_eq!(act(Some(Network::Isolated), Some(&same), "/p"), Action::Reuse);
        assert_eq!(
            act(Some(Network::Shared), None, "/p"),
            Action::Renetwork { from: Some(Network::Isolated), to: Network::Shared }
        );
        assert_eq!(act(None, Some(&other), "/p"), Action::Republish { from: same.to_vec() });
        assert_eq!(act(Some(Network::Shared), Some(&other), "/q"), Action::Recreate { from: Some("/p".into()) });
    }

    /// The index is taken at its word only when it records this very
    /// runtime and home, and no recreate or removal is pending.
    #[rstest]
    #[case::complete(|_: &mut Record| {}, Kind::Nerdctl, true)]
    #[case::other_runtime(|_: &mut Record| {}, Kind::Podman, false)]
    #[case::other_home(|r: &mut Record| r.home = "/elsewhere".into(), Kind::Nerdctl, false)]
    #[case::recreating(|r: &mut Record| r.recreating = true, Kind::Nerdctl, false)]
    #[case::emptied(|r: &mut Record| r.emptied_home = true, Kind::Nerdctl, false)]
    #[case::no_runtime_recorded(|r: &mut Record| r.runtime = None, Kind::Nerdctl, false)]
    #[case::no_isolation_recorded(|r: &mut Record| r.isolation = None, Kind::Nerdctl, false)]
    fn trusting_the_record(#[case] change: fn(&mut Record), #[case] runtime: Kind, #[case] trusted: bool) {
        let mut r = record(Some("/p"));
        change(&mut r);
        let home = GuestHome { path: "/state/homes/brig-lab-agent-x".into(), source: HomeSource::Default };
        let got = assumed_running(Some(&r), runtime, &home, "brig-lab-agent-x");
        assert_eq!(got.is_some(), trusted);
        if let Some(found) = got {
            assert_eq!(found.listed.state, State::Running);
            // What the record says is what the plan reads back from it.
            let facts = super::super::Facts::read(&found.listed, None, &[]);
            assert_eq!(facts.project.as_deref(), Some(Path::new("/p")));
            assert_eq!(facts.isolation.as_deref(), Some("container"));
        }
        assert!(assumed_running(None, runtime, &home, "brig-lab-agent-x").is_none());
    }

    #[rstest]
    #[case::plain("localhost/brig-lab/guest:latest", true)]
    #[case::digest("ghcr.io/a/b@sha256:0123", true)]
    #[case::option("--privileged", false)]
    #[case::dash("-x", false)]
    #[case::empty("", false)]
    #[case::blank("a b", false)]
    #[case::newline("a\nb", false)]
    fn images(#[case] image: &str, #[case] ok: bool) {
        let got = check_image(image, "--image");
        assert_eq!(got.is_ok(), ok, "{got:?}");
        if let Err(err) = got {
            assert!(err.to_string().contains("--image"), "names the source: {err}");
        }
    }

    #[rstest]
    #[case::colon("/home/u/a:b", false)]
    #[case::space("/home/u/my project", true)]
    #[case::comma("/home/u/a,b", false)]
    #[case::quote("/home/u/a\"b", false)]
    #[case::newline("/home/u/a\nb", false)]
    fn paths(#[case] path: &str, #[case] ok: bool) {
        assert_eq!(check_path("the project", Path::new(path)).is_ok(), ok);
    }

    #[test]
    fn sandbox_names_fit_the_runtimes() {
        let longest = format!("brig-{}", "a".repeat(MAX_SANDBOX_NAME - 5));
        assert!(check_sandbox_name(&longest).is_ok());
        let err = check_sandbox_name(&format!("{longest}b")).unwrap_err();
        assert!(err.to_string().contains(&MAX_SANDBOX_NAME.to_string()), "{err}");
        assert!(check_sandbox_name("brig-lab-agent-a..b").is_err());
        assert!(check_sandbox_name("brig-lab-agent-a.b_c").is_ok());
    }
}
