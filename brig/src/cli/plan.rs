//! `brig plan <ref> [project]`: what a run would be allowed to do — mounts,
//! network, credentials by name, image, and what would happen to the
//! sandbox — without booting anything, creating anything or opening the
//! secret store. A refused run shows a REFUSED row and exits with the
//! refusal's code, the same code `run` would exit with.

use std::path::PathBuf;

use serde::Serialize;

use crate::Error;
use crate::cli::run::{SandboxOptions, network_flag};
use crate::cli::{Context, print};
use crate::engine::plan::{Credential, PlannedMount, home_source_word};
use crate::engine::{Engine, Plan, ProjectChoice, Prompts, Request};
use crate::exit::{Code, exit_code};
use crate::json::Envelope;
use crate::profile::Registry;
use crate::runtime::{Hardening, Isolation, Kind};
use crate::settings::{Network, Verify};
use crate::warn::Warnings;

#[derive(Debug, clap::Args)]
pub struct PlanArgs {
    #[command(flatten)]
    pub sandbox: SandboxOptions,
    /// Plan as if run with no project (and forgetting the remembered one).
    #[arg(long)]
    pub no_project: bool,
    /// The session: <agent> or <agent>@<label>.
    #[arg(value_name = "REF")]
    pub reference: String,
    /// The project a run would mount; the remembered one when omitted.
    #[arg(value_name = "PROJECT")]
    pub project: Option<String>,
}

/// The verification mode, and whose policy (`brig`, `replaced`, `off`).
#[derive(Debug, Serialize)]
pub struct VerifyData {
    pub mode: Verify,
    pub policy: &'static str,
}

impl std::fmt::Display for VerifyData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (policy {})", self.mode, self.policy)
    }
}

