//! The lifecycle both binaries share: plan, then apply.
//!
//! [`Engine::plan`] decides everything about a request and touches nothing;
//! [`Engine::apply`] acts on a plan under the sandbox's lock. `brig run`,
//! `brig sh`, `brig info`, `brig plan` and brigd's `ensure` all plan through
//! here, and `stop`, `rm` and brigd's `stop` change a sandbox only through
//! [`Engine::stop`] and [`Engine::remove`], so there is no CLI-only or
//! daemon-only opinion about a sandbox. The engine never prompts when it was
//! told there is nobody to ask (brigd): whatever would prompt refuses instead.

mod apply;
mod boot;
mod facts;
mod git_setup;

pub mod git_meta;
mod host_paths;
pub mod lock;
pub mod plan;
mod prepare;
mod remove;
mod secret_files;
mod skills;
mod verify;

use std::path::PathBuf;

pub use apply::Ensured;
pub use boot::{SHARED_NETWORK, network_name};
pub use facts::Facts;
pub use plan::{Action, Plan, ProjectChoice, Request};
pub use remove::Removed;

use crate::environment::Environment;
use crate::profile::{Profile, Registry};
use crate::runtime::{self, Isolation, Listed, Runtime};
use crate::session::{Session, home};
use crate::warn::Warnings;

/// Refusals the engine itself decides.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A GUI agent needs a display the sandbox can draw on, which only
    /// hull on macOS gives.
    #[error("{profile} is a GUI agent, which runs only on macOS (hull); on this host use a terminal agent")]
    GuiNotHere { profile: String },
    /// `--publish` on a runtime brig cannot publish ports with.
    #[error("{runtime} sandboxes cannot have ports published by brig; drop --publish, or use nerdctl or podman")]
    PublishUnsupported { runtime: crate::runtime::Kind },
    /// A host port a publication needs is taken.
    #[error("cannot publish {publish}: the host port is taken by {holder}; choose another host port (HOST:GUEST)")]
    PortTaken { publish: String, holder: String },
    /// An existing sandbox whose network posture nothing records.
    #[error(
        "{sandbox} exists, and neither its labels nor brig's record say which network posture it has; name one (--network isolated, shared or offline) to recreate it with that posture, keeping its home"
    )]
    UnknownPosture { sandbox: String },
    #[error(
        "the {profile} profile names the image {image}, which is not published; give one with --image or BRIG_IMAGE"
    )]
    Unpublished { profile: String, image: String },
    #[error("image \"{image}\" (from {from}) {problem}")]
    BadImage { image: String, from: String, problem: &'static str },
    #[error(
        "{what} {path} holds a ':', a ',', a '\"' or a control character, which the runtimes' mount syntax cannot carry; rename or move it"
    )]
    UnmountablePath { what: &'static str, path: String },
    #[error(
        "sandbox name {sandbox} is not one every runtime accepts (at most {max} characters, and a single '.', '_' or '-' between letters and digits); choose another label"
    )]
    UnusableName { sandbox: String, max: usize },
    #[error(
        "the value of {name} holds a line break or a NUL, which no runtime can hand to a guest as a variable; unset it, or give it to the guest as a file (a profile's `files:`)"
    )]
    UnsendableValue { name: String },
    #[error("{variable} lists {name:?}, which is not a variable name (a letter or '_', then letters, digits or '_')")]
    BadForwardName { variable: String, name: String },
    #[error("the credential file {path} could not be written in the guest: {why}")]
    FileNotDelivered { path: String, why: String },
    /// Decision 15: mounting it would hand the guest the host.
    #[error("{what} {path} is refused: {why}")]
    HandsOverHost { what: &'static str, path: String, why: String },
    #[error(
        "the sandbox of {reference} was booted on {other}, which this run does not use; run with BRIG_RUNTIME={other}, or remove it there first with `BRIG_RUNTIME={other} brig rm {reference}`"
    )]
    OnOtherRuntime { reference: String, other: String },
    /// The verify step would not boot the image (exit 5).
    #[error("{image} was not booted: {why}; {remedy}")]
    VerifyRefused { image: String, why: String, remedy: String },
    /// A plan used before it was complete: a bug, never a user's mistake.
    #[error("internal error: a plan was applied before it was complete")]
    Incomplete,
}

/// Whether anyone can answer a question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prompts {
    /// A person at a terminal (the CLI with a TTY).
    Terminal,
    /// No one: brigd, or the CLI without a terminal. A question refuses.
    Nobody,
}

impl Prompts {
    /// Ask a yes/no question; only y or yes (any case) is yes, and with
    /// nobody to ask the answer is no.
    pub fn confirm(self, question: &str) -> bool {
        use std::io::{BufRead as _, Write as _};
        if self == Prompts::Nobody {
            return false;
        }
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "{} [y/N] ", crate::warn::escaped(question));
        let _ = err.flush();
        let mut answer = String::new();
        if std::io::stdin().lock().read_line(&mut answer).is_err() {
            return false;
        }
        matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
    }
}

