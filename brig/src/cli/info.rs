//! `brig info <ref>`: the execution envelope of a run — the engine's plan
//! for it — without booting anything and without creating anything on disk.
//! A refused run prints what was decided and a REFUSED row, and exits with
//! the code `run` would exit with.

use std::path::PathBuf;

use crate::Error;
use crate::cli::plan::PlanData;
use crate::cli::{Context, print};
use crate::engine::{Engine, Prompts, Request};
use crate::exit::Code;
use crate::json::Envelope;
use crate::profile::Registry;
use crate::runtime::Isolation;
use crate::session::HomeSource;
use crate::warn::Warnings;
use crate::warn::escaped;

#[derive(Debug, clap::Args)]
pub struct InfoArgs {
    /// The session: <agent> or <agent>@<label>.
    #[arg(value_name = "REF")]
    pub reference: String,
    /// Report as if run with this guest home.
    #[arg(long, value_name = "DIR")]
    pub home: Option<PathBuf>,
    /// Report as if run with this image.
    #[arg(long, value_name = "REF")]
    pub image: Option<String>,
    /// Retiring: the session label (use <agent>@<label>).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
}

pub fn run(args: InfoArgs, ctx: &Context) -> Result<Code, Error> {
    let registry = Registry::load(&ctx.env);
    for line in registry.warnings() {
        crate::warn::now(line);
    }
    let mut engine = Engine::new(&ctx.env, &registry, Prompts::Nobody, Warnings::stderr())?;
    let (session, profile) = engine.session(&args.reference, args.name.as_deref())?;
    let request = Request {
        home_flag: args.home.as_ref().map(|p| p.to_string_lossy().into_owned()),
        image: args.image.clone(),
        ..Request::bare(session, profile)
    };
    let plan = engine.plan(&request);
    let data = PlanData::from_plan(&plan, engine.state_dir());
    if ctx.json {
        print(format!("{}\n", Envelope::new("Info", &data).to_line()))?;
    } else {
        print(render(&data, plan.home.as_ref().map(|h| &h.source), ctx))?;
    }
    match plan.refused {
        Some(err) => Err(err),
        None => Ok(Code::Success),
    }
}

fn render(data: &PlanData, source: Option<&HomeSource>, ctx: &Context) -> String {
    let runtime = match &data.runtime {
        Some(r) => match &r.shim {
            Some(shim) => format!("{} ({}), shim {shim}", r.kind, r.binary.display()),
            None => format!("{} ({})", r.kind, r.binary.display()),
        },
        None => "none found (install nerdctl or podman, or set BRIG_RUNTIME_BIN)".to_owned(),
    };
    let isolation = match data.isolation {
        Some(Isolation::Container) if !allows_container(ctx) => {
            "container (shared kernel; refused unless BRIG_ALLOW_CONTAINER_ISOLATION=1)".to_owned()
        }
        Some(Isolation::Container) => "container (shared kernel)".to_owned(),
        Some(Isolation::Microvm) => "microvm".to_owned(),
        None => "unknown (no runtime)".to_owned(),
    };
    let workspace = match (&data.workspace, source) {
        (Some(path), Some(HomeSource::Default)) => {
            format!("{} (created by brig, removed by brig rm)", escaped(&path.display().to_string()))
        }
        (Some(path), Some(HomeSource::Named { setting })) => {
            format!("{} (from {setting}; brig never deletes it)", escaped(&path.display().to_string()))
        }
        (Some(path), _) => format!("{} (kept from an older release)", escaped(&path.display().to_string())),
        (None, _) => "-".to_owned(),
    };
    let project = match &data.project {
        Some(p) => escaped(&p.display().to_string()),
        None => "none".to_owned(),
    };
    let credentials = if data.credentials.is_empty() {
        "none".to_owned()
    } else {
        data.credentials
            .iter()
            .map(|c| format!("{} ({}{})", c.name, c.from, if c.required { ", required" } else { "" }))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let dash = |v: Option<String>| v.unwrap_or_else(|| "-".to_owned());
    let mut rows = vec![
        ("ref", data.reference.clone()),
        ("agent", data.agent.clone()),
        ("sandbox", data.sandbox.clone()),
        ("action", dash(data.action.map(str::to_owned))),
        ("isolation", isolation),
        ("runtime", runtime),
        ("workspace", workspace),
        ("project", project),
        ("image", dash(data.image.clone())),
        ("verify", dash(data.verify.as_ref().map(|v| v.to_string()))),
        ("network", data.network.map_or_else(|| "unknown".to_owned(), crate::cli::network_line)),
        ("egress", crate::cli::egress_line(data.egress.as_ref())),
        ("ports", crate::cli::ports_line(&data.ports)),
        ("credentials", credentials),
    ];
    if let Some(h) = &data.hardening {
        // Who root in the guest is on the host: what a rootless runtime
        // changes, said where the isolation is.
        rows.insert(5, ("guest root", h.guest_root.describe()));
    }
    if let Some(refused) = &data.refused {
        rows.push(("REFUSED", format!("exit {}: {}", refused.code, escaped(&refused.error))));
    }
    rows.iter().map(|(k, v)| format!("{k:<12} {v}\n")).collect()
}

fn allows_container(ctx: &Context) -> bool {
    crate::settings::global::<crate::settings::Bool>(&ctx.env, "BRIG_ALLOW_CONTAINER_ISOLATION")
        .ok()
        .flatten()
        .is_some_and(|b| b.0)
}