/// A plan as the report verbs print it. Names only: no credential value,
/// no environment value.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanData {
    #[serde(rename = "ref")]
    pub reference: String,
    pub agent: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    pub sandbox: String,
    /// `boot`, `start`, `recreate`, `reuse`; `null` when refused first.
    pub action: Option<&'static str>,
    pub isolation: Option<Isolation>,
    pub runtime: Option<RuntimeData>,
    pub workspace: Option<PathBuf>,
    pub workspace_source: Option<&'static str>,
    pub project: Option<PathBuf>,
    pub image: Option<String>,
    /// The digest a running sandbox was booted from, as recorded; a new
    /// boot learns it only from verification.
    pub digest: Option<String>,
    pub verify: Option<VerifyData>,
    pub network: Option<Network>,
    /// The egress policies bound to the run, joined; `null` for none.
    pub egress: Option<crate::policy::Joined>,
    /// Guest ports published on the host, `ADDRESS:HOST:GUEST/PROTO`.
    pub ports: Vec<crate::ports::Publish>,
    pub mounts: Vec<PlannedMount>,
    /// What a container on the host's kernel is held to; `null` for a microVM.
    pub hardening: Option<Hardening>,
    pub credentials: Vec<Credential>,
    /// The credential files the guest gets, by name.
    pub guest_login: Vec<crate::engine::plan::GuestLogin>,
    pub refused: Option<Refused>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeData {
    pub kind: Kind,
    pub binary: PathBuf,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shim: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct Refused {
    pub code: u8,
    pub error: String,
}

impl PlanData {
    pub fn from_plan(plan: &Plan, state_dir: &std::path::Path) -> PlanData {
        let session = &plan.session;
        PlanData {
            reference: session.typed().to_owned(),
            agent: session.agent().to_owned(),
            label: session.label().map(str::to_owned),
            sandbox: session.sandbox().to_owned(),
            action: plan.action.as_ref().map(|a| a.word()),
            isolation: plan.isolation,
            runtime: plan.runtime.as_ref().map(|r| RuntimeData {
                kind: r.kind(),
                binary: r.bin().to_owned(),
                shim: plan.shim.clone(),
            }),
            workspace: plan.home.as_ref().map(|h| h.path.clone()),
            workspace_source: plan.home.as_ref().map(|h| home_source_word(&h.source)),
            project: plan.project.clone(),
            image: plan.resolved.as_ref().map(|r| r.image.clone()),
            digest: plan
                .record
                .as_ref()
                .and_then(|r| r.image.as_deref())
                .and_then(|image| image.split_once('@'))
                .filter(|_| plan.action == Some(crate::engine::Action::Reuse))
                .map(|(_, digest)| digest.to_owned()),
            verify: plan.resolved.as_ref().map(|r| VerifyData {
                mode: r.verify,
                policy: if r.verify == Verify::Off { "off" } else { r.policy.name() },
            }),
            // A sandbox whose posture nobody knows shows none, not the
            // default a new one would get.
            network: plan
                .resolved
                .as_ref()
                .map(|r| r.network)
                .filter(|_| !matches!(plan.refused, Some(Error::Engine(crate::engine::Error::UnknownPosture { .. })))),
            egress: plan.resolved.as_ref().and_then(|r| r.egress.clone()),
            ports: plan.resolved.as_ref().map(|r| r.publish.clone()).unwrap_or_default(),
            mounts: plan.mounts.clone(),
            hardening: match (plan.isolation, &plan.runtime) {
                (Some(Isolation::Container), Some(runtime)) => Some(Hardening::container(state_dir, runtime.kind())),
                _ => None,
            },
            credentials: plan.credentials.clone(),
            guest_login: plan.guest_login.clone(),
            refused: plan
                .refused
                .as_ref()
                .map(|e| Refused { code: exit_code(e).as_u8(), error: crate::error::chain(e) }),
        }
    }
}

pub fn run(args: PlanArgs, ctx: &Context) -> Result<Code, Error> {
    let registry = Registry::load(&ctx.env);
    for line in registry.warnings() {
        crate::warn::now(line);
    }
    let mut engine = Engine::new(&ctx.env, &registry, Prompts::Nobody, Warnings::stderr())?;
    let (session, profile) = engine.session(&args.reference, args.sandbox.name.as_deref())?;
    let project = match (&args.project, args.no_project) {
        (Some(dir), false) => ProjectChoice::Named(dir.clone()),
        (Some(dir), true) => return Err(crate::error::UsageError::NoProjectWithProject { project: dir.clone() }.into()),
        (None, true) => ProjectChoice::Nothing,
        (None, false) => ProjectChoice::Remembered,
    };
    let request = Request {
        home_flag: args.sandbox.home.as_ref().map(|p| p.to_string_lossy().into_owned()),
        project,
        image: args.sandbox.image.clone(),
        mem: args.sandbox.mem,
        cpus: args.sandbox.cpus,
        network: network_flag(&args.sandbox)?,
        publish: args.sandbox.publish.clone(),
        skills: args.sandbox.skills,
        ..Request::bare(session, profile)
    };
    let plan = engine.plan(&request);
    let data = PlanData::from_plan(&plan, engine.state_dir());
    if ctx.json {
        print(format!("{}\n", Envelope::new("Plan", &data).to_line()))?;
    } else {
        print(render(&data))?;
    }
    match plan.refused {
        Some(err) => Err(err),
        None => Ok(Code::Success),
    }
}

fn render(data: &PlanData) -> String {
    let or_dash = |v: Option<String>| v.unwrap_or_else(|| "-".to_owned());
    let mut rows: Vec<(&str, String)> = vec![
        ("ref", data.reference.clone()),
        ("sandbox", data.sandbox.clone()),
        ("action", or_dash(data.action.map(str::to_owned))),
        ("isolation", or_dash(data.isolation.map(|i| i.to_string()))),
        (
            "runtime",
            or_dash(data.runtime.as_ref().map(|r| match &r.shim {
                Some(shim) => format!("{} ({}), {shim}", r.kind, r.binary.display()),
                None => format!("{} ({})", r.kind, r.binary.display()),
            })),
        ),
        ("image", or_dash(data.image.clone())),
        ("verify", or_dash(data.verify.as_ref().map(|v| v.to_string()))),
        ("digest", data.digest.clone().unwrap_or_else(|| "learnt when the image verifies, at boot".to_owned())),
        ("network", data.network.map_or_else(|| "unknown".to_owned(), crate::cli::network_line)),
        ("egress", crate::cli::egress_line(data.egress.as_ref())),
        ("ports", crate::cli::ports_line(&data.ports)),
    ];
    for mount in &data.mounts {
        let host = mount.host.as_ref().map_or_else(|| "memory".to_owned(), |h| escaped(&h.display().to_string()));
        let what = match mount.kind {
            crate::engine::plan::MountKind::Home => "home",
            crate::engine::plan::MountKind::Project => "project",
            crate::engine::plan::MountKind::Hostmount if mount.file => "hostmount (file)",
            crate::engine::plan::MountKind::Hostmount => "hostmount",
            crate::engine::plan::MountKind::Tmpfs => "tmpfs",
            crate::engine::plan::MountKind::Cover => "cover over the kept paths",
            crate::engine::plan::MountKind::GitMetadata => "git metadata",
        };
        let access = if mount.read_only { "read-only" } else { "read-write" };
        rows.push(("mount", format!("{} ← {host} [{what}, {access}]", escaped(&mount.guest))));
    }
    if let Some(h) = &data.hardening {
        rows.push((
            "hardening",
            format!(
                "{}capabilities {} only, at most {} processes, log files of at most {}, seccomp profile {} (no keyring, namespaces, mounts or setuid bits)",
                if h.no_new_privileges { "no new privileges, " } else { "" },
                h.capabilities.join(","),
                h.pids_limit,
                h.log_max_size,
                escaped(&h.seccomp.display().to_string()),
            ),
        ));
        rows.push(("guest root", h.guest_root.describe()));
    }
    if data.credentials.is_empty() {
        rows.push(("credential", "none".to_owned()));
    }
    for c in &data.credentials {
        rows.push((
            "credential",
            format!(
                "{} (from {}{}{})",
                c.name,
                c.from,
                if c.required { ", required" } else { "" },
                match (c.stored, c.expired) {
                    (Some(true), true) => ", stored, expired",
                    (Some(true), false) => ", stored",
                    (Some(false), _) => ", not stored",
                    (None, _) => "",
                }
            ),
        ));
    }
    for login in &data.guest_login {
        rows.push((
            "guest login",
            format!(
                "{} as a file (from {}{})",
                login.name,
                escaped(&login.source),
                if login.expired { ", expired" } else { "" }
            ),
        ));
    }
    if let Some(refused) = &data.refused {
        rows.push(("REFUSED", format!("exit {}: {}", refused.code, escaped(&refused.error))));
    }
    rows.iter().map(|(k, v)| format!("{k:<12} {v}\n")).collect()
}

use crate::warn::escaped;