/// The variables for one command in the guest (`Engine::exec_env`).
#[derive(Debug, Clone, Default)]
pub struct ExecEnv {
    /// Through the runtime's `--env-file` pipe.
    pub fed: Vec<(String, String)>,
    /// On the runtime's command line, under `BRIG_ENV_ARGV=1` only.
    pub exposed: Vec<(String, String)>,
}

/// One engine per command (or per brigd request).
#[derive(Debug)]
pub struct Engine<'a> {
    pub env: &'a Environment,
    pub registry: &'a Registry,
    pub prompts: Prompts,
    pub warnings: Warnings,
    pub(crate) cwd: PathBuf,
    pub(crate) state_dir: PathBuf,
    /// The secret store, opened the first time a secret is needed.
    secret_store: Option<crate::secrets::Store>,
}

impl<'a> Engine<'a> {
    pub fn new(
        env: &'a Environment,
        registry: &'a Registry,
        prompts: Prompts,
        warnings: Warnings,
    ) -> Result<Self, crate::Error> {
        let cwd = std::env::current_dir().map_err(|e| crate::Error::io("read the current directory", ".", e))?;
        let state_dir = home::state_dir(env, &cwd)?;
        Ok(Engine { env, registry, prompts, warnings, cwd, state_dir, secret_store: None })
    }

    /// Write the profile's credential files into the running sandbox, as
    /// every command in it is about to run.
    pub fn deliver_files(
        &mut self,
        runtime: &dyn Runtime,
        sandbox: &str,
        profile: &Profile,
    ) -> Result<(), crate::Error> {
        secret_files::deliver(self, runtime, sandbox, profile)
    }

    /// The secret store, opened once per engine.
    pub fn secret_store(&mut self) -> Result<&crate::secrets::Store, crate::secrets::Error> {
        if self.secret_store.is_none() {
            self.secret_store = Some(crate::secrets::Store::open()?);
        }
        Ok(self.secret_store.as_ref().expect("opened just now"))
    }

    pub fn state_dir(&self) -> &std::path::Path {
        &self.state_dir
    }

    /// Parse a ref (with the retiring `--name`) against this registry.
    pub fn session(&mut self, typed: &str, name: Option<&str>) -> Result<(Session, Profile), crate::Error> {
        let (session, warning) = Session::parse_with_name(typed, name, self.registry)?;
        if let Some(line) = warning {
            self.warnings.push(line);
        }
        let profile = self.registry.resolve(session.agent())?.profile.clone();
        Ok((session, profile))
    }

    /// Resolve and open the runtime for a profile, reporting an implicit
    /// fallback once.
    pub fn open_runtime(&mut self, profile: &Profile) -> Result<Box<dyn Runtime>, crate::Error> {
        let resolved = runtime::resolve(self.env, Some((&profile.name, profile.runtime_bin.as_deref())))?;
        if let Some(notice) = resolved.fallback_notice() {
            self.warnings.push(notice);
        }
        // The hull backend: `BRIG_<AGENT>_HYPERVISOR`, `BRIG_HYPERVISOR`, then the profile.
        let hypervisor = crate::settings::Settings::new(self.env, &profile.name)
            .variable("HYPERVISOR")
            .map(|(_, v)| v.to_owned())
            .or_else(|| profile.hypervisor.map(|h| h.as_str().to_owned()));
        let mut runtime = runtime::open(&resolved, self.env, hypervisor)?;
        let mut withheld = profile.ambient_sources();
        // A list with a bad name was refused by the plan before this.
        withheld.extend(boot::forward_list(self, profile).ok().flatten().unwrap_or_default());
        runtime.withhold(withheld);
        Ok(runtime)
    }

    /// Make the session's sandbox run: plan, then apply, or the refusal.
    pub fn ensure(&mut self, req: &Request) -> Result<Ensured, crate::Error> {
        let plan = self.plan_with(req, plan::Lookup::UnlessNew).ready()?;
        self.apply(plan)
    }

    /// Like [`Engine::ensure`], but a sandbox the session index says brig
    /// left running is taken as running without asking the runtime
    /// ([`Engine::plan_assuming`]); the result says so in `assumed`. Only
    /// for a caller that execs into the sandbox next and falls back to
    /// `ensure` when the runtime says it is not running.
    pub fn ensure_assuming(&mut self, req: &Request) -> Result<Ensured, crate::Error> {
        let plan = self.plan_assuming(req).ready()?;
        // An egress policy bound or detached since the boot is written to
        // the sandbox's rules by apply, which asks the runtime.
        let egress = plan.resolved.egress.is_some() || plan.record.as_ref().is_some_and(|r| !r.egress.is_empty());
        if !(plan.assumed && plan.action == Action::Reuse) || egress {
            return self.apply(plan);
        }
        if plan.isolation == Isolation::Container {
            self.warn_container(plan.runtime.as_ref());
        }
        let network =
            plan.record.as_ref().and_then(|r| r.network.as_deref()).and_then(crate::settings::Enumerated::parse);
        Ok(Ensured {
            network: network.unwrap_or(plan.resolved.network),
            runtime: plan.runtime,
            isolation: plan.isolation,
            home: plan.home,
            project: plan.project,
            booted: false,
            action: Action::Reuse,
            assumed: true,
        })
    }

    /// Every accepted run on a plain-container runtime says so.
    pub fn warn_container(&mut self, runtime: &dyn Runtime) {
        let via = runtime.shim().map_or_else(|| runtime.kind().to_string(), str::to_owned);
        self.warnings.push(format!(
            "this sandbox is a container on the host's shared kernel ({via}), not a microVM; accepted because BRIG_ALLOW_CONTAINER_ISOLATION is set"
        ));
        // Run by a user, docker is still rootful: its daemon runs as root.
        if !rustix::process::geteuid().is_root() && runtime.kind() == runtime::Kind::Docker {
            self.warnings.push(
                "docker's daemon runs as root, so root in this guest is root on the host; rootless podman maps it to you"
                    .to_owned(),
            );
        }
    }

    /// Apply the isolation rule to a sandbox that exists (its label says what
    /// it was booted with) or is about to boot (the runtime is asked): a
    /// plain-container runtime is refused (exit 7) unless
    /// `BRIG_ALLOW_CONTAINER_ISOLATION` accepts it. Every accepted run says
    /// so when it applies the plan.
    pub fn admit(&self, runtime: &dyn Runtime, existing: Option<&Listed>) -> Result<Isolation, crate::Error> {
        let recorded = existing.and_then(|l| Facts::read(l, None, &[]).isolation).and_then(|v| match v.as_str() {
            "microvm" => Some(Isolation::Microvm),
            "container" => Some(Isolation::Container),
            _ => None,
        });
        let isolation = match recorded {
            Some(isolation) => isolation,
            None => runtime.isolation()?,
        };
        if isolation == Isolation::Container {
            let allowed = crate::settings::global::<crate::settings::Bool>(self.env, "BRIG_ALLOW_CONTAINER_ISOLATION")?
                .is_some_and(|b| b.0);
            let via = runtime.shim().map_or_else(|| runtime.kind().to_string(), str::to_owned);
            if !allowed {
                return Err(runtime::Error::ContainerRefused { runtime: runtime.kind(), via }.into());
            }
        }
        Ok(isolation)
    }

    /// The variables an exec in this profile's sandbox carries: the guest
    /// home as HOME, and the profile's bindings resolved now, so a value
    /// changed on the host since the boot arrives with the next exec.
    /// What a sandbox of `isolation` is held to. For a container, brig's
    /// seccomp profile is written to the state directory first, where the
    /// runtime reads it at create.
    pub fn hardening(
        &self,
        isolation: Isolation,
        kind: runtime::Kind,
    ) -> Result<Option<runtime::Hardening>, crate::Error> {
        if isolation != Isolation::Container {
            return Ok(None);
        }
        let hardening = runtime::Hardening::container(&self.state_dir, kind);
        crate::profile::store::write_atomic(&self.state_dir, runtime::seccomp::FILE_NAME, &runtime::seccomp::bytes())?;
        Ok(Some(hardening))
    }

    /// The variables for one command in the guest: the ones fed through the
    /// runtime's `--env-file` pipe, and, only under `BRIG_ENV_ARGV=1`
    /// (exactly `1`), the values from brig's own environment placed on the
    /// runtime's command line instead, with a warning naming them. A value
    /// from the secret store is never placed there.
    pub fn exec_env(&mut self, profile: &Profile) -> Result<ExecEnv, crate::Error> {
        let mut fed = vec![("HOME".to_owned(), profile.guest_home.clone())];
        let mut exposed = Vec::new();
        let hatch = self.env.get("BRIG_ENV_ARGV") == Some("1");
        for f in boot::forwarded(self, profile, boot::Bindings::All)? {
            if hatch && f.ambient {
                exposed.push((f.name, f.value));
            } else {
                fed.push((f.name, f.value));
            }
        }
        if !exposed.is_empty() {
            let names: Vec<&str> = exposed.iter().map(|(n, _)| n.as_str()).collect();
            self.warnings.push(format!(
                "BRIG_ENV_ARGV=1 puts {} on the runtime's command line, where every local user can read them",
                names.join(", ")
            ));
        }
        Ok(ExecEnv { fed, exposed })
    }

    /// The runtime for commands that only look (`ls`, `stop`, `rm`): no
    /// isolation rule, since nothing new is booted.
    pub fn open_runtime_for_listing(&mut self, profile: Option<&Profile>) -> Result<Box<dyn Runtime>, crate::Error> {
        let resolved = runtime::resolve(self.env, profile.map(|p| (p.name.as_str(), p.runtime_bin.as_deref())))?;
        let mut runtime = runtime::open(&resolved, self.env, None)?;
        // Without a profile, what any profile forwards.
        let names = match profile {
            Some(profile) => profile.ambient_sources(),
            None => self.registry.entries().iter().flat_map(|e| e.profile.ambient_sources()).collect(),
        };
        runtime.withhold(names);
        Ok(runtime)
    }
}
